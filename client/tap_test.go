package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// raw is what a TapHandler was given, kept as given so that a buffer reused
// by the reader would show up as changed params.
type raw struct {
	method string
	params json.RawMessage
}

// recording returns a TapHandler and a function returning what it got.
func recording() (TapHandler, func() []notification) {
	var got []raw
	h := func(method string, params json.RawMessage) { got = append(got, raw{method, params}) }
	return h, func() []notification {
		out := []notification{}
		for _, g := range got {
			out = append(out, notification{Method: g.method, Params: string(g.params)})
		}
		return out
	}
}

// chunks is a reader that returns its parts one Read at a time.
type chunks struct{ parts []string }

func (c *chunks) Read(p []byte) (int, error) {
	for len(c.parts) > 0 && c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	return n, nil
}

// readSSE reads src through an sseReader and returns the bytes read and the
// notifications handed over.
func readSSE(t *testing.T, src io.Reader) (string, []notification) {
	t.Helper()
	h, got := recording()
	r := &sseReader{ReadCloser: io.NopCloser(src), handler: h}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(out), got()
}

// sseEvent is one SSE event carrying msg on a single data line.
func sseEvent(msg string) string { return "event: message\ndata: " + msg + "\n\n" }

const (
	eventMsg   = `{"jsonrpc":"2.0","method":"events/event","params":{"subscriptionId":"s1","cursor":"1","event":{"id":"e1"}}}`
	eventWant  = `{"subscriptionId":"s1","cursor":"1","event":{"id":"e1"}}`
	expiredMsg = `{"jsonrpc":"2.0","method":"events/subscription_expired","params":{"subscriptionId":"s2"}}`
)

