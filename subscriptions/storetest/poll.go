package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// discard is a Deliverer with no live sessions.
type discard struct{}

func (discard) Deliver([]subscriptions.InboxEntry)        {}
func (discard) Replay(string, []subscriptions.InboxEntry) {}

// testPollPositions runs a Service's Poll on the store. A cursor past the
// end of the caller's inbox (its newest entry, or the newest retention
// removed, whatever other principals' inboxes hold) is refused with the
// newest named, and never remembered; a place past the end remembered
// before is brought back to the end; and two Positions of one principal
// (two hosts sharing it) each read every entry.
func testPollPositions(t *testing.T, open Opener) {
	s := open(t)
	ctx := t.Context()
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: s, Deliverer: discard{}, Clock: clocktest.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	for p, typ := range map[string]string{"alice": "test.*", "bob": "other.*"} {
		if _, err := svc.Subscribe(ctx, p, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{typ}}}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(typ string) {
		t.Helper()
		if _, err := svc.Publish(ctx, mcpe.Event{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(ctx context.Context, cursor string) (types []string, next string, err error) {
		res, err := svc.Poll(ctx, "alice", mcpe.PollRequest{Cursor: cursor})
		for _, it := range res.Items {
			var ev mcpe.Event
			if err := json.Unmarshal(it.Event, &ev); err != nil {
				t.Fatal(err)
			}
			types = append(types, ev.Type)
		}
		return types, res.NextCursor, err
	}
	check := func(what string, ctx context.Context, cursor string, want string) string {
		t.Helper()
		got, next, err := poll(ctx, cursor)
		if err != nil {
			t.Fatalf("%s: Poll: %v", what, err)
		}
		diff(t, what, want, strings.Join(got, ","))
		return next
	}
	refused := func(what, cursor, newest string) {
		t.Helper()
		_, _, err := poll(ctx, cursor)
		want := fmt.Sprintf("cursor: %q is past the end of your inbox, whose newest cursor is %q", cursor, newest)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Poll with cursor %s: %v; want an error containing %q", what, cursor, err, want)
		}
		diff(t, what+": the remembered cursor", newest, mcpe.FormatCursor(pollCursor(t, s, "alice")))
	}

	host1, err := svc.NewPosition(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	host2, err := svc.NewPosition(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	one, two := subscriptions.WithPosition(ctx, host1), subscriptions.WithPosition(ctx, host2)
	publish("test.a")
	publish("other.x") // bob's, numbered past alice's inbox
	end := check("host 1", one, "", "test.a")
	check("host 2 after host 1", two, "", "test.a")
	check("host 1 again", one, "", "")
	refused("past alice's inbox, before bob's entry", mcpe.FormatCursor(mustCursor(t, end)+1), end)
	refused("past everything", "999999", end)
	check("at the end", ctx, end, "")

	setPollCursor(t, s, "alice", 999999)
	check("from a remembered place past the end", ctx, "", "")
	diff(t, "the remembered cursor brought back", end, mcpe.FormatCursor(pollCursor(t, s, "alice")))
	publish("test.b")
	end = check("after it", ctx, "", "test.b")
	check("host 2", two, "", "test.b")

	// Retention empties alice's inbox: its end is the newest it removed.
	if _, err := s.Prune(ctx, subscriptions.Retention{InboxMaxAge: time.Minute}, at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.ReadInbox(ctx, "alice", 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("alice's inbox after Prune = %v, %v; want it empty", got, err)
	}
	check("at the end of a pruned inbox", ctx, end, "")
	refused("past the end of a pruned inbox", "999999", end)
}

func mustCursor(t *testing.T, c string) int64 {
	t.Helper()
	seq, err := mcpe.ParseCursor(c)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}
