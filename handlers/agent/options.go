package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults for Options.
const (
	DefaultMaxTokens          = 1024
	DefaultMaxTurns           = 8
	DefaultMaxToolCalls       = 32
	DefaultMaxRunTime         = 2 * time.Minute
	DefaultMaxToolResultBytes = 16 << 10
	DefaultMaxEventBytes      = 64 << 10
	DefaultUserAgent          = "mcpe-server-agent/1"
)

// MaxOutputBytes bounds Outcome.Output: a longer answer is cut, on a UTF-8
// boundary, and marked as cut. It is what events_list shows of an outcome
// (mcpe.MaxStatusOutput), so a whole answer is shown.
const MaxOutputBytes = mcpe.MaxStatusOutput

// DefaultOfflineRetries are the delays before the next attempt when no
// route to an LLM exists at run time (Options.OfflineRetries): after
// attempts 1 to 3. The delivery fails after the fourth attempt.
var DefaultOfflineRetries = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}

// DefaultRetrySchedule are the delays before the next attempt after a
// passing failure of the LLM (Options.RetrySchedule): after attempts 1
// to 3.
var DefaultRetrySchedule = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// ToolSet is this server's own tools, as the agent's LLM may call them.
// *tools.Set implements it.
type ToolSet interface {
	// Tools returns the tools' definitions.
	Tools() []*mcp.Tool
	// CallTool calls the tool name for principal, exactly as a client of
	// principal would. A mistake in args is an error result, not an error.
	CallTool(ctx context.Context, principal, name string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// Endpoint is an OpenAI-compatible chat-completions endpoint the operator
// pays for, used when the owner of a subscription has no live session that
// can sample.
type Endpoint struct {
	// URL is the full chat-completions URL, such as
	// "https://api.openai.com/v1/chat/completions" or
	// "http://127.0.0.1:11434/v1/chat/completions". Required.
	URL string
	// APIKey is sent as "Authorization: Bearer <APIKey>". Zero: no
	// Authorization header (a local server).
	APIKey string
	// Model is the model every request to this endpoint names. Required.
	// A subscription's handler.model does not override it: the operator
	// chooses what the endpoint costs. (handler.model is a preference hint
	// that only MCP sampling passes on.)
	Model string
	// HTTPClient sends the requests. Zero: http.DefaultClient. Each run's
	// deadline (Options.MaxRunTime) bounds the requests in any case.
	HTTPClient *http.Client
	// UserAgent is sent as User-Agent. Zero: DefaultUserAgent.
	UserAgent string
}

// Options configure an Agent. A nil *Options means all defaults: no
// session, no tool, no endpoint, so that Check refuses every agent handler.
type Options struct {
	// Sessions returns the live MCP sessions of a principal, in order of
	// preference. A session can run a handler when its client declared the
	// sampling capability and speaks a protocol version before 2026-07-28
	// (which forbids sampling requests the server starts); it can run one
	// with tools when it declared sampling.tools too. Zero: no session.
	Sessions func(principal string) []*mcp.ServerSession
	// Tools are this server's tools; a handler may let its LLM call those
	// it names in handler.tools. Zero: none.
	Tools ToolSet
	// Endpoint is the LLM used when the owner has no session that can
	// sample. Zero: none, and a handler only runs while its owner is
	// connected with a client that can sample.
	Endpoint *Endpoint
	// DefaultMaxTokens is the maxTokens of each model call when the
	// handler sets none; the configuration file, and Validate's errors,
	// call it maxTokens. Zero: DefaultMaxTokens (1024).
	DefaultMaxTokens int
	// MaxTurns bounds the model calls of one run: the tool loop stops
	// there. The last call tells the model it may use no more tools.
	// Zero: DefaultMaxTurns (8).
	MaxTurns int
	// MaxToolCalls bounds the tool calls of one run; further calls the
	// model asks for are answered with an error, not made. Zero:
	// DefaultMaxToolCalls (32).
	MaxToolCalls int
	// MaxRunTime bounds one run, tool calls included. Zero:
	// DefaultMaxRunTime (2m).
	MaxRunTime time.Duration
	// MaxToolResultBytes bounds the text of one tool result handed to the
	// model; the rest is cut. Zero: DefaultMaxToolResultBytes (16 KiB).
	MaxToolResultBytes int
	// MaxEventBytes bounds the event data put in the prompt; a larger
	// payload is cut and handed on as a JSON string. Zero:
	// DefaultMaxEventBytes (64 KiB).
	MaxEventBytes int
	// OfflineRetries are the delays before the next attempt when, at run
	// time, the owner has no session that can sample and there is no
	// Endpoint: OfflineRetries[i] follows attempt i+1; then the delivery
	// fails. Empty: DefaultOfflineRetries (1m, 5m, 30m).
	OfflineRetries []time.Duration
	// RetrySchedule are the delays before the next attempt after a passing
	// failure before any tool was called: the endpoint answered 408, 429
	// or 5xx or could not be reached, the session closed, or the model did
	// not answer within MaxRunTime. RetrySchedule[i] follows attempt i+1.
	// Empty: DefaultRetrySchedule (30s, 2m, 10m).
	RetrySchedule []time.Duration
	// MaxRetryAfter caps the delay an endpoint's Retry-After may ask for.
	// Zero: one hour.
	MaxRetryAfter time.Duration
	// Logger logs runs, without event data. Zero: discard.
	Logger *slog.Logger
	// Clock times each run for the log. Zero: the wall clock. MaxRunTime
	// is a context deadline, on the wall clock in any case.
	Clock clock.Clock
}

// withDefaults returns a copy of o with the zero fields set to their
// defaults, or an error naming the first field that is wrong.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if err := c.Validate(); err != nil {
		return Options{}, err
	}
	if c.Sessions == nil {
		c.Sessions = func(string) []*mcp.ServerSession { return nil }
	}
	if c.Endpoint != nil {
		ep := *c.Endpoint
		ep.HTTPClient = cmp.Or(ep.HTTPClient, http.DefaultClient)
		ep.UserAgent = cmp.Or(ep.UserAgent, DefaultUserAgent)
		c.Endpoint = &ep
	}
	c.DefaultMaxTokens = cmp.Or(c.DefaultMaxTokens, DefaultMaxTokens)
	c.MaxTurns = cmp.Or(c.MaxTurns, DefaultMaxTurns)
	c.MaxToolCalls = cmp.Or(c.MaxToolCalls, DefaultMaxToolCalls)
	c.MaxRunTime = cmp.Or(c.MaxRunTime, DefaultMaxRunTime)
	c.MaxToolResultBytes = cmp.Or(c.MaxToolResultBytes, DefaultMaxToolResultBytes)
	c.MaxEventBytes = cmp.Or(c.MaxEventBytes, DefaultMaxEventBytes)
	if len(c.OfflineRetries) == 0 {
		c.OfflineRetries = DefaultOfflineRetries
	}
	c.OfflineRetries = slices.Clone(c.OfflineRetries)
	if len(c.RetrySchedule) == 0 {
		c.RetrySchedule = DefaultRetrySchedule
	}
	c.RetrySchedule = slices.Clone(c.RetrySchedule)
	c.MaxRetryAfter = cmp.Or(c.MaxRetryAfter, time.Hour)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.Clock = cmp.Or[clock.Clock](c.Clock, clock.Real{})
	return c, nil
}

