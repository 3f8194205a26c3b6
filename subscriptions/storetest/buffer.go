package storetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file covers the buffers of cron and scheduled subscriptions: what
// Publish puts in them, what Fire and ExpireSubscriptions take out, and what
// deleting and pruning do to them.

// cronSub returns subscription n with the cron channel, due to fire a day
// after t0.
func cronSub(n int, principal string) *subscriptions.Subscription {
	sub := newSub(n, principal)
	sub.Delivery = mcpe.Delivery{
		Channels:     []mcpe.Channel{mcpe.ChannelCron},
		CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC"},
	}
	sub.NextFireAt = new(at(24 * time.Hour))
	return sub
}

// scheduledSub returns subscription n with the scheduled channel, due to
// fire two days after t0.
func scheduledSub(n int, principal string) *subscriptions.Subscription {
	sub := newSub(n, principal)
	sub.Delivery = mcpe.Delivery{
		Channels:          []mcpe.Channel{mcpe.ChannelScheduled},
		ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2025-01-17T10:30:00Z"},
	}
	sub.NextFireAt = new(at(48 * time.Hour))
	return sub
}

// routes returns one target per channel of each subscription, as the
// Service routes a matching event.
func routes(subs ...*subscriptions.Subscription) []subscriptions.Target {
	var ts []subscriptions.Target
	for _, sub := range subs {
		for _, c := range sub.Delivery.Channels {
			ts = append(ts, subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: c})
		}
	}
	return ts
}

// bufferedEvent returns event n and a JSON form of it that re-encoding would
// change (indented, with characters json.Marshal escapes): a store must hand
// it back byte for byte, inside a batch too.
func bufferedEvent(n int) (*mcpe.Event, json.RawMessage) {
	ev, _ := newEvent(n, "test.created", "")
	raw := fmt.Sprintf("{\n  \"id\": %q,\n  \"type\": \"test.created\",\n  \"data\": {\"n\": %d, \"html\": \"<b>&amp;</b>\"}\n}", ev.ID, n)
	return ev, json.RawMessage(raw)
}

// fill publishes events first to first+n-1 at now, routed to subs, and
// returns their JSON forms in order.
func fill(t *testing.T, s subscriptions.Store, first, n int, now time.Time, subs ...*subscriptions.Subscription) []json.RawMessage {
	t.Helper()
	raws := make([]json.RawMessage, 0, n)
	ts := routes(subs...)
	for i := first; i < first+n; i++ {
		ev, raw := bufferedEvent(i)
		if res := publish(t, s, ev, raw, ts, now); res.Duplicate {
			t.Fatalf("Publish(%s) was refused as a duplicate", ev.ID)
		}
		raws = append(raws, raw)
	}
	return raws
}

// pick returns the JSON forms of events nums (counted from 1) of raws.
func pick(raws []json.RawMessage, nums ...int) []json.RawMessage {
	out := make([]json.RawMessage, len(nums))
	for i, n := range nums {
		out[i] = raws[n-1]
	}
	return out
}

