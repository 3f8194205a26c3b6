package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// keepAll is a retention that nothing in the tests exceeds; each test
// tightens one limit.
var keepAll = subscriptions.Retention{
	InboxMaxEntries: 1000,
	InboxMaxAge:     1000 * time.Hour,
	DedupWindow:     1000 * time.Hour,
	ExpiredMaxAge:   1000 * time.Hour,
}

// testPrune checks each limit of Prune on its own, and its counts.
func testPrune(t *testing.T, open Opener) {
	t.Run("nothing to prune", func(t *testing.T) {
		s := open(t)
		populate(t, s, []string{"alice", "bob"}, []int{1, 1})
		diff(t, "Prune", subscriptions.PruneStats{}, prune(t, s, keepAll, at(2*time.Hour)))
	})

	t.Run("InboxMaxEntries keeps the newest of each principal", func(t *testing.T) {
		s := open(t)
		alices, bobs := newSub(1, "alice"), newSub(2, "bob")
		create(t, s, alices, bobs)
		var want []subscriptions.InboxEntry
		for i := range 5 {
			ev, raw := newEvent(i+1, "test.created", "")
			res := publish(t, s, ev, raw, targets(alices), at(time.Duration(i)*time.Minute))
			want = append(want, entry(seqOf(t, res, alices), raw, at(time.Duration(i)*time.Minute), alices))
		}
		for i := range 2 {
			ev, raw := newEvent(i+6, "test.created", "")
			publish(t, s, ev, raw, targets(bobs), at(time.Duration(i)*time.Minute))
		}
		bobsBefore := inbox(t, s, "bob")

		r := keepAll
		r.InboxMaxEntries = 3
		diff(t, "Prune", subscriptions.PruneStats{InboxEntries: 2}, prune(t, s, r, at(time.Hour)))
		diff(t, "alice's inbox", want[2:], inbox(t, s, "alice"))
		diff(t, "bob's inbox", bobsBefore, inbox(t, s, "bob"))
		diff(t, "second Prune", subscriptions.PruneStats{}, prune(t, s, r, at(time.Hour)))
	})

	t.Run("InboxMaxAge", func(t *testing.T) {
		s := open(t)
		sub := newSub(1, "alice")
		create(t, s, sub)
		var want []subscriptions.InboxEntry
		for i := range 3 {
			ev, raw := newEvent(i+1, "test.created", "")
			now := at(time.Duration(i) * time.Hour)
			res := publish(t, s, ev, raw, targets(sub), now)
			want = append(want, entry(seqOf(t, res, sub), raw, now, sub))
		}

		r := keepAll
		r.InboxMaxAge = 90 * time.Minute
		diff(t, "Prune", subscriptions.PruneStats{InboxEntries: 2}, prune(t, s, r, at(3*time.Hour)))
		diff(t, "inbox", want[2:], inbox(t, s, "alice"))
	})

	t.Run("delivery counts survive the entries pruned", func(t *testing.T) {
		s := open(t)
		sub, other := newSub(1, "alice"), newSub(2, "alice")
		create(t, s, sub, other)
		for i := range 4 {
			ev, raw := newEvent(i+1, "test.created", "")
			publish(t, s, ev, raw, targets(sub), at(time.Duration(i)*time.Hour))
		}
		ev, raw := newEvent(5, "test.created", "")
		publish(t, s, ev, raw, targets(other), at(5*time.Hour))
		want := func(n int64, last time.Time) delivery { return delivery{n, &last} }

		r := keepAll
		r.InboxMaxEntries = 2 // drops three of sub's four entries
		diff(t, "Prune", subscriptions.PruneStats{InboxEntries: 3}, prune(t, s, r, at(6*time.Hour)))
		diff(t, "counts after pruning older entries", want(4, at(3*time.Hour)), deliveryOf(t, s, sub))

		r = keepAll
		r.InboxMaxAge = time.Minute // drops every entry
		prune(t, s, r, at(7*time.Hour))
		diff(t, "inbox", []subscriptions.InboxEntry(nil), inbox(t, s, "alice"))
		diff(t, "counts after pruning every entry", want(4, at(3*time.Hour)), deliveryOf(t, s, sub))
		diff(t, "other subscription's counts", want(1, at(5*time.Hour)), deliveryOf(t, s, other))

		ev, raw = newEvent(6, "test.created", "")
		publish(t, s, ev, raw, targets(sub), at(8*time.Hour))
		diff(t, "counts after a new delivery", want(5, at(8*time.Hour)), deliveryOf(t, s, sub))
		var listed delivery
		for _, l := range list(t, s, subscriptions.ListQuery{Principal: "alice"}) {
			if l.ID == sub.ID {
				listed = delivery{l.DeliveredCount, l.LastDeliveredAt}
			}
		}
		diff(t, "counts in ListSubscriptions", want(5, at(8*time.Hour)), listed)
	})

	t.Run("DedupWindow drops events no inbox entry needs", func(t *testing.T) {
		s := open(t)
		sub := newSub(1, "alice")
		create(t, s, sub)
		old, raw := newEvent(1, "test.created", "old")
		publish(t, s, old, raw, nil, t0)
		needed, raw := newEvent(2, "test.created", "needed")
		publish(t, s, needed, raw, targets(sub), t0)
		recent, raw := newEvent(3, "test.created", "recent")
		publish(t, s, recent, raw, nil, at(150*time.Minute))

		r := keepAll
		r.DedupWindow = time.Hour
		diff(t, "Prune", subscriptions.PruneStats{Events: 1}, prune(t, s, r, at(3*time.Hour)))

		// The dropped event is no longer remembered; the others are.
		for i, tc := range []struct {
			source string
			want   subscriptions.PublishResult
		}{
			{"old", subscriptions.PublishResult{EventID: eventID(11)}},
			{"needed", subscriptions.PublishResult{EventID: needed.ID, Duplicate: true}},
			{"recent", subscriptions.PublishResult{EventID: recent.ID, Duplicate: true}},
		} {
			ev, raw := newEvent(11+i, "test.created", tc.source)
			diff(t, "Publish of sourceEventId "+tc.source+" again", tc.want, publish(t, s, ev, raw, nil, at(3*time.Hour)))
		}
	})

	t.Run("an event goes with its last inbox entry", func(t *testing.T) {
		s := open(t)
		sub := newSub(1, "alice")
		create(t, s, sub)
		ev, raw := newEvent(1, "test.created", "src")
		publish(t, s, ev, raw, targets(sub), t0)

		r := keepAll
		r.InboxMaxAge = time.Hour
		r.DedupWindow = time.Hour
		diff(t, "Prune", subscriptions.PruneStats{InboxEntries: 1, Events: 1}, prune(t, s, r, at(3*time.Hour)))
		again, raw := newEvent(2, "test.created", "src")
		res := publish(t, s, again, raw, targets(sub), at(3*time.Hour))
		if res.Duplicate || res.EventID != again.ID {
			t.Errorf("Publish again after Prune = %+v, want it accepted as %s", res, again.ID)
		}
	})

	t.Run("ExpiredMaxAge", func(t *testing.T) {
		s := open(t)
		old := withExpiry(newSub(1, "alice"), t0)
		recent := withExpiry(newSub(2, "alice"), at(2*time.Hour))
		updated := newSub(3, "bob")
		oldActive := newSub(4, "alice")
		oldPaused := withStatus(newSub(5, "bob"), mcpe.StatusPaused)
		create(t, s, old, recent, updated, oldActive, oldPaused)
		// Expired through UpdateSubscription rather than ExpireSubscriptions.
		updated.Status = mcpe.StatusExpired
		updated.UpdatedAt = t0
		updated.ExpiresAt = new(t0)
		update(t, s, updated)
		expire(t, s, t0)
		expire(t, s, at(2*time.Hour))
		want := []*subscriptions.Subscription{
			get(t, s, "alice", recent.ID),
			get(t, s, "alice", oldActive.ID),
			get(t, s, "bob", oldPaused.ID),
		}

		r := keepAll
		r.ExpiredMaxAge = 2 * time.Hour
		diff(t, "Prune", subscriptions.PruneStats{Subscriptions: 2}, prune(t, s, r, at(3*time.Hour)))
		diff(t, "ListSubscriptions", want, list(t, s, subscriptions.ListQuery{}))
	})

	t.Run("all limits at once", func(t *testing.T) {
		s := open(t)
		alices := withExpiry(newSub(1, "alice"), t0)
		bobs := newSub(2, "bob")
		create(t, s, alices, bobs)
		var bobsLast subscriptions.InboxEntry
		for i := range 4 { // at t0-4h, t0-3h, t0-2h and t0-1h
			ev, raw := newEvent(i+1, "test.created", "")
			now := at(-time.Duration(4-i) * time.Hour)
			res := publish(t, s, ev, raw, targets(alices, bobs), now)
			bobsLast = entry(seqOf(t, res, bobs), raw, now, bobs)
		}
		alicesLast := expire(t, s, t0)
		ev, raw := newEvent(5, "test.created", "")
		publish(t, s, ev, raw, nil, at(-time.Hour))

		r := subscriptions.Retention{
			InboxMaxEntries: 1,
			InboxMaxAge:     150 * time.Minute,
			DedupWindow:     30 * time.Minute,
			ExpiredMaxAge:   time.Minute,
		}
		// Inbox: by age, the entries of t0-4h, t0-3h and t0-2h of both
		// principals; by count, alice's entry of t0-1h. Events: the first
		// three and the one routed nowhere; bob's inbox still needs the
		// fourth. Subscriptions: alice's, expired at t0.
		want := subscriptions.PruneStats{InboxEntries: 7, Events: 4, Subscriptions: 1}
		diff(t, "Prune", want, prune(t, s, r, at(time.Hour)))
		diff(t, "alice's inbox", alicesLast, inbox(t, s, "alice"))
		diff(t, "bob's inbox", []subscriptions.InboxEntry{bobsLast}, inbox(t, s, "bob"))
		diff(t, "ListSubscriptions", []*subscriptions.Subscription{get(t, s, "bob", bobs.ID)}, list(t, s, subscriptions.ListQuery{}))
	})
}

