package postgres_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/storetest"
)

// BenchmarkPublishParallel publishes from 8 goroutines at once through two
// stores on one database (as two replicas would), each goroutine to its
// own principal's 10 subscriptions, so that no two wait on a principal's
// row: what it measures is how concurrent publishes of different
// principals get along.
func BenchmarkPublishParallel(b *testing.B) {
	url := pgtest.Database(b)
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgres.OpenWith(b.Context(), url, &postgres.Options{MaxConns: 8})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	const writers = 8
	targets := make([][]subscriptions.Target, writers)
	for w := range writers {
		for i := range 10 {
			sub := &subscriptions.Subscription{
				Principal: fmt.Sprintf("principal-%d", w),
				Subscription: mcpe.Subscription{
					ID:        fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", w, i),
					Status:    mcpe.StatusActive,
					Filter:    mcpe.Filter{EventTypes: []string{"bench.*"}},
					Delivery:  mcpe.DefaultDelivery(),
					CreatedAt: t0,
					UpdatedAt: t0,
				},
			}
			if err := stores[0].CreateSubscription(b.Context(), sub, 10); err != nil {
				b.Fatal(err)
			}
			targets[w] = append(targets[w], subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelRealtime})
		}
	}
	var next atomic.Int64
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.Add(1)-1) % writers
		s := stores[w%2]
		ev := &mcpe.Event{
			Type:     "bench.created",
			Data:     json.RawMessage(`{"number":42}`),
			Metadata: mcpe.Metadata{Timestamp: t0, Priority: mcpe.PriorityNormal},
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			b.Error(err)
			return
		}
		for i := 0; pb.Next(); i++ {
			ev.ID = fmt.Sprintf("00000000-0000-4000-9000-%06d%06d", w, i)
			if _, err := storetest.PublishOne(b.Context(), s, ev, raw, targets[w], t0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