// span returns the numbers from to to, inclusive.
func span(from, to int) []int {
	var out []int
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// batchEntry is the InboxBatch entry that a fire of sub at now writes.
func batchEntry(seq int64, sub *subscriptions.Subscription, now time.Time, remaining int, events []json.RawMessage) subscriptions.InboxEntry {
	return subscriptions.InboxEntry{
		Seq:             seq,
		Principal:       sub.Principal,
		SubscriptionIDs: []string{sub.ID},
		Kind:            mcpe.InboxBatch,
		Events:          events,
		Remaining:       remaining,
		CreatedAt:       now,
	}
}

// fireReq asks for the delivery of at most max of sub's waiting events.
func fireReq(sub *subscriptions.Subscription, max int, aggregate bool) subscriptions.FireRequest {
	return subscriptions.FireRequest{SubscriptionID: sub.ID, Principal: sub.Principal, Max: max, Aggregate: aggregate}
}

func fire(t *testing.T, s subscriptions.Store, reqs []subscriptions.FireRequest, now time.Time) []subscriptions.FireResult {
	t.Helper()
	res, err := s.Fire(t.Context(), reqs, now)
	if err != nil {
		t.Fatalf("Fire: %v", err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("Fire of %d requests returned %d results", len(reqs), len(res))
	}
	for i, r := range res {
		checkSeqsIncrease(t, "entries fired for "+r.SubscriptionID, r.Entries)
		if r.SubscriptionID != reqs[i].SubscriptionID {
			t.Fatalf("Fire result %d is for %s, want %s: results follow the requests", i, r.SubscriptionID, reqs[i].SubscriptionID)
		}
	}
	return res
}

func fireOne(t *testing.T, s subscriptions.Store, req subscriptions.FireRequest, now time.Time) subscriptions.FireResult {
	t.Helper()
	return fire(t, s, []subscriptions.FireRequest{req}, now)[0]
}

func pendingEntries(t *testing.T, s subscriptions.Store, principal string, limit int) []subscriptions.InboxEntry {
	t.Helper()
	entries, err := s.PendingEntries(t.Context(), principal, limit)
	if err != nil {
		t.Fatalf("PendingEntries(%q, %d): %v", principal, limit, err)
	}
	return entries
}

// timing is the part of a subscription that buffering and firing change.
type timing struct {
	Status             mcpe.Status
	Buffered           int64
	NextFire, LastFire *time.Time
	Delivered          int64
	LastDelivered      *time.Time
}

func timingOf(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) timing {
	t.Helper()
	got := get(t, s, sub.Principal, sub.ID)
	return timing{got.Status, got.BufferedEvents, got.NextFireAt, got.LastFireAt, got.DeliveredCount, got.LastDeliveredAt}
}

// sent is one inbox entry a fire writes: a batch of events, or a single
// event when the request does not aggregate.
type sent struct {
	events    []int // event numbers, counted from 1
	remaining int   // Remaining of a batch
}

// sentEntries returns the inbox entries, without sequence numbers, that a
// fire of sub at now writes for ss, raws being the JSON forms of the events.
func sentEntries(ss []sent, sub *subscriptions.Subscription, now time.Time, raws []json.RawMessage, aggregate bool) []subscriptions.InboxEntry {
	var out []subscriptions.InboxEntry
	for _, d := range ss {
		if aggregate {
			out = append(out, batchEntry(0, sub, now, d.remaining, pick(raws, d.events...)))
			continue
		}
		for _, n := range d.events {
			out = append(out, entry(0, raws[n-1], now, sub))
		}
	}
	return out
}

// eventsIn counts the events of ss.
func eventsIn(ss []sent) int64 {
	var n int64
	for _, d := range ss {
		n += int64(len(d.events))
	}
	return n
}

// bySeq returns entries sorted by sequence number.
func bySeq(entries ...[]subscriptions.InboxEntry) []subscriptions.InboxEntry {
	all := slices.Concat(entries...)
	slices.SortFunc(all, func(a, b subscriptions.InboxEntry) int {
		return cmp.Or(strings.Compare(a.Principal, b.Principal), cmp.Compare(a.Seq, b.Seq))
	})
	return all
}

// checkStored reports an error unless GetSubscription and ListSubscriptions
// return want, the only subscription of its principal.
func checkStored(t *testing.T, s subscriptions.Store, what string, want *subscriptions.Subscription) {
	t.Helper()
	diff(t, "GetSubscription "+what, want, get(t, s, want.Principal, want.ID))
	diff(t, "ListSubscriptions "+what, []*subscriptions.Subscription{want}, list(t, s, subscriptions.ListQuery{Principal: want.Principal}))
}

// testPublishBuffersTimed checks that Publish adds an event once to the
// buffer of each cron or scheduled target, to no realtime one, and nowhere
// when the event is a duplicate.
func testPublishBuffersTimed(t *testing.T, open Opener) {
	s := open(t)
	cron, sched := cronSub(1, "alice"), scheduledSub(2, "bob")
	realtime := newSub(3, "alice")
	both := cronSub(4, "alice")
	both.Delivery.Channels = []mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron}
	untouched := cronSub(5, "alice")
	create(t, s, cron, sched, realtime, both, untouched)

	// cron is targeted twice.
	ts := append(routes(cron, sched, realtime, both), routes(cron)...)
	ev1, raw1 := bufferedEvent(1)
	ev1.Metadata.SourceEventID = "src-1"
	res := publish(t, s, ev1, raw1, ts, at(time.Hour))
	diff(t, "Delivered", []subscriptions.InboxEntry{entry(0, raw1, at(time.Hour), realtime, both)}, res.Delivered, ignoreSeq)
	ev2, raw2 := bufferedEvent(2)
	publish(t, s, ev2, raw2, routes(cron), at(2*time.Hour))
	dup, rawDup := bufferedEvent(3)
	dup.Metadata.SourceEventID = "src-1"
	if res := publish(t, s, dup, rawDup, ts, at(3*time.Hour)); !res.Duplicate {
		t.Errorf("Publish of sourceEventId src-1 again = %+v, want a duplicate", res)
	}

	for _, tc := range []struct {
		sub                 *subscriptions.Subscription
		buffered, delivered int64
	}{
		{cron, 2, 0},
		{sched, 1, 0},
		{realtime, 0, 1},
		{both, 1, 1},
		{untouched, 0, 0},
	} {
		got := get(t, s, tc.sub.Principal, tc.sub.ID)
		diff(t, "BufferedEvents and DeliveredCount of "+tc.sub.ID,
			[2]int64{tc.buffered, tc.delivered}, [2]int64{got.BufferedEvents, got.DeliveredCount})
	}

	// Each event waits once, oldest first.
	now := at(4 * time.Hour)
	for _, tc := range []struct {
		sub  *subscriptions.Subscription
		want []json.RawMessage
	}{
		{cron, []json.RawMessage{raw1, raw2}},
		{sched, []json.RawMessage{raw1}},
		{both, []json.RawMessage{raw1}},
		{untouched, nil},
	} {
		want := subscriptions.FireResult{SubscriptionID: tc.sub.ID}
		if tc.want != nil {
			want.Entries = []subscriptions.InboxEntry{batchEntry(0, tc.sub, now, 0, tc.want)}
		}
		diff(t, "Fire of "+tc.sub.ID, want, fireOne(t, s, fireReq(tc.sub, 10, true), now), ignoreSeq)
	}
}

// testTimedRoundTrip checks that NextFireAt and LastFireAt come back as
// CreateSubscription stored them, that BufferedEvents counts what waits, and
// that UpdateSubscription stores NextFireAt but neither of the others.
func testTimedRoundTrip(t *testing.T, open Opener) {
	fired := cronSub(3, "alice")
	fired.LastFireAt = new(at(-time.Hour + 250*time.Millisecond))
	noNext := cronSub(4, "alice")
	noNext.NextFireAt = nil
	tests := []struct {
		name string
		sub  *subscriptions.Subscription
	}{
		{"cron", cronSub(1, "alice")},
		{"scheduled", scheduledSub(2, "alice")},
		{"fired before", fired},
		{"no next fire", noNext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			create(t, s, tt.sub)
			checkStored(t, s, "after CreateSubscription", tt.sub)

			fill(t, s, 1, 2, at(time.Hour), tt.sub)
			want := tt.sub.Clone()
			want.BufferedEvents = 2
			checkStored(t, s, "with two events buffered", want)

			for i, next := range []*time.Time{new(at(30*time.Hour + 500*time.Millisecond)), nil} {
				want.NextFireAt = next
				want.UpdatedAt = at(time.Duration(2+i) * time.Hour)
				arg := want.Clone()
				arg.LastFireAt = new(at(99 * time.Hour))
				arg.BufferedEvents = 99
				update(t, s, arg)
				checkStored(t, s, fmt.Sprintf("after UpdateSubscription %d", i+1), want)
			}
		})
	}
}

