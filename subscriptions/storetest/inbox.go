package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testReadInbox checks ReadInbox's order, paging and contents.
func testReadInbox(t *testing.T, open Opener) {
	s := open(t)
	alices, bobs := newSub(1, "alice"), newSub(2, "bob")
	create(t, s, alices, bobs)

	var want []subscriptions.InboxEntry // alice's inbox
	var bobSeqs []int64
	for i := range 5 {
		ev, raw := newEvent(i+1, "test.created", "")
		now := at(time.Duration(i) * time.Minute)
		// bob's entries interleave with alice's, so her sequence numbers
		// have gaps.
		res := publish(t, s, ev, raw, targets(alices, bobs), now)
		want = append(want, entry(seqOf(t, res, alices), raw, now, alices))
		bobSeqs = append(bobSeqs, seqOf(t, res, bobs))
	}
	alices.ExpiresAt = new(at(time.Hour))
	update(t, s, alices)
	expired := expire(t, s, at(time.Hour))
	want = append(want, kept(expiredEntry(expired[0].Seq, alices, at(time.Hour))))
	seq := func(i int) int64 { return want[i].Seq }
	var afterBobs []subscriptions.InboxEntry
	for _, e := range want {
		if e.Seq > bobSeqs[2] {
			afterBobs = append(afterBobs, e)
		}
	}

	tests := []struct {
		name      string
		principal string
		after     int64
		limit     int
		want      []subscriptions.InboxEntry
		wantMore  bool
	}{
		{"everything", "alice", 0, 100, want, false},
		{"first page", "alice", 0, 2, want[:2], true},
		{"middle page", "alice", seq(1), 2, want[2:4], true},
		{"last page, full", "alice", seq(3), 2, want[4:], false},
		{"last page, short", "alice", seq(2), 5, want[3:], false},
		{"one", "alice", seq(0), 1, want[1:2], true},
		{"after a seq of another principal", "alice", bobSeqs[2], 100, afterBobs, false},
		{"after the last", "alice", seq(5), 2, nil, false},
		{"far after the last", "alice", seq(5) + 1000, 2, nil, false},
		{"empty inbox", "carol", 0, 10, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := s.ReadInbox(t.Context(), tt.principal, tt.after, tt.limit)
			if err != nil {
				t.Fatalf("ReadInbox: %v", err)
			}
			diff(t, "ReadInbox", tt.want, got)
			if more != tt.wantMore {
				t.Errorf("ReadInbox hasMore = %t, want %t", more, tt.wantMore)
			}
		})
	}
}

// testInboxEvent checks that InboxEvent finds an event, byte for byte, only
// in the inbox of its principal: in an event entry or a digest, and not
// once retention removed the principal's entry, even while another
// principal's entry keeps the event.
func testInboxEvent(t *testing.T, open Opener) {
	s := open(t)
	alices, bobs, digest := newSub(1, "alice"), newSub(2, "bob"), cronSub(3, "alice")
	create(t, s, alices, bobs, digest)
	raws := map[int]json.RawMessage{}
	for _, p := range []struct {
		n    int
		subs []*subscriptions.Subscription
	}{{5, []*subscriptions.Subscription{alices, bobs}}, {1, []*subscriptions.Subscription{alices}}, {2, []*subscriptions.Subscription{bobs}}} {
		ev, raw := newEvent(p.n, "test.created", "")
		publish(t, s, ev, raw, targets(p.subs...), at(time.Duration(p.n)*time.Minute))
		raws[p.n] = raw
	}
	batch := fill(t, s, 3, 2, at(time.Hour), digest)
	raws[3], raws[4] = batch[0], batch[1]
	fireOne(t, s, fireReq(digest, 10, true), at(24*time.Hour))
	check := func(when, principal string, n int, want json.RawMessage) {
		t.Helper()
		got, err := s.InboxEvent(t.Context(), principal, eventID(n))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: InboxEvent(%s, event %d) = %s, %v; want %s", when, principal, n, got, err, want)
		}
	}
	for _, tc := range []struct {
		principal string
		n         int
		want      json.RawMessage
	}{
		{"alice", 1, raws[1]}, {"alice", 3, raws[3]}, {"alice", 4, raws[4]}, {"alice", 5, raws[5]}, {"bob", 2, raws[2]}, {"bob", 5, raws[5]},
		{"alice", 2, nil}, {"bob", 1, nil}, {"bob", 3, nil}, {"carol", 1, nil}, {"alice", 99, nil},
	} {
		check("before Prune", tc.principal, tc.n, tc.want)
	}
	r := keepAll
	r.InboxMaxEntries = 2 // alice's entry of event 5 goes, bob's stays
	prune(t, s, r, at(25*time.Hour))
	check("after Prune", "alice", 5, nil)
	check("after Prune", "bob", 5, raws[5])
	check("after Prune", "alice", 3, raws[3])
}

