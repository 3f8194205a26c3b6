package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// conversation is one run's exchange with a model, through MCP sampling
// or through an endpoint.
type conversation interface {
	// next asks the model for its next message, never nil without an
	// error. final says it is the last call of the run: the model is told
	// to use no more tools.
	next(ctx context.Context, final bool) (*reply, error)
	// answer hands the model the results of the tool uses of its last
	// reply, in their order.
	answer(results []toolResult)
}

// reply is a model's message: text, and the tools it asks to use.
type reply struct {
	text string
	uses []toolUse
}

// toolUse is a tool call a model asks for.
type toolUse struct {
	id   string
	name string
	// args are the arguments, a JSON object; badArgs says why they could
	// not be read, when they could not.
	args    json.RawMessage
	badArgs string
}

// toolResult answers a toolUse.
type toolResult struct {
	id      string
	text    string
	isError bool
}

// loop runs conv until the model answers without asking for tools, or a
// bound is reached. It returns the outcome and the number of model calls.
func (a *Agent) loop(ctx context.Context, inv *subscriptions.Invocation, conv conversation, defs []*mcp.Tool, log *slog.Logger) (subscriptions.Outcome, int) {
	allowed := make([]string, len(defs))
	for i, d := range defs {
		allowed[i] = d.Name
	}
	var out subscriptions.Outcome
	made := 0 // tool calls made or refused for the limit
	for turn := 1; turn <= a.maxTurns; turn++ {
		final := turn == a.maxTurns
		r, err := conv.next(ctx, final)
		if err != nil {
			out.Err = err
			return out, turn
		}
		out.Output = truncate(strings.TrimSpace(r.text), MaxOutputBytes)
		if len(r.uses) == 0 {
			if out.Output == "" && len(out.ToolCalls) == 0 {
				out.Err = fmt.Errorf("the model's answer held no text and it called no tool")
			}
			return out, turn
		}
		if final {
			out.Err = fmt.Errorf("%w: stopped after %d model calls, the limit per run", ErrTurns, turn)
			return out, turn
		}
		results := make([]toolResult, 0, len(r.uses))
		for _, u := range r.uses {
			res := toolResult{id: u.id, isError: true}
			switch {
			case !slices.Contains(allowed, u.name):
				log.Warn("agent handler's model asked for a tool it may not use; refused", "tool", truncate(u.name, 64))
				if len(allowed) == 0 {
					res.text = fmt.Sprintf("Refused: tool %q is not available to this handler, which may call no tools. The call was not made.", truncate(u.name, 64))
				} else {
					res.text = fmt.Sprintf("Refused: tool %q is not available to this handler; it may call only %s. The call was not made.", truncate(u.name, 64), quoteList(allowed))
				}
			case u.badArgs != "":
				res.text = fmt.Sprintf("Refused: the arguments of this call to %q are not a JSON object (%s). The call was not made.", u.name, u.badArgs)
			case made >= a.maxToolCalls:
				res.text = fmt.Sprintf("Refused: this run reached its limit of %d tool calls. The call was not made; give your final answer now.", a.maxToolCalls)
			default:
				made++
				out.ToolCalls = append(out.ToolCalls, u.name)
				res = a.callTool(ctx, inv.Principal, u, log)
			}
			results = append(results, res)
		}
		conv.answer(results)
	}
	// Not reached: the last turn returns.
	return out, a.maxTurns
}

// callTool calls the tool of u as principal.
func (a *Agent) callTool(ctx context.Context, principal string, u toolUse, log *slog.Logger) toolResult {
	res, err := a.opts.Tools.CallTool(ctx, principal, u.name, u.args)
	if err != nil {
		log.Warn("agent handler's tool call failed", "tool", u.name, "error", err)
		return toolResult{id: u.id, isError: true, text: truncate("The call failed: "+err.Error(), a.maxToolResultBytes)}
	}
	if res == nil {
		return toolResult{id: u.id, text: "(the tool returned no result)"}
	}
	return toolResult{id: u.id, isError: res.IsError, text: truncate(resultText(res), a.maxToolResultBytes)}
}

// resultText renders a tool result as text: its text content, with other
// content named but left out, or its structured content.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			if v != nil {
				parts = append(parts, v.Text)
			}
		case *mcp.ImageContent:
			parts = append(parts, "[image left out]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio left out]")
		case *mcp.ResourceLink:
			if v != nil {
				parts = append(parts, fmt.Sprintf("[resource link %q]", v.URI))
			}
		case *mcp.EmbeddedResource:
			if v != nil && v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else {
				parts = append(parts, "[resource left out]")
			}
		case nil:
		default:
			parts = append(parts, "[content left out]")
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	if len(parts) == 0 {
		return "(the tool returned no content)"
	}
	return strings.Join(parts, "\n")
}

// readArgs checks that raw is a JSON object, the arguments of a tool call.
// Empty or null arguments are an empty object.
func readArgs(raw []byte) (json.RawMessage, string) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return json.RawMessage("{}"), ""
	}
	if !json.Valid([]byte(s)) {
		return nil, "not valid JSON"
	}
	if s[0] != '{' {
		return nil, "a JSON value that is not an object"
	}
	return json.RawMessage(s), ""
}
