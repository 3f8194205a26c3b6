// Package catalog tells a model what it may subscribe to: the event sources
// (adapters) and whether the operator set them up, the event types each
// emits with a JSON Schema of their data and an example, the state of
// upstream MCP servers, and the types recently posted to POST /v1/events.
// The events_catalog tool and the events://catalog resource both read it.
package catalog

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// A type posted to /v1/events stays listed DefaultSeenWindow. At most
// DefaultSeenLimit types are kept, and a quarter of it of one source (a
// type's first segment); past it a new type is not listed until some age
// out (subscriptions.TypeStore).
const (
	DefaultSeenWindow = 24 * time.Hour
	DefaultSeenLimit  = 500
)

// Source is one source of events the catalog lists.
type Source struct {
	// Name is the source's name, such as "github".
	Name string
	// Description says what the source is, in one line.
	Description string
	// Endpoint is where it receives webhooks, if it does.
	Endpoint string
	// Types lists what it emits; nil when it is not configured.
	Types func() []mcpe.EventType
	// States reports its upstreams' states, for sources that connect out.
	States func() []mcpe.SourceState
	// Configured is false for a known source the operator has not set up.
	Configured bool
	// Values are all the values some placeholders of its types take (<event>
	// of github.<event>.<action>): a pattern naming another matches none.
	Values map[string][]string
}

// Options configure a Catalog.
type Options struct {
	// Sources are the known sources, configured or not.
	Sources []Source
	// Store keeps the types posted to /v1/events across restarts; nil
	// lists none.
	Store subscriptions.TypeStore
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// seenWindow and seenLimit, set only by tests, replace
	// DefaultSeenWindow and DefaultSeenLimit when not zero.
	seenWindow time.Duration
	seenLimit  int
}

// keepEvery is how often a type posted again and again is written to the
// store: its lastSeenAt is to the minute.
const keepEvery = time.Minute

// Catalog is the event catalog. It is safe for concurrent use.
type Catalog struct {
	opts Options

	mu sync.Mutex
	// tried is when this process last asked the store to keep each type,
	// and whether it did: a type refused (the catalog full) or not
	// written (the store failing) is asked again keepEvery later, not at
	// each event.
	tried map[string]try
	// watchers are called when the set of kept types may have changed;
	// expiry is armed for the oldest kept type while there are watchers.
	watchers map[int]func()
	nextID   int
	expiry   clock.Timer
	// kept is what the store kept when last read, at keptAt (zero: read
	// it again).
	kept   []mcpe.SeenType
	keptAt time.Time
}

// try is one request to the store to keep a type.
type try struct {
	at   time.Time
	kept bool
}

// keptFresh is how long the types read from the store are listed before
// they are read again: what another server kept shows that much later.
const keptFresh = time.Second

// New returns a Catalog.
func New(opts Options) *Catalog {
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	opts.seenWindow = cmp.Or(opts.seenWindow, DefaultSeenWindow)
	opts.seenLimit = cmp.Or(opts.seenLimit, DefaultSeenLimit)
	return &Catalog{opts: opts, tried: make(map[string]try), watchers: make(map[int]func())}
}

// Observe records that an event of type t was accepted on /v1/events.
func (c *Catalog) Observe(ctx context.Context, t string) {
	now := c.opts.Clock.Now().UTC().Truncate(time.Second)
	c.mu.Lock()
	last, ok := c.tried[t]
	c.mu.Unlock()
	if c.opts.Store == nil || ok && now.Sub(last.at) < keepEvery {
		return
	}
	kept, err := c.opts.Store.KeepType(ctx, t, now, c.opts.seenWindow, c.opts.seenLimit)
	if err != nil {
		c.opts.Logger.Warn("keep a posted event type", "type", t, "error", err)
	}
	c.mu.Lock()
	if len(c.tried) >= c.opts.seenLimit {
		clear(c.tried)
	}
	c.tried[t] = try{now, kept}
	var watchers []func()
	if kept && !last.kept { // newly listed
		watchers = slices.Collect(maps.Values(c.watchers))
		c.keptAt = time.Time{}
	}
	c.mu.Unlock()
	if kept {
		c.notify(ctx, watchers)
	}
}

// Watch calls f, in a goroutine of the caller's or a timer's, whenever the
// set of types the catalog lists may have changed: a type posted to
// /v1/events for the first time within the window, or one that aged out
// of it. The sources' own types are fixed while the server
// runs. Stop ends the calls.
func (c *Catalog) Watch(f func()) (stop func()) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.watchers[id] = f
	c.mu.Unlock()
	c.notify(context.Background(), nil)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers, id)
	}
}

