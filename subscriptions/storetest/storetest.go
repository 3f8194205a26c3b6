// Package storetest is the contract test suite of subscriptions.Store. Every
// implementation calls Run from its own tests, so that all of them behave
// alike:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) subscriptions.Store {
//			s := open(t) // a new, empty store
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite only uses times that are whole milliseconds and IDs that are
// UUIDs, so that stores with coarser clocks or typed ID columns pass too. It
// expects an event's JSON back byte for byte, as Publish was given it.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Opener returns a new, empty store and registers its cleanup with t.
type Opener = func(t *testing.T) subscriptions.Store

// Run runs the contract suite, one subtest per part of the contract. open is
// called at least once per subtest and must return a fresh, empty store each
// time.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		run  func(*testing.T, Opener)
	}{
		{"SubscriptionRoundTrip", testSubscriptionRoundTrip},
		{"GetMissing", testGetMissing},
		{"CreateLimit", testCreateLimit},
		{"CreateLimitAfterExpiryAndDelete", testCreateLimitAfterExpiryAndDelete},
		{"UpdateSubscription", testUpdateSubscription},
		{"DeleteSubscription", testDeleteSubscription},
		{"ListSubscriptions", testListSubscriptions},
		{"PrincipalIsolation", testPrincipalIsolation},
		{"PublishRoutesToActive", testPublishRoutesToActive},
		{"PublishManyPrincipals", testPublishManyPrincipals},
		{"PublishLargeBatch", testPublishLargeBatch},
		{"PublishDuplicates", testPublishDuplicates},
		{"PublishWithoutTargets", testPublishWithoutTargets},
		{"PublishBatch", testPublishBatch},
		{"Deactivations", testDeactivations},
		{"ReadInbox", testReadInbox},
		{"LatestInbox", testLatestInbox},
		{"InboxEvent", testInboxEvent},
		{"ExpireSubscriptions", testExpireSubscriptions},
		{"NextExpiry", testNextExpiry},
		{"PollCursor", testPollCursor},
		{"PollPositions", testPollPositions},
		{"DeletePrincipal", testDeletePrincipal},
		{"DeletePrincipalsWithPrefix", testDeletePrincipalsWithPrefix},
		{"Prune", testPrune},
		{"PruneKeep", testPruneKeep},
		{"PublishBuffersTimed", testPublishBuffersTimed},
		{"TimedSubscriptionRoundTrip", testTimedRoundTrip},
		{"FireDelivers", testFireDelivers},
		{"FireExpire", testFireExpire},
		{"FireEmpty", testFireEmpty},
		{"FirePending", testFirePending},
		{"FireSkipped", testFireSkipped},
		{"FireManyRequests", testFireManyRequests},
		{"FireCounts", testFireCounts},
		{"DueFires", testDueFires},
		{"PruneKeepsBuffered", testPruneKeepsBuffered},
		{"BuffersDeleted", testBuffersDeleted},
		{"ExpireFlushesBuffer", testExpireFlushesBuffer},
		{"SeqNeverReused", testSeqNeverReused},
		{"JobsFromDeliveries", testJobsFromDeliveries},
		{"FinishJobs", testFinishJobs},
		{"JobsGoWithTheirHandler", testJobsGoWithTheirHandler},
		{"JobsSurvivePrune", testJobsSurvivePrune},
		{"DueJobsTakeTurns", testDueJobsTakeTurns},
		{"Concurrency", testConcurrency},
		{"Counts", testCounts},
		{"Throttle", testThrottle},
		{"ThrottleInOneBatch", testThrottleInOneBatch},
		{"ThrottleGroupsBounded", testThrottleGroupsBounded},
		{"ThrottleInactive", testThrottleInactive},
		{"KeptTypes", testKeptTypes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}

// t0 is the time every test counts from.
var t0 = time.Date(2025, time.January, 15, 10, 30, 0, 0, time.UTC)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// noLimit is a subscription limit the tests never reach.
const noLimit = 1000

// subID and eventID return distinct, readable UUIDs.
func subID(n int) string   { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
func eventID(n int) string { return fmt.Sprintf("00000000-0000-4000-9000-%012d", n) }

// newSub returns subscription n: active, owned by principal, created n
// minutes after t0.
func newSub(n int, principal string) *subscriptions.Subscription {
	created := at(time.Duration(n) * time.Minute)
	return &subscriptions.Subscription{
		Principal: principal,
		Subscription: mcpe.Subscription{
			ID:        subID(n),
			Status:    mcpe.StatusActive,
			Filter:    mcpe.Filter{EventTypes: []string{"test.*"}},
			Delivery:  mcpe.DefaultDelivery(),
			CreatedAt: created,
			UpdatedAt: created,
		},
	}
}

// withStatus sets sub's status and returns sub.
func withStatus(sub *subscriptions.Subscription, st mcpe.Status) *subscriptions.Subscription {
	sub.Status = st
	return sub
}

// withExpiry sets sub's expiresAt and returns sub.
func withExpiry(sub *subscriptions.Subscription, t time.Time) *subscriptions.Subscription {
	sub.ExpiresAt = &t
	return sub
}

// newEvent returns event n and its JSON form.
func newEvent(n int, typ, sourceEventID string) (*mcpe.Event, json.RawMessage) {
	ev := &mcpe.Event{
		ID:   eventID(n),
		Type: typ,
		Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
		Metadata: mcpe.Metadata{
			SourceEventID: sourceEventID,
			Timestamp:     t0,
			Priority:      mcpe.PriorityNormal,
			Tags:          []string{"test"},
		},
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return ev, raw
}

// targets returns one realtime target per subscription.
func targets(subs ...*subscriptions.Subscription) []subscriptions.Target {
	ts := make([]subscriptions.Target, 0, len(subs))
	for _, sub := range subs {
		ts = append(ts, subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelRealtime})
	}
	return ts
}

// entry is the inbox entry that publishing raw at now writes for subs, which
// belong to one principal.
func entry(seq int64, raw json.RawMessage, now time.Time, subs ...*subscriptions.Subscription) subscriptions.InboxEntry {
	e := subscriptions.InboxEntry{
		Seq:       seq,
		Principal: subs[0].Principal,
		Kind:      mcpe.InboxEvent,
		Event:     raw,
		CreatedAt: now,
	}
	for _, sub := range subs {
		e.SubscriptionIDs = append(e.SubscriptionIDs, sub.ID)
	}
	return e
}

// expiredEntry is the inbox entry ExpireSubscriptions writes for sub.
// kept is e as ExpireSubscriptions writes it: kept for the owner's next
// live session.
func kept(e subscriptions.InboxEntry) subscriptions.InboxEntry {
	e.Pending = true
	return e
}

func expiredEntry(seq int64, sub *subscriptions.Subscription, now time.Time) subscriptions.InboxEntry {
	return subscriptions.InboxEntry{
		Seq:             seq,
		Principal:       sub.Principal,
		SubscriptionIDs: []string{sub.ID},
		Kind:            mcpe.InboxExpired,
		CreatedAt:       now,
	}
}

// equateEmpty makes nil and empty slices equal: the contract does not say
// which an empty result is.
var equateEmpty = cmpopts.EquateEmpty()

// ignoreSeq and byPrincipal compare inbox entries whose sequence numbers are
// not known in advance.
var (
	ignoreSeq   = cmpopts.IgnoreFields(subscriptions.InboxEntry{}, "Seq")
	byPrincipal = cmpopts.SortSlices(func(a, b subscriptions.InboxEntry) bool {
		if a.Principal != b.Principal {
			return a.Principal < b.Principal
		}
		return a.SubscriptionIDs[0] < b.SubscriptionIDs[0]
	})
)

// sameJSON compares JSON forms byte for byte without diffing inside them,
// which takes minutes over thousands of events that all differ. Two empty
// ones are left to equateEmpty.
var sameJSON = cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 || len(b) > 0 },
	cmp.Comparer(func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }))