// testFireDelivers checks what successive fires of one subscription deliver:
// the oldest waiting events, at most Max of them, as one batch or as one
// entry each, or everything in deliveries of Max when Drain; and that each
// fire records its time and the next, also when nothing waits.
func testFireDelivers(t *testing.T, open Opener) {
	type fired struct {
		entries []sent
		left    int // events still waiting afterwards
	}
	one := func(ns ...int) []sent { // one event entry per event
		var out []sent
		for _, n := range ns {
			out = append(out, sent{[]int{n}, 0})
		}
		return out
	}
	tests := []struct {
		name             string
		aggregate, drain bool
		max              int
		buffered, later  int // events waiting before the first fire, and published after it
		fires            []fired
	}{
		{name: "empty buffer", aggregate: true, max: 10, fires: []fired{{nil, 0}, {nil, 0}}},
		{name: "digest of fewer than Max", aggregate: true, max: 10, buffered: 3, fires: []fired{
			{[]sent{{span(1, 3), 0}}, 0},
			{nil, 0},
		}},
		{name: "digest of exactly Max", aggregate: true, max: 3, buffered: 3, fires: []fired{
			{[]sent{{span(1, 3), 0}}, 0},
			{nil, 0},
		}},
		{name: "digests of more than Max", aggregate: true, max: 2, buffered: 5, fires: []fired{
			{[]sent{{span(1, 2), 3}}, 3},
			{[]sent{{span(3, 4), 1}}, 1},
			{[]sent{{span(5, 5), 0}}, 0},
			{nil, 0},
		}},
		{name: "the rest leads newer events", aggregate: true, max: 2, buffered: 3, later: 2, fires: []fired{
			{[]sent{{span(1, 2), 1}}, 1},
			{[]sent{{span(3, 4), 1}}, 1},
			{[]sent{{span(5, 5), 0}}, 0},
		}},
		{name: "drained digests", aggregate: true, drain: true, max: 2, buffered: 5, fires: []fired{
			{[]sent{{span(1, 2), 3}, {span(3, 4), 1}, {span(5, 5), 0}}, 0},
			{nil, 0},
		}},
		{name: "drained digests of a multiple of Max", aggregate: true, drain: true, max: 2, buffered: 4, fires: []fired{
			{[]sent{{span(1, 2), 2}, {span(3, 4), 0}}, 0},
		}},
		{name: "drained digest of fewer than Max", aggregate: true, drain: true, max: 10, buffered: 3, fires: []fired{
			{[]sent{{span(1, 3), 0}}, 0},
		}},
		{name: "each event", max: 10, buffered: 3, fires: []fired{
			{one(1, 2, 3), 0},
			{nil, 0},
		}},
		{name: "each event, at most Max", max: 2, buffered: 3, later: 1, fires: []fired{
			{one(1, 2), 1},
			{one(3, 4), 0},
			{nil, 0},
		}},
		{name: "each event, drained", drain: true, max: 2, buffered: 5, fires: []fired{
			{one(1, 2, 3, 4, 5), 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			// other waits for the same events; sub's fires leave them.
			sub, other := cronSub(1, "alice"), cronSub(2, "alice")
			create(t, s, sub, other)
			raws := fill(t, s, 1, tt.buffered, t0, sub, other)

			var fireEntries []subscriptions.InboxEntry
			want := timing{Status: mcpe.StatusActive, NextFire: sub.NextFireAt}
			for i, f := range tt.fires {
				if i == 1 {
					raws = append(raws, fill(t, s, tt.buffered+1, tt.later, at(90*time.Minute), sub, other)...)
				}
				now := at(time.Duration(i+1) * time.Hour)
				req := fireReq(sub, tt.max, tt.aggregate)
				req.Drain = tt.drain
				if i < len(tt.fires)-1 { // the last fire has no next
					req.Next = new(now.Add(time.Hour))
				}
				got := fireOne(t, s, req, now)
				wantRes := subscriptions.FireResult{
					SubscriptionID: sub.ID,
					Entries:        sentEntries(f.entries, sub, now, raws, tt.aggregate),
					Remaining:      f.left,
				}
				diff(t, fmt.Sprintf("fire %d", i+1), wantRes, got, ignoreSeq)
				fireEntries = append(fireEntries, got.Entries...)

				want.Buffered, want.NextFire, want.LastFire = int64(f.left), req.Next, &now
				if len(f.entries) > 0 {
					want.Delivered += eventsIn(f.entries)
					want.LastDelivered = &now
				}
				diff(t, fmt.Sprintf("subscription after fire %d", i+1), want, timingOf(t, s, sub))
			}
			diff(t, "inbox", fireEntries, inbox(t, s, "alice"))
			if got, want := get(t, s, "alice", other.ID).BufferedEvents, int64(len(raws)); got != want {
				t.Errorf("other subscription's BufferedEvents = %d, want %d", got, want)
			}
		})
	}
}

// testFireExpire checks that a fire with Expire delivers what it takes, then
// writes the expiry entry and expires the subscription.
func testFireExpire(t *testing.T, open Opener) {
	tests := []struct {
		name             string
		aggregate, drain bool
		max, buffered    int
		want             []sent
	}{
		{name: "empty buffer", aggregate: true, max: 10},
		{name: "digest", aggregate: true, max: 10, buffered: 3, want: []sent{{span(1, 3), 0}}},
		{name: "drained digests", aggregate: true, drain: true, max: 2, buffered: 3, want: []sent{{span(1, 2), 1}, {span(3, 3), 0}}},
		{name: "each event", max: 10, buffered: 2, want: []sent{{[]int{1}, 0}, {[]int{2}, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			sub := scheduledSub(1, "alice")
			create(t, s, sub)
			raws := fill(t, s, 1, tt.buffered, t0, sub)

			now := at(time.Hour)
			req := fireReq(sub, tt.max, tt.aggregate)
			req.Drain, req.Expire = tt.drain, true
			got := fireOne(t, s, req, now)
			want := subscriptions.FireResult{
				SubscriptionID: sub.ID,
				Entries:        append(sentEntries(tt.want, sub, now, raws, tt.aggregate), expiredEntry(0, sub, now)),
			}
			diff(t, "Fire", want, got, ignoreSeq)
			diff(t, "inbox", got.Entries, inbox(t, s, "alice"))
			wantTiming := timing{Status: mcpe.StatusExpired, LastFire: &now, Delivered: eventsIn(tt.want)}
			if len(tt.want) > 0 {
				wantTiming.LastDelivered = &now
			}
			diff(t, "subscription", wantTiming, timingOf(t, s, sub))

			diff(t, "second Fire", subscriptions.FireResult{SubscriptionID: sub.ID, Skipped: true}, fireOne(t, s, req, at(2*time.Hour)))
			// It no longer counts towards the limit of live subscriptions
			// (with room for it and one more it is kept), and retention
			// dates it from the fire.
			if err := s.CreateSubscription(t.Context(), newSub(2, "alice"), 2); err != nil {
				t.Errorf("CreateSubscription with a limit of 2 after the expiry: %v", err)
			}
			r := keepAll
			r.ExpiredMaxAge = time.Hour
			diff(t, "Prune", subscriptions.PruneStats{Subscriptions: 1}, prune(t, s, r, now.Add(time.Hour+time.Millisecond)))
		})
	}
}

// testFireEmpty checks that a request with Empty (the last fire of a
// one-time delivery) writes one InboxBatch of no events when nothing waits,
// aggregating or not, before its expiry notice with Expire, and read back
// like any entry; with events waiting, it delivers them as usual.
func testFireEmpty(t *testing.T, open Opener) {
	tests := []struct {
		name              string
		aggregate, expire bool
		buffered          int
		want              []sent // nil: one batch of no events
	}{
		{name: "digest of nothing, then the expiry", aggregate: true, expire: true},
		{name: "digest of nothing, kept active", aggregate: true},
		{name: "digest of nothing without aggregating", expire: true},
		{name: "events waiting", aggregate: true, expire: true, buffered: 2, want: []sent{{span(1, 2), 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			sub := scheduledSub(1, "alice")
			create(t, s, sub)
			raws := fill(t, s, 1, tt.buffered, t0, sub)

			now := at(time.Hour)
			req := fireReq(sub, 1000, tt.aggregate)
			req.Drain, req.Expire, req.Empty, req.Pending = true, tt.expire, true, true
			got := fireOne(t, s, req, now)
			entries := sentEntries(tt.want, sub, now, raws, tt.aggregate)
			if tt.want == nil {
				entries = []subscriptions.InboxEntry{batchEntry(0, sub, now, 0, nil)}
			}
			if tt.expire {
				entries = append(entries, expiredEntry(0, sub, now))
			}
			diff(t, "Fire", subscriptions.FireResult{SubscriptionID: sub.ID, Entries: markPending(entries)}, got, ignoreSeq)
			diff(t, "inbox", got.Entries, inbox(t, s, "alice"))
			diff(t, "PendingEntries", got.Entries, pendingEntries(t, s, "alice", 10))
			// A digest of nothing is a delivery of no events.
			want := timing{Status: mcpe.StatusActive, LastFire: &now, Delivered: eventsIn(tt.want), LastDelivered: &now}
			if tt.expire {
				want.Status = mcpe.StatusExpired
			}
			diff(t, "subscription", want, timingOf(t, s, sub))
		})
	}
}

// testFirePending checks that PendingEntries returns the most recent entries
// that Fire marked pending, oldest first, until ClearPending unmarks them.
func testFirePending(t *testing.T, open Opener) {
	s := open(t)
	a, b := cronSub(1, "alice"), cronSub(2, "alice")
	c := scheduledSub(3, "bob")
	realtime := newSub(4, "alice")
	create(t, s, a, b, c, realtime)
	fill(t, s, 1, 2, t0, a, b, c)
	fill(t, s, 3, 1, t0, realtime) // never pending

	pending := func(r subscriptions.FireRequest) subscriptions.FireRequest {
		r.Pending = true
		return r
	}
	now := at(time.Hour)
	aBatch := fireOne(t, s, pending(fireReq(a, 10, true)), now).Entries
	bEvents := fireOne(t, s, pending(fireReq(b, 10, false)), now).Entries
	cReq := pending(fireReq(c, 10, true))
	cReq.Expire = true
	bobs := fireOne(t, s, cReq, now).Entries // a batch and the expiry
	fill(t, s, 4, 1, at(90*time.Minute), a)
	notPending := fireOne(t, s, fireReq(a, 10, true), at(2*time.Hour)).Entries
	alices := slices.Concat(aBatch, bEvents)
	if len(alices) != 3 || len(bobs) != 2 || len(notPending) != 1 {
		t.Fatalf("fires wrote %d, %d and %d entries, want 3, 2 and 1", len(alices), len(bobs), len(notPending))
	}
	aliceInbox := inbox(t, s, "alice")

	steps := []struct {
		name      string
		clear     string // ClearPending(clear, seq) runs first, unless clear is ""
		seq       int64
		limit     int
		wantAlice []subscriptions.InboxEntry
		wantBob   []subscriptions.InboxEntry
	}{
		{name: "all", limit: 10, wantAlice: alices, wantBob: bobs},
		{name: "exactly all", limit: 3, wantAlice: alices, wantBob: bobs},
		{name: "the two most recent", limit: 2, wantAlice: alices[1:], wantBob: bobs},
		{name: "the most recent", limit: 1, wantAlice: alices[2:], wantBob: bobs[1:]},
		{name: "alice's cleared up to her second", clear: "alice", seq: alices[1].Seq, limit: 10, wantAlice: alices[2:], wantBob: bobs},
		{name: "alice's cleared past her last", clear: "alice", seq: notPending[0].Seq, limit: 10, wantBob: bobs},
		{name: "bob's cleared up to his first", clear: "bob", seq: bobs[0].Seq, limit: 10, wantBob: bobs[1:]},
		{name: "bob's cleared up to his last", clear: "bob", seq: bobs[1].Seq, limit: 10},
	}
	for _, step := range steps {
		if step.clear != "" {
			if err := s.ClearPending(t.Context(), step.clear, step.seq); err != nil {
				t.Fatalf("ClearPending(%q, %d): %v", step.clear, step.seq, err)
			}
		}
		diff(t, step.name+": alice's PendingEntries", step.wantAlice, pendingEntries(t, s, "alice", step.limit))
		diff(t, step.name+": bob's PendingEntries", step.wantBob, pendingEntries(t, s, "bob", step.limit))
	}
	// Pending or not, the entries are in the inbox all along, no longer
	// marked once cleared.
	diff(t, "alice's inbox", notPendingNow(aliceInbox), inbox(t, s, "alice"))
	diff(t, "bob's inbox", notPendingNow(bobs), inbox(t, s, "bob"))
}

// markPending marks entries pending, as a Fire with Pending writes them.
func markPending(entries []subscriptions.InboxEntry) []subscriptions.InboxEntry {
	for i := range entries {
		entries[i].Pending = true
	}
	return entries
}

// notPendingNow returns copies of entries no longer marked pending.
func notPendingNow(entries []subscriptions.InboxEntry) []subscriptions.InboxEntry {
	out := slices.Clone(entries)
	for i := range out {
		out[i].Pending = false
	}
	return out
}

// testFireSkipped checks that a request for a subscription that is gone, is
// not active or is another principal's changes nothing.
func testFireSkipped(t *testing.T, open Opener) {
	tests := []struct {
		name      string
		prepare   func(*testing.T, subscriptions.Store, *subscriptions.Subscription)
		principal string // of the request, when not the subscription's
		resume    bool   // whether it can be made active again
	}{
		{name: "never created", prepare: nil},
		{name: "deleted", prepare: func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			if err := s.DeleteSubscription(t.Context(), sub.Principal, sub.ID); err != nil {
				t.Fatalf("DeleteSubscription: %v", err)
			}
		}},
		{name: "paused", prepare: func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			update(t, s, withStatus(sub.Clone(), mcpe.StatusPaused))
		}, resume: true},
		{name: "expired", prepare: func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			update(t, s, withStatus(sub.Clone(), mcpe.StatusExpired))
		}},
		{name: "another principal's", principal: "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			sub, bobs := cronSub(1, "alice"), cronSub(2, "bob")
			routed := []*subscriptions.Subscription{bobs}
			if tt.prepare != nil || tt.principal != "" {
				routed = append(routed, sub)
			}
			create(t, s, routed...)
			raws := fill(t, s, 1, 2, t0, routed...)
			if tt.prepare != nil {
				tt.prepare(t, s, sub)
			}
			before := map[string]principalState{"alice": stateOf(t, s, "alice"), "bob": stateOf(t, s, "bob")}

			req := fireReq(sub, 10, true)
			req.Drain, req.Expire, req.Pending, req.Next = true, true, true, new(at(48*time.Hour))
			if tt.principal != "" {
				req.Principal = tt.principal
			}
			diff(t, "Fire", subscriptions.FireResult{SubscriptionID: sub.ID, Skipped: true}, fireOne(t, s, req, at(time.Hour)))
			for _, p := range []string{"alice", "bob"} {
				diff(t, "what "+p+" owns", before[p], stateOf(t, s, p))
				diff(t, p+"'s PendingEntries", []subscriptions.InboxEntry(nil), pendingEntries(t, s, p, 10))
			}
			if !tt.resume {
				return
			}
			// Once resumed, it fires what waited all along.
			update(t, s, sub)
			diff(t, "Fire after resuming", subscriptions.FireResult{
				SubscriptionID: sub.ID,
				Entries:        []subscriptions.InboxEntry{batchEntry(0, sub, at(2*time.Hour), 0, raws)},
			}, fireOne(t, s, fireReq(sub, 10, true), at(2*time.Hour)), ignoreSeq)
		})
	}
}

