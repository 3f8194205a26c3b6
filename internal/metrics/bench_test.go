package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/metrics"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// fillStore makes an SQLite file store of subs subscriptions spread over
// principals (a third of them cron, a tenth paused), and inbox entries per
// principal: what the scrape-time collector reads.
func fillStore(b *testing.B, subs, principals, entries int) *sqlite.Store {
	b.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "scrape.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	next := t0.Add(24 * time.Hour)
	// One realtime subscription per principal receives the inbox entries.
	targets := make([]subscriptions.Target, 0, principals)
	for i := range subs {
		sub := &subscriptions.Subscription{
			Principal: fmt.Sprintf("principal-%03d", i%principals),
			Subscription: mcpe.Subscription{
				ID:        fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
				Status:    mcpe.StatusActive,
				Filter:    mcpe.Filter{EventTypes: []string{"bench.*"}},
				Delivery:  mcpe.DefaultDelivery(),
				CreatedAt: t0,
				UpdatedAt: t0,
			},
		}
		switch {
		case i < principals:
			targets = append(targets, subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelRealtime})
		case i%3 == 0:
			sub.Delivery = mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelCron}, CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC"}}
			sub.NextFireAt = &next
		case i%10 == 1:
			sub.Status = mcpe.StatusPaused
		}
		if err := s.CreateSubscription(ctx, sub, subs); err != nil {
			b.Fatal(err)
		}
	}
	for n := 0; n < entries; {
		batch := subscriptions.PublishBatch{Now: t0}
		for ; n < entries && len(batch.Publications) < 100; n++ {
			ev := &mcpe.Event{
				ID:       fmt.Sprintf("00000000-0000-4000-9000-%012d", n),
				Type:     "bench.created",
				Data:     json.RawMessage(`{"n":1}`),
				Metadata: mcpe.Metadata{Timestamp: t0, Priority: mcpe.PriorityNormal},
			}
			raw, _ := json.Marshal(ev)
			batch.Publications = append(batch.Publications, subscriptions.Publication{Event: ev, Raw: raw, Targets: targets})
		}
		if _, err := s.Publish(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkScrape serves GET /metrics from a store of 10 000 subscriptions
// and 100 principals with 1 000 inbox entries each (the default
// inbox.maxEntries), with totals and with the principal label.
func BenchmarkScrape(b *testing.B) {
	s := fillStore(b, 10_000, 100, 1_000)
	for _, principals := range []bool{false, true} {
		b.Run(fmt.Sprintf("principalLabel=%v", principals), func(b *testing.B) {
			m := metrics.New(metrics.Options{Principals: principals, Clock: clock.Real{}})
			m.WatchStore(s)
			h := m.Handler(nil)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET /metrics = %d", rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}
