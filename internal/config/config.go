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
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Auth configures who may use the MCP endpoint and POST /v1/events.
	Auth Auth `yaml:"auth"`
	// Subscriptions configures limits on subscriptions and their delivery.
	Subscriptions Subscriptions `yaml:"subscriptions"`
	// Inbox configures what is kept for events_poll.
	Inbox Inbox `yaml:"inbox"`
	// Handlers configures the handlers subscriptions may carry.
	Handlers Handlers `yaml:"handlers"`
	// Adapters configures the event sources.
	Adapters Adapters `yaml:"adapters"`
	// Log configures logging to stderr.
	Log Log `yaml:"log"`
	// Conversation configures conversation events (conversation/userMessage).
	Conversation Conversation `yaml:"conversation"`
	// Console configures the web console at /console.
	Console Console `yaml:"console"`
	// Metrics configures the Prometheus metrics on GET /metrics.
	Metrics Metrics `yaml:"metrics"`
}

// Console configures the web console served at /console with HTTP. A
// principal logs in with its auth.tokens token and sees its own
// subscriptions; the administrator's token (token or tokenEnv) sees every
// principal's. With neither (no auth.tokens and no admin token), the
// console is off.
type Console struct {
	Secret `yaml:",inline"`
	// Disabled turns the console off even when it could log people in.
	Disabled bool `yaml:"disabled"`
}

// ConsoleAdminToken returns the console's admin token, or "" when none is
// configured.
func (c *Config) ConsoleAdminToken() (string, error) {
	if c.Console.Secret == (Secret{}) {
		return "", nil
	}
	v, err := c.Console.Value("console")
	if err == nil && len(v) < 16 {
		err = mcpe.Invalid("console", "the admin token has %d characters; give at least 16 (e.g. the output of: openssl rand -hex 32)", len(v))
	}
	return v, err
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

// HTTP configures the HTTP listener.
type HTTP struct {
	// Addr is the listen address, e.g. "127.0.0.1:8765". Empty: no HTTP
	// unless --http is given.
	Addr string `yaml:"addr"`
	// Stateless serves MCP protocol 2026-07-28 to the clients that ask
	// for it (its Streamable HTTP is stateless: a session per request,
	// notifications only on subscriptions/listen streams). It needs
	// auth.tokens, the only identity such a client has. Off, those
	// clients are told the versions this endpoint speaks and fall back to
	// 2025-11-25, as go-sdk clients do. Default false.
	Stateless bool `yaml:"stateless"`
}

// Auth configures bearer tokens for the MCP endpoint and POST /v1/events.
type Auth struct {
	// Tokens map bearer tokens to principals. With none, each HTTP session
	// is its own principal.
	Tokens []PrincipalToken `yaml:"tokens"`
	// IngestTokens, when given, are required of publishers on POST
	// /v1/events (a body is at most 1 MiB).
	IngestTokens []Secret `yaml:"ingestTokens"`
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

// Subscriptions configures limits on subscriptions and their delivery.
type Subscriptions struct {
	// MaxPerPrincipal is the most active and paused subscriptions one
	// principal may have; a principal keeps at most as many in all, expired
	// ones included. Default 100.
	MaxPerPrincipal int `yaml:"maxPerPrincipal"`
	// MinEvery is the shortest "@every" interval a cron schedule may use.
	// Default 1m.
	MinEvery Duration `yaml:"minEvery"`
	// HeartbeatInterval is how often an events/stream of the SEP-3415
	// events extension sends notifications/events/heartbeat with its
	// cursor: shorter keeps a stream open through a proxy that closes
	// idle connections sooner. Default 30s, the most the SEP allows.
	HeartbeatInterval Duration `yaml:"heartbeatInterval"`
}

// Inbox configures retention.
type Inbox struct {
	// MaxEntries is the most inbox entries kept per principal. Default 1000.
	MaxEntries int `yaml:"maxEntries"`
	// MaxAge is how long an entry is kept, and expired subscriptions
	// stay listed. Default 7d.
	MaxAge Duration `yaml:"maxAge"`
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

// UnmarshalYAML reads a duration string. Its error is a *yaml.TypeError,
// so that decoding goes on to find every problem, marked with the value's
// position: the decoder does not say which key it decodes, and
// explainDecodeError finds it from there.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Decode(&s) != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d column %d: want a duration such as \"30s\", \"15m\", \"24h\" or \"7d\"", n.Line, n.Column)}}
	}
	v, err := ParseDuration(s)
	*d = Duration(v)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d column %d: %v", n.Line, n.Column, err)}}
	}
	return nil
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

// Load reads and checks the file at path, as Parse does.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse reads and checks a configuration. Its error is a Problems: every
// problem, those of decoding (unknown keys, bad values) and of checking
// alike. With it comes the configuration as far as it could be read, nil
// when the text is not YAML.
func Parse(r io.Reader) (*Config, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var c Config
	var ps Problems
	if len(bytes.TrimSpace(body)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(body))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
			}
			for _, line := range explainDecodeError(te, body) {
				ps = append(ps, errors.New(line))
			}
		}
	}
	if ps = ps.add(c.validate()); len(ps) > 0 {
		return &c, ps
	}
	return &c, nil
}

