package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// SourceName is the adapter's name.
const SourceName = "mcp"

// MaxNameLength bounds an upstream's name.
const MaxNameLength = 64

// The values of mcpe.SourceState.Status.
const (
	StatusConnecting = "connecting"
	StatusConnected  = "connected"
	StatusRetrying   = "retrying"
)

// logLevels are the MCP logging levels, lowest first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// Upstream is one upstream MCP server: a command run over stdio, or a URL
// spoken to over Streamable HTTP. Exactly one of Command and URL is set.
type Upstream struct {
	// Name is the upstream's segment in event types (mcp.<name>.*): letters,
	// digits, '_' and '-', not starting with '-', at most MaxNameLength
	// bytes, unique.
	Name string
	// Command is the argv of a stdio server, run with exec.Command (no
	// shell), e.g. ["npx", "-y", "@modelcontextprotocol/server-github"].
	Command []string
	// Env is added to the environment the command inherits from this
	// server; nil adds nothing. Only for Command.
	Env map[string]string
	// URL is the endpoint of a Streamable HTTP server (http or https).
	URL string
	// Headers are sent with every HTTP request, e.g. Authorization; nil
	// sends none. Only for URL.
	Headers map[string]string
}

// Options configure an Adapter.
type Options struct {
	// Upstreams are the servers to listen to; none makes an adapter that
	// does nothing.
	Upstreams []Upstream
	// Publisher receives the events; required.
	Publisher subscriptions.Publisher
	// Clock times the backoff and stamps the events; nil means the wall
	// clock.
	Clock clock.Clock
	// Logger receives the adapter's logs; nil discards them.
	Logger *slog.Logger
}

// Validate checks the settings of o; New also requires a Publisher. An
// error is an *mcpe.InvalidError whose Field is the setting's key in the
// configuration file, relative to the adapter's section, such as
// "upstreams[0].url".
func (o *Options) Validate() error {
	seen := make(map[string]bool)
	for i, u := range o.Upstreams {
		field := fmt.Sprintf("upstreams[%d]", i)
		if err := validName(u.Name); err != nil {
			return mcpe.Invalid(field+".name", "%v", err)
		}
		if seen[u.Name] {
			return mcpe.Invalid(field+".name", "%q is used twice; each upstream needs its own name", u.Name)
		}
		seen[u.Name] = true
		switch {
		case len(u.Command) > 0 && u.URL != "":
			return mcpe.Invalid(field, "give command (stdio) or url (Streamable HTTP), not both")
		case len(u.Command) == 0 && u.URL == "":
			return mcpe.Invalid(field, "give command, e.g. [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"], or url, e.g. \"https://mcp.example.com/mcp\"")
		case len(u.Command) > 0:
			if strings.TrimSpace(u.Command[0]) == "" {
				return mcpe.Invalid(field+".command", "the program (first element) is empty")
			}
			if len(u.Headers) > 0 {
				return mcpe.Invalid(field+".headers", "headers are for a url upstream; give a command its settings with env")
			}
		default:
			p, err := url.Parse(u.URL)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return mcpe.Invalid(field+".url", "%q is not an http or https URL with a host; give one such as \"https://mcp.example.com/mcp\"", u.URL)
			}
			if len(u.Env) > 0 {
				return mcpe.Invalid(field+".env", "env is for a command upstream; give a url upstream its settings with headers")
			}
		}
	}
	return nil
}

// validName checks an upstream's name; its error is the message of an
// *mcpe.InvalidError about the name.
func validName(name string) error {
	const form = "a name of letters, digits, '_' or '-', not starting with '-', such as \"github\" (it becomes the event type segment mcp.<name>)"
	switch {
	case name == "":
		return errors.New("is empty; give " + form)
	case len(name) > MaxNameLength:
		return fmt.Errorf("is %d bytes long; at most %d are accepted", len(name), MaxNameLength)
	}
	for i, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' && i > 0) {
			return fmt.Errorf("%q is not %s", name, form)
		}
	}
	return nil
}

// Adapter listens to upstream MCP servers and publishes what they announce.
// Create one with New; its methods are safe for concurrent use.
type Adapter struct {
	opts      Options
	upstreams []*upstream
	// Fixed here; tests in this package set their own before Start.
	backoff       backoff
	logLevel      string // asked of upstreams with logging/setLevel
	maxSubscribed int    // resources subscribed to per upstream

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

var _ adapters.Source = (*Adapter)(nil)

// New validates opts and returns an Adapter that has not started.
func New(opts Options) (*Adapter, error) {
	if opts.Publisher == nil {
		return nil, errors.New("mcp: Options.Publisher is required")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	a := &Adapter{opts: opts, logLevel: "info", maxSubscribed: 100,
		backoff: backoff{min: time.Second, max: 5 * time.Minute, jitter: 0.2, rand: rand.Float64}}
	for _, cfg := range opts.Upstreams {
		cfg.Command = slices.Clone(cfg.Command)
		cfg.Env = maps.Clone(cfg.Env)
		cfg.Headers = maps.Clone(cfg.Headers)
		a.upstreams = append(a.upstreams, newUpstream(a, cfg))
	}
	return a, nil
}

// Name returns "mcp".
func (a *Adapter) Name() string { return SourceName }

// Catalog lists the event types of every configured upstream.
func (a *Adapter) Catalog() []mcpe.EventType {
	var out []mcpe.EventType
	for _, u := range a.upstreams {
		out = append(out, catalog(u.cfg.Name)...)
	}
	return out
}

// States reports how each upstream is doing, in configuration order.
func (a *Adapter) States() []mcpe.SourceState {
	out := make([]mcpe.SourceState, 0, len(a.upstreams))
	for _, u := range a.upstreams {
		u.mu.Lock()
		out = append(out, u.state)
		u.mu.Unlock()
	}
	return out
}

// Start connects to every upstream in the background; connections that fail
// are retried. The upstreams are listened to until Stop is called or ctx is
// cancelled. Start fails only when called twice or after Stop.
func (a *Adapter) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.stopped {
		return errors.New("mcp adapter: Start called twice or after Stop")
	}
	a.started = true
	ctx, a.cancel = context.WithCancel(ctx)
	for _, u := range a.upstreams {
		a.wg.Go(func() { u.publishLoop(ctx) })
		a.wg.Go(func() { u.run(ctx) })
	}
	return nil
}

// Stop ends every session, stops the stdio commands and waits for the
// background work to end. It is safe to call twice, and before Start.
func (a *Adapter) Stop() {
	a.mu.Lock()
	a.stopped = true
	if a.cancel != nil {
		a.cancel()
	}
	a.mu.Unlock()
	a.wg.Wait()
}
