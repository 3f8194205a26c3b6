package client

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// FuzzNotification feeds the dispatcher notifications as a server might
// send them: whatever their params, none may panic, and an event whose
// notification moved the mark (it carries a cursor) reaches the handlers at
// most once.
func FuzzNotification(f *testing.F) {
	f.Add(mcpe.MethodEvent, `{"subscriptionId": "s", "cursor": "3", "event": {"id": "e", "type": "a.b", "data": {}}}`)
	f.Add(mcpe.MethodEvent, `{"subscriptionId": "s", "cursor": "x", "event": {"type": "a.b"}}`)
	f.Add(mcpe.MethodEvent, `{"event": null}`)
	f.Add(mcpe.MethodBatch, `{"subscriptionId": "s", "cursor": "4", "events": [{"id": "e"}, 5, null], "remaining": -1}`)
	f.Add(mcpe.MethodSubscriptionExpired, `{"subscriptionId": "s", "cursor": "99999999999999999999"}`)
	f.Add("events/other", `[]`)
	f.Add(mcpe.MethodEvent, `nul`)
	f.Fuzz(func(t *testing.T, method, params string) {
		c, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		seen := map[string]int{}
		_, err = c.OnEvent("*", func(_ context.Context, sub string, ev mcpe.Event) { seen[sub+" "+ev.ID]++ })
		if err != nil {
			t.Fatal(err)
		}
		c.OnBatch(func(context.Context, mcpe.BatchParams) {})
		c.OnExpired(func(context.Context, string) {})
		for range 2 {
			c.notification(method, json.RawMessage(params))
		}
		if c.Cursor() == "" {
			return // no cursor: delivered as it comes, each time
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("event %q handled %d times", k, n)
			}
		}
	})
}

// BenchmarkDeliverEvent measures the client's cost per event notification:
// decoding, the mark, and matching the handlers' patterns.
func BenchmarkDeliverEvent(b *testing.B) {
	c, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"github.issues.*", "github.{push,pull_request.*}", "deploy.failed", "*.failed", "*"} {
		if _, err := c.OnEvent(p, func(context.Context, string, mcpe.Event) {}); err != nil {
			b.Fatal(err)
		}
	}
	params := make([]json.RawMessage, 1024)
	for i := range params {
		params[i] = json.RawMessage(fmt.Sprintf(`{"subscriptionId": "9c3e", "cursor": "%d", "event": {"id": "3b1f-%d", "type": "github.issues.opened", "data": {"title": "Bug report", "number": %d}, "metadata": {"timestamp": "2026-11-22T09:00:00Z", "priority": "high"}}}`, i+1, i, i))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%len(params) == 0 {
			c.mark, c.markSubs = -1, nil // the cursors start again: no repeats
		}
		c.notification(mcpe.MethodEvent, params[i%len(params)])
	}
}

