package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// samplingConv talks to the model of the owner's client through MCP
// sampling (sampling/createMessage).
type samplingConv struct {
	ss        *mcp.ServerSession
	system    string
	user      string
	maxTokens int64
	prefs     *mcp.ModelPreferences
	// tools are the tools offered; none means plain CreateMessage.
	tools []*mcp.Tool
	// msgs is the conversation so far, with tools.
	msgs []*mcp.SamplingMessageV2
	// calls counts the model calls, to name tool uses without an ID.
	calls int
}

func newSamplingConv(ss *mcp.ServerSession, model, system, user string, maxTokens int, tools []*mcp.Tool) *samplingConv {
	c := &samplingConv{ss: ss, system: system, user: user, maxTokens: int64(maxTokens), tools: tools}
	if model != "" {
		c.prefs = &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: model}}}
	}
	c.msgs = []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: user}}}}
	return c
}

func (c *samplingConv) next(ctx context.Context, final bool) (*reply, error) {
	c.calls++
	if len(c.tools) == 0 {
		res, err := c.ss.CreateMessage(ctx, &mcp.CreateMessageParams{
			MaxTokens:        c.maxTokens,
			Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: c.user}}},
			ModelPreferences: c.prefs,
			SystemPrompt:     c.system,
		})
		if err != nil {
			return nil, samplingError(err)
		}
		if res == nil {
			return &reply{}, nil
		}
		return &reply{text: textOf([]mcp.Content{res.Content})}, nil
	}
	p := &mcp.CreateMessageWithToolsParams{
		MaxTokens:        c.maxTokens,
		Messages:         c.msgs,
		ModelPreferences: c.prefs,
		SystemPrompt:     c.system,
		Tools:            c.tools,
	}
	if final {
		p.ToolChoice = &mcp.ToolChoice{Mode: "none"}
	}
	res, err := c.ss.CreateMessageWithTools(ctx, p)
	if err != nil {
		return nil, samplingError(err)
	}
	if res == nil {
		return &reply{}, nil
	}
	r := &reply{text: textOf(res.Content)}
	var kept []mcp.Content
	for i, content := range res.Content {
		switch v := content.(type) {
		case *mcp.TextContent:
			if v != nil {
				kept = append(kept, v)
			}
		case *mcp.ToolUseContent:
			if v == nil {
				continue
			}
			if v.ID == "" {
				v.ID = fmt.Sprintf("toolu_mcpe_%d_%d", c.calls, i)
			}
			u := toolUse{id: v.ID, name: v.Name, badArgs: "the arguments cannot be encoded"}
			if b, err := json.Marshal(v.Input); err == nil {
				u.args, u.badArgs = readArgs(b) // a nil Input is null: no arguments
			}
			r.uses = append(r.uses, u)
			kept = append(kept, v)
		}
	}
	if len(r.uses) > 0 {
		c.msgs = append(c.msgs, &mcp.SamplingMessageV2{Role: "assistant", Content: kept})
	}
	return r, nil
}

func (c *samplingConv) answer(results []toolResult) {
	content := make([]mcp.Content, len(results))
	for i, res := range results {
		content[i] = &mcp.ToolResultContent{
			ToolUseID: res.id,
			Content:   []mcp.Content{&mcp.TextContent{Text: res.text}},
			IsError:   res.isError,
		}
	}
	c.msgs = append(c.msgs, &mcp.SamplingMessageV2{Role: "user", Content: content})
}

// textOf joins the text blocks of content.
func textOf(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok && t != nil && t.Text != "" {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// samplingError describes a failed sampling request. A closed session may
// pass; a client's refusal or an unreadable answer does not.
func samplingError(err error) error {
	var werr *jsonrpc.Error
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed):
		return &passingError{err: fmt.Errorf("the owner's MCP session closed during the run: %w", err)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &werr):
		return fmt.Errorf("the owner's MCP client refused the sampling request: %s (code %d)", truncate(werr.Message, 300), werr.Code)
	default:
		return fmt.Errorf("sampling through the owner's MCP client failed: %s", truncate(err.Error(), 300))
	}
}
