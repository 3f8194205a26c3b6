// Package config reads the operator's YAML configuration file. Unknown keys
// are errors, every value is checked, and each error names the key it is
// about. Zero values mean "use the default"; the defaults are documented on
// each field and applied by the packages that own them.
//
// A section that configures a package (handlers.bash, adapters.github, ...)
// turns into that package's options with its Options method, and is checked
// by their Validate: the file and the package refuse a value with the same
// words, and Within puts the section's path before the key. What only YAML
// has (unknown keys, durations, token or tokenEnv) is checked here.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"go.yaml.in/yaml/v3"
)

// Config is the whole file.
type Config struct {
	// DB is the SQLite database path (":memory:" keeps nothing) or a
	// postgres:// or postgresql:// URL. Default: a file under the user's
	// data directory.
	DB string `yaml:"db"`
	// HTTP configures the HTTP listener.
	HTTP HTTP `yaml:"http"`
	// Auth configures who may use the MCP endpoint over HTTP.
	Auth Auth `yaml:"auth"`
	// Ingest configures POST /v1/events.
	Ingest Ingest `yaml:"ingest"`
	// Subscriptions configures limits on subscriptions.
	Subscriptions Subscriptions `yaml:"subscriptions"`
	// Inbox configures what is kept for events_poll.
	Inbox Inbox `yaml:"inbox"`
	// Delivery configures cron and scheduled delivery.
	Delivery Delivery `yaml:"delivery"`
	// Handlers configures the handlers subscriptions may carry.
	Handlers Handlers `yaml:"handlers"`
	// Adapters configures the event sources.
	Adapters Adapters `yaml:"adapters"`
	// Log configures logging to stderr.
	Log Log `yaml:"log"`
	// Conversation configures conversation events (conversation/userMessage).
	Conversation Conversation `yaml:"conversation"`
	// Debug configures what helps find a problem in a running server.
	Debug Debug `yaml:"debug"`
	// Console configures the web console at /console.
	Console Console `yaml:"console"`
	// Metrics configures the Prometheus metrics on GET /metrics.
	Metrics Metrics `yaml:"metrics"`
}

// Console configures the web console served at /console with HTTP. A
// principal logs in with its auth.tokens token and sees its own
// subscriptions; the admin token sees every principal's. With neither
// (no auth.tokens and no admin token), the console is off.
type Console struct {
	// AdminToken logs in as the administrator; AdminTokenEnv names an
	// environment variable holding it instead. Neither: no administrator.
	AdminToken    string `yaml:"adminToken"`
	AdminTokenEnv string `yaml:"adminTokenEnv"`
	// Disabled turns the console off even when it could log people in.
	Disabled bool `yaml:"disabled"`
}

// ConsoleAdminToken returns the console's admin token, or "" when none is
// configured.
func (c *Config) ConsoleAdminToken() (string, error) {
	cc := c.Console
	if cc.AdminToken == "" && cc.AdminTokenEnv == "" {
		return "", nil
	}
	switch {
	case cc.AdminToken != "" && cc.AdminTokenEnv != "":
		return "", mcpe.Invalid("console", "give adminToken or adminTokenEnv, not both")
	case cc.AdminTokenEnv != "":
		v := os.Getenv(cc.AdminTokenEnv)
		if v == "" {
			return "", mcpe.Invalid("console.adminTokenEnv", "environment variable %s is not set or empty", cc.AdminTokenEnv)
		}
		return checkAdminToken("console.adminTokenEnv", v)
	}
	return checkAdminToken("console.adminToken", cc.AdminToken)
}

// checkAdminToken refuses an admin token short enough to guess.
func checkAdminToken(field, v string) (string, error) {
	if len(v) < 16 {
		return "", mcpe.Invalid(field, "the admin token has %d characters; give at least 16 (e.g. the output of: openssl rand -hex 32)", len(v))
	}
	return v, nil
}

// Metrics configures GET /metrics (Prometheus). Off unless Enabled or Addr
// is set.
type Metrics struct {
	// Enabled serves /metrics on the HTTP listener.
	Enabled bool `yaml:"enabled"`
	// Addr serves /metrics on a listener of its own instead, e.g.
	// 127.0.0.1:9464. An address other machines reach needs Tokens.
	Addr string `yaml:"addr"`
	// Tokens, when given, are required of scrapers (a bearer token). On
	// the HTTP listener they are required when auth.tokens is configured.
	Tokens []Secret `yaml:"tokens"`
	// PrincipalLabel labels the inbox gauges with each principal; off,
	// they are totals. Turn it on only with a bounded set of principals.
	PrincipalLabel bool `yaml:"principalLabel"`
}

