package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// delivery is the part of a subscription that Publish counts.
type delivery struct {
	Count int64
	Last  *time.Time
}

func deliveryOf(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) delivery {
	t.Helper()
	got := get(t, s, sub.Principal, sub.ID)
	return delivery{got.DeliveredCount, got.LastDeliveredAt}
}

// testPublishRoutesToActive checks that Publish writes one inbox entry per
// principal among the realtime targets, listing each of that principal's
// target subscriptions once, and counts a delivery for each of them only.
func testPublishRoutesToActive(t *testing.T, open Opener) {
	s := open(t)
	first, second := newSub(1, "alice"), newSub(2, "alice")
	bobs := newSub(3, "bob")
	cronOnly := newSub(4, "alice")
	untouched := newSub(5, "alice")
	create(t, s, first, second, bobs, cronOnly, untouched)

	ts := targets(first, bobs, second)
	ts = append(ts,
		// A subscription targeted twice is listed once; a target of
		// another channel does not go to the inbox.
		subscriptions.Target{SubscriptionID: first.ID, Principal: "alice", Channel: mcpe.ChannelRealtime},
		subscriptions.Target{SubscriptionID: cronOnly.ID, Principal: "alice", Channel: mcpe.ChannelCron},
	)
	ev, raw := newEvent(1, "test.created", "src-1")
	now := at(2 * time.Hour)
	res := publish(t, s, ev, raw, ts, now)

	if res.EventID != ev.ID || res.Duplicate {
		t.Errorf("Publish = {EventID: %s, Duplicate: %t}, want {EventID: %s, Duplicate: false}", res.EventID, res.Duplicate, ev.ID)
	}
	checkSeqsIncrease(t, "Delivered", res.Delivered)
	diff(t, "Delivered", []subscriptions.InboxEntry{entry(0, raw, now, first, second), entry(0, raw, now, bobs)}, res.Delivered, ignoreSeq, byPrincipal)
	diff(t, "alice's inbox", []subscriptions.InboxEntry{entry(seqOf(t, res, first), raw, now, first, second)}, inbox(t, s, "alice"))
	diff(t, "bob's inbox", []subscriptions.InboxEntry{entry(seqOf(t, res, bobs), raw, now, bobs)}, inbox(t, s, "bob"))

	for _, tc := range []struct {
		sub  *subscriptions.Subscription
		want delivery
	}{
		{first, delivery{1, &now}},
		{second, delivery{1, &now}},
		{bobs, delivery{1, &now}},
		{cronOnly, delivery{0, nil}},
		{untouched, delivery{0, nil}},
	} {
		diff(t, "delivery counters of "+tc.sub.ID, tc.want, deliveryOf(t, s, tc.sub))
	}

	// No realtime target: the event is stored, nothing is delivered.
	ev, raw = newEvent(2, "test.created", "")
	res = publish(t, s, ev, raw, []subscriptions.Target{{SubscriptionID: cronOnly.ID, Principal: "alice", Channel: mcpe.ChannelCron}}, now)
	diff(t, "Delivered without realtime targets", []subscriptions.InboxEntry(nil), res.Delivered)
}

// testPublishManyPrincipals checks an event reaching more principals than one
// statement writes.
func testPublishManyPrincipals(t *testing.T, open Opener) {
	s := open(t)
	var subs []*subscriptions.Subscription
	for i := range 40 {
		subs = append(subs, newSub(i+1, fmt.Sprintf("p%02d", i)))
	}
	create(t, s, subs...)
	ev, raw := newEvent(1, "test.created", "")
	res := publish(t, s, ev, raw, targets(subs...), at(time.Hour))
	checkSeqsIncrease(t, "Delivered", res.Delivered)
	if len(res.Delivered) != len(subs) {
		t.Fatalf("Delivered %d entries, want %d", len(res.Delivered), len(subs))
	}
	for _, sub := range subs {
		diff(t, sub.Principal+"'s inbox", []subscriptions.InboxEntry{entry(seqOf(t, res, sub), raw, at(time.Hour), sub)}, inbox(t, s, sub.Principal))
	}
}

