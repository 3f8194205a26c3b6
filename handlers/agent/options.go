package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxOutputBytes bounds Outcome.Output: a longer answer is cut, on a UTF-8
// boundary, and marked as cut. It is what events_list shows of an outcome
// (mcpe.MaxStatusOutput), so a whole answer is shown.
const MaxOutputBytes = mcpe.MaxStatusOutput

// limits bound each run (see the package doc); tests set an Agent's own.
type limits struct {
	// maxTokens is each model call's maxTokens when the handler sets none.
	maxTokens, maxTurns, maxToolCalls, maxToolResultBytes, maxEventBytes int
	// maxRunTime bounds a run; maxRetryAfter caps an endpoint's Retry-After.
	maxRunTime, maxRetryAfter time.Duration
	// offlineRetries[i] follows attempt i+1 when no LLM can be reached;
	// retrySchedule[i] follows it after a passing failure of the LLM.
	offlineRetries, retrySchedule []time.Duration
}

var defaultLimits = limits{
	maxTokens: 1024, maxTurns: 8, maxToolCalls: 32, maxToolResultBytes: 16 << 10, maxEventBytes: 64 << 10,
	maxRunTime: 2 * time.Minute, maxRetryAfter: time.Hour,
	offlineRetries: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute},
	retrySchedule:  []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute},
}

// userAgent is sent to the endpoint as User-Agent.
const userAgent = "mcpe-server-agent/1"

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
	// Logger logs runs, without event data. Zero: discard.
	Logger *slog.Logger
	// Clock times each run for the log. Zero: the wall clock. A run's
	// time limit is a context deadline, on the wall clock in any case.
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
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.Clock = cmp.Or[clock.Clock](c.Clock, clock.Real{})
	return c, nil
}

// Validate checks the settings of o. An error is an *mcpe.InvalidError
// whose Field is the setting's key in the configuration file, relative to
// the agent handler's section, such as "url".
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if ep := o.Endpoint; ep != nil {
		u, err := url.Parse(ep.URL)
		switch {
		case ep.URL == "":
			return mcpe.Invalid("url", "is required: the full chat-completions URL, e.g. \"https://api.openai.com/v1/chat/completions\"")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return mcpe.Invalid("url", "%q is not an http or https URL; give the full chat-completions URL, e.g. \"https://api.openai.com/v1/chat/completions\"", ep.URL)
		case u.User != nil:
			return mcpe.Invalid("url", "must not hold user information; put the key in token or tokenEnv")
		case ep.Model == "":
			return mcpe.Invalid("model", "is required: the model the endpoint serves, e.g. \"gpt-4o-mini\"")
		case strings.ContainsAny(ep.APIKey, "\r\n\x00") || strings.TrimSpace(ep.APIKey) != ep.APIKey:
			return mcpe.Invalid("token", "cannot go in an HTTP header: it has a line break, NUL or surrounding space")
		}
	}
	return nil
}
