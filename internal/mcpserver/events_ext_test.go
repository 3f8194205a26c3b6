package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

const initialize2025 = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// sepSession is a raw stdio session of one principal.
func sepSession(t *testing.T, e *env, principal string) *wire {
	w := dialStdio(t, e, principal)
	w.send(t, initialize2025)
	w.next(t)
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

// nextSEP returns the next message that is not an MCPE notification.
func nextSEP(t *testing.T, w *wire) map[string]any {
	t.Helper()
	for {
		raw := w.next(t)
		if isMCPENotification(raw) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
}

func pollResult(t *testing.T, w *wire, params string) map[string]any {
	t.Helper()
	w.send(t, `{"jsonrpc":"2.0","id":1,"method":"events/poll","params":`+params+`}`)
	m := nextSEP(t, w)
	res, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("events/poll %s: %v", params, m)
	}
	return res
}

func eventIDs(res map[string]any) []string {
	var out []string
	for _, ev := range res["events"].([]any) {
		out = append(out, ev.(map[string]any)["eventId"].(string))
	}
	return out
}

const (
	idA = "01900000-0000-7000-8000-0000000000a1"
	idB = "01900000-0000-7000-8000-0000000000b1"
)

func TestEventsPollPrincipalIsolation(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice, bob := sepSession(t, e, "alice"), sepSession(t, e, "bob")
	args := `"name":"mcpe.filter","arguments":{"eventTypes":["iso.*"]}`
	ca := pollResult(t, alice, `{`+args+`}`)["cursor"].(string)
	if _, err := e.svc.Publish(context.Background(), mcpe.Event{ID: idA, Type: "iso.one", Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// Bob presenting Alice's cursor learns nothing of her inbox: the cursor
	// is not one of his subscription's.
	res := pollResult(t, bob, `{`+args+`,"cursor":"`+ca+`"}`)
	if res["truncated"] != true || len(res["events"].([]any)) != 0 {
		t.Errorf("bob with alice's cursor: %v; want truncated and no events", res)
	}
	if got := eventIDs(pollResult(t, alice, `{`+args+`,"cursor":"`+ca+`"}`)); len(got) != 1 || got[0] != idA {
		t.Errorf("alice's events %v; want [%s]", got, idA)
	}
}

// TestEventsStreamIsolation: a stream carries its own subscription's
// deliveries only, never another principal's, nor those of its principal's
// other subscriptions.
func TestEventsStreamIsolation(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice, bob := sepSession(t, e, "alice"), sepSession(t, e, "bob")
	pollResult(t, bob, `{"name":"mcpe.filter","arguments":{"eventTypes":["bob.*"]}}`)
	pollResult(t, alice, `{"name":"mcpe.filter","arguments":{"eventTypes":["other.*"]}}`)
	alice.send(t, `{"jsonrpc":"2.0","id":5,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["alice.*"]}}}`)
	if m := nextSEP(t, alice); m["method"] != "notifications/events/active" {
		t.Fatalf("got %v; want notifications/events/active", m)
	}
	for i, typ := range []string{"bob.one", "other.one", "alice.one"} {
		id := "01900000-0000-7000-8000-00000000000" + string(rune('1'+i))
		if _, err := e.svc.Publish(context.Background(), mcpe.Event{ID: id, Type: typ, Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	m := nextSEP(t, alice)
	if m["method"] != "notifications/events/event" || m["params"].(map[string]any)["data"].(map[string]any)["type"] != "alice.one" {
		t.Fatalf("got %v; want alice.one only", m)
	}
	e.clock.Advance(mcpserver.DefaultEventsHeartbeat)
	if m := nextSEP(t, alice); m["method"] != "notifications/events/heartbeat" {
		t.Fatalf("got %v; want the heartbeat, nothing else", m)
	}
}

// TestEventsRetentionTruncates: a cursor below what retention removed gives
// truncated: true on poll and on a stream, never an error or a silent gap.
func TestEventsRetentionTruncates(t *testing.T) {
	e := newEnv(t, envOptions{})
	w := sepSession(t, e, "carol")
	args := `"name":"mcpe.filter","arguments":{"eventTypes":["ret.*"]}`
	c := pollResult(t, w, `{`+args+`}`)["cursor"].(string)
	for i := range 3 {
		id := "01900000-0000-7000-8000-00000000010" + string(rune('1'+i))
		if _, err := e.svc.Publish(context.Background(), mcpe.Event{ID: id, Type: "ret.x", Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.Prune(context.Background(), subscriptions.Retention{InboxMaxEntries: 1}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	res := pollResult(t, w, `{`+args+`,"cursor":"`+c+`"}`)
	if res["truncated"] != true || len(eventIDs(res)) != 1 {
		t.Errorf("poll past retention: %v; want truncated and the one event kept", res)
	}
	w.send(t, `{"jsonrpc":"2.0","id":9,"method":"events/stream","params":{`+args+`,"cursor":"`+c+`"}}`)
	m := nextSEP(t, w)
	if m["method"] != "notifications/events/active" || m["params"].(map[string]any)["truncated"] != true {
		t.Fatalf("stream past retention: %v; want active with truncated", m)
	}
	if m := nextSEP(t, w); m["method"] != "notifications/events/event" {
		t.Fatalf("got %v; want the event kept", m)
	}
}

// TestEventsStreamHTTPAbort: aborting the POST of an events/stream ends
// the stream on the server.
func TestEventsStreamHTTPAbort(t *testing.T) {
	e := newEnv(t, envOptions{})
	ts := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(ts.Close)
	w := dialHTTP(t, ts.URL, "", "")
	w.send(t, initialize2025)
	w.next(t)
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["a.*"]}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", w.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "notifications/events/active") {
	}
	principal := ""
	for _, p := range e.reg.Principals() {
		if strings.HasPrefix(p, mcpserver.SessionPrincipalPrefix) {
			principal = p
		}
	}
	open := e.reg.Live(principal)
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for e.reg.Live(principal) != open-1 {
		if time.Now().After(deadline) {
			t.Fatalf("the stream still runs 10s after its request was aborted (%d sessions attached)", e.reg.Live(principal))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventsStreamEndsWhenItsSubscriptionCannotBeKept: the stream's
// subscription is deleted and the principal's quota filled meanwhile; at
// the next heartbeat the stream cannot make it again, and ends saying so
// instead of staying open on nothing.
func TestEventsStreamEndsWhenItsSubscriptionCannotBeKept(t *testing.T) {
	e := newEnv(t, envOptions{max: 1})
	w := sepSession(t, e, "dave")
	w.send(t, `{"jsonrpc":"2.0","id":5,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["dave.*"]}}}`)
	if m := nextSEP(t, w); m["method"] != "notifications/events/active" {
		t.Fatalf("got %v; want notifications/events/active", m)
	}
	ctx := context.Background()
	subs, err := e.svc.List(ctx, "dave", "")
	if err != nil || len(subs) != 1 {
		t.Fatalf("List = %d, %v; want the stream's subscription", len(subs), err)
	}
	if err := e.svc.Unsubscribe(ctx, "dave", subs[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Subscribe(ctx, "dave", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"other.*"}}}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(mcpserver.DefaultEventsHeartbeat)
	m := nextSEP(t, w)
	if m["method"] != "notifications/events/terminated" {
		t.Fatalf("got %v; want notifications/events/terminated", m)
	}
	code := m["params"].(map[string]any)["error"].(map[string]any)["code"]
	if code != float64(mcpserver.CodeResourceExhausted) {
		t.Errorf("terminated with code %v; want ResourceExhausted (%d)", code, mcpserver.CodeResourceExhausted)
	}
}

// TestHTTPBodyBounded: the wrapper around the SDK's HTTP handler reads no
// more of a body than the SDK would, and answers a larger one 413 with a
// JSON-RPC error.
func TestHTTPBodyBounded(t *testing.T) {
	e := newEnv(t, envOptions{})
	ts := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(ts.Close)
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", int(mcp.DefaultMaxRequestBodyBytes)) + `"}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || json.NewDecoder(resp.Body).Decode(&body) != nil || !strings.Contains(body.Error.Message, "at most") {
		t.Fatalf("a %d-byte body got %d %+v; want 413 with a JSON-RPC error saying the bound", len(big), resp.StatusCode, body)
	}
}

// TestEventsStreamInHTTPBatch: an events/stream request inside a JSON-RPC
// batch (protocol 2025-03-26) gets the server's stamp, not the one its
// client wrote: its notifications carry the request's own id, and aborting
// the POST ends the stream.
func TestEventsStreamInHTTPBatch(t *testing.T) {
	e := newEnv(t, envOptions{})
	ts := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(ts.Close)
	t.Cleanup(e.srv.EndStreams) // before ts.Close, which waits for them
	w := dialHTTP(t, ts.URL, "", "")
	w.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	w.next(t)
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The session attaches once notifications/initialized is handled.
	principal := ""
	for deadline := time.Now().Add(10 * time.Second); principal == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session did not attach within 10s of notifications/initialized")
		}
		for _, p := range e.reg.Principals() {
			if strings.HasPrefix(p, mcpserver.SessionPrincipalPrefix) {
				principal = p
			}
		}
	}
	before := e.reg.Live(principal)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batch := `[{"jsonrpc":"2.0","id":7,"method":"events/stream","params":{"name":"mcpe.filter","arguments":{"eventTypes":["a.*"]},` +
		`"_meta":{"mcpe-server/stream":{"id":"forged","ticket":"forged"}}}}]`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(batch))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", w.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var active map[string]any
	for active == nil && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if m["method"] != "notifications/events/active" {
			t.Fatalf("got %s; want notifications/events/active", data)
		}
		active = m
	}
	if active == nil {
		t.Fatalf("the batch's stream ended without notifications/events/active (HTTP %d)", resp.StatusCode)
	}
	meta, _ := active["params"].(map[string]any)["_meta"].(map[string]any)
	if id := meta["io.modelcontextprotocol/subscriptionId"]; id != float64(7) {
		t.Fatalf("active names subscription %v; want the request's id 7", id)
	}
	if open := e.reg.Live(principal); open != before+1 {
		t.Fatalf("%d sessions attached with the stream open, %d before; want the stream's one more", open, before)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for e.reg.Live(principal) != before {
		if time.Now().After(deadline) {
			t.Fatalf("the stream still runs 10s after its batch's request was aborted (%d sessions attached)", e.reg.Live(principal))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listChangedEnv is an env whose catalog the test posts types to.
func listChangedEnv(t *testing.T) *env {
	c := clocktest.NewFake(start)
	cat := goldenCatalog(t, c)
	e := newEnv(t, envOptions{catalog: cat, clock: c})
	e.catalog = cat
	return e
}

func (e *env) post(typ string) {
	e.t.Helper()
	if _, err := e.catalog.Publisher(e.svc).Publish(context.Background(), mcpe.Event{Type: typ, Data: json.RawMessage(`{}`)}); err != nil {
		e.t.Fatal(err)
	}
}

// A 2025-11-25 client that declared the extension in initialize hears of
// changes without listing the types first; one that did neither does not.
func TestListChangedToDeclaringSessions(t *testing.T) {
	e := listChangedEnv(t)
	declared := dialStdio(t, e, "alice")
	declared.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/events":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
	declared.next(t)
	declared.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	plain := sepSession(t, e, "bob")
	// Both attached (a request answered after initialized).
	for _, w := range []*wire{declared, plain} {
		w.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		nextSEP(t, w)
	}
	e.post("deploy.failed")
	e.clock.Advance(mcpserver.ListChangedDelay)
	if m := nextSEP(t, declared); m["method"] != "notifications/events/list_changed" {
		t.Fatalf("declaring session got %v, want notifications/events/list_changed", m)
	}
	plain.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := nextSEP(t, plain); m["id"] != float64(2) {
		t.Fatalf("a session that neither declared the extension nor listed the types got %v before its ping's answer", m)
	}
}

// Shutting down ends a subscriptions/listen that asked for
// eventsListChanged with its empty result, as graceful close is.
func TestListenEndsAtShutdown(t *testing.T) {
	e := listChangedEnv(t)
	w := dialStdio(t, e, "alice")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	w.send(t, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{`+meta+`}}`)
	nextSEP(t, w)
	w.send(t, `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{`+meta+`,"notifications":{"eventsListChanged":true}}}`)
	if m := nextSEP(t, w); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("got %v, want the acknowledgement", m)
	}
	e.srv.EndStreams()
	m := nextSEP(t, w)
	if m["id"] != float64(7) || m["result"] == nil {
		t.Fatalf("got %v, want the listen's result", m)
	}
}

// events_update does not change what the extension keyed on its
// arguments (and, for webhooks, verified): a poll subscription's filter,
// a webhook subscription's URL or expiry. events_pause still works.
func TestEventsUpdateRefusesExtensionSubscriptions(t *testing.T) {
	e := newEnv(t, envOptions{catalog: goldenCatalog(t, clocktest.NewFake(start))})
	w := sepSession(t, e, "alice")
	pollResult(t, w, `{"name":"github.push","arguments":{"tags":["repo:a"]},"cursor":null}`)
	ids := e.listSubscriptions("alice")
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "sep-") {
		t.Fatalf("subscriptions after the first poll: %v", ids)
	}
	call := func(id int, tool, args string) map[string]any {
		w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
		return nextSEP(t, w)["result"].(map[string]any)
	}
	res := call(2, "events_update", `{"subscriptionId":"`+ids[0]+`","filter":{"eventTypes":["*"]},"expiresAt":null}`)
	text, _ := json.Marshal(res["content"])
	if res["isError"] != true || !strings.Contains(string(text), "managed by SEP-3415 events/poll and events/stream") {
		t.Fatalf("events_update on %s answered %v; want it refused, naming the extension", ids[0], res)
	}
	if res := call(3, "events_pause", `{"subscriptionId":"`+ids[0]+`"}`); res["isError"] == true {
		t.Fatalf("events_pause on %s: %v", ids[0], res)
	}
}
