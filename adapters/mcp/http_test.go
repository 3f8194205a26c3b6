package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

const (
	docURI  = "test://doc"
	doc2URI = "test://doc2"
)

// httpUpstream is an upstream MCP server served over Streamable HTTP on
// loopback.
type httpUpstream struct {
	server *mcp.Server
	srv    *httptest.Server
	// header is the last X-Test header received.
	header    atomic.Value
	stateless bool

	mu sync.Mutex
	// subscribed are the URIs currently subscribed to.
	subscribed map[string]bool
	// unsubscribed receives the URIs unsubscribed from.
	unsubscribed chan string
}

// subscriptions returns the URIs subscribed to.
func (up *httpUpstream) subscriptions() []string {
	up.mu.Lock()
	defer up.mu.Unlock()
	return slices.Sorted(maps.Keys(up.subscribed))
}

type echoIn struct {
	Text string `json:"text"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoIn, error) {
	return nil, in, nil
}

func readDoc(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "hello"}}}, nil
}

// httpMode is how an upstream serves Streamable HTTP, and the protocol
// version the adapter then speaks with it (asking for 2026-07-28, the
// default for a URL).
type httpMode struct {
	name      string
	stateless bool
	version   string
}

// httpModes: a stateful server takes only the initialize handshake
// (2025-11-25) and sends notifications on its standalone GET stream; a
// stateless one keeps no session and sends list changes and resource
// updates on subscriptions/listen streams (2026-07-28).
var httpModes = []httpMode{
	{name: "stateful", version: "2025-11-25"},
	{name: "stateless", stateless: true, version: "2026-07-28"},
}

// newHTTPUpstream starts an upstream, on ln when it is not nil.
func newHTTPUpstream(t *testing.T, ln net.Listener) *httpUpstream {
	return newHTTPUpstreamMode(t, ln, httpModes[0])
}

// newHTTPUpstreamMode starts an upstream served as mode says, on ln when it
// is not nil.
func newHTTPUpstreamMode(t *testing.T, ln net.Listener, mode httpMode) *httpUpstream {
	t.Helper()
	up := &httpUpstream{subscribed: make(map[string]bool), unsubscribed: make(chan string, 16), stateless: mode.stateless}
	up.server = mcp.NewServer(&mcp.Implementation{Name: "test-upstream", Version: "1.0.0"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			up.mu.Lock()
			defer up.mu.Unlock()
			up.subscribed[req.Params.URI] = true
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			up.mu.Lock()
			delete(up.subscribed, req.Params.URI)
			up.mu.Unlock()
			up.unsubscribed <- req.Params.URI
			return nil
		},
	})
	up.server.AddResource(&mcp.Resource{URI: docURI, Name: "doc", MIMEType: "text/plain"}, readDoc)
	up.server.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	mcp.AddTool(up.server, &mcp.Tool{Name: "echo"}, echo)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up.server }, &mcp.StreamableHTTPOptions{Stateless: mode.stateless})
	up.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.header.Store(r.Header.Get("X-Test"))
		handler.ServeHTTP(w, r)
	}))
	if ln != nil {
		up.srv.Listener.Close()
		up.srv.Listener = ln
	}
	up.srv.Start()
	t.Cleanup(up.kill)
	return up
}

// kill ends the server's sessions and shuts it down.
func (up *httpUpstream) kill() {
	for ss := range up.server.Sessions() {
		ss.Close()
	}
	up.srv.CloseClientConnections()
	up.srv.Close()
}

// session returns the server's session with the adapter. A stateless
// server has one per request in progress: the first is returned.
func (up *httpUpstream) session(t *testing.T) *mcp.ServerSession {
	t.Helper()
	var found []*mcp.ServerSession
	for ss := range up.server.Sessions() {
		found = append(found, ss)
	}
	if len(found) == 0 || (!up.stateless && len(found) != 1) {
		t.Fatalf("the upstream has %d sessions; want the adapter's one", len(found))
	}
	return found[0]
}

// ignoreServerAssigned leaves out what the publisher fills in.
var ignoreServerAssigned = cmpopts.IgnoreFields(mcpe.Event{}, "ID")

func TestHTTPUpstream(t *testing.T) {
	for _, mode := range httpModes {
		t.Run(mode.name, func(t *testing.T) { testHTTPUpstream(t, mode) })
	}
}

func testHTTPUpstream(t *testing.T, mode httpMode) {
	up := newHTTPUpstreamMode(t, nil, mode)
	fake := clocktest.NewFake(t0)
	rec := newRecorder()
	a := startAdapter(t, rec, fake, Upstream{Name: "up", URL: up.srv.URL + "/mcp", Headers: map[string]string{"X-Test": "yes"}})

	connected := rec.wait(t, "mcp.up.connected", 1)[0]
	if diff := cmp.Diff(map[string]any{"server": "up", "protocolVersion": mode.version, "serverName": "test-upstream", "serverVersion": "1.0.0"}, decode(t, connected)); diff != "" {
		t.Errorf("connected data mismatch (-want +got):\n%s", diff)
	}
	if st := state(t, a); st.Status != StatusConnected || st.Since != t0.Format(time.RFC3339) {
		t.Errorf("state = %+v; want connected since %v", st, t0)
	}
	if got := up.header.Load(); got != "yes" {
		t.Errorf("the upstream got X-Test %v; want the configured header \"yes\"", got)
	}

	// The upstream's own event, re-published.
	notifyUntilDelivered(t, up, "events/event", eventParams(t,
		`{"id":"e1","type":"build.finished","data":{"ok":true},"metadata":{"timestamp":"2026-01-15T09:00:00Z","priority":"high","tags":["ci"]}}`))
	got := rec.wait(t, "mcp.up.build.finished", 1)[0]
	want := mcpe.Event{
		Type: "mcp.up.build.finished",
		Data: json.RawMessage(`{"ok":true}`),
		Metadata: mcpe.Metadata{
			SourceEventID: "up:e1",
			Timestamp:     time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC),
			Priority:      mcpe.PriorityHigh,
			Tags:          []string{"ci", "upstream:up"},
		},
	}
	if diff := cmp.Diff(want, got, ignoreServerAssigned); diff != "" {
		t.Errorf("re-published event mismatch (-want +got):\n%s", diff)
	}

	// tools/list_changed and prompts/list_changed.
	mcp.AddTool(up.server, &mcp.Tool{Name: "second"}, echo)
	ev := rec.wait(t, "mcp.up.tools.list_changed", 1)[0]
	if diff := cmp.Diff(map[string]any{"server": "up"}, decode(t, ev)); diff != "" {
		t.Errorf("tools.list_changed data mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"upstream:up"}, ev.Metadata.Tags); diff != "" {
		t.Errorf("tools.list_changed tags mismatch (-want +got):\n%s", diff)
	}
	up.server.AddPrompt(&mcp.Prompt{Name: "second"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	rec.wait(t, "mcp.up.prompts.list_changed", 1)

	// resources/updated for the resource subscribed to on connecting.
	ctx := context.Background()
	if err := up.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: docURI}); err != nil {
		t.Fatal(err)
	}
	ev = rec.wait(t, "mcp.up.resources.updated", 1)[0]
	if diff := cmp.Diff(map[string]any{"server": "up", "uri": docURI}, decode(t, ev)); diff != "" {
		t.Errorf("resources.updated data mismatch (-want +got):\n%s", diff)
	}

	// Logs at or above the requested level ("info"), with a priority
	// from the level. A stateless server keeps no level, so it sends no
	// log message outside a request.
	if !mode.stateless {
		ss := up.session(t)
		for _, p := range []*mcp.LoggingMessageParams{
			{Level: "debug", Logger: "db", Data: "below the level: not sent"},
			{Level: "error", Logger: "db", Data: map[string]any{"msg": "disk full"}},
			{Level: "warning", Data: "slow query"},
		} {
			if err := ss.Log(ctx, p); err != nil {
				t.Fatalf("Log: %v", err)
			}
		}
		logs := rec.wait(t, "mcp.up.log", 2)
		if len(logs) != 2 {
			t.Fatalf("got %d log events; want 2 (the debug message is below the level)", len(logs))
		}
		if diff := cmp.Diff(map[string]any{"server": "up", "level": "error", "logger": "db", "data": map[string]any{"msg": "disk full"}}, decode(t, logs[0])); diff != "" {
			t.Errorf("log data mismatch (-want +got):\n%s", diff)
		}
		if logs[0].Metadata.Priority != mcpe.PriorityHigh || logs[1].Metadata.Priority != mcpe.PriorityNormal {
			t.Errorf("log priorities = %s, %s; want high (error), normal (warning)", logs[0].Metadata.Priority, logs[1].Metadata.Priority)
		}
	}

	// A batch: the valid events pass, the invalid ones are skipped.
	batch, err := json.Marshal(mcpe.BatchParams{SubscriptionID: "sub-1", Events: []json.RawMessage{
		json.RawMessage(`{"id":"e2","type":"a.b","data":{"n":2}}`),
		json.RawMessage(fmt.Sprintf(`{"id":"e3","type":%q,"data":{}}`, strings.Repeat("x", 300))),
		json.RawMessage(`{"id":"e4","type":"connected","data":{}}`),
		json.RawMessage(`{"id":"e5","type":"a.c","data":{"n":5}}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	notifyUntilDelivered(t, up, "events/batch", batch)
	rec.wait(t, "mcp.up.a.c", 1)
	if got := rec.ofType("mcp.up.a.b"); len(got) != 1 || got[0].Metadata.SourceEventID != "up:e2" {
		t.Errorf("a.b events = %+v; want one with sourceEventId up:e2", got)
	}
	if got := rec.ofType("mcp.up.connected"); len(got) != 1 {
		t.Errorf("%d connected events; an upstream event of type \"connected\" must not pass for the adapter's own", len(got))
	}

	// resources/list_changed: the new resource is subscribed to.
	up.server.AddResource(&mcp.Resource{URI: doc2URI, Name: "doc2"}, readDoc)
	rec.wait(t, "mcp.up.resources.list_changed", 1)
	eventually(t, "an update of the new resource to arrive", func() bool {
		up.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: doc2URI})
		for _, ev := range rec.ofType("mcp.up.resources.updated") {
			if strings.Contains(string(ev.Data), doc2URI) {
				return true
			}
		}
		return false
	})

	// A resource gone is unsubscribed from.
	up.server.RemoveResources(doc2URI)
	select {
	case uri := <-up.unsubscribed:
		if uri != doc2URI {
			t.Errorf("unsubscribed from %s; want %s", uri, doc2URI)
		}
	case <-time.After(waitLimit):
		t.Fatalf("no resources/unsubscribe for %s within %v after it was removed", doc2URI, waitLimit)
	}
	// Unsubscribing (under 2026-07-28, ending that resource's
	// subscriptions/listen stream) leaves the session up.
	if err := up.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: docURI}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "mcp.up.resources.updated", 3)
	if st := state(t, a); st.Status != StatusConnected || len(rec.ofType("mcp.up.disconnected")) != 0 {
		t.Errorf("after an unsubscribe: state %+v, %d disconnected events; want still connected", st, len(rec.ofType("mcp.up.disconnected")))
	}
	rec.noRejects(t)
}

