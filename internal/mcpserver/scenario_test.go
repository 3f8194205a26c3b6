package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// ingestOf returns a function that posts an event body to e's /v1/events
// handler, as an HTTP client would, and returns the accepted event's ID.
func ingestOf(e *env) func(t *testing.T, body string) string {
	h, err := httpapi.NewIngest(httpapi.IngestOptions{Publisher: e.svc, Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	return func(t *testing.T, body string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("POST /v1/events %s: %d %s", body, rec.Code, rec.Body)
		}
		var res httpapi.IngestResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.ID == "" {
			t.Fatalf("POST /v1/events answered %s (%v)", rec.Body, err)
		}
		return res.ID
	}
}

// TestScenarioInMemory runs the whole life of a subscription over in-memory
// transports, on both protocol versions, with every event posted to
// /v1/events: a wildcard subscription, the exact events/event params, an
// event that does not match, pause and resume, a filter update, events_poll
// paging, expiry, a second principal that sees and receives nothing of the
// first's, and a restart on the same database file.
func TestScenarioInMemory(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "mcpe.db")
			clk := clocktest.NewFake(start)
			e := newEnv(t, envOptions{dbPath: db, clock: clk})
			post := ingestOf(e)
			alice := e.connect("alice", p.opts)
			bob := e.connect("bob", p.opts)

			sub := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"github.*"}}})
			bobSub := bob.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"bob.*"}}})
			next := func(c *mcpetest.Client, wantSub, wantID string) mcpe.EventParams {
				t.Helper()
				params, ev := c.NextEvent(t)
				if params.SubscriptionID != wantSub || ev.ID != wantID {
					t.Fatalf("got event %s (%s) for %s; want %s for %s", ev.ID, ev.Type, params.SubscriptionID, wantID, wantSub)
				}
				return params
			}

			post(t, `{"type": "slack.message", "data": {"n": 1}}`) // matches nobody
			first := post(t, `{"type": "github.issue.opened", "data": {"title": "Bug", "n": 2}, `+
				`"metadata": {"sourceEventId": "gh-1", "priority": "high", "tags": ["bug"]}}`)
			params, ev := alice.NextEvent(t)
			want := mcpe.Event{
				ID: first, Type: "github.issue.opened", Data: json.RawMessage(`{"title":"Bug","n":2}`),
				Metadata: mcpe.Metadata{SourceEventID: "gh-1", Timestamp: start, Priority: mcpe.PriorityHigh, Tags: []string{"bug"}},
			}
			if diff := cmp.Diff(want, ev); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}
			if params.SubscriptionID != sub.ID || params.Cursor == "" {
				t.Errorf("params = %+v; want subscriptionId %s and a cursor", params, sub.ID)
			}

			ref := map[string]any{"subscriptionId": sub.ID}
			alice.MustCall(t, "events_pause", ref, nil)
			post(t, `{"type": "github.push", "data": {"n": 3}}`) // skipped while paused
			alice.MustCall(t, "events_resume", ref, nil)
			next(alice, sub.ID, post(t, `{"type": "github.push", "data": {"n": 4}}`))

			alice.MustCall(t, "events_update", map[string]any{"subscriptionId": sub.ID, "filter": map[string]any{"eventTypes": []string{"ci.*"}}}, nil)
			post(t, `{"type": "github.push", "data": {"n": 5}}`) // no longer matches
			last := post(t, `{"type": "ci.failed", "data": {"n": 6}}`)
			next(alice, sub.ID, last)

			// Bob received none of it, and sees none of alice's.
			bobEvent := post(t, `{"type": "bob.note", "data": {}}`)
			next(bob, bobSub.ID, bobEvent)
			var bobList mcpe.ListResult
			bob.MustCall(t, "events_list", map[string]any{}, &bobList)
			if len(bobList.Subscriptions) != 1 || bobList.Subscriptions[0].ID != bobSub.ID {
				t.Fatalf("bob lists %+v", bobList.Subscriptions)
			}
			var bobPoll mcpe.PollResult
			bob.MustCall(t, "events_poll", map[string]any{}, &bobPoll)
			if len(bobPoll.Items) != 1 || !strings.Contains(string(bobPoll.Items[0].Event), bobEvent) {
				t.Fatalf("bob's inbox: %+v", bobPoll.Items)
			}
			for _, tool := range []string{"events_pause", "events_resume", "events_unsubscribe"} {
				if msg := bob.CallError(t, tool, ref); msg != fmt.Sprintf("subscription %q not found; events_list shows your subscriptions", sub.ID) {
					t.Errorf("bob's %s of alice's subscription: %q", tool, msg)
				}
			}

			var p1, p2 mcpe.PollResult
			alice.MustCall(t, "events_poll", map[string]any{"limit": 2}, &p1)
			alice.MustCall(t, "events_poll", map[string]any{"limit": 2}, &p2)
			if len(p1.Items) != 2 || !p1.HasMore || len(p2.Items) != 1 || p2.HasMore || !strings.Contains(string(p2.Items[0].Event), last) {
				t.Fatalf("poll pages: %+v then %+v; want alice's 3 events, 2 then 1", p1, p2)
			}

			expiring := alice.Subscribe(t, map[string]any{
				"filter":    map[string]any{"eventTypes": []string{"never.sent"}},
				"expiresAt": start.Add(time.Hour).Format(time.RFC3339),
			})
			clk.Advance(time.Hour)
			n := alice.Next(t)
			var ep mcpe.ExpiredParams
			if err := json.Unmarshal(n.Params, &ep); err != nil || n.Method != mcpe.MethodSubscriptionExpired || ep.SubscriptionID != expiring.ID {
				t.Fatalf("got %v; want events/subscription_expired for %s", n, expiring.ID)
			}
			if pending := bob.Pending(); len(pending) != 0 {
				t.Fatalf("bob received %v", pending)
			}

			// Restart: the subscriptions, their counts and the inbox stay.
			e.close()
			e2 := newEnv(t, envOptions{dbPath: db, clock: clk})
			alice2 := e2.connect("alice", p.opts)
			var list mcpe.ListResult
			alice2.MustCall(t, "events_list", map[string]any{}, &list)
			var got []string
			for _, s := range list.Subscriptions {
				got = append(got, fmt.Sprintf("%s %s %d", s.ID, s.Status, s.DeliveredCount))
			}
			wantList := []string{sub.ID + " active 3", expiring.ID + " expired 0"}
			// Both were created at the same (fake) time: the order between
			// them is not defined.
			slices.Sort(got)
			slices.Sort(wantList)
			if diff := cmp.Diff(wantList, got); diff != "" {
				t.Errorf("subscriptions after restart mismatch (-want +got):\n%s", diff)
			}
			var again mcpe.PollResult
			alice2.MustCall(t, "events_poll", map[string]any{"cursor": "0", "limit": 10}, &again)
			if len(again.Items) != 4 { // three events and the expiry notice
				t.Errorf("inbox after restart: %+v", again.Items)
			}
			next(alice2, sub.ID, ingestOf(e2)(t, `{"type": "ci.passed", "data": {}}`))
		})
	}
}

