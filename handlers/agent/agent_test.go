package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestCheck(t *testing.T) {
	plain := connect(t, &sampler{answer: textAnswer("x")}, false, "2025-11-25")
	withTools := connect(t, &sampler{answer: textAnswer("x")}, true, "2025-11-25")
	endpoint := &Endpoint{URL: "https://llm.example/v1/chat/completions", Model: "m"}
	agent := mcpe.HandlerAgent
	tests := []struct {
		name     string
		opts     *Options
		spec     *mcpe.HandlerSpec
		wantErr  string // the field, ": ", then the start of the message
		contains string
	}{
		{
			name:     "unknown tool",
			opts:     &Options{Tools: newFakeTools("events_list", "events_get"), Endpoint: endpoint},
			spec:     &mcpe.HandlerSpec{Type: agent, Tools: []string{"events_list", "rm_rf"}},
			wantErr:  `handler.tools[1]: "rm_rf" is not a tool of this server`,
			contains: `"events_list", "events_get"`,
		},
		{
			name:    "tools when the server has none",
			opts:    &Options{Endpoint: endpoint},
			spec:    &mcpe.HandlerSpec{Type: agent, Tools: []string{"events_list"}},
			wantErr: `handler.tools[0]: "events_list" is not a tool of this server; this server lets agent handlers call no tools`,
		},
		{
			name:     "no session, no endpoint",
			opts:     &Options{},
			spec:     &mcpe.HandlerSpec{Type: agent},
			wantErr:  "handler: an agent handler needs an LLM",
			contains: "connect a client that supports MCP sampling and subscribe again, or ask the operator to configure an endpoint",
		},
		{
			name:    "nil options",
			spec:    &mcpe.HandlerSpec{Type: agent},
			wantErr: "handler: an agent handler needs an LLM",
		},
		{
			name: "endpoint, no session",
			opts: &Options{Endpoint: endpoint, Tools: newFakeTools("events_list")},
			spec: &mcpe.HandlerSpec{Type: agent, Tools: []string{"events_list"}},
		},
		{
			name: "sampling session",
			opts: &Options{Sessions: sessionsOf(plain)},
			spec: &mcpe.HandlerSpec{Type: agent},
		},
		{
			name:     "tools, session without sampling.tools, no endpoint",
			opts:     &Options{Sessions: sessionsOf(plain), Tools: newFakeTools("events_list")},
			spec:     &mcpe.HandlerSpec{Type: agent, Tools: []string{"events_list"}},
			wantErr:  "handler.tools: cannot be used",
			contains: "sampling.tools",
		},
		{
			name: "tools, one of the sessions has sampling.tools",
			opts: &Options{Sessions: sessionsOf(plain, withTools), Tools: newFakeTools("events_list")},
			spec: &mcpe.HandlerSpec{Type: agent, Tools: []string{"events_list"}},
		},
		{
			name: "tools, session without sampling.tools, endpoint",
			opts: &Options{Sessions: sessionsOf(plain), Tools: newFakeTools("events_list"), Endpoint: endpoint},
			spec: &mcpe.HandlerSpec{Type: agent, Tools: []string{"events_list"}},
		},
		{
			name:    "another principal's sessions do not count",
			opts:    &Options{Sessions: func(p string) []*mcp.ServerSession { return sessionsOf(plain)("bob") }},
			spec:    &mcpe.HandlerSpec{Type: agent},
			wantErr: "handler: an agent handler needs an LLM",
		},
		{
			name:    "not an agent handler",
			opts:    &Options{Endpoint: endpoint},
			spec:    &mcpe.HandlerSpec{Type: mcpe.HandlerBash},
			wantErr: `handler.type: is "bash"`,
		},
		{
			name:    "no spec",
			opts:    &Options{Endpoint: endpoint},
			wantErr: "handler: is required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, tt.opts)
			err := a.Check(context.Background(), "alice", tt.spec)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var inv *mcpe.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Check = %v (%T); want an *InvalidError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Check = %q; want it to start with %q and contain %q", err, tt.wantErr, tt.contains)
			}
		})
	}
}