// On reports whether /metrics is served.
func (m Metrics) On() bool { return m.Enabled || m.Addr != "" }

// Debug configures diagnostics.
type Debug struct {
	// PprofAddr, when set, serves Go's profiles (net/http/pprof, under
	// /debug/pprof/) on a listener of their own at this loopback address,
	// e.g. 127.0.0.1:6060. Off by default.
	PprofAddr string `yaml:"pprofAddr"`
}

// HTTP configures the HTTP listener.
type HTTP struct {
	// Addr is the listen address, e.g. "127.0.0.1:8765". Empty: no HTTP
	// unless --http is given.
	Addr string `yaml:"addr"`
	// SessionTimeout closes MCP sessions idle for this long: no request
	// and no event stream, or an event stream that stayed quiet and did not
	// answer a ping. Default 5m.
	SessionTimeout Duration `yaml:"sessionTimeout"`
	// MaxSessionsPerPrincipal bounds the live MCP sessions of one
	// principal; past it the one idle longest is closed. Without
	// auth.tokens, the sessions count as one principal, and a new one past
	// it is refused. Default 100.
	MaxSessionsPerPrincipal int `yaml:"maxSessionsPerPrincipal"`
	// Stateless serves MCP protocol 2026-07-28 to the clients that ask
	// for it (its Streamable HTTP is stateless: a session per request,
	// notifications only on subscriptions/listen streams). It needs
	// auth.tokens, the only identity such a client has. Off, those
	// clients are told the versions this endpoint speaks and fall back to
	// 2025-11-25, as go-sdk clients do. Default false.
	Stateless bool `yaml:"stateless"`
}

// Auth configures bearer tokens for the MCP endpoint.
type Auth struct {
	// Tokens map bearer tokens to principals. With none, each HTTP session
	// is its own principal.
	Tokens []PrincipalToken `yaml:"tokens"`
}

// PrincipalToken is one bearer token and the principal it stands for.
type PrincipalToken struct {
	// Principal owns the subscriptions made with this token. "local" is
	// the principal of stdio sessions.
	Principal string `yaml:"principal"`
	Secret    `yaml:",inline"`
}

// Secret is a value given in the file (token) or read from an environment
// variable (tokenEnv).
type Secret struct {
	Token    string `yaml:"token"`
	TokenEnv string `yaml:"tokenEnv"`
}

// Ingest configures POST /v1/events.
type Ingest struct {
	// MaxBodyBytes bounds one request body. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// MaxDataDepth is how deeply an event's data may nest objects and
	// arrays, from any source. Default 64, at most 512.
	MaxDataDepth int `yaml:"maxDataDepth"`
	// Tokens, when given, are required of publishers.
	Tokens []Secret `yaml:"tokens"`
}

// Subscriptions configures limits.
type Subscriptions struct {
	// MaxPerPrincipal is the most active and paused subscriptions one
	// principal may have; a principal keeps at most as many in all, expired
	// ones included. Default 100.
	MaxPerPrincipal int `yaml:"maxPerPrincipal"`
	// MaxPatternCost bounds what matching one principal's active
	// subscriptions against a new event type may cost (the sum of their
	// patterns' costs; see the README). Default 4096.
	MaxPatternCost int `yaml:"maxPatternCost"`
}

// Inbox configures retention.
type Inbox struct {
	// MaxEntries is the most inbox entries kept per principal. Default 1000.
	MaxEntries int `yaml:"maxEntries"`
	// MaxAge is how long an entry is kept. Default 7d.
	MaxAge Duration `yaml:"maxAge"`
	// DedupWindow is how long an event's sourceEventId is remembered to
	// refuse redeliveries. Default 24h.
	DedupWindow Duration `yaml:"dedupWindow"`
	// ExpiredMaxAge is how long expired subscriptions stay listed. Default
	// 7d.
	ExpiredMaxAge Duration `yaml:"expiredMaxAge"`
}