// testFireManyRequests checks one Fire serving requests of several
// principals, with different settings, some of them skipped.
func testFireManyRequests(t *testing.T, open Opener) {
	s := open(t)
	alices, alices2 := cronSub(1, "alice"), cronSub(2, "alice")
	bobs, bobsPaused := scheduledSub(3, "bob"), cronSub(4, "bob")
	carols := cronSub(5, "carol")
	create(t, s, alices, alices2, bobs, bobsPaused, carols)
	raws := fill(t, s, 1, 3, t0, alices, alices2, bobs, bobsPaused, carols)
	update(t, s, withStatus(bobsPaused.Clone(), mcpe.StatusPaused))

	now, next := at(time.Hour), new(at(25*time.Hour))
	reqs := []subscriptions.FireRequest{
		fireReq(alices, 2, true),
		fireReq(bobs, 10, true),
		{SubscriptionID: subID(9), Principal: "carol", Max: 10, Aggregate: true},
		fireReq(carols, 10, false),
		fireReq(bobsPaused, 10, true),
		fireReq(alices2, 1, true),
	}
	reqs[0].Next = next
	reqs[1].Expire = true
	reqs[3].Next, reqs[3].Pending = next, true
	reqs[5].Next, reqs[5].Drain = next, true
	got := fire(t, s, reqs, now)
	want := []subscriptions.FireResult{
		{SubscriptionID: alices.ID, Entries: []subscriptions.InboxEntry{batchEntry(0, alices, now, 1, raws[:2])}, Remaining: 1},
		{SubscriptionID: bobs.ID, Entries: []subscriptions.InboxEntry{batchEntry(0, bobs, now, 0, raws), expiredEntry(0, bobs, now)}},
		{SubscriptionID: subID(9), Skipped: true},
		{SubscriptionID: carols.ID, Entries: markPending(sentEntries([]sent{{span(1, 3), 0}}, carols, now, raws, false))},
		{SubscriptionID: bobsPaused.ID, Skipped: true},
		{SubscriptionID: alices2.ID, Entries: sentEntries([]sent{{span(1, 1), 2}, {span(2, 2), 1}, {span(3, 3), 0}}, alices2, now, raws, true)},
	}
	diff(t, "Fire", want, got, ignoreSeq)

	diff(t, "alice's inbox", bySeq(got[0].Entries, got[5].Entries), inbox(t, s, "alice"))
	diff(t, "bob's inbox", got[1].Entries, inbox(t, s, "bob"))
	diff(t, "carol's inbox", got[3].Entries, inbox(t, s, "carol"))
	diff(t, "carol's PendingEntries", got[3].Entries, pendingEntries(t, s, "carol", 10))
	diff(t, "alice's PendingEntries", []subscriptions.InboxEntry(nil), pendingEntries(t, s, "alice", 10))

	for _, tc := range []struct {
		sub  *subscriptions.Subscription
		want timing
	}{
		{alices, timing{mcpe.StatusActive, 1, next, &now, 2, &now}},
		{alices2, timing{mcpe.StatusActive, 0, next, &now, 3, &now}},
		{bobs, timing{mcpe.StatusExpired, 0, nil, &now, 3, &now}},
		{bobsPaused, timing{mcpe.StatusPaused, 3, bobsPaused.NextFireAt, nil, 0, nil}},
		{carols, timing{mcpe.StatusActive, 0, next, &now, 3, &now}},
	} {
		diff(t, "subscription "+tc.sub.ID, tc.want, timingOf(t, s, tc.sub))
	}
}