// stalledClient opens an MCP session on conn, reads the initialize result
// and then never reads again, like a client that hangs.
func stalledClient(t *testing.T, conn net.Conn) {
	t.Helper()
	r := bufio.NewReader(conn)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stalled","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		if _, err := io.WriteString(conn, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"id":1`) {
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { conn.Close() })
}

// TestStalledClientDoesNotBlockRouting connects a client that stops reading
// (its connection takes no byte more) and checks that publishing, and
// delivery to everyone else, go on: more events than the in-memory window
// holds are published, the other principal receives each of them, the
// stalled session lags by all of them, and they stay in its owner's inbox.
func TestStalledClientDoesNotBlockRouting(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	c1, c2 := net.Pipe()
	ss, err := e.srv.Connect(ctx, &mcp.IOTransport{Reader: c1, Writer: c1}, "stalled")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	stalledClient(t, c2)
	deadline := time.Now().Add(mcpetest.Wait)
	for !e.srv.Attached(ss) { // Attach returned: every event published next is owed to it
		if time.Now().After(deadline) {
			t.Fatal("the stalled session never attached")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := e.svc.Subscribe(ctx, "stalled", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"load.*"}}}); err != nil {
		t.Fatal(err)
	}
	alice := e.connect("alice", nil)
	aliceSub := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"load.*"}}})

	const events = 1100 // more than the default window of 1024
	ids := make([]string, events)
	for i := range ids {
		ids[i] = e.publish("load.tick", fmt.Sprintf(`{"n": %d}`, i), mcpe.Metadata{})
	}
	for i, id := range ids {
		params, ev := alice.NextEvent(t)
		if ev.ID != id || params.SubscriptionID != aliceSub.ID {
			t.Fatalf("alice's event %d is %s for %s; want %s", i, ev.ID, params.SubscriptionID, id)
		}
	}
	if st := e.reg.Stats(); st.Skipped != 0 || st.Failed != 0 {
		t.Errorf("stats %+v: the stalled session was skipped or given up; it should lag", st)
	}
	var lag []realtime.Lag
	for _, l := range e.reg.Lags() {
		if l.Principal == "stalled" {
			lag = append(lag, l)
		}
	}
	if len(lag) != 1 || lag[0].Deliveries != events {
		t.Errorf("the stalled session's lag is %+v; want %d deliveries behind", lag, events)
	}
	res, err := e.svc.Poll(ctx, "stalled", mcpe.PollRequest{Cursor: "0", Limit: mcpe.MaxPollLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != mcpe.MaxPollLimit || !res.HasMore {
		t.Errorf("the stalled owner's inbox holds %d items (hasMore %t); want all %d events kept", len(res.Items), res.HasMore, events)
	}
	if !slices.ContainsFunc(res.Items, func(it mcpe.PollItem) bool { return strings.Contains(string(it.Event), ids[0]) }) {
		t.Errorf("the first event is not in the stalled owner's inbox")
	}
}
