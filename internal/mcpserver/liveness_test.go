package mcpserver_test

import (
	"bufio"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// rawSession is an MCP session over Streamable HTTP driven by hand, the
// way a host that goes away without a DELETE leaves one: initialized, used,
// never closed, and without the event stream a go-sdk client opens.
type rawSession struct {
	t     *testing.T
	url   string
	token string
	id    string
	seq   int
}

// post sends one JSON-RPC message and returns the response body.
func (r *rawSession) post(method string, params any, call bool) string {
	r.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if call {
		r.seq++
		msg["id"] = r.seq
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if r.id != "" {
		req.Header.Set("Mcp-Session-Id", r.id)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		r.t.Fatalf("%s: %s %s", method, resp.Status, out)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		r.id = id
	}
	return string(out)
}

func openRaw(t *testing.T, url, token string) *rawSession {
	t.Helper()
	r := &rawSession{t: t, url: url, token: token}
	r.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "0"}}, true)
	r.post("notifications/initialized", map[string]any{}, false)
	return r
}

// waitFor polls cond until it holds, failing after mcpetest.Wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(mcpetest.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %v", what, mcpetest.Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) count(principal string) int {
	subs, err := e.store.ListSubscriptions(context.Background(), subscriptions.ListQuery{Principal: principal})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(subs)
}

// TestAbandonedSessionIsReclaimed checks that a session whose host went
// away without a DELETE is closed once idle for the timeout, and that its
// subscriptions (a session without a token is its own principal) go with
// it; a session that listens on its event stream and answers pings stays.
func TestAbandonedSessionIsReclaimed(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.srv.SetHTTPLimits(time.Minute, 0)
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)

	abandoned := openRaw(t, hs.URL, "")
	abandoned.post("tools/call", map[string]any{"name": "events_subscribe",
		"arguments": map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}}}, true)
	listener := mcpetest.Connect(t, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	listener.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	all := func() int { return e.count("") }
	if n := all(); n != 2 {
		t.Fatalf("%d subscriptions stored, want 2", n)
	}

	e.clock.Advance(50 * time.Second)
	if n := all(); n != 2 {
		t.Fatalf("a session was reclaimed before its timeout: %d subscriptions left", n)
	}
	// Past the timeout: the abandoned one goes; the listener, which has
	// made no request either but keeps its event stream open, is pinged.
	e.clock.Advance(time.Minute)
	waitFor(t, "the abandoned session's subscription deleted", func() bool { return all() == 1 })
	e.clock.Advance(time.Minute)
	e.publish("x", `{}`, mcpe.Metadata{})
	if n := listener.Next(t); n.Method != mcpe.MethodEvent {
		t.Errorf("the listening session got %v; want its event", n)
	}
	if all() != 1 {
		t.Errorf("the listening session's subscription was deleted")
	}
}

// TestSessionsPerPrincipalBounded checks that a principal's sessions past
// the bound close the one idle longest.
func TestSessionsPerPrincipalBounded(t *testing.T) {
	e := newEnv(t, envOptions{})
	tokens := httpapi.NewTokens(map[string]string{"alice-token": "alice"})
	e.srv.SetHTTPLimits(0, 2)
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Tokens: tokens}))
	t.Cleanup(hs.Close)
	// The initialized notification is handled after its POST is answered:
	// wait for each session to be attached.
	open := func() *rawSession {
		r := openRaw(t, hs.URL, "alice-token")
		waitFor(t, "session "+r.id+" attached", func() bool { return hasSession(e.srv.SessionsOf("alice"), r.id) })
		e.clock.Advance(time.Second)
		return r
	}
	first, second := open(), open()
	third := open()
	waitFor(t, "two sessions left", func() bool { return len(e.srv.SessionsOf("alice")) == 2 })
	got := e.srv.SessionsOf("alice")
	if hasSession(got, first.id) || !hasSession(got, second.id) || !hasSession(got, third.id) {
		t.Errorf("the sessions left are not the two newest")
	}
}

