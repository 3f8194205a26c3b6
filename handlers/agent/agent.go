package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Errors of a run.
var (
	// ErrOffline means the owner had no session that can sample and there
	// was no endpoint when the handler was due.
	ErrOffline = errors.New("no LLM to run the agent handler")
	// ErrTurns means the model still asked for tools at the last model
	// call a run allows.
	ErrTurns = errors.New("the model still asked for tools at the last allowed model call")
)

// protocolNoSampling is the first protocol version that forbids sampling
// requests started by the server (SEP-2322, SEP-2577): the SDK refuses
// them, so such a session cannot run a handler.
const protocolNoSampling = "2026-07-28"

var _ subscriptions.Handler = (*Agent)(nil)

// Agent runs "agent" handlers. It is safe for concurrent use.
type Agent struct {
	opts Options
	limits
}

// New checks opts and returns an Agent. A nil opts means all defaults.
func New(opts *Options) (*Agent, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &Agent{opts: o, limits: defaultLimits}, nil
}

// Check tells whether spec may run for principal: it is an agent handler,
// every entry of its tools names a tool of this server, and there is a way
// to reach an LLM now: a live session of principal whose client can sample
// (with tools, when spec names tools), or the operator's endpoint.
func (a *Agent) Check(_ context.Context, principal string, spec *mcpe.HandlerSpec) error {
	if spec == nil {
		return mcpe.Invalid("handler", "is required")
	}
	if spec.Type != mcpe.HandlerAgent {
		return mcpe.Invalid("handler.type", "is %q, but this handler runs only \"agent\" handlers", spec.Type)
	}
	_, names := a.tools()
	for i, t := range spec.Tools {
		if slices.Contains(names, t) {
			continue
		}
		field := fmt.Sprintf("handler.tools[%d]", i)
		if len(names) == 0 {
			return mcpe.Invalid(field, "%q is not a tool of this server; this server lets agent handlers call no tools, so leave tools out", t)
		}
		return mcpe.Invalid(field, "%q is not a tool of this server; the tools an agent handler may call are: %s", t, quoteList(names))
	}
	r := a.route(principal, len(spec.Tools) > 0)
	switch {
	case r.ok():
		return nil
	case len(spec.Tools) > 0 && r.plainSampling:
		return mcpe.Invalid("handler.tools",
			"cannot be used: your connected MCP clients support sampling but not sampling with tools (the sampling.tools capability), and the operator configured no LLM endpoint; leave tools out, connect a client that supports sampling with tools, or ask the operator to configure an endpoint")
	default:
		return mcpe.Invalid("handler",
			"an agent handler needs an LLM, and there is none: none of your connected MCP clients supports sampling (the sampling capability, on protocol version 2025-11-25 or earlier), and the operator configured no LLM endpoint; connect a client that supports MCP sampling and subscribe again, or ask the operator to configure an endpoint")
	}
}

// Handle runs spec once for inv: it asks the LLM to handle the delivery,
// calling the tools it asks for that spec allows, and returns its final
// answer.
func (a *Agent) Handle(ctx context.Context, inv *subscriptions.Invocation) subscriptions.Outcome {
	if inv == nil || inv.Spec == nil {
		return subscriptions.Outcome{Err: errors.New("the delivery has no handler")}
	}
	log := a.opts.Logger.With("subscription_id", inv.SubscriptionID, "job_id", inv.JobID, "attempt", inv.Attempt)
	defs := a.allowedTools(inv.Spec.Tools, log)
	r := a.route(inv.Principal, len(defs) > 0)
	if !r.ok() {
		out := a.offline(inv, len(defs) > 0 && r.plainSampling)
		log.Warn("agent handler has no LLM", "error", out.Err, "retry_in", out.RetryIn)
		return out
	}

	maxTokens := a.maxTokens
	if inv.Spec.MaxTokens > 0 {
		maxTokens = inv.Spec.MaxTokens
	}
	system, user := systemPrompt(inv.Spec), userMessage(inv, a.maxEventBytes)
	var conv conversation
	via := "endpoint"
	if r.session != nil {
		via = "sampling"
		conv = newSamplingConv(r.session, inv.Spec.Model, system, user, maxTokens, defs)
	} else {
		conv = newEndpointConv(r.endpoint, a.maxRetryAfter, system, user, maxTokens, defs)
	}

	start := a.opts.Clock.Now()
	// A context deadline runs on the wall clock, whatever Options.Clock is.
	runCtx, cancel := context.WithTimeout(ctx, a.maxRunTime)
	defer cancel()
	out, turns := a.loop(runCtx, inv, conv, defs, log)
	if out.Err != nil {
		switch {
		case ctx.Err() != nil:
			out.Err = fmt.Errorf("the run was stopped: %w", ctx.Err())
		case runCtx.Err() != nil:
			out.Err = &passingError{err: fmt.Errorf("the run did not finish within %v, the limit per run", a.maxRunTime)}
		}
		var pe *passingError
		if errors.As(out.Err, &pe) && len(out.ToolCalls) == 0 && ctx.Err() == nil {
			if d, ok := delay(a.retrySchedule, inv.Attempt); ok {
				out.RetryIn = max(d, pe.retryAfter)
			} else {
				out.Err = fmt.Errorf("gave up after %d attempts: %w", inv.Attempt, out.Err)
			}
		}
	}
	log.Info("agent handler ran", "via", via, "model_calls", turns, "tool_calls", len(out.ToolCalls),
		"duration", a.opts.Clock.Now().Sub(start), "error", out.Err, "retry_in", out.RetryIn)
	return out
}