func create(t *testing.T, s subscriptions.Store, subs ...*subscriptions.Subscription) {
	t.Helper()
	for _, sub := range subs {
		if err := s.CreateSubscription(t.Context(), sub.Clone(), noLimit); err != nil {
			t.Fatalf("CreateSubscription(%s): %v", sub.ID, err)
		}
	}
}

func get(t *testing.T, s subscriptions.Store, principal, id string) *subscriptions.Subscription {
	t.Helper()
	sub, err := s.GetSubscription(t.Context(), principal, id)
	if err != nil {
		t.Fatalf("GetSubscription(%q, %s): %v", principal, id, err)
	}
	return sub
}

func update(t *testing.T, s subscriptions.Store, sub *subscriptions.Subscription) {
	t.Helper()
	if err := s.UpdateSubscription(t.Context(), sub.Clone()); err != nil {
		t.Fatalf("UpdateSubscription(%s): %v", sub.ID, err)
	}
}

func list(t *testing.T, s subscriptions.Store, q subscriptions.ListQuery) []*subscriptions.Subscription {
	t.Helper()
	subs, err := s.ListSubscriptions(t.Context(), q)
	if err != nil {
		t.Fatalf("ListSubscriptions(%+v): %v", q, err)
	}
	return subs
}

func publish(t *testing.T, s subscriptions.Store, ev *mcpe.Event, raw json.RawMessage, ts []subscriptions.Target, now time.Time) subscriptions.PublishResult {
	t.Helper()
	res, err := PublishOne(t.Context(), s, ev, raw, ts, now)
	if err != nil {
		t.Fatalf("Publish(%s): %v", ev.ID, err)
	}
	return res
}