func TestHTTPUpstreamResourceLimit(t *testing.T) {
	for _, mode := range httpModes {
		t.Run(mode.name, func(t *testing.T) { testHTTPUpstreamResourceLimit(t, mode) })
	}
}

func testHTTPUpstreamResourceLimit(t *testing.T, mode httpMode) {
	up := newHTTPUpstreamMode(t, nil, mode)
	for i := range 4 {
		up.server.AddResource(&mcp.Resource{URI: fmt.Sprintf("test://extra/%d", i), Name: "extra"}, readDoc)
	}
	rec := newRecorder()
	a, err := New(Options{
		Upstreams: []Upstream{{Name: "up", URL: up.srv.URL}},
		Publisher: rec,
		Clock:     clocktest.NewFake(t0),
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	a.maxSubscribed = 2
	start(t, a)
	rec.wait(t, "mcp.up.connected", 1)
	if got := up.subscriptions(); len(got) != 2 {
		t.Errorf("subscribed to %q; want 2 of the 5 resources (maxSubscribed)", got)
	}
}

// listenAgain listens on addr, which a server just gave up.
func listenAgain(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	return ln
}

func TestHTTPUpstreamReconnects(t *testing.T) {
	for _, mode := range httpModes {
		t.Run(mode.name, func(t *testing.T) { testHTTPUpstreamReconnects(t, mode) })
	}
}

func testHTTPUpstreamReconnects(t *testing.T, mode httpMode) {
	up := newHTTPUpstreamMode(t, nil, mode)
	addr := up.srv.Listener.Addr().String()
	fake := clocktest.NewFake(t0)
	rec := newRecorder()
	a := startAdapter(t, rec, fake, Upstream{Name: "up", URL: up.srv.URL})
	rec.wait(t, "mcp.up.connected", 1)

	up.kill()
	ev := rec.wait(t, "mcp.up.disconnected", 1)[0]
	st := state(t, a)
	if st.Status != StatusRetrying || st.LastError == "" || st.NextAttempt == "" {
		t.Fatalf("state after the upstream died = %+v; want retrying with lastError and nextAttempt", st)
	}
	t.Logf("state after kill: %+v", st)
	data := decode(t, ev)
	if data["error"] != st.LastError || data["nextAttempt"] != st.NextAttempt {
		t.Errorf("disconnected data = %v; want the state's error and nextAttempt (%+v)", data, st)
	}
	if ev.Metadata.Priority != mcpe.PriorityHigh {
		t.Errorf("disconnected priority = %s; want high", ev.Metadata.Priority)
	}
	due, ok := fake.NextDue()
	if !ok {
		t.Fatal("no retry timer is pending")
	}
	if d := due.Sub(t0); d < time.Second || d > 1200*time.Millisecond {
		t.Errorf("first retry in %v; want 1s with up to 20%% jitter", d)
	}

	// Restarted on the same address: the retry, once due, reconnects.
	up2 := newHTTPUpstreamMode(t, listenAgain(t, addr), mode)
	fake.AdvanceTo(due)
	rec.wait(t, "mcp.up.connected", 2)
	if st := state(t, a); st.Status != StatusConnected {
		t.Errorf("state after the retry = %+v; want connected", st)
	}
	notifyUntilDelivered(t, up2, "events/event", eventParams(t, `{"id":"e9","type":"after.restart","data":{}}`))
	rec.wait(t, "mcp.up.after.restart", 1)
	rec.noRejects(t)
}

func TestHTTPUpstreamUnreachable(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	fake := clocktest.NewFake(t0)
	rec := newRecorder()
	a, err := New(Options{
		Upstreams: []Upstream{{Name: "down", URL: "http://" + addr + "/mcp"}},
		Publisher: rec,
		Clock:     fake,
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	a.backoff.max, a.backoff.jitter = 4*time.Second, 0
	start(t, a)

	// Each failed attempt doubles the wait, up to the backoff's max.
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		var due time.Time
		eventually(t, fmt.Sprintf("retry timer %d", i+1), func() bool {
			var ok bool
			due, ok = fake.NextDue()
			return ok
		})
		st := state(t, a)
		if st.Status != StatusRetrying || st.LastError == "" {
			t.Fatalf("state = %+v; want retrying with lastError", st)
		}
		if got := due.Sub(fake.Now()); got != want {
			t.Errorf("wait before attempt %d = %v; want %v", i+2, got, want)
		}
		fake.AdvanceTo(due)
	}
	if got := rec.ofType("mcp.down.disconnected"); len(got) != 0 {
		t.Errorf("published %d disconnected events for an upstream that never connected", len(got))
	}
}

// A stateless server asked for 2025-11-25 keeps no stream for
// notifications outside requests: the session is up, but nothing can
// arrive from it, and the adapter says so in its log.
func TestHTTPUpstreamWithoutNotificationStream(t *testing.T) {
	up := newHTTPUpstreamMode(t, nil, httpModes[1])
	var logs syncBuffer
	rec := newRecorder()
	a, err := New(Options{
		Upstreams: []Upstream{{Name: "up", URL: up.srv.URL}},
		Publisher: rec,
		Clock:     clocktest.NewFake(t0),
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	a.upstreams[0].protocol = "2025-11-25"
	start(t, a)
	ev := rec.wait(t, "mcp.up.connected", 1)[0]
	if v := decode(t, ev)["protocolVersion"]; v != "2025-11-25" {
		t.Errorf("protocolVersion %v; want the one asked for, 2025-11-25", v)
	}
	eventually(t, "a warning that no notification can arrive", func() bool {
		return strings.Contains(logs.String(), "stream for notifications outside requests refused")
	})
	if st := state(t, a); st.Status != StatusConnected {
		t.Errorf("state %+v; want connected", st)
	}
}

// A watched subscriptions/listen body passes what it reads through
// unchanged, and reports its end once, unless its request was cancelled.
func TestWatchedBody(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cancelled bool
		readErr   error
		want      string // reported; empty for nothing
	}{
		{name: "server ended the stream", readErr: io.EOF, want: "the server ended it"},
		{name: "connection broke", readErr: io.ErrUnexpectedEOF, want: "unexpected EOF"},
		{name: "unsubscribed", cancelled: true, readErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			var reports []string
			b := &watchedBody{
				ReadCloser: io.NopCloser(io.MultiReader(strings.NewReader("data: x\n\n"), errReader{tc.readErr})),
				ctx:        ctx,
				ended:      func(err error) { reports = append(reports, err.Error()) },
			}
			got, err := io.ReadAll(b)
			if string(got) != "data: x\n\n" {
				t.Errorf("read %q", got)
			}
			if tc.readErr == io.EOF && err != nil || tc.readErr != io.EOF && !errors.Is(err, tc.readErr) {
				t.Errorf("ReadAll error %v; want %v passed through", err, tc.readErr)
			}
			b.Read(make([]byte, 1)) // a second read at the end reports nothing more
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if diff := cmp.Diff(want, reports); diff != "" {
				t.Errorf("reports mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// The wait for a response's headers is bounded, since the streams are
// opened with contexts that nothing else ends.
func TestHTTPBaseBoundsHeaderWait(t *testing.T) {
	if got := newHTTPBase().ResponseHeaderTimeout; got <= 0 || got > time.Minute {
		t.Errorf("ResponseHeaderTimeout = %v; want a bound of at most a minute", got)
	}
}