// testPublishLargeBatch checks a batch of more events, and more inbox rows,
// than one statement writes, with chunks of every length: 70 events, the
// first 35 reaching two principals and the rest one (105 inbox rows), every
// one delivered once, in order.
func testPublishLargeBatch(t *testing.T, open Opener) {
	s := open(t)
	alice, bob := newSub(1, "alice"), newSub(2, "bob")
	create(t, s, alice, bob)
	var pubs []subscriptions.Publication
	for i := range 70 {
		ev, raw := newEvent(i+1, "test.created", "")
		ts := targets(alice)
		if i < 35 {
			ts = targets(alice, bob)
		}
		pubs = append(pubs, subscriptions.Publication{Event: ev, Raw: raw, Targets: ts})
	}
	res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Publications: pubs, Now: at(time.Hour), Deactivations: routed(t, s)})
	if err != nil {
		t.Fatalf("Publish of %d events: %v", len(pubs), err)
	}
	var all []subscriptions.InboxEntry
	for i, r := range res {
		want := 1
		if i < 35 {
			want = 2
		}
		if r.Duplicate || r.EventID != pubs[i].Event.ID || len(r.Delivered) != want {
			t.Fatalf("result %d: %+v; want %s stored, %d entries", i, r, pubs[i].Event.ID, want)
		}
		all = append(all, r.Delivered...)
	}
	checkSeqsIncrease(t, "Delivered", all)
	if a, b := len(inbox(t, s, "alice")), len(inbox(t, s, "bob")); a != 70 || b != 35 {
		t.Fatalf("inboxes of %d and %d entries; want 70 and 35", a, b)
	}
}

// testPublishDuplicates checks which events Publish refuses as duplicates,
// and that a refused event changes nothing. A sourceEventId names a
// duplicate only among the events of its source (Publication.Source): one
// source posting another's IDs first must not make its events duplicates.
func testPublishDuplicates(t *testing.T, open Opener) {
	type ev struct {
		n                 int
		typ, from, source string
	}
	tests := []struct {
		name          string
		first, second ev
		wantDuplicate bool
	}{
		{"same id", ev{1, "test.created", "a", ""}, ev{1, "test.updated", "b", ""}, true},
		{"same id without sourceEventId", ev{1, "test.created", "", ""}, ev{1, "test.created", "", ""}, true},
		{"same id from another source", ev{1, "test.created", "a", "ingest"}, ev{1, "test.created", "a", "alertmanager"}, true},
		{"same type and sourceEventId", ev{1, "test.created", "a", ""}, ev{2, "test.created", "a", ""}, true},
		{"same type and sourceEventId from one source", ev{1, "test.created", "a", "alertmanager"}, ev{2, "test.created", "a", "alertmanager"}, true},
		{"same type and sourceEventId from another source", ev{1, "test.created", "a", "ingest"}, ev{2, "test.created", "a", "alertmanager"}, false},
		{"same type and sourceEventId, then from no source", ev{1, "test.created", "a", "github"}, ev{2, "test.created", "a", ""}, false},
		{"same sourceEventId, other type", ev{1, "test.created", "a", ""}, ev{2, "test.updated", "a", ""}, false},
		{"same type, other sourceEventId", ev{1, "test.created", "a", ""}, ev{2, "test.created", "b", ""}, false},
		{"same type, no sourceEventId", ev{1, "test.created", "", ""}, ev{2, "test.created", "", ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			sub := newSub(1, "alice")
			create(t, s, sub)
			ev1, raw1 := newEvent(tt.first.n, tt.first.typ, tt.first.from)
			ev2, raw2 := newEvent(tt.second.n, tt.second.typ, tt.second.from)
			if tt.first.n == tt.second.n {
				// Make the bodies differ, to see which one is kept.
				ev2.Data = []byte(`{"second":true}`)
				raw2 = []byte(`{"second":true}`)
			}
			publishFrom := func(source string, ev *mcpe.Event, raw json.RawMessage, now time.Time) subscriptions.PublishResult {
				t.Helper()
				res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Now: now, Deactivations: routed(t, s), Publications: []subscriptions.Publication{
					{Event: ev, Raw: raw, Targets: targets(sub), Source: source}}})
				if err != nil || len(res) != 1 {
					t.Fatalf("Publish(%s) from %q = %+v, %v", ev.ID, source, res, err)
				}
				return res[0]
			}
			first := publishFrom(tt.first.source, ev1, raw1, at(time.Hour))
			second := publishFrom(tt.second.source, ev2, raw2, at(2*time.Hour))

			want := []subscriptions.InboxEntry{entry(seqOf(t, first, sub), raw1, at(time.Hour), sub)}
			wantDelivery := delivery{1, new(at(time.Hour))}
			if tt.wantDuplicate {
				if second.EventID != ev1.ID || !second.Duplicate || len(second.Delivered) != 0 {
					t.Errorf("second Publish = %+v, want {EventID: %s, Duplicate: true}", second, ev1.ID)
				}
			} else {
				if second.EventID != ev2.ID || second.Duplicate {
					t.Errorf("second Publish = {EventID: %s, Duplicate: %t}, want {EventID: %s, Duplicate: false}", second.EventID, second.Duplicate, ev2.ID)
				}
				want = append(want, entry(seqOf(t, second, sub), raw2, at(2*time.Hour), sub))
				wantDelivery = delivery{2, new(at(2 * time.Hour))}
			}
			diff(t, "inbox", want, inbox(t, s, "alice"))
			diff(t, "delivery counters", wantDelivery, deliveryOf(t, s, sub))
		})
	}
	t.Run("sources in one batch", func(t *testing.T) {
		s := open(t)
		var pubs []subscriptions.Publication
		for i, source := range []string{"ingest", "alertmanager", "alertmanager", "ingest"} {
			ev, raw := newEvent(i+1, "test.created", "a")
			pubs = append(pubs, subscriptions.Publication{Event: ev, Raw: raw, Source: source})
		}
		res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Publications: pubs, Now: at(time.Hour), Deactivations: routed(t, s)})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		want := []subscriptions.PublishResult{{EventID: eventID(1)}, {EventID: eventID(2)},
			{EventID: eventID(2), Duplicate: true}, {EventID: eventID(1), Duplicate: true}}
		diff(t, "results", want, res)
	})
}