// testFireCounts checks that DeliveredCount counts the events fired (a
// batch counts its events, an expiry none) and LastDeliveredAt the last fire
// that delivered any, and that both survive the pruning of the entries.
func testFireCounts(t *testing.T, open Opener) {
	s := open(t)
	sub := cronSub(1, "alice")
	create(t, s, sub)
	check := func(what string, delivered int64, last *time.Time) {
		t.Helper()
		got := get(t, s, "alice", sub.ID)
		diff(t, "delivery counters "+what, delivery{delivered, last}, delivery{got.DeliveredCount, got.LastDeliveredAt})
		listed := list(t, s, subscriptions.ListQuery{Principal: "alice"})
		diff(t, "listed delivery counters "+what, delivery{delivered, last}, delivery{listed[0].DeliveredCount, listed[0].LastDeliveredAt})
	}

	fill(t, s, 1, 3, t0, sub)
	check("with events buffered", 0, nil)
	fireOne(t, s, fireReq(sub, 10, true), at(time.Hour))
	check("after a digest of 3", 3, new(at(time.Hour)))
	fill(t, s, 4, 2, at(90*time.Minute), sub)
	fireOne(t, s, fireReq(sub, 10, false), at(2*time.Hour))
	check("after 2 single events", 5, new(at(2*time.Hour)))
	fireOne(t, s, fireReq(sub, 10, true), at(3*time.Hour))
	check("after an empty fire", 5, new(at(2*time.Hour)))

	r := keepAll
	r.InboxMaxEntries = 1
	diff(t, "Prune of all but the last entry", subscriptions.PruneStats{InboxEntries: 2}, prune(t, s, r, at(3*time.Hour)))
	check("after pruning the digest", 5, new(at(2*time.Hour)))
	r = keepAll
	r.InboxMaxAge = time.Minute
	diff(t, "Prune of every entry", subscriptions.PruneStats{InboxEntries: 1}, prune(t, s, r, at(4*time.Hour)))
	diff(t, "inbox", []subscriptions.InboxEntry(nil), inbox(t, s, "alice"))
	check("after pruning every entry", 5, new(at(2*time.Hour)))

	fill(t, s, 6, 1, at(4*time.Hour), sub)
	fireOne(t, s, fireReq(sub, 10, true), at(5*time.Hour))
	check("after a digest following the pruning", 6, new(at(5*time.Hour)))
	req := fireReq(sub, 10, true)
	req.Expire = true
	fireOne(t, s, req, at(6*time.Hour))
	check("after the expiry", 6, new(at(5*time.Hour)))
}

