package storetest

import (
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file is the contract of subscriptions.Shared: two stores opened on
// one database behave as one, and each can follow what the other writes.

// SharedStore is a store that several processes may share.
type SharedStore interface {
	subscriptions.Store
	subscriptions.Shared
	subscriptions.Companions
	subscriptions.Runs
}

// PairOpener returns two stores on one new, empty database, as two
// processes would open it, and registers their cleanup with t.
type PairOpener = func(t *testing.T) (a, b SharedStore)

// RunShared runs the contract of stores that several processes share.
func RunShared(t *testing.T, open PairOpener) {
	tests := []struct {
		name string
		run  func(*testing.T, PairOpener)
	}{
		{"StoreID", testStoreID},
		{"OpenedBeside", testOpenedBeside},
		{"FollowInbox", testFollowInbox},
		{"FollowChanges", testFollowChanges},
		{"BuffersFromBoth", testBuffersFromBoth},
		{"FireOnce", testFireOnce},
		{"JobLease", testJobLease},
		{"Runs", testRuns},
		{"ThrottleFoldOnce", testThrottleFoldOnce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}

// heads returns the head of alice's inbox and of the subscription changes.
func heads(t *testing.T, s SharedStore) (inbox, changes int64) {
	t.Helper()
	all, changes, err := s.Heads(t.Context(), []string{"alice"})
	if err != nil {
		t.Fatalf("Heads: %v", err)
	}
	if s.InboxPerPrincipal() {
		return all["alice"], changes
	}
	return all[""], changes
}

// spans are alice's (and others') entries above after and at most through.
func spans(after, through int64, principals ...string) []subscriptions.InboxSpan {
	out := make([]subscriptions.InboxSpan, len(principals))
	for i, p := range principals {
		out[i] = subscriptions.InboxSpan{Principal: p, After: after, Through: through}
	}
	return out
}

// testOpenedBeside checks that the store opened second knows the first
// had the database open, and the first that it was alone.
func testOpenedBeside(t *testing.T, open PairOpener) {
	a, b := open(t)
	first, errA := a.OpenedBeside()
	second, errB := b.OpenedBeside()
	if errA != nil || errB != nil {
		t.Fatalf("OpenedBeside: %v, %v", errA, errB)
	}
	if first || !second {
		t.Errorf("OpenedBeside: first %v, second %v; want false, true", first, second)
	}
}

func testStoreID(t *testing.T, open PairOpener) {
	a, b := open(t)
	idA, err := a.StoreID(t.Context())
	if err != nil {
		t.Fatalf("StoreID: %v", err)
	}
	idB, err := b.StoreID(t.Context())
	if err != nil {
		t.Fatalf("StoreID: %v", err)
	}
	if idA == "" || idA != idB {
		t.Errorf("StoreID = %q and %q; want one non-empty ID for one database", idA, idB)
	}
	c, _ := open(t)
	if idC, err := c.StoreID(t.Context()); err != nil || idC == idA {
		t.Errorf("another database's StoreID = %q, %v; want an ID of its own", idC, err)
	}
}

// testFollowInbox checks that what each store writes is numbered in one
// order (for each principal, one after the other, when the store numbers
// them apart), and that InboxRange reads it, for the principals asked,
// from either.
func testFollowInbox(t *testing.T, open PairOpener) {
	a, b := open(t)
	alice, bob := newSub(1, "alice"), newSub(2, "bob")
	create(t, a, alice, bob)
	start, _ := heads(t, b)
	var want []subscriptions.InboxEntry
	for i := 1; i <= 6; i++ {
		s := SharedStore(a)
		if i%2 == 0 {
			s = b
		}
		sub := alice
		if i%3 == 0 {
			sub = bob
		}
		ev, raw := newEvent(i, "test.created", "")
		res := publish(t, s, ev, raw, targets(sub), at(time.Duration(i)*time.Second))
		if sub == alice {
			want = append(want, res.Delivered...)
		}
	}
	checkSeqsIncrease(t, "what both wrote", want)
	if a.InboxPerPrincipal() {
		for i, e := range want {
			if e.Seq != start+int64(i)+1 {
				t.Fatalf("alice's entry %d is numbered %d; want %d, one after the other from %d", i, e.Seq, start+int64(i)+1, start)
			}
		}
	}
	for _, s := range []SharedStore{a, b} {
		end, _ := heads(t, s)
		if end != want[len(want)-1].Seq && end <= want[len(want)-1].Seq {
			t.Fatalf("Heads inbox = %d; want at least alice's last entry, %d", end, want[len(want)-1].Seq)
		}
		got, more, err := s.InboxRange(t.Context(), spans(start, end, "alice"), 100)
		if err != nil || more {
			t.Fatalf("InboxRange = %v, more %v; want no error and no more", err, more)
		}
		diff(t, "alice's entries", want, got)
		// Paged, and bounded above.
		first, more, err := s.InboxRange(t.Context(), spans(start, end, "alice"), 2)
		if err != nil || !more || len(first) != 2 {
			t.Fatalf("InboxRange(limit 2) = %d entries, more %v, %v; want 2 and more", len(first), more, err)
		}
		upTo, _, err := s.InboxRange(t.Context(), spans(start, want[1].Seq, "alice", "bob"), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range upTo {
			if e.Seq > want[1].Seq {
				t.Errorf("InboxRange through %d returned entry %d", want[1].Seq, e.Seq)
			}
		}
		if none, _, err := s.InboxRange(t.Context(), nil, 100); err != nil || len(none) != 0 {
			t.Errorf("InboxRange of no principal = %d entries, %v; want none", len(none), err)
		}
	}
}

// testFollowChanges checks that a change made through one store is read
// through the other, with the subscription's state at the time of reading.
func testFollowChanges(t *testing.T, open PairOpener) {
	a, b := open(t)
	_, from := heads(t, b)
	sub, other := newSub(1, "alice"), newSub(2, "bob")
	create(t, a, sub, other)
	_, to := heads(t, b)
	changes, complete, err := b.ChangedSubscriptions(t.Context(), from, to)
	if err != nil || !complete {
		t.Fatalf("ChangedSubscriptions = %v, complete %v", err, complete)
	}
	if len(changes) != 2 || changes[0].SubscriptionID != sub.ID || changes[1].SubscriptionID != other.ID {
		t.Fatalf("changes = %+v; want %s then %s", changes, sub.ID, other.ID)
	}
	got := changes[0].Subscription
	if got == nil || got.Principal != "alice" || got.Status != mcpe.StatusActive || !got.UpdatedAt.Equal(sub.UpdatedAt) ||
		!equalStrings(got.Filter.EventTypes, sub.Filter.EventTypes) || !equalChannels(got.Delivery.Channels, sub.Delivery.Channels) {
		t.Fatalf("changed subscription = %+v; want alice's, active, with its filter, delivery and updatedAt", got)
	}

	// Paused through b, then deleted through a: one change each, read
	// once, with the state now.
	from = to
	update(t, b, withStatus(sub.Clone(), mcpe.StatusPaused))
	_, mid := heads(t, a)
	changes, _, err = a.ChangedSubscriptions(t.Context(), from, mid)
	if err != nil || len(changes) != 1 || changes[0].Subscription == nil || changes[0].Subscription.Status != mcpe.StatusPaused {
		t.Fatalf("after the pause, changes = %+v, %v; want the subscription, paused", changes, err)
	}
	if err := a.DeleteSubscription(t.Context(), "alice", sub.ID); err != nil {
		t.Fatal(err)
	}
	_, to = heads(t, b)
	changes, _, err = b.ChangedSubscriptions(t.Context(), from, to)
	if err != nil || len(changes) != 1 || changes[0].SubscriptionID != sub.ID || changes[0].Subscription != nil {
		t.Fatalf("after the deletion, changes = %+v, %v; want the subscription once, deleted", changes, err)
	}
	if changes, _, err := b.ChangedSubscriptions(t.Context(), to, to); err != nil || len(changes) != 0 {
		t.Errorf("no change since the head: got %+v, %v", changes, err)
	}
}

func equalStrings(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func equalChannels(x, y []mcpe.Channel) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// testBuffersFromBoth checks that events buffered through both stores are
// kept in commit order and fire together.
func testBuffersFromBoth(t *testing.T, open PairOpener) {
	a, b := open(t)
	sub := cronSub(1, "alice")
	create(t, a, sub)
	var raws = fill(t, a, 1, 1, t0, sub)
	raws = append(raws, fill(t, b, 2, 1, t0, sub)...)
	raws = append(raws, fill(t, a, 3, 1, t0, sub)...)
	res := fireOne(t, b, fireReq(sub, 10, true), at(time.Hour))
	if len(res.Entries) != 1 {
		t.Fatalf("fire wrote %d entries; want one batch", len(res.Entries))
	}
	diff(t, "the batch's events", raws, res.Entries[0].Events)
}

// testFireOnce checks that of two stores firing the same due fire, one
// delivers it.
func testFireOnce(t *testing.T, open PairOpener) {
	a, b := open(t)
	sub := cronSub(1, "alice")
	create(t, a, sub)
	fill(t, a, 1, 2, t0, sub)
	now := at(25 * time.Hour)
	var reqs [2]subscriptions.FireRequest
	for i, s := range []SharedStore{a, b} {
		due, err := s.DueFires(t.Context(), mcpe.ChannelCron, now, 10)
		if err != nil || len(due) != 1 {
			t.Fatalf("DueFires = %+v, %v; want the subscription", due, err)
		}
		if !due[0].Due.Equal(*sub.NextFireAt) {
			t.Fatalf("DueFire.Due = %v; want the next fire, %v", due[0].Due, *sub.NextFireAt)
		}
		reqs[i] = fireReq(sub, 10, true)
		reqs[i].Due = due[0].Due
		reqs[i].Next = new(at(48 * time.Hour))
	}
	first := fireOne(t, a, reqs[0], now)
	second := fireOne(t, b, reqs[1], now)
	if first.Skipped || len(first.Entries) != 1 {
		t.Fatalf("first fire = %+v; want one batch", first)
	}
	if !second.Skipped || len(second.Entries) != 0 {
		t.Fatalf("second fire of the same due time = %+v; want it skipped", second)
	}
	if got := get(t, b, "alice", sub.ID); got.NextFireAt == nil || !got.NextFireAt.Equal(at(48*time.Hour)) {
		t.Errorf("next fire = %v; want the first fire's, %v", got.NextFireAt, at(48*time.Hour))
	}
}

// testJobLease checks that a job handed out with a lease is not handed out
// again, by either store, until the lease is over or it is given back, and
// that it keeps its ID.
func testJobLease(t *testing.T, open PairOpener) {
	a, b := open(t)
	sub := withHandler(newSub(1, "alice"))
	create(t, a, sub)
	ev, raw := newEvent(1, "test.created", "")
	publish(t, a, ev, raw, targets(sub), t0)
	lease := 10 * time.Minute
	q := subscriptions.JobQuery{Lease: lease}
	take := func(s SharedStore, now time.Time) []*subscriptions.Invocation {
		t.Helper()
		jobs, err := s.DueJobs(t.Context(), now, 10, q)
		if err != nil {
			t.Fatalf("DueJobs: %v", err)
		}
		return jobs
	}
	got := take(a, t0)
	if len(got) != 1 {
		t.Fatalf("DueJobs handed out %d jobs; want the one", len(got))
	}
	id := got[0].JobID
	for _, s := range []SharedStore{a, b} {
		if again := take(s, at(lease-time.Second)); len(again) != 0 {
			t.Fatalf("during its lease the job was handed out again: %+v", again)
		}
	}
	// The process that took it died: once the lease is over, the other
	// takes it, with the same ID.
	again := take(b, at(lease))
	if len(again) != 1 || again[0].JobID != id {
		t.Fatalf("after the lease, DueJobs = %+v; want job %s again", again, id)
	}
	// Given back, it is due at once.
	if err := b.ReleaseJobs(t.Context(), []string{id}, at(lease+time.Second)); err != nil {
		t.Fatalf("ReleaseJobs: %v", err)
	}
	if back := take(a, at(lease+time.Second)); len(back) != 1 || back[0].JobID != id {
		t.Fatalf("after ReleaseJobs, DueJobs = %+v; want job %s", back, id)
	}
	finish(t, a, subscriptions.JobDone{JobID: id, SubscriptionID: sub.ID, At: at(lease + 2*time.Second)})
	if left := take(b, at(3*lease)); len(left) != 0 {
		t.Errorf("after the job finished, DueJobs = %+v; want none", left)
	}
}