// maxAgentTurns bounds Options.MaxTurns.
const maxAgentTurns = 1000

// Validate checks the settings of o. An error is an *mcpe.InvalidError
// whose Field is the setting's key in the configuration file, relative to
// the agent handler's section, such as "endpoint.url" or "maxTurns".
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if ep := o.Endpoint; ep != nil {
		u, err := url.Parse(ep.URL)
		switch {
		case ep.URL == "":
			return mcpe.Invalid("endpoint.url", "is required: the full chat-completions URL, e.g. \"https://api.openai.com/v1/chat/completions\"")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return mcpe.Invalid("endpoint.url", "%q is not an http or https URL; give the full chat-completions URL, e.g. \"https://api.openai.com/v1/chat/completions\"", ep.URL)
		case u.User != nil:
			return mcpe.Invalid("endpoint.url", "must not hold user information; put the key in endpoint.apiKey")
		}
		if ep.Model == "" {
			return mcpe.Invalid("endpoint.model", "is required: the model the endpoint serves, e.g. \"gpt-4o-mini\"")
		}
		if strings.ContainsAny(ep.APIKey, "\r\n\x00") || strings.TrimSpace(ep.APIKey) != ep.APIKey {
			return mcpe.Invalid("endpoint.apiKey", "cannot go in an HTTP header: it has a line break, NUL or surrounding space")
		}
		if strings.ContainsAny(ep.UserAgent, "\r\n\x00") {
			return mcpe.Invalid("endpoint.userAgent", "%q cannot go in an HTTP header", ep.UserAgent)
		}
	}
	ints := []struct {
		field string
		v     int
		def   int
		limit int
	}{
		{"maxTokens", o.DefaultMaxTokens, DefaultMaxTokens, mcpe.MaxHandlerTokens},
		{"maxTurns", o.MaxTurns, DefaultMaxTurns, maxAgentTurns},
		{"maxToolCalls", o.MaxToolCalls, DefaultMaxToolCalls, 10000},
		{"maxToolResultBytes", o.MaxToolResultBytes, DefaultMaxToolResultBytes, 16 << 20},
		{"maxEventBytes", o.MaxEventBytes, DefaultMaxEventBytes, 16 << 20},
	}
	for _, f := range ints {
		if f.v < 0 || f.v > f.limit {
			return mcpe.Invalid(f.field, "is %d; give a number from 1 to %d, or leave it out for %d", f.v, f.limit, f.def)
		}
	}
	if o.MaxRunTime < 0 {
		return mcpe.Invalid("maxRunTime", "is %v; give a positive duration, or leave it out for %v", o.MaxRunTime, DefaultMaxRunTime)
	}
	if o.MaxRetryAfter < 0 {
		return mcpe.Invalid("maxRetryAfter", "is %v; give a positive duration, or leave it out for 1h", o.MaxRetryAfter)
	}
	for i, d := range o.OfflineRetries {
		if d <= 0 {
			return mcpe.Invalid(fmt.Sprintf("offlineRetries[%d]", i), "is %v; give a positive duration such as 5m", d)
		}
	}
	for i, d := range o.RetrySchedule {
		if d <= 0 {
			return mcpe.Invalid(fmt.Sprintf("retrySchedule[%d]", i), "is %v; give a positive duration such as 30s", d)
		}
	}
	return nil
}