// Problems are the problems of a configuration, one a line.
type Problems []error

func (ps Problems) Error() string {
	if len(ps) == 1 {
		return ps[0].Error()
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return fmt.Sprintf("%d problems:\n  %s", len(ps), strings.Join(lines, "\n  "))
}

func (ps Problems) Unwrap() []error { return ps }

// add appends the errors that err joins.
func (ps Problems) add(err error) Problems {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			ps = ps.add(e)
		}
		return ps
	}
	if err != nil {
		ps = append(ps, err)
	}
	return ps
}

// validate checks c and returns every problem it finds, joined.
func (c *Config) validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) } // errors.Join drops the nil ones
	if c.Subscriptions.MaxPerPrincipal < 0 {
		add(errors.New("subscriptions.maxPerPrincipal must be positive (or left out for 100)"))
	}
	if c.Inbox.MaxEntries < 0 {
		add(errors.New("inbox.maxEntries must be positive (or left out for 1000)"))
	}
	if c.HTTP.Stateless && len(c.Auth.Tokens) == 0 {
		add(errors.New("http.stateless needs auth.tokens: a client of protocol 2026-07-28 has no session, so a bearer token is the only way to tell who it is; add tokens, or leave http.stateless out"))
	}
	if h := time.Duration(c.Subscriptions.HeartbeatInterval); h != 0 && (h < 10*time.Millisecond || h > 30*time.Second) {
		add(fmt.Errorf("subscriptions.heartbeatInterval: is %v; give a duration from 10ms to 30s, or leave it out for 30s", h))
	}
	if m := time.Duration(c.Subscriptions.MinEvery); m != 0 && m < time.Second {
		add(fmt.Errorf("subscriptions.minEvery %v is shorter than a second; cron fires at most once a second", m))
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
	for i, t := range c.Auth.IngestTokens {
		_, err := t.Value(fmt.Sprintf("auth.ingestTokens[%d]", i))
		add(err)
	}
	add(c.Metrics.validate(len(c.Auth.Tokens) > 0))
	add(c.Handlers.validate())
	add(c.Adapters.validate())
	add(Within("conversation", c.Conversation.Options().Validate()))
	if _, err := ParseLevel(c.Log.Level); err != nil {
		add(fmt.Errorf("log.level %q: use debug, info, warn or error", c.Log.Level))
	}
	if !slices.Contains([]string{"", "text", "json"}, c.Log.Format) {
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
			return "", mcpe.Invalid(strings.TrimPrefix(field+".tokenEnv", "."), "environment variable %s is not set or empty", s.TokenEnv)
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
		return &mcpe.InvalidError{Field: strings.TrimSuffix(path+"."+ie.Field, "."), Message: ie.Message}
	}
	return fmt.Errorf("%s: %w", path, err)
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
		_, err := t.Value(fmt.Sprintf("metrics.tokens[%d]", i))
		errs = append(errs, err) // errors.Join drops the nil ones
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
	return tokens("auth.ingestTokens", c.Auth.IngestTokens, func(s Secret) (Secret, string) { return s, "ingest" })
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