// testLatestInbox checks that LatestInbox returns the newest entries of a
// principal, oldest first, whatever other principals' entries come between.
func testLatestInbox(t *testing.T, open Opener) {
	s := open(t)
	alices, bobs := newSub(1, "alice"), newSub(2, "bob")
	create(t, s, alices, bobs)
	var want []subscriptions.InboxEntry // alice's inbox
	for i := range 5 {
		ev, raw := newEvent(i+1, "test.created", "")
		now := at(time.Duration(i) * time.Minute)
		res := publish(t, s, ev, raw, targets(alices, bobs), now)
		want = append(want, entry(seqOf(t, res, alices), raw, now, alices))
		// bob gets one more of his own after each, so he has more entries.
		ev, raw = newEvent(100+i, "test.created", "")
		publish(t, s, ev, raw, targets(bobs), now)
	}
	tests := []struct {
		name      string
		principal string
		limit     int
		want      []subscriptions.InboxEntry
	}{
		{"newest one", "alice", 1, want[4:]},
		{"newest three", "alice", 3, want[2:]},
		{"all, exactly", "alice", 5, want},
		{"more than there are", "alice", 100, want},
		{"empty inbox", "carol", 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.LatestInbox(t.Context(), tt.principal, tt.limit)
			if err != nil {
				t.Fatalf("LatestInbox: %v", err)
			}
			diff(t, "LatestInbox", tt.want, got)
		})
	}
	if _, err := s.LatestInbox(t.Context(), "alice", 0); err == nil {
		t.Error("LatestInbox with limit 0 succeeded; want an error")
	}
}

// testExpireSubscriptions checks which subscriptions ExpireSubscriptions
// expires and the inbox entries it writes.
func testExpireSubscriptions(t *testing.T, open Opener) {
	s := open(t)
	now := at(time.Hour)
	due := withExpiry(newSub(1, "alice"), at(time.Hour-time.Minute))
	dueNow := withExpiry(newSub(2, "bob"), now)
	duePaused := withExpiry(withStatus(newSub(3, "alice"), mcpe.StatusPaused), at(30*time.Minute))
	later := withExpiry(newSub(4, "alice"), now.Add(time.Millisecond))
	never := newSub(5, "alice")
	already := withExpiry(withStatus(newSub(6, "alice"), mcpe.StatusExpired), t0)
	create(t, s, due, dueNow, duePaused, later, never, already)

	got := expire(t, s, now)
	checkSeqsIncrease(t, "ExpireSubscriptions", got)
	want := []subscriptions.InboxEntry{
		kept(expiredEntry(0, due, now)),
		kept(expiredEntry(0, dueNow, now)),
		kept(expiredEntry(0, duePaused, now)),
	}
	diff(t, "ExpireSubscriptions", want, got, ignoreSeq, byPrincipal)

	// The same entries, with the same sequence numbers, are in the inboxes.
	var alices, bobs []subscriptions.InboxEntry
	for _, e := range got {
		if e.Principal == "alice" {
			alices = append(alices, e)
		} else {
			bobs = append(bobs, e)
		}
	}
	diff(t, "alice's inbox", alices, inbox(t, s, "alice"))
	diff(t, "bob's inbox", bobs, inbox(t, s, "bob"))

	for _, tc := range []struct {
		sub  *subscriptions.Subscription
		want mcpe.Status
	}{
		{due, mcpe.StatusExpired},
		{dueNow, mcpe.StatusExpired},
		{duePaused, mcpe.StatusExpired},
		{later, mcpe.StatusActive},
		{never, mcpe.StatusActive},
		{already, mcpe.StatusExpired},
	} {
		if got := get(t, s, tc.sub.Principal, tc.sub.ID).Status; got != tc.want {
			t.Errorf("status of %s = %q, want %q", tc.sub.ID, got, tc.want)
		}
	}

	diff(t, "second ExpireSubscriptions", []subscriptions.InboxEntry(nil), expire(t, s, now))
	diff(t, "alice's inbox after the second ExpireSubscriptions", alices, inbox(t, s, "alice"))
}

