package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// fakeLLM is an OpenAI-compatible chat-completions endpoint on loopback
// that records the requests and answers them by script.
type fakeLLM struct {
	// answer gets the 0-based index of the request and writes the answer.
	answer func(i int, w http.ResponseWriter)

	mu      sync.Mutex
	reqs    []chatRequest
	auth    []string
	methods []string
}

func (f *fakeLLM) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		i := len(f.reqs)
		f.reqs = append(f.reqs, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.methods = append(f.methods, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		f.mu.Unlock()
		f.answer(i, w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/chat/completions"
}

func (f *fakeLLM) requests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.reqs...)
}

// respond writes body with status.
func respond(status int, body string, header ...string) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const answerHello = `{"id":"chatcmpl-1","object":"chat.completion","model":"op-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the endpoint."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

func TestEndpointPlainAnswer(t *testing.T) {
	llm := &fakeLLM{answer: respond(200, answerHello)}
	url := llm.start(t)
	a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, APIKey: "sk-test", Model: "op-model"}})
	spec := &mcpe.HandlerSpec{
		Type:         mcpe.HandlerAgent,
		SystemPrompt: "Be brief.",
		Instructions: "Say hello.",
		Model:        "the-subscribers-choice",
		MaxTokens:    200,
	}
	out := a.Handle(context.Background(), invocation(spec, hostile))
	if diff := cmp.Diff(subscriptions.Outcome{Output: "Hello from the endpoint."}, out, cmpOutcome); diff != "" {
		t.Errorf("outcome mismatch (-want +got):\n%s", diff)
	}
	reqs := llm.requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	if diff := cmp.Diff([]string{"Bearer sk-test"}, llm.auth); diff != "" {
		t.Errorf("Authorization mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"POST /v1/chat/completions application/json"}, llm.methods); diff != "" {
		t.Errorf("request line mismatch (-want +got):\n%s", diff)
	}
	req := reqs[0]
	if req.Model != "op-model" || req.MaxTokens != 200 || len(req.Tools) != 0 || req.ToolChoice != "" {
		t.Errorf("request = model %q, max_tokens %d, %d tools, tool_choice %q; want op-model, 200, none, unset", req.Model, req.MaxTokens, len(req.Tools), req.ToolChoice)
	}
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"system", "user"}, roles); diff != "" {
		t.Fatalf("roles mismatch (-want +got):\n%s", diff)
	}
	if sys := req.Messages[0].Content; !strings.HasPrefix(sys, Preamble) || !strings.HasSuffix(sys, "Be brief.") || strings.Contains(sys, "Ignore previous") {
		t.Errorf("system message is wrong:\n%s", sys)
	}
	user := req.Messages[1].Content
	if !strings.HasPrefix(user, "Say hello.") {
		t.Errorf("user message does not start with the instructions:\n%s", user)
	}
	checkDataBlock(t, user, hostile)
}

func TestEndpointToolCalls(t *testing.T) {
	llm := &fakeLLM{answer: func(i int, w http.ResponseWriter) {
		switch i {
		case 0:
			respond(200, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"events_list","arguments":"{\"limit\":2}"}},
				{"id":"call_2","type":"function","function":{"name":"events_list","arguments":"{not json"}},
				{"id":"call_3","type":"function","function":{"name":"events_delete_all","arguments":"{}"}}
			]},"finish_reason":"tool_calls"}]}`)(i, w)
		default:
			respond(200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"All quiet."},"finish_reason":"stop"}]}`)(i, w)
		}
	}}
	url := llm.start(t)
	tools := newFakeTools("events_list", "events_get")
	tools.result = func(string, json.RawMessage) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 1000)}}}, nil
	}
	a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, Model: "op-model"}, Tools: tools})
	a.maxToolResultBytes = 100
	spec := &mcpe.HandlerSpec{Type: mcpe.HandlerAgent, Tools: []string{"events_list"}}
	out := a.Handle(context.Background(), invocation(spec, `{"id":"evt_1"}`))

	want := subscriptions.Outcome{Output: "All quiet.", ToolCalls: []string{"events_list"}}
	if diff := cmp.Diff(want, out, cmpOutcome); diff != "" {
		t.Errorf("outcome mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]toolCall{{"alice", "events_list", `{"limit":2}`}}, tools.recorded()); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
	reqs := llm.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Type != "function" || reqs[0].Tools[0].Function.Name != "events_list" || reqs[0].Tools[0].Function.Parameters == nil {
		t.Errorf("tools sent = %+v; want the events_list function with its schema", reqs[0].Tools)
	}
	type msg struct {
		Role, ToolCallID, Start string
		Calls                   []string
	}
	var got []msg
	for _, m := range reqs[1].Messages {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Type+" "+c.Function.Name+" "+c.Function.Arguments)
		}
		got = append(got, msg{m.Role, m.ToolCallID, firstWords(m.Content), calls})
	}
	wantMsgs := []msg{
		{Role: "system", Start: "You are an"},
		{Role: "user", Start: "An event of"},
		{Role: "assistant", Calls: []string{`call_1 function events_list {"limit":2}`, "call_2 function events_list {not json", "call_3 function events_delete_all {}"}},
		{Role: "tool", ToolCallID: "call_1", Start: strings.Repeat("x", 50)},
		{Role: "tool", ToolCallID: "call_2", Start: "Error: Refused: the"},
		{Role: "tool", ToolCallID: "call_3", Start: "Error: Refused: tool"},
	}
	if diff := cmp.Diff(wantMsgs, got, cmp.Comparer(func(a, b string) bool {
		return a == b || (len(a) >= 50 && strings.HasPrefix(b, a)) || (len(b) >= 50 && strings.HasPrefix(a, b))
	})); diff != "" {
		t.Errorf("second request's messages mismatch (-want +got):\n%s", diff)
	}
	if n := len(reqs[1].Messages[3].Content); n > 100 {
		t.Errorf("tool result is %d bytes, want at most maxToolResultBytes (100)", n)
	}
}

func TestEndpointFailures(t *testing.T) {
	tests := []struct {
		name        string
		answer      func(int, http.ResponseWriter)
		attempt     int
		wantErr     string
		wantRetryIn time.Duration
	}{
		{"500 is retried", respond(500, `{"error":{"message":"overloaded"}}`), 1, "500 Internal Server Error: {\"error\"", 30 * time.Second},
		{"503 on attempt 2", respond(503, `busy`), 2, "503", 2 * time.Minute},
		{"429 honours Retry-After", respond(429, `slow down`, "Retry-After", "300"), 1, "429", 5 * time.Minute},
		{"429 Retry-After shorter than the schedule", respond(429, `slow down`, "Retry-After", "1"), 1, "429", 30 * time.Second},
		{"500 after the schedule gives up", respond(500, `no`), 4, "gave up after 4 attempts", 0},
		{"400 is not retried", respond(400, `{"error":{"message":"bad model"}}`), 1, "400 Bad Request: {\"error\":{\"message\":\"bad model\"}}", 0},
		{"401 is not retried", respond(401, "bad key"), 1, "401", 0},
		{"malformed JSON", respond(200, `{"choices":[{"message":`), 1, "not chat-completions JSON", 0},
		{"not an object", respond(200, `[1,2]`), 1, "not chat-completions JSON", 0},
		{"no choices", respond(200, `{"choices":[]}`), 1, "no choices", 0},
		{"error in a 200", respond(200, `{"error":{"message":"quota"}}`), 1, "quota", 0},
		{"null content", respond(200, `{"choices":[{"message":{"role":"assistant","content":null}}]}`), 1, "no text", 0},
		{"wrong types", respond(200, `{"choices":[{"message":{"content":5,"tool_calls":"x"}}]}`), 1, "not chat-completions JSON", 0},
		{"content parts", respond(200, `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}}]}`), 1, "", 0},
		{"refusal", respond(200, `{"choices":[{"message":{"content":null,"refusal":"I cannot help"}}]}`), 1, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := (&fakeLLM{answer: tt.answer}).start(t)
			a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, Model: "m"}})
			inv := invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent}, `{}`)
			inv.Attempt = tt.attempt
			out := a.Handle(context.Background(), inv)
			if tt.wantErr == "" && out.Err != nil || !strings.Contains(errText(out.Err), tt.wantErr) {
				t.Errorf("error = %v; want one containing %q", out.Err, tt.wantErr)
			}
			if out.RetryIn != tt.wantRetryIn {
				t.Errorf("RetryIn = %v, want %v", out.RetryIn, tt.wantRetryIn)
			}
		})
	}
}

func TestEndpointUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, Model: "m"}})
	out := a.Handle(context.Background(), invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent}, `{}`))
	if !strings.Contains(errText(out.Err), "could not be reached") || out.RetryIn != defaultLimits.retrySchedule[0] {
		t.Errorf("outcome = %+v; want an unreachable error retried after %v", out, defaultLimits.retrySchedule[0])
	}
}

// A failure that may pass is not retried once a tool was called: a retry
// would call it again.
func TestEndpointNoRetryAfterToolCall(t *testing.T) {
	llm := &fakeLLM{answer: func(i int, w http.ResponseWriter) {
		if i == 0 {
			respond(200, `{"choices":[{"message":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"events_list","arguments":"{}"}}]}}]}`)(i, w)
			return
		}
		respond(503, "busy")(i, w)
	}}
	url := llm.start(t)
	a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, Model: "m"}, Tools: newFakeTools("events_list")})
	out := a.Handle(context.Background(), invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent, Tools: []string{"events_list"}}, `{}`))
	if !strings.Contains(errText(out.Err), "503") || out.RetryIn != 0 || len(out.ToolCalls) != 1 {
		t.Errorf("outcome = %+v; want the 503, no retry, one tool call", out)
	}
}

func TestEndpointRunTime(t *testing.T) {
	release := make(chan struct{})
	llm := &fakeLLM{answer: func(int, http.ResponseWriter) { <-release }}
	url := llm.start(t)
	defer close(release)
	a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, Model: "m"}})
	a.maxRunTime = 50 * time.Millisecond
	out := a.Handle(context.Background(), invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent}, `{}`))
	if !strings.Contains(errText(out.Err), "did not finish within 50ms") || out.RetryIn != defaultLimits.retrySchedule[0] {
		t.Errorf("outcome = %+v; want a timeout retried after %v", out, defaultLimits.retrySchedule[0])
	}
}

func TestEndpointStopped(t *testing.T) {
	url := (&fakeLLM{answer: respond(200, answerHello)}).start(t)
	a := newAgent(t, &Options{Endpoint: &Endpoint{URL: url, Model: "m"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := a.Handle(ctx, invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent}, `{}`))
	if !strings.Contains(errText(out.Err), "stopped") || out.RetryIn != 0 {
		t.Errorf("outcome = %+v; want a stopped run without a retry", out)
	}
}

// bodyTransport answers every request with status and body, without a
// network.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Status: http.StatusText(b.status), Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(string(b.body))), Request: r}, nil
}

// FuzzEndpointAnswer reads arbitrary answers of an endpoint: never a
// panic, and every tool call it yields has arguments that are a JSON
// object or a reason why not.
func FuzzEndpointAnswer(f *testing.F) {
	f.Add(200, []byte(answerHello))
	f.Add(200, []byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","function":{"name":"events_list","arguments":"{\"limit\":1}"}}]}}]}`))
	f.Add(200, []byte(`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image"}],"tool_calls":[{"function":{"name":"x","arguments":{"a":1}}},{"function":{"name":"y","arguments":"[1]"}}]}}]}`))
	f.Add(200, []byte(`{"error":{"message":"bad key"}}`))
	f.Add(429, []byte(`slow down`))
	f.Add(200, []byte(`{"choices":[`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			status = 200
		}
		ep := &Endpoint{URL: "http://llm.test/v1/chat/completions", Model: "m"}
		conv := newEndpointConv(ep, time.Hour, "system", "user", 100, []*mcp.Tool{{Name: "events_list", InputSchema: map[string]any{"type": "object"}}})
		conv.client = &http.Client{Transport: bodyTransport{status, body}}
		r, err := conv.next(context.Background(), false)
		if err != nil {
			return
		}
		if r == nil {
			t.Fatal("no reply and no error")
		}
		for _, u := range r.uses {
			if u.badArgs != "" {
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(u.args, &obj); err != nil || obj == nil {
				t.Errorf("tool call %q has arguments %q that are not a JSON object", u.name, u.args)
			}
		}
		conv.answer([]toolResult{{id: "x", text: "y"}})
	})
}

// stepClock is a clock that moves by step each time it is read.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *stepClock) AfterFunc(time.Duration, func()) clock.Timer { panic("not used") }

// TestRunDurationOnTheClock checks that a run is timed on Options.Clock.
func TestRunDurationOnTheClock(t *testing.T) {
	var logs bytes.Buffer
	url := (&fakeLLM{answer: respond(200, `{"choices":[{"message":{"role":"assistant","content":"done"}}]}`)}).start(t)
	a := newAgent(t, &Options{
		Endpoint: &Endpoint{URL: url, Model: "m"},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Clock:    &stepClock{step: 90 * time.Second},
	})
	if out := a.Handle(context.Background(), invocation(&mcpe.HandlerSpec{Type: mcpe.HandlerAgent}, `{}`)); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !strings.Contains(logs.String(), "duration=1m30s") {
		t.Errorf("the run's log does not say duration=1m30s:\n%s", logs.String())
	}
}