func hasSession(list []*mcp.ServerSession, id string) bool {
	for _, ss := range list {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// TestDigestKeptWhileNoStreamIsOpen checks that a principal whose only
// session has no open event stream counts as away: a digest that fires
// then is kept, and sent when a session that can receive it connects.
func TestDigestKeptWhileNoStreamIsOpen(t *testing.T) {
	e := newEnv(t, envOptions{})
	tokens := httpapi.NewTokens(map[string]string{"alice-token": "alice"})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Tokens: tokens}))
	t.Cleanup(hs.Close)
	quiet := openRaw(t, hs.URL, "alice-token")
	quiet.post("tools/call", map[string]any{"name": "events_subscribe", "arguments": map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"x"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@hourly"}}}}, true)
	e.publish("x", `{}`, mcpe.Metadata{})
	if e.reg.Connected("alice") {
		t.Fatal("a session without an event stream counts as connected")
	}
	e.clock.Advance(time.Hour) // the digest fires; nothing could reach alice
	c := mcpetest.Connect(t, &mcp.StreamableClientTransport{Endpoint: hs.URL,
		HTTPClient: &http.Client{Transport: &bearer{token: "alice-token"}}}, nil)
	c.MustCall(t, "events_list", map[string]any{}, nil)
	if n := c.Next(t); n.Method != mcpe.MethodBatch {
		t.Errorf("the returning owner got %v; want the digest kept for it", n)
	}
}

// bearer adds a bearer token to each request.
type bearer struct{ token string }

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSessionIDsStayOutOfLogs checks that a session ID, the credential of
// a session without a token, appears neither in logs above debug nor in the
// stored principal.
func TestSessionIDsStayOutOfLogs(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, envOptions{logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	r := openRaw(t, hs.URL, "")
	r.post("tools/call", map[string]any{"name": "events_subscribe",
		"arguments": map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}}}, true)
	subs, err := e.store.ListSubscriptions(context.Background(), subscriptions.ListQuery{})
	if err != nil || len(subs) != 1 {
		t.Fatalf("subscriptions = %v, %v", subs, err)
	}
	if strings.Contains(subs[0].Principal, r.id) || !strings.HasPrefix(subs[0].Principal, mcpserver.SessionPrincipalPrefix) {
		t.Errorf("stored principal %q holds the session ID %q", subs[0].Principal, r.id)
	}
	if !strings.HasPrefix(subs[0].Principal, e.svc.RunPrefix()) || e.svc.RunPrefix() == mcpserver.SessionPrincipalPrefix {
		t.Errorf("stored principal %q is not named after the run, %q", subs[0].Principal, e.svc.RunPrefix())
	}
	if out := logs.String(); strings.Contains(out, r.id) || !strings.Contains(out, "session connected") {
		t.Errorf("logs at info show the session ID %q:\n%s", r.id, out)
	}
}