// testNextExpiry checks that NextExpiry looks only at active and paused
// subscriptions.
func testNextExpiry(t *testing.T, open Opener) {
	tests := []struct {
		name    string
		subs    []*subscriptions.Subscription
		deleted []*subscriptions.Subscription
		expire  time.Time // when not zero, ExpireSubscriptions runs at this time first
		want    time.Time
		wantOK  bool
	}{
		{name: "empty store"},
		{name: "no expiresAt", subs: []*subscriptions.Subscription{newSub(1, "alice")}},
		{name: "earliest of active and paused", subs: []*subscriptions.Subscription{
			withExpiry(newSub(1, "alice"), at(3*time.Hour)),
			withExpiry(withStatus(newSub(2, "bob"), mcpe.StatusPaused), at(2*time.Hour)),
			newSub(3, "alice"),
			withExpiry(newSub(4, "carol"), at(4*time.Hour)),
		}, want: at(2 * time.Hour), wantOK: true},
		{name: "expired ignored", subs: []*subscriptions.Subscription{
			withExpiry(withStatus(newSub(1, "alice"), mcpe.StatusExpired), at(time.Hour)),
			withExpiry(newSub(2, "alice"), at(4*time.Hour)),
		}, want: at(4 * time.Hour), wantOK: true},
		{name: "only expired", subs: []*subscriptions.Subscription{
			withExpiry(withStatus(newSub(1, "alice"), mcpe.StatusExpired), at(time.Hour)),
		}},
		{name: "deleted ignored", subs: []*subscriptions.Subscription{
			withExpiry(newSub(1, "alice"), at(4*time.Hour)),
		}, deleted: []*subscriptions.Subscription{
			withExpiry(newSub(2, "alice"), at(time.Hour)),
		}, want: at(4 * time.Hour), wantOK: true},
		{name: "after ExpireSubscriptions", subs: []*subscriptions.Subscription{
			withExpiry(newSub(1, "alice"), at(time.Hour)),
			withExpiry(newSub(2, "alice"), at(2*time.Hour+500*time.Millisecond)),
		}, expire: at(time.Hour), want: at(2*time.Hour + 500*time.Millisecond), wantOK: true},
		{name: "all expired by ExpireSubscriptions", subs: []*subscriptions.Subscription{
			withExpiry(newSub(1, "alice"), at(time.Hour)),
		}, expire: at(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			create(t, s, tt.subs...)
			create(t, s, tt.deleted...)
			for _, sub := range tt.deleted {
				if err := s.DeleteSubscription(t.Context(), sub.Principal, sub.ID); err != nil {
					t.Fatalf("DeleteSubscription: %v", err)
				}
			}
			if !tt.expire.IsZero() {
				expire(t, s, tt.expire)
			}
			got, ok, err := s.NextExpiry(t.Context())
			if err != nil {
				t.Fatalf("NextExpiry: %v", err)
			}
			if ok != tt.wantOK || ok && !got.Equal(tt.want) {
				t.Errorf("NextExpiry = %v, %t; want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// testPollCursor checks that each principal has its own cursor, 0 until set.
func testPollCursor(t *testing.T, open Opener) {
	s := open(t)
	steps := []struct {
		set       string // principal whose cursor is set, or ""
		seq       int64
		wantAlice int64
		wantBob   int64
	}{
		{"", 0, 0, 0},
		{"alice", 5, 5, 0},
		{"bob", 3, 5, 3},
		{"alice", 7, 7, 3},
		{"alice", 2, 2, 3}, // a cursor may move back
		{"bob", 0, 2, 0},
	}
	for _, step := range steps {
		if step.set != "" {
			setPollCursor(t, s, step.set, step.seq)
		}
		got := [2]int64{pollCursor(t, s, "alice"), pollCursor(t, s, "bob")}
		diff(t, "PollCursor of alice and bob after setting "+step.set, [2]int64{step.wantAlice, step.wantBob}, got)
	}
}