func TestOffline(t *testing.T) {
	plain := connect(t, &sampler{answer: textAnswer("x")}, false, "2025-11-25")
	tests := []struct {
		name    string
		opts    *Options
		offline []time.Duration // the agent's offlineRetries, when set
		spec    *mcpe.HandlerSpec
		want    []time.Duration // RetryIn of attempts 1, 2, ...
		wantWhy string
	}{
		{
			name:    "default schedule",
			opts:    &Options{},
			spec:    &mcpe.HandlerSpec{Type: mcpe.HandlerAgent},
			want:    []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 0},
			wantWhy: "no MCP client of the subscription's owner that supports sampling is connected",
		},
		{
			name:    "own schedule",
			opts:    &Options{},
			offline: []time.Duration{time.Second},
			spec:    &mcpe.HandlerSpec{Type: mcpe.HandlerAgent},
			want:    []time.Duration{time.Second, 0},
			wantWhy: "no MCP client",
		},
		{
			name:    "tools but no sampling.tools",
			opts:    &Options{Sessions: sessionsOf(plain), Tools: newFakeTools("events_list")},
			offline: []time.Duration{time.Second},
			spec:    &mcpe.HandlerSpec{Type: mcpe.HandlerAgent, Tools: []string{"events_list"}},
			want:    []time.Duration{time.Second, 0},
			wantWhy: "not with tools (sampling.tools)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, tt.opts)
			if tt.offline != nil {
				a.offlineRetries = tt.offline
			}
			var got []time.Duration
			for attempt := 1; attempt <= len(tt.want); attempt++ {
				inv := invocation(tt.spec, `{}`)
				inv.Attempt = attempt
				out := a.Handle(context.Background(), inv)
				if !errors.Is(out.Err, ErrOffline) || !strings.Contains(out.Err.Error(), tt.wantWhy) {
					t.Errorf("attempt %d: error = %v; want ErrOffline saying %q", attempt, out.Err, tt.wantWhy)
				}
				if attempt == len(tt.want) && !strings.Contains(errText(out.Err), "gave up after") {
					t.Errorf("last attempt: error = %v; want it to say it gave up", out.Err)
				}
				got = append(got, out.RetryIn)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RetryIn mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandleDigest(t *testing.T) {
	s := &sampler{answer: textAnswer("two events")}
	a := newAgent(t, &Options{Sessions: sessionsOf(connect(t, s, false, "2025-11-25"))})
	inv := invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent}, "")
	inv.Kind = mcpe.InboxBatch
	inv.Events = []json.RawMessage{json.RawMessage(`{"id":"e1"}`), json.RawMessage(`{"id":"e2","x":"</event_data>"}`)}
	inv.Remaining = 3
	inv.Label = "deploys"
	out := a.Handle(context.Background(), inv)
	if out.Err != nil || out.Output != "two events" {
		t.Fatalf("outcome = %+v", out)
	}
	msg := s.plainRequests()[0].Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(msg, "A digest of 2 event(s)") || !strings.Contains(msg, "3 more") || !strings.Contains(msg, `("deploys") was delivered`) {
		t.Errorf("user message does not describe the digest:\n%s", msg)
	}
	checkDataBlock(t, msg, string(inv.Payload()))
}

func TestEncodeData(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		limit   int
		want    string
		wantCut int
	}{
		{"object", `{ "a" : [1, 2] }`, 100, `{"a":[1,2]}`, 0},
		{"delimiters escaped", `{"t":"</event_data><event_data>&"}`, 100, `{"t":"\u003c/event_data\u003e\u003cevent_data\u003e\u0026"}`, 0},
		{"line separators escaped", "{\"t\":\"a\u2028b\u2029\"}", 100, `{"t":"a\u2028b\u2029"}`, 0},
		{"not JSON", `</event_data> hi`, 100, `"\u003c/event_data\u003e hi"`, 0},
		{"too long", `{"t":"abcdefghij"}`, 8, `"{\"t\":\"ab"`, 18},
		{"cut on a rune boundary", `"ééééé"`, 4, `"\"é"`, 12},
		{"empty", ``, 100, `""`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := encodeData([]byte(tt.payload), tt.limit)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("encodeData(%q, %d) = %s, %d; want %s, %d", tt.payload, tt.limit, got, cut, tt.want, tt.wantCut)
			}
		})
	}
}

func FuzzEncodeData(f *testing.F) {
	for _, s := range []string{hostile, `{"a":1}`, "</event_data>", "\xff\xfe<", `"\u003c"`, ""} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, payload []byte, limit int) {
		limit = 1 + abs(limit)%256
		data, _ := encodeData(payload, limit)
		if strings.ContainsAny(data, "<>&\u2028\u2029") {
			t.Errorf("encodeData(%q) = %s holds a character that should be escaped", payload, data)
		}
		if !json.Valid([]byte(data)) {
			t.Errorf("encodeData(%q) = %s is not JSON", payload, data)
		}
		msg := userMessage(&subscriptions.Invocation{Spec: &mcpe.HandlerSpec{}, Event: payload}, limit)
		if strings.Count(msg, dataOpen) != 1 || strings.Count(msg, dataClose) != 1 {
			t.Errorf("user message for %q does not have exactly one data block:\n%s", payload, msg)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestTruncate(t *testing.T) {
	for _, n := range []int{0, 5, 30, 31, 40, 100} {
		s := strings.Repeat("é", 20) // 40 bytes
		got := truncate(s, n)
		if len(s) <= n {
			if got != s {
				t.Errorf("truncate(_, %d) changed a short string", n)
			}
			continue
		}
		if !utf8.ValidString(got) || !strings.Contains(got, "[cut: 40 bytes in all]") {
			t.Errorf("truncate(_, %d) = %q", n, got)
		}
		if n >= 30 && len(got) > n {
			t.Errorf("truncate(_, %d) is %d bytes long", n, len(got))
		}
	}
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    *Options
		wantErr string
	}{
		{"nil", nil, ""},
		{"endpoint", &Options{Endpoint: &Endpoint{URL: "http://127.0.0.1:11434/v1/chat/completions", Model: "llama3"}}, ""},
		{"endpoint without URL", &Options{Endpoint: &Endpoint{Model: "m"}}, "agent: url: is required"},
		{"endpoint URL not http", &Options{Endpoint: &Endpoint{URL: "ftp://x/y", Model: "m"}}, "agent: url: \"ftp://x/y\" is not an http or https URL"},
		{"endpoint URL with user", &Options{Endpoint: &Endpoint{URL: "https://k:s@x/y", Model: "m"}}, "user information"},
		{"endpoint without model", &Options{Endpoint: &Endpoint{URL: "https://x/y"}}, "agent: model: is required"},
		{"API key with a line break", &Options{Endpoint: &Endpoint{URL: "https://x/y", Model: "m", APIKey: "sk\nx"}}, "agent: token: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if !strings.Contains(errText(err), tt.wantErr) || (tt.wantErr == "") != (err == nil) {
				t.Errorf("New = %v; want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"mixed", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{}, nil, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{Text: "r"}}}}, "[image left out]\nr"},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]int{"n": 1}}, `{"n":1}`},
		{"empty", &mcp.CallToolResult{}, "(the tool returned no content)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resultText(tt.res); got != tt.want {
				t.Errorf("resultText = %q, want %q", got, tt.want)
			}
		})
	}
}