// testSeqNeverReused checks that sequence numbers keep growing after the
// entries that held them are gone.
func testSeqNeverReused(t *testing.T, open Opener) {
	s := open(t)
	sub := newSub(1, "alice")
	create(t, s, sub)
	var last int64
	n := 0
	next := func(now time.Time) int64 {
		t.Helper()
		n++
		ev, raw := newEvent(n, "test.created", "")
		return seqOf(t, publish(t, s, ev, raw, targets(sub), now), sub)
	}
	checkGrows := func(what string, seq int64) {
		t.Helper()
		if seq <= last {
			t.Errorf("seq %d after %s, want above %d", seq, what, last)
		}
		last = seq
	}
	for range 3 {
		checkGrows("publishing", next(t0))
	}

	r := keepAll
	r.InboxMaxAge = time.Hour
	prune(t, s, r, at(100*time.Hour))
	diff(t, "inbox after pruning everything", []subscriptions.InboxEntry(nil), inbox(t, s, "alice"))
	checkGrows("pruning the whole inbox", next(at(100*time.Hour)))

	if err := s.DeletePrincipal(t.Context(), "alice"); err != nil {
		t.Fatalf("DeletePrincipal: %v", err)
	}
	create(t, s, sub)
	checkGrows("deleting the principal", next(at(101*time.Hour)))

	if err := s.DeleteSubscription(t.Context(), "alice", sub.ID); err != nil {
		t.Fatalf("DeleteSubscription: %v", err)
	}
	create(t, s, withExpiry(sub.Clone(), at(102*time.Hour)))
	entries := expire(t, s, at(102*time.Hour))
	if len(entries) != 1 {
		t.Fatalf("ExpireSubscriptions returned %d entries, want 1", len(entries))
	}
	checkGrows("deleting the subscription", entries[0].Seq)
}