// route is where a run's model calls go: a session, or the endpoint.
type route struct {
	session  *mcp.ServerSession
	endpoint *Endpoint
	// plainSampling says a session can sample, though not with tools.
	plainSampling bool
}

func (r route) ok() bool { return r.session != nil || r.endpoint != nil }

// route picks the first session of principal that can sample (with tools
// when withTools), else the endpoint.
func (a *Agent) route(principal string, withTools bool) route {
	var r route
	for _, ss := range a.opts.Sessions(principal) {
		sampling, tools := canSample(ss)
		if !sampling {
			continue
		}
		if withTools && !tools {
			r.plainSampling = true
			continue
		}
		r.session = ss
		return r
	}
	r.endpoint = a.opts.Endpoint
	return r
}

// canSample reports whether the client of ss declared sampling, and
// sampling with tools, on a protocol version that lets the server send
// sampling requests.
func canSample(ss *mcp.ServerSession) (sampling, tools bool) {
	if ss == nil {
		return false, false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Sampling == nil || p.ProtocolVersion >= protocolNoSampling {
		return false, false
	}
	return true, p.Capabilities.Sampling.Tools != nil
}

// offline is the outcome of a run with no LLM to ask.
func (a *Agent) offline(inv *subscriptions.Invocation, plainSampling bool) subscriptions.Outcome {
	why := "no MCP client of the subscription's owner that supports sampling is connected, and the operator configured no LLM endpoint"
	if plainSampling {
		why = "the owner's connected MCP clients support sampling but not with tools (sampling.tools), which this handler's tools need, and the operator configured no LLM endpoint"
	}
	if d, ok := delay(a.offlineRetries, inv.Attempt); ok {
		return subscriptions.Outcome{Err: fmt.Errorf("%w: %s; trying again in %v", ErrOffline, why, d), RetryIn: d}
	}
	return subscriptions.Outcome{Err: fmt.Errorf("%w: %s; gave up after %d attempts", ErrOffline, why, inv.Attempt)}
}

// delay returns the delay after attempt (from 1) in schedule, if any.
func delay(schedule []time.Duration, attempt int) (time.Duration, bool) {
	i := max(attempt, 1) - 1
	if i >= len(schedule) {
		return 0, false
	}
	return schedule[i], true
}

// passingError is a failure that may pass: worth another attempt later.
type passingError struct {
	err error
	// retryAfter is the least delay the LLM asked for, if any.
	retryAfter time.Duration
}

func (e *passingError) Error() string { return e.err.Error() }
func (e *passingError) Unwrap() error { return e.err }

// tools returns this server's tools by name, and their names in the
// server's order.
func (a *Agent) tools() (byName map[string]*mcp.Tool, names []string) {
	byName = make(map[string]*mcp.Tool)
	if a.opts.Tools != nil {
		for _, t := range a.opts.Tools.Tools() {
			if t != nil {
				byName[t.Name] = t
				names = append(names, t.Name)
			}
		}
	}
	return byName, names
}

// allowedTools returns the definitions of the tools of names, in that
// order, that this server has.
func (a *Agent) allowedTools(names []string, log *slog.Logger) []*mcp.Tool {
	if len(names) == 0 || a.opts.Tools == nil {
		if len(names) > 0 {
			log.Warn("agent handler names tools, but the server offers none", "tools", names)
		}
		return nil
	}
	byName, _ := a.tools()
	var defs []*mcp.Tool
	for _, n := range names {
		t := byName[n]
		if t == nil {
			log.Warn("agent handler names a tool the server no longer has", "tool", n)
			continue
		}
		schema := t.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		defs = append(defs, &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema})
	}
	return defs
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