// seqOf returns the sequence number of the entry res delivered to sub.
func seqOf(t *testing.T, res subscriptions.PublishResult, sub *subscriptions.Subscription) int64 {
	t.Helper()
	for _, e := range res.Delivered {
		if slices.Contains(e.SubscriptionIDs, sub.ID) {
			return e.Seq
		}
	}
	t.Fatalf("Publish(%s) delivered nothing to subscription %s", res.EventID, sub.ID)
	return 0
}

func expire(t *testing.T, s subscriptions.Store, now time.Time) []subscriptions.InboxEntry {
	t.Helper()
	entries, err := s.ExpireSubscriptions(t.Context(), now)
	if err != nil {
		t.Fatalf("ExpireSubscriptions(%v): %v", now, err)
	}
	return entries
}

// inbox returns all of principal's inbox.
func inbox(t *testing.T, s subscriptions.Store, principal string) []subscriptions.InboxEntry {
	t.Helper()
	entries, more, err := s.ReadInbox(t.Context(), principal, 0, 10000)
	if err != nil {
		t.Fatalf("ReadInbox(%q): %v", principal, err)
	}
	if more {
		t.Fatalf("ReadInbox(%q) has more than 10000 entries", principal)
	}
	return entries
}

func pollCursor(t *testing.T, s subscriptions.Store, principal string) int64 {
	t.Helper()
	seq, err := s.PollCursor(t.Context(), principal)
	if err != nil {
		t.Fatalf("PollCursor(%q): %v", principal, err)
	}
	return seq
}

func setPollCursor(t *testing.T, s subscriptions.Store, principal string, seq int64) {
	t.Helper()
	if err := s.SetPollCursor(t.Context(), principal, seq); err != nil {
		t.Fatalf("SetPollCursor(%q, %d): %v", principal, seq, err)
	}
}

func prune(t *testing.T, s subscriptions.Store, r subscriptions.Retention, now time.Time) subscriptions.PruneStats {
	t.Helper()
	st, err := s.Prune(t.Context(), r, now)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	return st
}

// checkNotFound reports an error unless err is ErrNotFound.
func checkNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("%s: error %v, want ErrNotFound", what, err)
	}
}

// checkSeqsIncrease reports an error unless entries are in strictly
// increasing sequence order.
// checkSeqsIncrease checks that each principal's entries are numbered in
// increasing order (a store may number each principal apart).
func checkSeqsIncrease(t *testing.T, what string, entries []subscriptions.InboxEntry) {
	t.Helper()
	last := make(map[string]int64)
	for _, e := range entries {
		if prev, ok := last[e.Principal]; ok && e.Seq <= prev {
			t.Errorf("%s: %s's seq %d follows seq %d; want strictly increasing", what, e.Principal, e.Seq, prev)
		}
		last[e.Principal] = e.Seq
	}
}

func diff(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, append(opts, equateEmpty)...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// PublishOne publishes one event through Store.Publish.
func PublishOne(ctx context.Context, s subscriptions.Store, ev *mcpe.Event, raw json.RawMessage, targets []subscriptions.Target, now time.Time) (subscriptions.PublishResult, error) {
	// As a Service routes: knowing the count (0, knowing none, should the
	// store fail to say).
	routed, _ := s.Deactivations(ctx)
	res, err := s.Publish(ctx, subscriptions.PublishBatch{Publications: []subscriptions.Publication{{Event: ev, Raw: raw, Targets: targets}}, Now: now, Deactivations: routed})
	if err != nil {
		return subscriptions.PublishResult{}, err
	}
	return res[0], nil
}

// routed returns the count of deactivations, as a publish routed now
// passes it (subscriptions.PublishBatch.Deactivations).
func routed(t testing.TB, s subscriptions.Store) int64 {
	t.Helper()
	n, err := s.Deactivations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