// testPruneKeepsBuffered checks that Prune keeps an event that waits in a
// buffer past the dedup window, and that what the fire then delivers reads
// back whole after further pruning.
func testPruneKeepsBuffered(t *testing.T, open Opener) {
	for _, aggregate := range []bool{true, false} {
		t.Run(fmt.Sprintf("aggregate=%t", aggregate), func(t *testing.T) {
			s := open(t)
			sub := cronSub(1, "alice")
			create(t, s, sub)
			kept, raw := bufferedEvent(1)
			kept.Metadata.SourceEventID = "kept"
			publish(t, s, kept, raw, routes(sub), t0)
			gone, rawGone := bufferedEvent(2)
			gone.Metadata.SourceEventID = "gone"
			publish(t, s, gone, rawGone, nil, t0)

			r := keepAll
			r.DedupWindow = time.Hour
			diff(t, "Prune", subscriptions.PruneStats{Events: 1}, prune(t, s, r, at(3*time.Hour)))
			again, rawAgain := bufferedEvent(3)
			again.Metadata.SourceEventID = "kept"
			diff(t, "Publish of the buffered event's sourceEventId again",
				subscriptions.PublishResult{EventID: kept.ID, Duplicate: true}, publish(t, s, again, rawAgain, routes(sub), at(3*time.Hour)))

			now := at(3 * time.Hour)
			got := fireOne(t, s, fireReq(sub, 10, aggregate), now)
			want := sentEntries([]sent{{[]int{1}, 0}}, sub, now, []json.RawMessage{raw}, aggregate)
			diff(t, "Fire", subscriptions.FireResult{SubscriptionID: sub.ID, Entries: want}, got, ignoreSeq)
			prune(t, s, r, at(5*time.Hour))
			diff(t, "inbox after pruning again", got.Entries, inbox(t, s, "alice"))
		})
	}
}