// TestSSEReader checks what the reader hands over and what it passes on:
// pass is the stream without the events taken (a taken event's id line
// stays); "same" means the input unchanged.
func TestSSEReader(t *testing.T) {
	const same = "\x00same"
	tests := []struct {
		name  string
		input string
		pass  string
		want  []notification
	}{
		{name: "one event", input: sseEvent(eventMsg), pass: "", want: []notification{{"events/event", eventWant}}},
		{name: "data only", input: "data: " + eventMsg + "\n\n", pass: "", want: []notification{{"events/event", eventWant}}},
		{name: "no space after the colon", input: "data:" + eventMsg + "\n\n", pass: "", want: []notification{{"events/event", eventWant}}},
		{name: "CRLF line endings", input: "event: message\r\nid: 7\r\ndata: " + eventMsg + "\r\n\r\n", pass: "id: 7\r\n\n", want: []notification{{"events/event", eventWant}}},
		{
			name:  "multi-line data",
			input: "data: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"events/batch\",\ndata: \"params\":{\"n\":[1,\ndata: 2]}}\n\n",
			pass:  "",
			want:  []notification{{"events/batch", `{"n":[1,` + "\n" + `2]}`}},
		},
		{
			name:  "comments, event and id lines ignored",
			input: ": keep-alive\nevent: message\nid: 0_5\nretry: 1000\n: another comment\ndata: " + eventMsg + "\n\n",
			pass:  "id: 0_5\n\n",
			want:  []notification{{"events/event", eventWant}},
		},
		{
			name:  "comment alone is no event",
			input: ": events/event\n\n",
			pass:  same,
			want:  []notification{},
		},
		{
			name: "other methods ignored",
			input: sseEvent(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"events/event"}}`) +
				sseEvent(`{"jsonrpc":"2.0","method":"notifications/eventsx","params":{}}`) +
				sseEvent(`{"jsonrpc":"2.0","method":"eventsevent","params":{}}`),
			pass: same,
			want: []notification{},
		},
		{
			name:  "SEP-3415 push-stream notifications taken",
			input: sseEvent(`{"jsonrpc":"2.0","method":"notifications/events/heartbeat","params":{"cursor":"c"}}`),
			pass:  "",
			want:  []notification{{"notifications/events/heartbeat", `{"cursor":"c"}`}},
		},
		{
			name: "requests with an id ignored",
			input: sseEvent(`{"jsonrpc":"2.0","id":1,"method":"events/event","params":{}}`) +
				sseEvent(`{"jsonrpc":"2.0","id":"a","method":"events/poll","params":{}}`) +
				sseEvent(`{"jsonrpc":"2.0","id":null,"method":"events/event","params":{}}`),
			pass: same,
			want: []notification{},
		},
		{
			name:  "responses ignored",
			input: sseEvent(`{"jsonrpc":"2.0","id":3,"result":{"method":"events/event"}}`),
			pass:  same,
			want:  []notification{},
		},
		{
			name:  "invalid JSON ignored",
			input: sseEvent(`{"jsonrpc":"2.0","method":"events/event","params":`) + sseEvent(expiredMsg),
			pass:  sseEvent(`{"jsonrpc":"2.0","method":"events/event","params":`),
			want:  []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}},
		},
		{
			name:  "no params",
			input: sseEvent(`{"jsonrpc":"2.0","method":"events/event"}`),
			pass:  "",
			want:  []notification{{"events/event", ""}},
		},
		{
			name:  "several events in order",
			input: sseEvent(eventMsg) + sseEvent(`{"jsonrpc":"2.0","id":1,"result":{}}`) + sseEvent(expiredMsg) + sseEvent(eventMsg),
			pass:  sseEvent(`{"jsonrpc":"2.0","id":1,"result":{}}`),
			want: []notification{
				{"events/event", eventWant},
				{"events/subscription_expired", `{"subscriptionId":"s2"}`},
				{"events/event", eventWant},
			},
		},
		{
			name:  "unfinished event at the end",
			input: sseEvent(expiredMsg) + "data: " + eventMsg + "\n",
			pass:  "data: " + eventMsg + "\n",
			want:  []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}},
		},
		{name: "empty stream", input: "", pass: same, want: []notification{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, src io.Reader) {
				t.Helper()
				out, got := readSSE(t, src)
				pass := tt.pass
				if pass == same {
					pass = tt.input
				}
				if out != pass {
					t.Errorf("%s: passed on:\n got %q\nwant %q", how, out, pass)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: mismatch (-want +got):\n%s", how, diff)
				}
			}
			check("whole", strings.NewReader(tt.input))
			check("byte by byte", iotest.OneByteReader(strings.NewReader(tt.input)))
			for i := 1; i < len(tt.input); i++ {
				check(fmt.Sprintf("split at %d", i), &chunks{parts: []string{tt.input[:i], tt.input[i:]}})
			}
		})
	}
}

func TestSSEReaderOverlongLine(t *testing.T) {
	const limit = 200
	long := strings.Repeat("x", limit+1)
	const frame = `data: {"jsonrpc":"2.0","method":"events/event","params":{"pad":""}}`
	pad := strings.Repeat("p", limit-len(frame))
	atLimit := `data: {"jsonrpc":"2.0","method":"events/event","params":{"pad":"` + pad + `"}}`
	if len(atLimit) != limit {
		t.Fatalf("test line is %d bytes, want %d", len(atLimit), limit)
	}
	tests := []struct {
		name  string
		input string
		pass  string // what passes: the input without the events taken
		want  []notification
	}{
		{
			name:  "over-long data line, then an event",
			input: "data: " + long + "\n\n" + sseEvent(eventMsg),
			pass:  "data: " + long + "\n\n",
			want:  []notification{{"events/event", eventWant}},
		},
		{
			name:  "over-long events/ message, then an event",
			input: sseEvent(`{"jsonrpc":"2.0","method":"events/event","params":{"pad":"`+long+`"}}`) + sseEvent(expiredMsg),
			pass:  sseEvent(`{"jsonrpc":"2.0","method":"events/event","params":{"pad":"` + long + `"}}`),
			want:  []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}},
		},
		{
			name:  "over-long comment, then an event",
			input: ": " + long + "\n\n" + sseEvent(expiredMsg),
			pass:  ": " + long + "\n\n",
			want:  []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}},
		},
		{
			// What follows an over-long line in the same event is not
			// the whole event: it must not be dispatched on its own.
			name:  "over-long line inside an event",
			input: "data: " + long + "\ndata: " + eventMsg + "\n\n" + sseEvent(expiredMsg),
			pass:  "data: " + long + "\ndata: " + eventMsg + "\n\n",
			want:  []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}},
		},
		{
			name:  "line exactly at the limit",
			input: atLimit + "\n\n" + sseEvent(expiredMsg),
			pass:  "",
			want:  []notification{{"events/event", `{"pad":"` + pad + `"}`}, {"events/subscription_expired", `{"subscriptionId":"s2"}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, src := range []struct {
				how string
				r   io.Reader
			}{
				{"whole", strings.NewReader(tt.input)},
				{"byte by byte", iotest.OneByteReader(strings.NewReader(tt.input))},
				{"in 7-byte reads", iotest.HalfReader(&chunks{parts: splitEvery(tt.input, 14)})},
			} {
				h, got := recording()
				r := &sseReader{ReadCloser: io.NopCloser(src.r), handler: h, maxLine: limit}
				out, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != tt.pass {
					t.Errorf("%s: passed on:\n got %q\nwant %q", src.how, out, tt.pass)
				}
				if diff := cmp.Diff(tt.want, got()); diff != "" {
					t.Errorf("%s: mismatch (-want +got):\n%s", src.how, diff)
				}
			}
		})
	}
}