// Delivery configures cron and scheduled delivery.
type Delivery struct {
	// MinEvery is the shortest "@every" interval a cron schedule may use.
	// Default 1m.
	MinEvery Duration `yaml:"minEvery"`
	// Window is how many of a principal's latest deliveries are kept in
	// memory for its live sessions; a session further behind reads them
	// from the inbox. Default 1024.
	Window int `yaml:"window"`
	// Backlog bounds what one live session may be owed and not yet sent.
	Backlog Backlog `yaml:"backlog"`
	// FollowInterval is how often this server reads what other servers
	// sharing its database wrote: events they accepted for sessions here,
	// and subscriptions changed through them. Default 100ms.
	FollowInterval Duration `yaml:"followInterval"`
	// HeartbeatInterval is how often an events/stream of the SEP-3415
	// events extension sends notifications/events/heartbeat with its
	// cursor. Default 30s, the most the SEP allows.
	HeartbeatInterval Duration `yaml:"heartbeatInterval"`
}

// Backlog bounds what a live session that reads slower than events arrive
// may fall behind by.
type Backlog struct {
	// MaxEntries is the most deliveries a session may be owed. Default
	// 100000.
	MaxEntries int64 `yaml:"maxEntries"`
	// MaxBytes is the most bytes of notifications it may be owed. Default
	// 268435456 (256 MiB).
	MaxBytes int64 `yaml:"maxBytes"`
	// OnFull is "refuse" (events for the owner are answered 429 until the
	// session catches up; the default) or "skip" (they are accepted, and
	// the session skips ahead and is told where to poll from).
	OnFull string `yaml:"onFull"`
}

// Realtime returns the realtime registry's options for d.
func (d Delivery) Realtime() realtime.Options {
	b := d.Backlog
	return realtime.Options{WindowEntries: d.Window, BacklogEntries: b.MaxEntries, BacklogBytes: b.MaxBytes, OnFullBacklog: b.OnFull}
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is text or json. Default text.
	Format string `yaml:"format"`
}

// Duration is a time.Duration written like "90s", "15m", "24h" or "7d".
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return &valueError{node: n, err: errors.New("want a duration such as \"30s\", \"15m\", \"24h\" or \"7d\"")}
	}
	v, err := ParseDuration(s)
	if err != nil {
		return &valueError{node: n, err: err}
	}
	*d = Duration(v)
	return nil
}

// valueError is a bad value found while decoding. The decoder does not tell
// an UnmarshalYAML method which key it is decoding, so Parse finds the key
// from the node's position.
type valueError struct {
	node *yaml.Node
	err  error
}

func (e *valueError) Error() string { return fmt.Sprintf("line %d: %v", e.node.Line, e.err) }

func (e *valueError) Unwrap() error { return e.err }