// testBuffersDeleted checks that the buffer of a subscription goes with it,
// however it is deleted, and that other buffers stay.
func testBuffersDeleted(t *testing.T, open Opener) {
	tests := []struct {
		name   string
		remove func(*testing.T, subscriptions.Store, *subscriptions.Subscription)
	}{
		{"DeleteSubscription", func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			if err := s.DeleteSubscription(t.Context(), sub.Principal, sub.ID); err != nil {
				t.Fatalf("DeleteSubscription: %v", err)
			}
		}},
		{"DeletePrincipal", func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			if err := s.DeletePrincipal(t.Context(), sub.Principal); err != nil {
				t.Fatalf("DeletePrincipal: %v", err)
			}
		}},
		{"DeletePrincipalsWithPrefix", func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			if n, err := s.DeletePrincipalsWithPrefix(t.Context(), "eph:"); err != nil || n != 1 {
				t.Fatalf("DeletePrincipalsWithPrefix = %d, %v; want 1, nil", n, err)
			}
		}},
		{"Prune of the expired subscription", func(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
			expired := withStatus(sub.Clone(), mcpe.StatusExpired)
			expired.UpdatedAt = at(2 * time.Hour)
			update(t, s, expired)
			r := keepAll
			r.ExpiredMaxAge = time.Hour
			diff(t, "Prune of the expired subscription", subscriptions.PruneStats{Subscriptions: 1}, prune(t, s, r, at(4*time.Hour)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			gone, kept := cronSub(1, "eph:alice"), scheduledSub(2, "bob")
			create(t, s, gone, kept)
			fill(t, s, 1, 1, t0, gone)
			raws := fill(t, s, 2, 2, t0, gone, kept)
			tt.remove(t, s, gone)

			// Past the dedup window, the event only the removed buffer held
			// goes; those another buffer holds stay.
			r := keepAll
			r.DedupWindow = time.Hour
			diff(t, "Prune", subscriptions.PruneStats{Events: 1}, prune(t, s, r, at(5*time.Hour)))

			// Created again with the same ID, it has nothing waiting.
			create(t, s, gone)
			if n := get(t, s, gone.Principal, gone.ID).BufferedEvents; n != 0 {
				t.Errorf("BufferedEvents of the subscription created again = %d, want 0", n)
			}
			now := at(6 * time.Hour)
			diff(t, "Fire of the subscription created again", subscriptions.FireResult{SubscriptionID: gone.ID}, fireOne(t, s, fireReq(gone, 10, true), now))
			diff(t, "Fire of the other subscription", subscriptions.FireResult{
				SubscriptionID: kept.ID,
				Entries:        []subscriptions.InboxEntry{batchEntry(0, kept, now, 0, raws)},
			}, fireOne(t, s, fireReq(kept, 10, true), now), ignoreSeq)
		})
	}
}