// testPruneKeep checks that Prune keeps what Retention.Keep names, and that
// PrunedThrough tells what it removed.
func testPruneKeep(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	alices, bobs := newSub(1, "alice"), newSub(2, "bob")
	create(t, s, alices, bobs)
	var seqs, bobSeqs []int64
	var want []subscriptions.InboxEntry
	for i := range 6 {
		now := at(time.Duration(i) * time.Minute)
		ev, raw := newEvent(i+1, "test.created", "")
		res := publish(t, s, ev, raw, targets(alices), now)
		seqs = append(seqs, seqOf(t, res, alices))
		want = append(want, entry(seqs[i], raw, now, alices))
		ev, raw = newEvent(i+101, "test.created", "")
		bobSeqs = append(bobSeqs, seqOf(t, publish(t, s, ev, raw, targets(bobs), now), bobs))
	}
	for _, p := range []string{"alice", "bob", "carol"} {
		if got, err := s.PrunedThrough(ctx, p); err != nil || got != 0 {
			t.Fatalf("PrunedThrough(%s) before any prune = %d, %v; want 0", p, got, err)
		}
	}
	// A live session of alice has been sent up to her second entry: the
	// four after it stay, beyond the limit of two, and the two before it
	// go; bob's six go down to two.
	r := keepAll
	r.InboxMaxEntries = 2
	r.Keep = map[string]int64{"alice": seqs[1], "carol": 0}
	diff(t, "Prune", subscriptions.PruneStats{InboxEntries: 2 + 4}, prune(t, s, r, at(time.Hour)))
	diff(t, "alice's inbox", want[2:], inbox(t, s, "alice"))
	if got := len(inbox(t, s, "bob")); got != 2 {
		t.Errorf("bob's inbox has %d entries; want 2", got)
	}
	if got, err := s.PrunedThrough(ctx, "alice"); err != nil || got != seqs[1] {
		t.Errorf("PrunedThrough(alice) = %d, %v; want %d", got, err, seqs[1])
	}
	bobs4, err := s.PrunedThrough(ctx, "bob")
	if err != nil || bobs4 != bobSeqs[3] {
		t.Errorf("PrunedThrough(bob) = %d, %v; want the seq of bob's fourth entry, %d", bobs4, err, bobSeqs[3])
	}
	// Without the session, the limit applies; PrunedThrough only grows.
	r.Keep = nil
	diff(t, "second Prune", subscriptions.PruneStats{InboxEntries: 2}, prune(t, s, r, at(time.Hour)))
	diff(t, "alice's inbox", want[4:], inbox(t, s, "alice"))
	if got, err := s.PrunedThrough(ctx, "alice"); err != nil || got != seqs[3] {
		t.Errorf("PrunedThrough(alice) = %d, %v; want %d", got, err, seqs[3])
	}
	if got, err := s.PrunedThrough(ctx, "bob"); err != nil || got != bobs4 {
		t.Errorf("PrunedThrough(bob) after a prune that removed none of his = %d, %v; want %d", got, err, bobs4)
	}
}
