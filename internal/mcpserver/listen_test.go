package mcpserver_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// waitLive waits until principal has n live sessions in the registry.
func waitLive(t *testing.T, e *env, principal string, n int) {
	t.Helper()
	deadline := time.Now().Add(wireWait)
	for e.reg.Live(principal) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d live sessions, want %d", principal, e.reg.Live(principal), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// On stateless Streamable HTTP a request is a session that lasts as long
// as it: it is never one that deliveries go to. A subscriptions/listen with
// mcpeEvents is, while it is open: the principal's deliveries come on it,
// each with the listen's id in _meta; aborted, it is one no more, and
// what comes next waits in the inbox.
func TestStatelessHTTPDeliversOnListen(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, envOptions{logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w := statelessWire(t, e, "alice")
	w.call("tools/call", map[string]any{"name": "events_subscribe", "arguments": map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}}}})
	w.call("tools/call", map[string]any{"name": "events_list", "arguments": map[string]any{}})
	if n := e.reg.Live("alice"); n != 0 || strings.Contains(logs.String(), `msg="session connected"`) {
		t.Fatalf("after two tool calls alice has %d live sessions, logs:\n%s\na stateless request must not be one", n, logs.String())
	}

	listen := w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"mcpeEvents": true}})
	ack := w.await("the acknowledgement", func(m map[string]any) bool { return m["method"] == "notifications/subscriptions/acknowledged" })
	if got := ack["params"].(map[string]any)["notifications"]; got.(map[string]any)["mcpeEvents"] != true {
		t.Fatalf("acknowledged %v; want mcpeEvents echoed", got)
	}
	waitLive(t, e, "alice", 1)
	id := e.publish("deploy.failed", `{"service":"api"}`, mcpe.Metadata{})
	ev := w.await("events/event", func(m map[string]any) bool { return m["method"] == mcpe.MethodEvent })
	params := ev["params"].(map[string]any)
	if meta, _ := params["_meta"].(map[string]any); meta["io.modelcontextprotocol/subscriptionId"] != float64(listen) {
		t.Errorf("events/event _meta = %v; want the listen's id %d", params["_meta"], listen)
	}
	if got := params["event"].(map[string]any)["id"]; got != id {
		t.Errorf("event id %v, want %s", got, id)
	}

	w.cancel(listen)
	waitLive(t, e, "alice", 0)
	e.publish("deploy.done", `{}`, mcpe.Metadata{})
	res := w.call("tools/call", map[string]any{"name": "events_poll", "arguments": map[string]any{"cursor": "0"}})
	if res["result"] == nil {
		t.Fatalf("events_poll: %v", res)
	}
}

// A listen that asks for mcpeEvents on stdio is told nothing of it: there
// the deliveries come on the connection.
func TestMCPEEventsOnlyOnStatelessHTTP(t *testing.T) {
	e := newEnv(t, envOptions{})
	w := stdioWire(t, e, "alice", proto2026)
	w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"mcpeEvents": true}})
	ack := w.await("the acknowledgement", func(m map[string]any) bool { return m["method"] == "notifications/subscriptions/acknowledged" })
	if got := ack["params"].(map[string]any)["notifications"].(map[string]any); len(got) != 0 {
		t.Fatalf("acknowledged %v on stdio; want nothing", got)
	}
}

// A digest that fired while a stateless client had no listen open comes
// on the next listen that asks for mcpeEvents; one that asks only for
// eventsListChanged is not a session deliveries go to.
func TestStatelessHTTPDigestKeptForListen(t *testing.T) {
	e := newEnv(t, envOptions{catalog: goldenCatalog(t, clocktest.NewFake(start))})
	w := statelessWire(t, e, "alice")
	w.call("tools/call", map[string]any{"name": "events_subscribe", "arguments": map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"x"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@hourly"}}}})
	w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"eventsListChanged": true}})
	w.await("the acknowledgement", func(m map[string]any) bool { return m["method"] == "notifications/subscriptions/acknowledged" })
	if e.reg.Connected("alice") {
		t.Fatal("a listen for eventsListChanged only counts as a session deliveries go to")
	}
	e.publish("x", `{}`, mcpe.Metadata{})
	e.clock.Advance(time.Hour) // the digest fires; nothing can reach alice
	w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"mcpeEvents": true}})
	w.await("the digest", func(m map[string]any) bool { return m["method"] == mcpe.MethodBatch })
}

// A principal's listens that the server holds open are bounded like its
// sessions; one that ends makes room.
func TestListensBounded(t *testing.T) {
	e := newEnv(t, envOptions{catalog: goldenCatalog(t, clocktest.NewFake(start))})
	e.srv.SetHTTPLimits(0, 2)
	w := stdioWire(t, e, "alice", proto2026)
	isAck := func(m map[string]any) bool { return m["method"] == "notifications/subscriptions/acknowledged" }
	first := w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"eventsListChanged": true}})
	w.await("the first acknowledgement", isAck)
	w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"eventsListChanged": true}})
	w.await("the second acknowledgement", isAck)
	third := w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"eventsListChanged": true}})
	m := w.await("the third listen's answer", func(m map[string]any) bool { return m["id"] == float64(third) })
	errObj, _ := m["error"].(map[string]any)
	if errObj == nil || errObj["code"] != float64(mcpserver.CodeResourceExhausted) {
		t.Fatalf("a third listen answered %v; want ResourceExhausted", m)
	}
	if strings.Contains(errObj["data"].(map[string]any)["reason"].(string)+errObj["message"].(string), "maxSessionsPerPrincipal") {
		t.Errorf("a third listen answered %v, which names a config key that is gone", m)
	}
	w.cancel(first)
	w.await("the first listen's end", func(m map[string]any) bool { return m["id"] == float64(first) })
	again := w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"eventsListChanged": true}})
	if m := w.await("a listen after one ended", func(m map[string]any) bool { return isAck(m) || m["id"] == float64(again) }); !isAck(m) {
		t.Fatalf("a listen after one ended answered %v; want it acknowledged", m)
	}
}