// notify calls watchers, then makes sure, while there are watchers, that a
// timer is due when the oldest kept type leaves the window (past it by a
// hair: a type seen exactly a window ago is still listed), to call them.
func (c *Catalog) notify(ctx context.Context, watchers []func()) {
	for _, f := range watchers {
		f()
	}
	c.mu.Lock()
	idle := c.expiry != nil || len(c.watchers) == 0 || c.opts.Store == nil
	c.mu.Unlock()
	if idle {
		return
	}
	now := c.opts.Clock.Now()
	kept, err := c.opts.Store.KeptTypes(ctx, now, c.opts.seenWindow)
	if err != nil || len(kept) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expiry == nil {
		c.expiry = c.opts.Clock.AfterFunc(kept[len(kept)-1].LastSeenAt.Add(c.opts.seenWindow).Sub(now)+time.Millisecond, func() {
			c.mu.Lock()
			c.expiry = nil
			watchers := slices.Collect(maps.Values(c.watchers))
			c.mu.Unlock()
			c.notify(context.Background(), watchers)
		})
	}
}

// Publisher wraps p so that the types it accepts are recorded as seen.
func (c *Catalog) Publisher(p subscriptions.Publisher) subscriptions.Publisher {
	return observer{p: p, c: c}
}

type observer struct {
	p subscriptions.Publisher
	c *Catalog
}

func (o observer) Publish(ctx context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	res, err := o.p.Publish(ctx, ev)
	if err == nil && !res.Duplicate {
		o.c.Observe(ctx, ev.Type)
	}
	return res, err
}

// Get returns the catalog, keeping the types that match req.Pattern: a
// family whose types are listed (github.issues.<action>) by the types it
// matches; another by familyMatches, unless the pattern's literal start
// names, where its placeholder is, what another type of its source
// declares (github.<event>.<action> is the other GitHub events, not
// github.issues.*). A pattern without wildcards names one type: it gets
// the one entry that declares it, the type itself or the first family that
// has it.
func (c *Catalog) Get(ctx context.Context, req mcpe.CatalogRequest) (*mcpe.Catalog, error) {
	match, exact, prefix := func(string) bool { return true }, false, ""
	if req.Pattern != "" {
		p, err := subscriptions.CompilePattern(req.Pattern)
		if err != nil {
			return nil, err
		}
		match, exact, prefix = p.Match, p.Exact(), p.Prefix()
	}
	out := &mcpe.Catalog{}
	for _, s := range c.opts.Sources {
		cs := mcpe.CatalogSource{Name: s.Name, Configured: s.Configured, Endpoint: s.Endpoint, Description: s.Description}
		if s.Configured && s.States != nil {
			cs.Upstreams = s.States()
		}
		out.Sources = append(out.Sources, cs)
		if !s.Configured || s.Types == nil {
			continue
		}
		types, declared := s.Types(), ""
		for _, t := range types {
			if !isFamily(t.Type) || len(t.Types) > 0 {
				declared += "\n" + t.Type + "."
			}
		}
		for _, t := range types {
			known := len(t.Types) > 0
			t.Types = slices.DeleteFunc(slices.Clone(t.Types), func(typ string) bool { return !match(typ) })
			start, _, _ := strings.Cut(t.Type, "<")
			seg, _, named := strings.Cut(strings.TrimPrefix(prefix, start), ".")
			open := isFamily(t.Type) && familyMatches(t.Type, match, prefix, s.Values) && !(named && strings.HasPrefix(prefix, start) && strings.Contains(declared, "\n"+start+seg+"."))
			if known && len(t.Types) > 0 || !known && (match(t.Type) || open) {
				out.Types = append(out.Types, mcpe.CatalogType{Source: s.Name, EventType: t})
			}
		}
	}
	if exact && len(out.Types) > 1 {
		i := slices.IndexFunc(out.Types, func(t mcpe.CatalogType) bool { return !isFamily(t.Type) || len(t.Types) > 0 })
		out.Types = out.Types[max(i, 0) : max(i, 0)+1]
	}
	if c.opts.Store != nil {
		kept, err := c.keptTypes(ctx)
		if err != nil {
			return nil, err
		}
		out.SeenRecently = slices.DeleteFunc(kept, func(t mcpe.SeenType) bool { return !match(t.Type) })
	}
	return out, nil
}

// keptTypes returns the types the store keeps, read at most every
// keptFresh, and again once this process kept a new one.
func (c *Catalog) keptTypes(ctx context.Context) ([]mcpe.SeenType, error) {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	kept, fresh := slices.Clone(c.kept), now.Sub(c.keptAt) < keptFresh
	c.mu.Unlock()
	if fresh {
		return kept, nil
	}
	kept, err := c.opts.Store.KeptTypes(ctx, now, c.opts.seenWindow)
	if err == nil {
		c.mu.Lock()
		c.kept, c.keptAt = kept, now
		c.mu.Unlock()
	}
	return slices.Clone(kept), err
}
