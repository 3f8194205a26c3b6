package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// fakeTools is a ToolSet that records its calls.
type fakeTools struct {
	tools []*mcp.Tool
	// result, when set, answers a call; by default the answer is
	// "result of <name>".
	result func(name string, args json.RawMessage) (*mcp.CallToolResult, error)

	mu    sync.Mutex
	calls []toolCall
}

type toolCall struct {
	Principal, Name, Args string
}

func newFakeTools(names ...string) *fakeTools {
	f := &fakeTools{}
	for _, n := range names {
		f.tools = append(f.tools, &mcp.Tool{
			Name:        n,
			Description: "the " + n + " tool",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"limit": map[string]any{"type": "integer"}}},
		})
	}
	return f
}

func (f *fakeTools) Tools() []*mcp.Tool { return f.tools }

func (f *fakeTools) CallTool(_ context.Context, principal, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, toolCall{principal, name, string(args)})
	f.mu.Unlock()
	if f.result != nil {
		return f.result(name, args)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "result of " + name}}}, nil
}

func (f *fakeTools) recorded() []toolCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolCall(nil), f.calls...)
}

// sampler is an MCP client's sampling handler that records the requests
// and answers them by script: answer gets the 0-based index of the request.
type sampler struct {
	answer func(i int, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)

	mu    sync.Mutex
	reqs  []*mcp.CreateMessageWithToolsParams
	plain []*mcp.CreateMessageParams
}

func (s *sampler) requests() []*mcp.CreateMessageWithToolsParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*mcp.CreateMessageWithToolsParams(nil), s.reqs...)
}

func (s *sampler) plainRequests() []*mcp.CreateMessageParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*mcp.CreateMessageParams(nil), s.plain...)
}

// textAnswer returns a script that answers every request with text.
func textAnswer(text string) func(int, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return func(int, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "fake", StopReason: "endTurn", Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
}

// connect connects a go-sdk client whose sampling is s to a go-sdk server
// over in-memory transports, and returns the server's session. tools says
// whether the client declares sampling.tools; version is the protocol
// version the client asks for ("" for the SDK's latest).
func connect(t *testing.T, s *sampler, tools bool, version string) *mcp.ServerSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpe-test", Version: "1"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	opts := &mcp.ClientOptions{}
	if tools {
		opts.CreateMessageWithToolsHandler = func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			s.mu.Lock()
			i := len(s.reqs)
			s.reqs = append(s.reqs, req.Params)
			s.mu.Unlock()
			return s.answer(i, req.Params)
		}
	} else {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			s.mu.Lock()
			i := len(s.plain)
			s.plain = append(s.plain, req.Params)
			s.mu.Unlock()
			res, err := s.answer(i, nil)
			if err != nil || res == nil {
				return nil, err
			}
			var c mcp.Content
			if len(res.Content) > 0 {
				c = res.Content[0]
			}
			return &mcp.CreateMessageResult{Role: res.Role, Model: res.Model, StopReason: res.StopReason, Content: c}, nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, opts)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
	})
	return ss
}

// sessionsOf returns an Options.Sessions that gives sessions to "alice".
func sessionsOf(sessions ...*mcp.ServerSession) func(string) []*mcp.ServerSession {
	return func(principal string) []*mcp.ServerSession {
		if principal != "alice" {
			return nil
		}
		return sessions
	}
}

func newAgent(t *testing.T, opts *Options) *Agent {
	t.Helper()
	a, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// invocation returns a first attempt of an event delivery to alice.
func invocation(spec *mcpe.HandlerSpec, event string) *subscriptions.Invocation {
	return &subscriptions.Invocation{
		JobID:          "job_1",
		SubscriptionID: "sub_1",
		Principal:      "alice",
		Spec:           spec,
		Attempt:        1,
		Kind:           mcpe.InboxEvent,
		Event:          json.RawMessage(event),
	}
}

// between returns the text between the delimiters in msg, and how many
// times each delimiter occurs.
func between(msg string) (data string, opens, closes int) {
	opens, closes = strings.Count(msg, dataOpen), strings.Count(msg, dataClose)
	i, j := strings.Index(msg, dataOpen), strings.Index(msg, dataClose)
	if i < 0 || j < i {
		return "", opens, closes
	}
	return strings.TrimSpace(msg[i+len(dataOpen) : j]), opens, closes
}

// summarize describes sampling messages in short lines, for diffs.
func summarize(msgs []*mcp.SamplingMessageV2) []string {
	var out []string
	for _, m := range msgs {
		for _, c := range m.Content {
			switch v := c.(type) {
			case *mcp.TextContent:
				out = append(out, fmt.Sprintf("%s text", m.Role))
			case *mcp.ToolUseContent:
				b, _ := json.Marshal(v.Input)
				out = append(out, fmt.Sprintf("%s tool_use %s %s %s", m.Role, v.ID, v.Name, b))
			case *mcp.ToolResultContent:
				out = append(out, fmt.Sprintf("%s tool_result %s error=%v %s", m.Role, v.ToolUseID, v.IsError, firstWords(textOf(v.Content))))
			default:
				out = append(out, fmt.Sprintf("%s %T", m.Role, c))
			}
		}
	}
	return out
}

// firstWords returns the first three words of s.
func firstWords(s string) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(3, len(f))], " ")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
