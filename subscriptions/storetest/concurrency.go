package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testConcurrency has several goroutines create subscriptions, publish,
// race each other with the same sourceEventIds and read their inboxes at
// once, then checks that every count adds up.
func testConcurrency(t *testing.T, open Opener) {
	const (
		workers   = 8
		perWorker = 50
	)
	s := open(t)
	shared := newSub(0, "shared")
	create(t, s, shared)
	// accepted[i] counts the workers whose event with sourceEventId race-i
	// was accepted; exactly one should be.
	var accepted [perWorker]atomic.Int32

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			principal := fmt.Sprintf("worker-%d", w)
			for i := range perWorker {
				n := 1 + w*perWorker + i
				now := at(time.Duration(n) * time.Second)
				sub := newSub(n, principal)
				// The limit is exactly what each worker creates.
				if err := s.CreateSubscription(t.Context(), sub, perWorker); err != nil {
					t.Errorf("%s: CreateSubscription: %v", principal, err)
					return
				}
				ev, raw := newEvent(n, "test.created", "")
				res, err := PublishOne(t.Context(), s, ev, raw, targets(sub, shared), now)
				if err != nil {
					t.Errorf("%s: Publish: %v", principal, err)
					return
				}
				if res.Duplicate || len(res.Delivered) != 2 {
					t.Errorf("%s: Publish(%s) = %+v, want 2 deliveries", principal, ev.ID, res)
				}
				ev, raw = newEvent(100000+n, "test.raced", fmt.Sprintf("race-%d", i))
				res, err = PublishOne(t.Context(), s, ev, raw, targets(shared), now)
				if err != nil {
					t.Errorf("%s: Publish: %v", principal, err)
					return
				}
				if !res.Duplicate {
					accepted[i].Add(1)
				}
				if _, _, err := s.ReadInbox(t.Context(), principal, 0, 10); err != nil {
					t.Errorf("%s: ReadInbox: %v", principal, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	for i := range accepted {
		if n := accepted[i].Load(); n != 1 {
			t.Errorf("events with sourceEventId race-%d accepted %d times, want once", i, n)
		}
	}
	if n := len(list(t, s, subscriptions.ListQuery{})); n != 1+workers*perWorker {
		t.Errorf("ListSubscriptions returned %d subscriptions, want %d", n, 1+workers*perWorker)
	}
	wantShared := int64(workers*perWorker + perWorker)
	if got := get(t, s, "shared", shared.ID).DeliveredCount; got != wantShared {
		t.Errorf("shared subscription's DeliveredCount = %d, want %d", got, wantShared)
	}
	sharedInbox := inbox(t, s, "shared")
	if len(sharedInbox) != int(wantShared) {
		t.Errorf("shared inbox has %d entries, want %d", len(sharedInbox), wantShared)
	}
	checkSeqsIncrease(t, "shared inbox", sharedInbox)
	for w := range workers {
		principal := fmt.Sprintf("worker-%d", w)
		entries := inbox(t, s, principal)
		if len(entries) != perWorker {
			t.Errorf("%s's inbox has %d entries, want %d", principal, len(entries), perWorker)
		}
		for _, sub := range list(t, s, subscriptions.ListQuery{Principal: principal}) {
			if sub.DeliveredCount != 1 {
				t.Errorf("%s's subscription %s has DeliveredCount %d, want 1", principal, sub.ID, sub.DeliveredCount)
			}
		}
	}
}
