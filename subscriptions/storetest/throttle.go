package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file is the contract of throttled deliveries (Target.Window,
// ThrottleStore): Publish opens a group's window or folds into it, in the
// transaction that writes the inbox, and EndWindows delivers what a window
// folded once, whichever store (or process) ends it.

// throttled returns the realtime target of sub throttled by window, in group.
func throttled(sub *subscriptions.Subscription, group string, window time.Duration) subscriptions.Target {
	return subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelRealtime, Group: group, Window: window}
}

func endWindows(t *testing.T, s subscriptions.Store, now time.Time) []subscriptions.InboxEntry {
	t.Helper()
	entries, more, err := s.EndWindows(t.Context(), now, 100)
	if err != nil || more {
		t.Fatalf("EndWindows(%v) = more %v, %v; want no error and no more", now, more, err)
	}
	return entries
}

func nextWindowEnd(t *testing.T, s subscriptions.Store) string {
	t.Helper()
	end, ok, err := s.NextWindowEnd(t.Context())
	if err != nil {
		t.Fatalf("NextWindowEnd: %v", err)
	}
	if !ok {
		return "none"
	}
	return end.UTC().Format(time.RFC3339)
}

// folded is the entry EndWindows writes for sub at now: raw stands for n.
func folded(raw json.RawMessage, n int, now time.Time, sub *subscriptions.Subscription) subscriptions.InboxEntry {
	e := entry(0, raw, now, sub)
	e.Remaining = n
	return e
}

// testThrottle follows one group through two windows: the first event is
// delivered, the next ones fold (while an unthrottled subscription of the
// same owner gets each), the window's end delivers the latest with how
// many it stands for and opens the next window, and a window that folds
// nothing closes the group. Another group has a window of its own.
func testThrottle(t *testing.T, open Opener) {
	s := open(t)
	sub, plain := newSub(1, "alice"), newSub(2, "alice")
	create(t, s, sub, plain)
	w := time.Minute
	send := func(n int, group string, d time.Duration) (json.RawMessage, []subscriptions.InboxEntry) {
		ev, raw := newEvent(n, "test.created", "")
		return raw, publish(t, s, ev, raw, []subscriptions.Target{throttled(sub, group, w), targets(plain)[0]}, at(d)).Delivered
	}
	var want []subscriptions.InboxEntry
	check := func(what string, got []subscriptions.InboxEntry, add ...subscriptions.InboxEntry) {
		t.Helper()
		want = append(want, add...)
		if diff := cmp.Diff(add, got, ignoreSeq, equateEmpty, sameJSON); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
		}
	}
	raw1, got := send(1, "acme/api", 0)
	check("first event", got, entry(0, raw1, at(0), sub, plain))
	raw2, got := send(2, "acme/api", 10*time.Second)
	check("second event, folded", got, entry(0, raw2, at(10*time.Second), plain))
	raw3, got := send(3, "acme/api", 20*time.Second)
	check("third event, folded", got, entry(0, raw3, at(20*time.Second), plain))
	raw4, got := send(4, "acme/web", 30*time.Second)
	check("another group", got, entry(0, raw4, at(30*time.Second), sub, plain))
	if got := nextWindowEnd(t, s); got != at(w).Format(time.RFC3339) {
		t.Errorf("NextWindowEnd = %s; want the first window's end, %s", got, at(w).Format(time.RFC3339))
	}
	check("EndWindows before the end", endWindows(t, s, at(w-time.Second)))
	check("EndWindows at the end", endWindows(t, s, at(w)), folded(raw3, 2, at(w), sub))
	// acme/api's next window runs to 2m, acme/web's first to 1m30s.
	raw5, got := send(5, "acme/api", w+5*time.Second)
	check("event in the next window, folded", got, entry(0, raw5, at(w+5*time.Second), plain))
	check("acme/web's end, nothing folded", endWindows(t, s, at(w+30*time.Second)))
	raw6, got := send(6, "acme/web", w+40*time.Second)
	check("acme/web again, a new window", got, entry(0, raw6, at(w+40*time.Second), sub, plain))
	check("the next window's end", endWindows(t, s, at(2*w)), folded(raw5, 1, at(2*w), sub))
	check("the ends of windows that folded nothing", endWindows(t, s, at(10*w)))
	if got := nextWindowEnd(t, s); got != "none" {
		t.Errorf("NextWindowEnd after every group closed = %s; want none", got)
	}
	raw7, got := send(7, "acme/api", 11*w)
	check("acme/api after its group closed", got, entry(0, raw7, at(11*w), sub, plain))

	entries := inbox(t, s, "alice")
	checkSeqsIncrease(t, "the inbox", entries)
	if diff := cmp.Diff(want, entries, ignoreSeq, equateEmpty, sameJSON); diff != "" {
		t.Errorf("inbox mismatch (-want +got):\n%s", diff)
	}
	if c := deliveryOf(t, s, sub); c.Count != 6 {
		t.Errorf("delivered count = %d; want 6, one per notification (4 events, 2 folds)", c.Count)
	}
}