// TestCloseTokenlessSessions checks what a server does when another took
// its run as ended: its sessions without a token end, and what they owned
// goes with them; a client must start a new session. Other sessions stay.
func TestCloseTokenlessSessions(t *testing.T) {
	e := newEnv(t, envOptions{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	r := openRaw(t, hs.URL, "")
	r.post("tools/call", map[string]any{"name": "events_subscribe",
		"arguments": map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}}}, true)
	local := e.connect(mcpserver.LocalPrincipal, nil)
	local.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	if n := e.count(""); n != 2 {
		t.Fatalf("%d subscriptions stored, want 2", n)
	}

	if n := e.srv.CloseTokenlessSessions(); n != 1 {
		t.Errorf("CloseTokenlessSessions = %d, want 1", n)
	}
	waitFor(t, "the tokenless session's subscription deleted", func() bool { return e.count("") == 1 })
	if e.count(mcpserver.LocalPrincipal) != 1 {
		t.Errorf("the local session's subscription was deleted")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
	req, _ := http.NewRequest(http.MethodPost, hs.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request on the closed session: %s; want 404 Not Found, so that the client starts anew", resp.Status)
	}
	local.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"y"}}})
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnauthorizedSaysBearer checks that a refused request to /mcp says
// which scheme it wants (RFC 6750) and answers with the JSON refusal body.
func TestUnauthorizedSaysBearer(t *testing.T) {
	e := newEnv(t, envOptions{})
	tokens := httpapi.NewTokens(map[string]string{"alice-token": "alice"})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{Tokens: tokens}))
	t.Cleanup(hs.Close)
	for _, tc := range []struct{ auth, want string }{
		{"", `Bearer realm="mcpe-server"`},
		{"Bearer nope", `Bearer realm="mcpe-server", error="invalid_token"`},
	} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{}`))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body httpapi.ErrorBody
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != tc.want || body.Error.Code != httpapi.CodeUnauthorized {
			t.Errorf("Authorization %q: %s, WWW-Authenticate %q, body %+v; want 401, %q and the JSON refusal",
				tc.auth, resp.Status, resp.Header.Get("WWW-Authenticate"), body, tc.want)
		}
	}
}

// TestTokenlessSessionsBounded checks that without tokens the sessions
// count together as one principal's: past the bound a new one is refused,
// with an error that says the bound and what to do, and no other client's
// session is closed. A session that sent initialize and nothing more
// counts too, and times out like any other, which makes room again.
func TestTokenlessSessionsBounded(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.srv.SetHTTPLimits(time.Minute, 2)
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	initialize := func() (*rawSession, string) {
		r := &rawSession{t: t, url: hs.URL}
		return r, r.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "raw", "version": "0"}}, true)
	}
	first := openRaw(t, hs.URL, "")
	if _, body := initialize(); strings.Contains(body, `"error"`) {
		t.Fatalf("the second session was refused: %s", body)
	}
	_, body := initialize()
	for _, want := range []string{`"error"`, "2 MCP sessions without a token", "auth.tokens"} {
		if !strings.Contains(body, want) {
			t.Errorf("a third session was answered %s; want an error with %q", body, want)
		}
	}
	if strings.Contains(body, "maxSessionsPerPrincipal") {
		t.Errorf("a third session was answered %s, which names a config key that is gone", body)
	}
	// A go-sdk client shows the reason.
	_, err := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil || !strings.Contains(err.Error(), "auth.tokens") {
		t.Errorf("a go-sdk client connecting past the bound got %v; want the reason", err)
	}
	first.post("tools/list", map[string]any{}, true) // still open
	e.clock.Advance(3 * time.Minute)
	waitFor(t, "a new session admitted once idle ones timed out", func() bool {
		_, body := initialize()
		return !strings.Contains(body, `"error"`)
	})
}

// heldHeader holds the handler of one event stream back at its first call
// of Header, the point before the go-sdk sets Content-Type and writes its
// response header, until release is closed; writes records the body
// writes that came while it held.
type heldHeader struct {
	http.ResponseWriter
	holding, release chan struct{}
	wrote            chan struct{}
	once, wroteOnce  sync.Once
}

func (h *heldHeader) Header() http.Header {
	h.once.Do(func() {
		close(h.holding)
		<-h.release
	})
	return h.ResponseWriter.Header()
}

func (h *heldHeader) Write(p []byte) (int, error) {
	h.wroteOnce.Do(func() { close(h.wrote) })
	return h.ResponseWriter.Write(p)
}

func (h *heldHeader) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// TestEventStreamHeaderGoesFirst checks that nothing is written to a
// session's event stream before the go-sdk has written its response
// header: a digest kept for the owner and due when the stream opens comes
// on a text/event-stream response, even when the SDK is slow to answer the
// GET. Written first, it made net/http answer text/plain, and clients that
// check the content type ignored the stream and lost its events.
func TestEventStreamHeaderGoesFirst(t *testing.T) {
	e := newEnv(t, envOptions{})
	tokens := httpapi.NewTokens(map[string]string{"alice-token": "alice"})
	// The session outlives the hour the digest waits.
	e.srv.SetHTTPLimits(24*time.Hour, 0)
	h := e.srv.HTTPHandler(mcpserver.HTTPOptions{Tokens: tokens})
	held := &heldHeader{holding: make(chan struct{}), release: make(chan struct{}), wrote: make(chan struct{})}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			held.ResponseWriter = w
			w = held
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	r := openRaw(t, hs.URL, "alice-token")
	r.post("tools/call", map[string]any{"name": "events_subscribe", "arguments": map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"x"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@hourly"}}}}, true)
	e.publish("x", `{}`, mcpe.Metadata{})
	e.clock.Advance(time.Hour) // the digest fires while no stream is open: kept

	ctx, cancel := context.WithTimeout(t.Context(), mcpetest.Wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", r.id)
	req.Header.Set("Authorization", "Bearer alice-token")
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		answered <- answer{resp, err}
	}()
	<-held.holding
	// The SDK is held before its header. A stream counted live now would
	// be written the digest: let that write happen before the SDK goes on.
	if e.reg.Connected("alice") {
		select {
		case <-held.wrote:
		case <-ctx.Done():
		}
	}
	close(held.release)
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.resp.Body.Close()
	if ct := a.resp.Header.Get("Content-Type"); a.resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("the event stream was answered %s, Content-Type %q; want 200 text/event-stream", a.resp.Status, ct)
	}
	// What comes is server-sent events: the SDK's comment, then the digest.
	sc := bufio.NewScanner(a.resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, ":") || line == "event: message" || strings.HasPrefix(line, "id: "):
		case strings.HasPrefix(line, "data: ") && strings.Contains(line, `"method":"`+mcpe.MethodBatch+`"`):
			return
		case strings.HasPrefix(line, "data: "):
		default:
			t.Fatalf("the event stream carried %q, not a server-sent event", line)
		}
	}
	t.Fatalf("the event stream ended (%v) without the digest kept for its owner", sc.Err())
}