// testPublishWithoutTargets checks that an event routed nowhere is still
// accepted, and so refused when it comes again.
func testPublishWithoutTargets(t *testing.T, open Opener) {
	s := open(t)
	sub := newSub(1, "alice")
	create(t, s, sub)
	ev, raw := newEvent(1, "test.created", "src-1")
	res := publish(t, s, ev, raw, nil, at(time.Hour))
	if res.EventID != ev.ID || res.Duplicate || len(res.Delivered) != 0 {
		t.Errorf("Publish without targets = %+v, want {EventID: %s}", res, ev.ID)
	}

	for _, n := range []int{1, 2} { // the same ID, then the same type and sourceEventId
		again, raw := newEvent(n, "test.created", "src-1")
		res := publish(t, s, again, raw, targets(sub), at(2*time.Hour))
		if res.EventID != ev.ID || !res.Duplicate || len(res.Delivered) != 0 {
			t.Errorf("Publish of %s again = %+v, want {EventID: %s, Duplicate: true}", again.ID, res, ev.ID)
		}
	}
	diff(t, "inbox", []subscriptions.InboxEntry(nil), inbox(t, s, "alice"))
	diff(t, "delivery counters", delivery{0, nil}, deliveryOf(t, s, sub))
}

// testPublishBatch checks a group commit: publications stored together, in
// order, each with its own result; a duplicate of one stored earlier in the
// same call is a duplicate; and targets whose subscriptions are no longer
// active are left out.
func testPublishBatch(t *testing.T, open Opener) {
	s := open(t)
	alice, bob := newSub(1, "alice"), newSub(2, "bob")
	paused := withStatus(newSub(3, "alice"), mcpe.StatusPaused)
	digest := cronSub(4, "alice")
	gone := newSub(5, "bob")
	create(t, s, alice, bob, paused, digest, gone)
	if err := s.DeleteSubscription(t.Context(), "bob", gone.ID); err != nil {
		t.Fatal(err)
	}
	a, rawA := newEvent(1, "test.created", "")
	c, rawC := newEvent(3, "test.created", "src-c")
	d, rawD := newEvent(4, "test.created", "src-c") // the same source event as c
	now := at(time.Hour)
	pubs := []subscriptions.Publication{
		{Event: a, Raw: rawA, Targets: targets(alice, paused)},
		{Event: a, Raw: rawA, Targets: targets(bob)}, // the same event again
		{Event: c, Raw: rawC, Targets: append(targets(bob, gone), routes(digest)...)},
		{Event: d, Raw: rawD, Targets: targets(alice)},
	}
	res, err := s.Publish(t.Context(), subscriptions.PublishBatch{Publications: pubs, Now: now})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if len(res) != len(pubs) {
		t.Fatalf("Publish of %d returned %d results", len(pubs), len(res))
	}
	want := []subscriptions.PublishResult{
		{EventID: a.ID, Delivered: []subscriptions.InboxEntry{entry(0, rawA, now, alice)}},
		{EventID: a.ID, Duplicate: true},
		{EventID: c.ID, Delivered: []subscriptions.InboxEntry{entry(0, rawC, now, bob)}},
		{EventID: c.ID, Duplicate: true},
	}
	diff(t, "results", want, res, ignoreSeq)
	if res[0].Delivered[0].Seq >= res[2].Delivered[0].Seq && !perPrincipal(s) {
		t.Errorf("seqs %d and %d: later publications must get later seqs", res[0].Delivered[0].Seq, res[2].Delivered[0].Seq)
	}
	diff(t, "alice's inbox", []subscriptions.InboxEntry{res[0].Delivered[0]}, inbox(t, s, "alice"))
	diff(t, "bob's inbox", []subscriptions.InboxEntry{res[2].Delivered[0]}, inbox(t, s, "bob"))
	diff(t, "the digest's buffer", int64(1), get(t, s, "alice", digest.ID).BufferedEvents)
	diff(t, "the paused subscription's deliveries", int64(0), get(t, s, "alice", paused.ID).DeliveredCount)
}