// testExpireFlushesBuffer checks that ExpireSubscriptions delivers what
// waits in an expiring subscription's buffer, in batches of up to 1000,
// before its expiry entry.
func testExpireFlushesBuffer(t *testing.T, open Opener) {
	s := open(t)
	now := at(time.Hour)
	big := withExpiry(cronSub(1, "alice"), now)
	paused := withExpiry(scheduledSub(2, "bob"), at(30*time.Minute))
	empty := withExpiry(cronSub(3, "carol"), now)
	later := withExpiry(cronSub(4, "alice"), at(2*time.Hour))
	create(t, s, big, paused, empty, later)
	raws := fill(t, s, 1, 2, t0, big, paused, later)
	raws = append(raws, fill(t, s, 3, 2498, t0, big)...)
	update(t, s, withStatus(paused.Clone(), mcpe.StatusPaused))

	got := expire(t, s, now)
	checkSeqsIncrease(t, "ExpireSubscriptions", got)
	alices, bobs, carols := inbox(t, s, "alice"), inbox(t, s, "bob"), inbox(t, s, "carol")
	diff(t, "alice's inbox", []subscriptions.InboxEntry{
		kept(batchEntry(0, big, now, 1500, raws[:1000])),
		kept(batchEntry(0, big, now, 500, raws[1000:2000])),
		kept(batchEntry(0, big, now, 0, raws[2000:])),
		kept(expiredEntry(0, big, now)),
	}, alices, ignoreSeq, sameJSON)
	diff(t, "bob's inbox", []subscriptions.InboxEntry{kept(batchEntry(0, paused, now, 0, raws[:2])), kept(expiredEntry(0, paused, now))}, bobs, ignoreSeq, sameJSON)
	diff(t, "carol's inbox", []subscriptions.InboxEntry{kept(expiredEntry(0, empty, now))}, carols, ignoreSeq)
	diff(t, "ExpireSubscriptions", bySeq(alices, bobs, carols), bySeq(got), sameJSON)

	// ExpireSubscriptions may or may not count the flush as a fire.
	ignoreLastFire := cmpopts.IgnoreFields(timing{}, "LastFire")
	for _, tc := range []struct {
		sub  *subscriptions.Subscription
		want timing
	}{
		{big, timing{Status: mcpe.StatusExpired, Delivered: 2500, LastDelivered: &now}},
		{paused, timing{Status: mcpe.StatusExpired, Delivered: 2, LastDelivered: &now}},
		{empty, timing{Status: mcpe.StatusExpired}},
		{later, timing{Status: mcpe.StatusActive, Buffered: 2, NextFire: later.NextFireAt}},
	} {
		diff(t, "subscription "+tc.sub.ID, tc.want, timingOf(t, s, tc.sub), ignoreLastFire)
	}
}
