package client

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// FuzzNotification feeds the dispatcher notifications as a server might
// send them: whatever their params, none may panic, and an event reaches
// the handlers at most once.
func FuzzNotification(f *testing.F) {
	f.Add(mcpe.MethodEvent, `{"subscriptionId": "s", "cursor": "3", "event": {"id": "e", "type": "a.b", "data": {}}}`)
	f.Add(mcpe.MethodEvent, `{"subscriptionId": "s", "cursor": "x", "event": {"type": "a.b"}}`)
	f.Add(mcpe.MethodEvent, `{"event": null}`)
	f.Add(mcpe.MethodBatch, `{"subscriptionId": "s", "cursor": "4", "events": [{"id": "e"}, 5, null], "remaining": -1}`)
	f.Add(mcpe.MethodSubscriptionExpired, `{"subscriptionId": "s", "cursor": "99999999999999999999"}`)
	f.Add("events/other", `[]`)
	f.Add(mcpe.MethodEvent, `nul`)
	f.Fuzz(func(t *testing.T, method, params string) {
		c, err := New(&Options{DedupSize: 4})
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
		for k, n := range seen {
			if n > 1 {
				t.Errorf("event %q handled %d times", k, n)
			}
		}
	})
}

// BenchmarkDeliverEvent measures the client's cost per event notification:
// decoding, the dedup memory, and matching the handlers' patterns.
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
		c.notification(mcpe.MethodEvent, params[i%len(params)])
	}
}

// TestNotePolled: the span of inbox entries that catch-ups delivered grows
// with each page that continues it, starts again after a gap, and starts
// before the first entry read from the server's own position; a
// notification inside it is a repeat, one outside it is not.
func TestNotePolled(t *testing.T) {
	page := func(next string, items ...string) mcpe.PollResult {
		res := mcpe.PollResult{NextCursor: next}
		for _, it := range items {
			res.Items = append(res.Items, mcpe.PollItem{Cursor: it})
		}
		return res
	}
	type span struct {
		polled        bool
		from, through int64
	}
	steps := []struct {
		from string
		res  mcpe.PollResult
		want span
	}{
		{"", page("7"), span{}},                          // nothing read from an unknown position
		{"", page("9", "8", "9"), span{true, 7, 9}},      // from the server's position: before entry 8
		{"9", page("12", "10", "12"), span{true, 7, 12}}, // continues
		{"12", page("12"), span{true, 7, 12}},            // an empty page
		{"10", page("15", "15"), span{true, 7, 15}},      // from inside the span
		{"20", page("25", "25"), span{true, 20, 25}},     // after a gap: a new span
		{"x", page("30", "30"), span{true, 20, 25}},      // not a cursor
		{"25", page("y"), span{true, 20, 25}},            // no valid next cursor
	}
	c, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, st := range steps {
		c.notePolled(st.from, st.res)
		if got := (span{c.polled, c.polledFrom, c.polledThrough}); got != st.want {
			t.Fatalf("step %d (from %q, next %q): span %+v, want %+v", i, st.from, st.res.NextCursor, got, st.want)
		}
	}
	for cursor, want := range map[string]bool{"20": false, "21": true, "25": true, "26": false, "8": false, "": false, "z": false} {
		if got := c.polledAlready(cursor); got != want {
			t.Errorf("polledAlready(%q) = %v, want %v", cursor, got, want)
		}
	}
}
