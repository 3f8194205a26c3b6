package sqlite_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// BenchmarkPublish publishes one event routed to 0, 10 and 100 active
// subscriptions of a file database, spread over up to 10 principals (one
// inbox entry each).
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{0, 10, 100} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			targets := make([]subscriptions.Target, 0, n)
			for i := range n {
				sub := &subscriptions.Subscription{
					ID:        fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
					Principal: fmt.Sprintf("principal-%d", i%10),
					Status:    subscriptions.StatusActive,
					Filter:    subscriptions.Filter{EventTypes: []string{"bench.*"}},
					Delivery:  subscriptions.DefaultDelivery(),
					CreatedAt: t0,
					UpdatedAt: t0,
				}
				if err := s.CreateSubscription(b.Context(), sub, n); err != nil {
					b.Fatal(err)
				}
				targets = append(targets, subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: subscriptions.ChannelRealtime})
			}
			ev := &subscriptions.Event{
				Type:     "bench.created",
				Data:     json.RawMessage(`{"number":42}`),
				Metadata: subscriptions.Metadata{Timestamp: t0, Priority: subscriptions.PriorityNormal},
			}
			raw, err := json.Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				ev.ID = fmt.Sprintf("00000000-0000-4000-9000-%012d", i)
				ev.Metadata.SourceEventID = ev.ID
				res, err := s.Publish(b.Context(), ev, raw, targets, t0.Add(time.Duration(i)*time.Millisecond))
				if err != nil {
					b.Fatal(err)
				}
				if want := min(n, 10); len(res.Delivered) != want {
					b.Fatalf("Publish delivered %d entries, want %d", len(res.Delivered), want)
				}
			}
		})
	}
}