// testThrottleInOneBatch checks that events of one group published in one
// batch fold into the window the first opens.
func testThrottleInOneBatch(t *testing.T, open Opener) {
	s := open(t)
	sub := newSub(1, "alice")
	create(t, s, sub)
	var pubs []subscriptions.Publication
	var raws []json.RawMessage
	for n := 1; n <= 4; n++ {
		ev, raw := newEvent(n, "test.created", "")
		raws = append(raws, raw)
		pubs = append(pubs, subscriptions.Publication{Event: ev, Raw: raw, Targets: []subscriptions.Target{throttled(sub, fmt.Sprint(n%2), time.Hour)}})
	}
	res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Publications: pubs, Now: t0, Deactivations: routed(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if want := i < 2; (len(r.Delivered) == 1) != want {
			t.Errorf("event %d delivered %d entries; want delivered %v", i+1, len(r.Delivered), want)
		}
	}
	got := endWindows(t, s, at(time.Hour))
	want := []subscriptions.InboxEntry{folded(raws[2], 1, at(time.Hour), sub), folded(raws[3], 1, at(time.Hour), sub)}
	byEvent := cmpopts.SortSlices(func(a, b subscriptions.InboxEntry) bool { return string(a.Event) < string(b.Event) })
	if diff := cmp.Diff(want, got, ignoreSeq, byEvent, sameJSON); diff != "" {
		t.Errorf("EndWindows mismatch (-want +got):\n%s", diff)
	}
}

// testThrottleGroupsBounded checks that a subscription never has more than
// mcpe.MaxThrottleGroups open groups: the events of further groups share
// the window of mcpe.OverflowGroup.
func testThrottleGroupsBounded(t *testing.T, open Opener) {
	s := open(t)
	sub := newSub(1, "alice")
	create(t, s, sub)
	max := mcpe.MaxThrottleGroups
	var pubs []subscriptions.Publication
	for n := 1; n <= max+3; n++ {
		ev, raw := newEvent(n, "test.created", "")
		pubs = append(pubs, subscriptions.Publication{Event: ev, Raw: raw, Targets: []subscriptions.Target{throttled(sub, fmt.Sprint("group-", n), time.Minute)}})
	}
	res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Publications: pubs, Now: t0, Deactivations: routed(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	delivered := 0
	for _, r := range res {
		delivered += len(r.Delivered)
	}
	if delivered != max+1 {
		t.Errorf("%d events of %d groups delivered %d; want %d: one per group up to the bound, then one for the rest", max+3, max+3, delivered, max+1)
	}
	var got []subscriptions.InboxEntry
	for more, i := true, 0; more && i < max; i++ {
		var entries []subscriptions.InboxEntry
		var err error
		if entries, more, err = s.EndWindows(t.Context(), at(time.Minute), 100); err != nil {
			t.Fatal(err)
		}
		got = append(got, entries...)
	}
	if len(got) != 1 || got[0].Remaining != 2 || string(got[0].Event) != string(pubs[max+2].Raw) {
		t.Errorf("EndWindows = %d entries (first %+v); want one folding the last 2 events", len(got), got)
	}
}

// testThrottleInactive checks that a window whose subscription was paused
// or deleted closes without a delivery, and that a paused target opens no
// window.
func testThrottleInactive(t *testing.T, open Opener) {
	s := open(t)
	paused, deleted := newSub(1, "alice"), newSub(2, "alice")
	create(t, s, paused, deleted)
	for n := 1; n <= 4; n++ {
		ev, raw := newEvent(n, "test.created", "")
		publish(t, s, ev, raw, []subscriptions.Target{throttled(paused, "", time.Minute), throttled(deleted, "", time.Minute)}, at(time.Duration(n)*time.Second))
	}
	update(t, s, withStatus(paused, mcpe.StatusPaused))
	if err := s.DeleteSubscription(t.Context(), "alice", deleted.ID); err != nil {
		t.Fatal(err)
	}
	if got := endWindows(t, s, at(time.Hour)); len(got) != 0 {
		t.Errorf("EndWindows = %+v; want nothing for a paused and a deleted subscription", got)
	}
	if got := nextWindowEnd(t, s); got != "none" {
		t.Errorf("NextWindowEnd = %s; want none: the windows closed", got)
	}
}

// testThrottleFoldOnce has two stores on one database publish into the
// same window and end it at once: one notification, standing for every
// folded event.
func testThrottleFoldOnce(t *testing.T, open PairOpener) {
	a, b := open(t)
	sub := newSub(1, "alice")
	create(t, a, sub)
	var last json.RawMessage
	for n := 1; n <= 6; n++ {
		s := SharedStore(a)
		if n%2 == 0 {
			s = b
		}
		ev, raw := newEvent(n, "test.created", "")
		res := publish(t, s, ev, raw, []subscriptions.Target{throttled(sub, "g", time.Minute)}, at(time.Duration(n)*time.Second))
		if (len(res.Delivered) > 0) != (n == 1) {
			t.Errorf("event %d delivered %d entries; want only the first delivered", n, len(res.Delivered))
		}
		last = raw
	}
	var wg sync.WaitGroup
	var got [2][]subscriptions.InboxEntry
	var errs [2]error
	for i, s := range []SharedStore{a, b} {
		wg.Go(func() { got[i], _, errs[i] = s.EndWindows(t.Context(), at(2*time.Minute), 10) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("EndWindows: %v, %v", errs[0], errs[1])
	}
	all := append(got[0], got[1]...)
	if len(all) != 1 || all[0].Remaining != 5 || string(all[0].Event) != string(last) {
		t.Fatalf("EndWindows by both = %+v; want one entry with the last event, folding 5", all)
	}
	if n := len(inbox(t, b, "alice")); n != 2 {
		t.Errorf("inbox has %d entries; want 2 (the first event, the fold)", n)
	}
}