// TestMarkRule is the rule of the high-water mark: a delivery below the
// mark, or at it for a subscription delivered there (or for any, when the
// entry at the mark was delivered whole), is a repeat; one at the mark for
// another subscription, or above it, is fresh and moves the mark; one
// without a cursor (or with one that is not) is fresh and leaves it.
func TestMarkRule(t *testing.T) {
	type mark struct {
		Seq  int64
		Subs []string
	}
	tests := []struct {
		name        string
		from        mark
		cursor, sub string
		fresh       bool
		want        mark
	}{
		{"first delivery", mark{-1, nil}, "0", "a", true, mark{0, []string{"a"}}},
		{"below a whole entry", mark{5, nil}, "4", "a", false, mark{5, nil}},
		{"below, another subscription", mark{5, []string{"a"}}, "4", "b", false, mark{5, []string{"a"}}},
		{"at, entry delivered whole", mark{5, nil}, "5", "b", false, mark{5, nil}},
		{"at, same subscription", mark{5, []string{"a", "b"}}, "5", "b", false, mark{5, []string{"a", "b"}}},
		{"at, another subscription", mark{5, []string{"a"}}, "5", "b", true, mark{5, []string{"a", "b"}}},
		{"above", mark{5, []string{"a", "b"}}, "6", "a", true, mark{6, []string{"a"}}},
		{"above a whole entry", mark{5, nil}, "90", "b", true, mark{90, []string{"b"}}},
		{"no cursor", mark{5, []string{"a"}}, "", "a", true, mark{5, []string{"a"}}},
		{"no cursor, before any mark", mark{-1, nil}, "", "a", true, mark{-1, nil}},
		{"not a cursor", mark{5, nil}, "x", "a", true, mark{5, nil}},
		{"a negative cursor", mark{5, nil}, "-3", "a", true, mark{5, nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.mark, c.markSubs = tc.from.Seq, tc.from.Subs
			if got := c.fresh(tc.cursor, tc.sub); got != tc.fresh {
				t.Errorf("fresh(%q, %q) = %v, want %v", tc.cursor, tc.sub, got, tc.fresh)
			}
			if diff := cmp.Diff(tc.want, mark{c.mark, c.markSubs}); diff != "" {
				t.Errorf("mark mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMarkReach: an entry read by events_poll, or a position the Client is
// given, is delivered whole: the mark moves to it unless it is below, and
// a catch-up then reads after it, or after the base (the inbox end read at
// Connect) when that is higher. A mark that a notification set is read
// again from the entry before it, for the subscriptions still to come.
// Before a Client started without Options.Cursor has a base, a catch-up
// reads from the server's own position (empty), only to find the base.
func TestMarkReach(t *testing.T) {
	type mark struct {
		Seq  int64
		Subs []string
	}
	tests := []struct {
		name     string
		from     mark
		base     int64
		cursor   string
		want     mark
		pollFrom string
	}{
		{"no mark", mark{-1, nil}, 0, "", mark{-1, nil}, "0"},
		{"first position", mark{-1, nil}, 0, "7", mark{7, nil}, "7"},
		{"position 0", mark{-1, nil}, 0, "0", mark{0, nil}, "0"},
		{"below", mark{7, []string{"a"}}, 0, "6", mark{7, []string{"a"}}, "6"},
		{"at, partly delivered", mark{7, []string{"a"}}, 0, "7", mark{7, nil}, "7"},
		{"above", mark{7, []string{"a"}}, 0, "12", mark{12, nil}, "12"},
		{"not a cursor", mark{7, nil}, 0, "y", mark{7, nil}, "7"},
		{"partly delivered at 0", mark{0, []string{"a"}}, 0, "", mark{0, []string{"a"}}, "0"},
		{"no base yet", mark{-1, nil}, -1, "", mark{-1, nil}, ""},
		{"no base yet, a kept digest delivered", mark{3, []string{"a"}}, -1, "", mark{3, []string{"a"}}, ""},
		{"a kept digest below the base", mark{3, []string{"a"}}, 9, "", mark{3, []string{"a"}}, "9"},
		{"the base, partly delivered", mark{9, []string{"a"}}, 9, "", mark{9, []string{"a"}}, "9"},
		{"above the base", mark{12, nil}, 9, "", mark{12, nil}, "12"},
		{"partly delivered above the base", mark{12, []string{"a"}}, 9, "", mark{12, []string{"a"}}, "11"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.mark, c.markSubs, c.base = tc.from.Seq, tc.from.Subs, tc.base
			c.reach(tc.cursor)
			if diff := cmp.Diff(tc.want, mark{c.mark, c.markSubs}); diff != "" {
				t.Errorf("mark mismatch (-want +got):\n%s", diff)
			}
			if got := c.pollFrom(); got != tc.pollFrom {
				t.Errorf("pollFrom() = %q, want %q", got, tc.pollFrom)
			}
			if want := mcpe.FormatCursor(max(c.mark, c.base)); c.Cursor() != want && max(c.mark, c.base) >= 0 {
				t.Errorf("Cursor() = %q, want the higher of mark and base %q", c.Cursor(), want)
			}
		})
	}
}

// TestMarkDelivers runs notifications and inbox entries read by events_poll
// through the dispatcher's delivery, in an order sessions and catch-ups
// produce, and checks what reaches the handlers: each delivery of an entry
// to a subscription once, whichever brings it first, and a notification
// without a cursor (an operator's replay) each time it comes.
func TestMarkDelivers(t *testing.T) {
	c, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	if _, err := c.OnEvent("*", func(_ context.Context, sub string, ev mcpe.Event) { got = append(got, "event "+sub+" "+ev.ID) }); err != nil {
		t.Fatal(err)
	}
	c.OnBatch(func(_ context.Context, b mcpe.BatchParams) { got = append(got, "batch "+b.SubscriptionID+" "+b.Cursor) })
	c.OnExpired(func(_ context.Context, sub string) { got = append(got, "expired "+sub) })
	event := func(cursor, sub, id string) func() {
		return func() {
			c.notification(mcpe.MethodEvent, json.RawMessage(fmt.Sprintf(`{"subscriptionId": %q, "cursor": %q, "event": {"id": %q, "type": "a.b"}}`, sub, cursor, id)))
		}
	}
	replay := func(sub, id string) func() {
		return func() {
			c.notification(mcpe.MethodEvent, json.RawMessage(fmt.Sprintf(`{"subscriptionId": %q, "event": {"id": %q, "type": "a.b"}}`, sub, id)))
		}
	}
	polled := func(cursor, id string, subs ...string) func() {
		return func() {
			c.pollItem(mcpe.PollItem{Cursor: cursor, Kind: mcpe.InboxEvent, SubscriptionIDs: subs, Event: json.RawMessage(fmt.Sprintf(`{"id": %q, "type": "a.b"}`, id))})
		}
	}
	steps := []struct {
		name   string
		do     func()
		want   []string
		cursor string
	}{
		{"an entry for a", event("3", "a", "e3"), []string{"event a e3"}, "3"},
		{"the same entry for b", event("3", "b", "e3"), []string{"event b e3"}, "3"},
		{"the entry for a again", event("3", "a", "e3"), nil, "3"},
		{"a catch-up reads the entry at the mark again", polled("3", "e3", "a", "b", "c"), []string{"event c e3"}, "3"},
		{"and the next", polled("4", "e4", "a"), []string{"event a e4"}, "4"},
		{"whose notification comes later", event("4", "a", "e4"), nil, "4"},
		{"a notification below the mark", event("2", "z", "e2"), nil, "4"},
		{"an operator's replay of e3", replay("a", "e3"), []string{"event a e3"}, "4"},
		{"and of e3 again", replay("a", "e3"), []string{"event a e3"}, "4"},
		{"a digest", func() {
			c.notification(mcpe.MethodBatch, json.RawMessage(`{"subscriptionId": "d", "cursor": "5", "events": []}`))
		}, []string{"batch d 5"}, "5"},
		{"the digest again", func() {
			c.notification(mcpe.MethodBatch, json.RawMessage(`{"subscriptionId": "d", "cursor": "5", "events": []}`))
		}, nil, "5"},
		{"an empty digest of e read by events_poll", func() {
			c.pollItem(mcpe.PollItem{Cursor: "5", Kind: mcpe.InboxBatch, SubscriptionIDs: []string{"e"}, Events: []json.RawMessage{}})
		}, []string{"batch e 5"}, "5"},
		{"an expiry read by events_poll", func() {
			c.pollItem(mcpe.PollItem{Cursor: "6", Kind: mcpe.InboxExpired, SubscriptionIDs: []string{"d"}})
		}, []string{"expired d"}, "6"},
		{"its notification", func() {
			c.notification(mcpe.MethodSubscriptionExpired, json.RawMessage(`{"subscriptionId": "d", "cursor": "6"}`))
		}, nil, "6"},
		{"an event above", event("9", "b", "e9"), []string{"event b e9"}, "9"},
	}
	for _, st := range steps {
		got = nil
		st.do()
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: handlers mismatch (-want +got):\n%s", st.name, diff)
		}
		if c.Cursor() != st.cursor {
			t.Errorf("%s: Cursor() = %q, want %q", st.name, c.Cursor(), st.cursor)
		}
	}
}

// TestCloseDropsQueuedDeliveries checks that what is still queued when the
// Client closes is dropped without moving the mark: those deliveries stay
// in the server's inbox, and a run that resumes from Cursor must read them.
func TestCloseDropsQueuedDeliveries(t *testing.T) {
	c, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	handled := 0
	if _, err := c.OnEvent("*", func(context.Context, string, mcpe.Event) { handled++ }); err != nil {
		t.Fatal(err)
	}
	c.queue.push(item{method: mcpe.MethodEvent, params: json.RawMessage(`{"subscriptionId": "s", "cursor": "5", "event": {"id": "e", "type": "a.b"}}`)})
	c.Close()
	c.wg.Add(1)
	c.dispatch() // returns at once: the Client is closed
	if got := c.Cursor(); got != "" || handled != 0 {
		t.Errorf("after Close: Cursor %q, %d handled; want \"\" and 0: a dropped delivery moved the mark", got, handled)
	}
}