// keyPath returns the dotted path of the key whose value starts at line and
// column in n, such as "inbox.maxAge", or "" if there is none.
func keyPath(n *yaml.Node, line, column int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := keyPath(c, line, column, prefix); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if v.Line == line && v.Column == column {
				return path
			}
			if p := keyPath(v, line, column, path); p != "" {
				return p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p := keyPath(c, line, column, fmt.Sprintf("%s[%d]", prefix, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// maxDays is the longest duration in days that a time.Duration holds.
const maxDays = int64(math.MaxInt64 / (24 * time.Hour))

// ParseDuration parses a Go duration, or a whole number of days like "7d".
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseInt(days, 10, 64); err == nil && n >= 0 {
			if n > maxDays {
				return 0, fmt.Errorf("%q is too long; at most %dd is accepted", s, maxDays)
			}
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; use e.g. \"30s\", \"15m\", \"24h\" or \"7d\"", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return v, nil
}

// Load reads and checks the file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse reads and checks a configuration.
func Parse(r io.Reader) (*Config, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var c Config
	if len(bytes.TrimSpace(body)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(body))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			var ve *valueError
			if errors.As(err, &ve) {
				var root yaml.Node
				if yaml.Unmarshal(body, &root) == nil {
					if key := keyPath(&root, ve.node.Line, ve.node.Column, ""); key != "" {
						return nil, fmt.Errorf("line %d: %s: %v", ve.node.Line, key, ve.err)
					}
				}
			}
			var te *yaml.TypeError
			if errors.As(err, &te) {
				return nil, explainDecodeError(te, body)
			}
			return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// validate checks c and returns every problem it finds, joined.
func (c *Config) validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.Subscriptions.MaxPerPrincipal < 0 {
		add(errors.New("subscriptions.maxPerPrincipal must be positive (or left out for 100)"))
	}
	if err := (&httpapi.IngestOptions{MaxBodyBytes: c.Ingest.MaxBodyBytes}).Validate(); err != nil {
		add(Within("ingest", err))
	}
	if c.Inbox.MaxEntries < 0 {
		add(errors.New("inbox.maxEntries must be positive (or left out for 1000)"))
	}
	if c.Subscriptions.MaxPatternCost < 0 {
		add(errors.New("subscriptions.maxPatternCost must be positive (or left out for 4096)"))
	}
	if d := c.Ingest.MaxDataDepth; d < 0 || d > 512 {
		add(fmt.Errorf("ingest.maxDataDepth: is %d; give 1 to 512, or leave it out for 64", d))
	}
	if c.HTTP.MaxSessionsPerPrincipal < 0 {
		add(errors.New("http.maxSessionsPerPrincipal must be positive (or left out for 100)"))
	}
	if c.HTTP.Stateless && len(c.Auth.Tokens) == 0 {
		add(errors.New("http.stateless needs auth.tokens: a client of protocol 2026-07-28 has no session, so a bearer token is the only way to tell who it is; add tokens, or leave http.stateless out"))
	}
	if opts := c.Delivery.Realtime(); opts.Validate() != nil {
		add(Within("delivery", opts.Validate()))
	}
	if a := c.Debug.PprofAddr; a != "" {
		if err := CheckLoopback(a); err != nil {
			add(fmt.Errorf("debug.pprofAddr: %w", err))
		}
	}
	if f := time.Duration(c.Delivery.FollowInterval); f != 0 && (f < time.Millisecond || f > time.Minute) {
		add(fmt.Errorf("delivery.followInterval: is %v; give a duration from 1ms to 1m, or leave it out for 100ms", f))
	}
	if h := time.Duration(c.Delivery.HeartbeatInterval); h != 0 && (h < 10*time.Millisecond || h > 30*time.Second) {
		add(fmt.Errorf("delivery.heartbeatInterval: is %v; give a duration from 10ms to 30s, or leave it out for 30s", h))
	}
	if m := time.Duration(c.Delivery.MinEvery); m != 0 && m < time.Second {
		add(fmt.Errorf("delivery.minEvery %v is shorter than a second; cron fires at most once a second", m))
	}
	seen := map[string]string{}
	for i, t := range c.Auth.Tokens {
		field := fmt.Sprintf("auth.tokens[%d]", i)
		switch p := t.Principal; {
		case p == "":
			add(fmt.Errorf("%s.principal is required: name who owns the subscriptions made with this token", field))
		case strings.HasPrefix(p, "session:"):
			add(fmt.Errorf("%s.principal %q: names starting with \"session:\" are reserved for HTTP sessions without a token", field, p))
		case len(p) > 128:
			add(fmt.Errorf("%s.principal is longer than 128 characters", field))
		}
		v, err := t.Secret.Value(field)
		if err != nil {
			add(err)
			continue
		}
		if prev, dup := seen[v]; dup {
			add(fmt.Errorf("%s has the same token as %s; each token must be unique", field, prev))
		}
		seen[v] = field
	}
	if admin, err := c.ConsoleAdminToken(); err != nil {
		add(err)
	} else if field, dup := seen[admin]; dup && admin != "" {
		add(fmt.Errorf("console: the admin token is the token of %s; give the administrator a token of its own", field))
	}
	for i, t := range c.Ingest.Tokens {
		if _, err := t.Value(fmt.Sprintf("ingest.tokens[%d]", i)); err != nil {
			add(err)
		}
	}
	add(c.Metrics.validate(len(c.Auth.Tokens) > 0))
	add(c.Handlers.validate())
	add(c.Adapters.validate())
	if err := c.Conversation.Options().Validate(); err != nil {
		add(Within("conversation", err))
	}
	if _, err := c.Log.SlogLevel(); err != nil {
		add(fmt.Errorf("log.level %q: use debug, info, warn or error", c.Log.Level))
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		add(fmt.Errorf("log.format %q: use \"text\" or \"json\"", c.Log.Format))
	}
	return errors.Join(errs...)
}

// Value returns the secret, reading the environment variable if one is named.
// field names the secret in errors, which are *mcpe.InvalidError.
func (s Secret) Value(field string) (string, error) {
	switch {
	case s.Token != "" && s.TokenEnv != "":
		return "", mcpe.Invalid(field, "give token or tokenEnv, not both")
	case s.TokenEnv != "":
		v := os.Getenv(s.TokenEnv)
		if v == "" {
			return "", mcpe.Invalid(field+".tokenEnv", "environment variable %s is not set or empty", s.TokenEnv)
		}
		return v, nil
	case s.Token != "":
		return s.Token, nil
	}
	return "", mcpe.Invalid(field, "give token (the value) or tokenEnv (an environment variable holding it)")
}

// Within puts err, about a setting of the section at path, under that path:
// the Field of an *mcpe.InvalidError is prefixed with it, so that
// "sandbox" in handlers.bash becomes "handlers.bash.sandbox"; another error
// is wrapped as "path: err". A nil err gives nil.
func Within(path string, err error) error {
	if err == nil {
		return nil
	}
	var ie *mcpe.InvalidError
	if errors.As(err, &ie) {
		field := path
		if ie.Field != "" {
			field += "." + ie.Field
		}
		return &mcpe.InvalidError{Field: field, Message: ie.Message}
	}
	return fmt.Errorf("%s: %w", path, err)
}

// SlogLevel returns the log level.
func (l Log) SlogLevel() (slog.Level, error) {
	return ParseLevel(l.Level)
}

// ParseLevel parses debug, info, warn or error; empty is info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: use debug, info, warn or error", s)
}

// validate checks the metrics section; auth says whether auth.tokens is
// configured.
func (m Metrics) validate(auth bool) error {
	var errs []error
	for i, t := range m.Tokens {
		if _, err := t.Value(fmt.Sprintf("metrics.tokens[%d]", i)); err != nil {
			errs = append(errs, err)
		}
	}
	if m.On() && m.PrincipalLabel && !auth {
		errs = append(errs, errors.New("metrics.principalLabel: auth.tokens is empty, so each HTTP session is a principal of its own and would be a label value: the series would grow without bound; configure auth.tokens (a bounded set of principals) or turn principalLabel off"))
	}
	switch {
	case !m.On() && (len(m.Tokens) > 0 || m.PrincipalLabel):
		errs = append(errs, errors.New("metrics: tokens or principalLabel are set but metrics are off; set metrics.enabled: true (on the HTTP listener) or metrics.addr (a listener of their own)"))
	case m.Addr != "":
		if _, _, err := net.SplitHostPort(m.Addr); err != nil {
			errs = append(errs, fmt.Errorf("metrics.addr: %q is not host:port (e.g. 127.0.0.1:9464): %w", m.Addr, err))
		} else if CheckLoopback(m.Addr) != nil && len(m.Tokens) == 0 {
			errs = append(errs, fmt.Errorf("metrics.tokens: metrics.addr %q is reachable from other machines; give metrics.tokens for the scraper's bearer token, or a loopback address", m.Addr))
		}
	case m.Enabled && auth && len(m.Tokens) == 0:
		errs = append(errs, errors.New("metrics.tokens: auth.tokens is configured, so /metrics on the HTTP listener needs tokens of its own; give metrics.tokens (the scraper's bearer token), or serve metrics on a loopback metrics.addr"))
	}
	return errors.Join(errs...)
}

// MetricsTokens returns the metrics tokens, each mapped to "metrics".
func (c *Config) MetricsTokens() (map[string]string, error) {
	return tokens("metrics.tokens", c.Metrics.Tokens, func(s Secret) (Secret, string) { return s, "metrics" })
}

// PrincipalTokens returns token -> principal for auth.tokens.
func (c *Config) PrincipalTokens() (map[string]string, error) {
	return tokens("auth.tokens", c.Auth.Tokens, func(t PrincipalToken) (Secret, string) { return t.Secret, t.Principal })
}

// IngestTokens returns the ingest tokens, each mapped to "ingest".
func (c *Config) IngestTokens() (map[string]string, error) {
	return tokens("ingest.tokens", c.Ingest.Tokens, func(s Secret) (Secret, string) { return s, "ingest" })
}

// tokens reads each secret of list and maps it to its principal; field names
// the list in errors.
func tokens[T any](field string, list []T, split func(T) (Secret, string)) (map[string]string, error) {
	out := make(map[string]string, len(list))
	for i, item := range list {
		secret, principal := split(item)
		v, err := secret.Value(fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out[v] = principal
	}
	return out, nil
}

// CheckLoopback checks that addr (host:port) names a loopback address: the
// profiles show the server's memory, and must not be reachable from other
// machines.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:6060): %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address; give 127.0.0.1:PORT, [::1]:PORT or localhost:PORT", addr)
	}
	return nil
}