// The real limit: a line of more than 16 MiB passes uninspected, and the
// stream goes on.
func TestSSEReaderOverlongLineDefaultLimit(t *testing.T) {
	long := "data: " + strings.Repeat("x", maxSSELine) + "\n\n"
	input := long + sseEvent(eventMsg)
	out, got := readSSE(t, &chunks{parts: splitEvery(input, 64<<10)})
	if out != long {
		t.Errorf("passed on %d bytes; want the %d of the over-long event", len(out), len(long))
	}
	if diff := cmp.Diff([]notification{{"events/event", eventWant}}, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// splitEvery cuts s into parts of n bytes.
func splitEvery(s string, n int) []string {
	var parts []string
	for len(s) > 0 {
		k := min(len(s), n)
		parts = append(parts, s[:k])
		s = s[k:]
	}
	return parts
}

// The reader hands over Read's error and Close unchanged.
func TestSSEReaderErrorsAndClose(t *testing.T) {
	h, got := recording()
	failure := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader(sseEvent(eventMsg)), iotest.ErrReader(failure))
	closed := false
	r := &sseReader{ReadCloser: readCloser{Reader: src, close: func() error { closed = true; return nil }}, handler: h}
	if _, err := io.ReadAll(r); !errors.Is(err, failure) {
		t.Errorf("ReadAll error = %v, want %v", err, failure)
	}
	if err := r.Close(); err != nil || !closed {
		t.Errorf("Close() = %v, closed = %v; want the underlying body closed", err, closed)
	}
	if diff := cmp.Diff([]notification{{"events/event", eventWant}}, got()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// fakeConn is a client connection that reads from a list of messages.
type fakeConn struct {
	in      []jsonrpc.Message
	end     error
	written []jsonrpc.Message
	closed  bool
}

func (c *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.in) == 0 {
		return nil, c.end
	}
	m := c.in[0]
	c.in = c.in[1:]
	return m, nil
}

func (c *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.written = append(c.written, m)
	return nil
}

func (c *fakeConn) Close() error      { c.closed = true; return nil }
func (c *fakeConn) SessionID() string { return "fake-session" }

type fakeTransport struct{ conn *fakeConn }

func (t *fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestTapFilterTransport(t *testing.T) {
	id1, id2 := mustID(t, float64(1)), mustID(t, "two")
	end := errors.New("end of test input")
	passed := []jsonrpc.Message{
		&jsonrpc.Request{ID: id1, Method: "events/poll", Params: json.RawMessage(`{}`)},
		&jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"data":"x"}`)},
		&jsonrpc.Response{ID: id2, Result: json.RawMessage(`{"tools":[]}`)},
		&jsonrpc.Request{Method: "notifications/eventsx", Params: json.RawMessage(`{}`)},
	}
	conn := &fakeConn{end: end, in: []jsonrpc.Message{
		&jsonrpc.Request{Method: "events/event", Params: json.RawMessage(`{"cursor":"1"}`)},
		passed[0],
		&jsonrpc.Request{Method: "events/event", Params: json.RawMessage(`{"cursor":"2"}`)},
		&jsonrpc.Request{Method: "events/subscription_expired", Params: json.RawMessage(`{"subscriptionId":"s"}`)},
		passed[1],
		passed[2],
		passed[3],
		&jsonrpc.Request{Method: "notifications/events/event", Params: json.RawMessage(`{}`)},
		&jsonrpc.Request{Method: "events/batch", Params: json.RawMessage(`{"events":[]}`)},
	}}
	h, got := recording()
	tr := Tap(&fakeTransport{conn: conn}, h)
	c, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var read []jsonrpc.Message
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			if !errors.Is(err, end) {
				t.Errorf("Read error = %v, want %v", err, end)
			}
			break
		}
		read = append(read, m)
	}
	if diff := cmp.Diff(passed, read, cmp.Comparer(func(a, b jsonrpc.ID) bool { return a == b })); diff != "" {
		t.Errorf("messages read mismatch (-want +got):\n%s", diff)
	}
	want := []notification{
		{"events/event", `{"cursor":"1"}`},
		{"events/event", `{"cursor":"2"}`},
		{"events/subscription_expired", `{"subscriptionId":"s"}`},
		{"notifications/events/event", `{}`},
		{"events/batch", `{"events":[]}`},
	}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("handled mismatch (-want +got):\n%s", diff)
	}

	// Writes, Close and the session ID go to the wrapped connection.
	msg := &jsonrpc.Request{Method: "notifications/initialized"}
	if err := c.Write(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if len(conn.written) != 1 || conn.written[0] != msg {
		t.Errorf("written = %v, want the one message", conn.written)
	}
	if c.SessionID() != "fake-session" {
		t.Errorf("SessionID() = %q", c.SessionID())
	}
	c.Close()
	if !conn.closed {
		t.Errorf("Close did not close the wrapped connection")
	}
}

// roundTripper answers every request with a copy of resp.
type roundTripper struct{ resp *http.Response }

func (rt roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	resp := *rt.resp
	return &resp, nil
}

func TestTapStreamable(t *testing.T) {
	h, got := recording()
	base := roundTripper{resp: &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		Body:       io.NopCloser(strings.NewReader(sseEvent(eventMsg) + sseEvent(`{"jsonrpc":"2.0","id":1,"result":{}}`))),
	}}
	orig := &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:1/mcp", HTTPClient: &http.Client{Transport: base}}
	tr, ok := Tap(orig, h).(*mcp.StreamableClientTransport)
	if !ok {
		t.Fatalf("ClientTransport of a *mcp.StreamableClientTransport is a %T, want the same type", tr)
	}
	if tr == orig || orig.HTTPClient.Transport != base {
		t.Errorf("ClientTransport changed the transport it was given")
	}
	if tr.Endpoint != orig.Endpoint {
		t.Errorf("Endpoint = %q, want %q", tr.Endpoint, orig.Endpoint)
	}
	tap, ok := tr.HTTPClient.Transport.(*sseTap)
	if !ok || tap.base != base {
		t.Fatalf("HTTP transport is %T, want an sseTap over the client's own", tr.HTTPClient.Transport)
	}
	req, err := http.NewRequest(http.MethodGet, orig.Endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tap.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if want := sseEvent(`{"jsonrpc":"2.0","id":1,"result":{}}`); string(body) != want {
		t.Errorf("body = %q, want %q: the stream without the notification", body, want)
	}
	if diff := cmp.Diff([]notification{{"events/event", eventWant}}, got()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	// Without an HTTP client of its own, the copy taps the default one.
	tr2 := Tap(&mcp.StreamableClientTransport{Endpoint: orig.Endpoint}, h).(*mcp.StreamableClientTransport)
	if tap, ok := tr2.HTTPClient.Transport.(*sseTap); !ok || tap.base != http.DefaultTransport {
		t.Errorf("HTTP transport is %T, want an sseTap over http.DefaultTransport", tr2.HTTPClient.Transport)
	}
	if http.DefaultClient.Transport != nil {
		t.Errorf("ClientTransport changed http.DefaultClient")
	}
}

// JSON responses are not event streams: they pass untouched.
func TestSSETapOtherResponses(t *testing.T) {
	h, got := recording()
	for _, ct := range []string{"application/json", "", "text/plain"} {
		body := io.NopCloser(bytes.NewReader([]byte(`{"jsonrpc":"2.0","method":"events/event","params":{}}`)))
		tap := &sseTap{base: roundTripper{resp: &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: body}}, handler: h}
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
		resp, err := tap.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Body != body {
			t.Errorf("Content-Type %q: body was wrapped", ct)
		}
		io.ReadAll(resp.Body)
	}
	if len(got()) != 0 {
		t.Errorf("handled %v; want nothing from non-SSE responses", got())
	}
}

// roundTripperFunc is an http.RoundTripper made of a function.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTapWrapHTTP(t *testing.T) {
	// Without an HTTP client, the wrapper gets the default transport.
	bare := &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:1/mcp"}
	var got http.RoundTripper
	w := wrapHTTP(bare, func(base http.RoundTripper) http.RoundTripper { got = base; return base })
	if got != http.DefaultTransport || bare.HTTPClient != nil || w.Endpoint != bare.Endpoint {
		t.Errorf("bare transport: base %v, original client %v, endpoint %q", got, bare.HTTPClient, w.Endpoint)
	}

	// With one, its transport is wrapped and the original is left alone.
	own := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("own") })
	hc := &http.Client{Transport: own}
	st := &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:1/mcp", HTTPClient: hc}
	wrapped := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("wrapped") })
	w = wrapHTTP(st, func(base http.RoundTripper) http.RoundTripper {
		if _, err := base.RoundTrip(nil); err == nil || err.Error() != "own" {
			t.Errorf("base is not the client's transport (%v)", err)
		}
		return wrapped
	})
	if st.HTTPClient != hc || hc.Transport == nil {
		t.Fatal("the original transport or its client was changed")
	}
	if _, err := hc.Transport.RoundTrip(nil); err.Error() != "own" {
		t.Error("the original client's transport was replaced")
	}
	if _, err := w.HTTPClient.Transport.RoundTrip(nil); err == nil || err.Error() != "wrapped" {
		t.Errorf("the copy's transport is not the wrapper (%v)", err)
	}
}

// notification is one MCPE notification as a TapHandler got it.
type notification struct {
	Method string
	Params string
}