// testDeactivations checks the count of subscriptions that stopped being
// active, and that a publish routed before a stop leaves the stopped
// target out.
func testDeactivations(t *testing.T, open Opener) {
	ctx := t.Context()
	s := open(t)
	count := func() int64 {
		t.Helper()
		n, err := s.Deactivations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := count()
	if start == 0 {
		t.Fatal("Deactivations is 0; it must never be, so that 0 means unknown")
	}
	paused, deleted, expiring, stays := newSub(1, "alice"), newSub(2, "alice"), newSub(3, "alice"), newSub(4, "alice")
	expires := at(time.Hour)
	expiring.ExpiresAt = &expires
	create(t, s, paused, deleted, expiring, stays)
	if n := count(); n != start {
		t.Errorf("creating subscriptions moved the count from %d to %d", start, n)
	}
	routed := count()
	paused.Status = mcpe.StatusPaused
	update(t, s, paused)
	if n := count(); n != start+1 {
		t.Errorf("after a pause the count is %d; want %d", n, start+1)
	}
	// A publish routed before the pause leaves the paused target out.
	ev, raw := newEvent(1, "test.created", "")
	res, err := s.Publish(ctx, subscriptions.PublishBatch{
		Publications:  []subscriptions.Publication{{Event: ev, Raw: raw, Targets: targets(paused, stays)}},
		Now:           at(time.Minute),
		Deactivations: routed,
	})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "Delivered", []subscriptions.InboxEntry{entry(0, raw, at(time.Minute), stays)}, res[0].Delivered, ignoreSeq)
	// Resuming does not count; deleting an active one does, a paused one
	// not.
	paused.Status = mcpe.StatusActive
	update(t, s, paused)
	if err := s.DeleteSubscription(ctx, "alice", deleted.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != start+2 {
		t.Errorf("after a resume and a delete the count is %d; want %d", n, start+2)
	}
	paused.Status = mcpe.StatusPaused
	update(t, s, paused)
	if err := s.DeleteSubscription(ctx, "alice", paused.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != start+3 {
		t.Errorf("after pausing and deleting the count is %d; want %d", n, start+3)
	}
	if _, err := s.ExpireSubscriptions(ctx, at(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != start+4 {
		t.Errorf("after an expiry the count is %d; want %d", n, start+4)
	}
}

// perPrincipal reports whether s numbers each principal's inbox apart.
func perPrincipal(s subscriptions.Store) bool {
	sh, ok := s.(subscriptions.Shared)
	return ok && sh.InboxPerPrincipal()
}
