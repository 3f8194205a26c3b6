package handlers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/handlers"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// BenchmarkWebhookFanOut publishes 10 000 events to a subscription with a
// webhook handler while the runner is stopped, then starts it and measures
// until a loopback receiver has verified the signature of every delivery:
// the whole durable path (jobs read from SQLite, signed POSTs, outcomes
// written back). Deliveries are counted by webhook-id; a repeat is a
// duplicate.
func BenchmarkWebhookFanOut(b *testing.B) {
	const events = 10000
	for range b.N {
		b.StopTimer()
		var (
			mu    sync.Mutex
			seen  = make(map[string]int)
			bad   int
			all   = make(chan struct{})
			count int
		)
		var secret string
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			err := webhook.Verify(secret, r.Header, body, time.Now())
			mu.Lock()
			if err != nil {
				bad++
			} else {
				seen[r.Header.Get("webhook-id")]++
				if count++; count == events {
					close(all)
				}
			}
			mu.Unlock()
		}))
		store, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		sender, err := webhook.New(&webhook.Options{AllowHTTP: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
		if err != nil {
			b.Fatal(err)
		}
		kinds := map[subscriptions.HandlerType]subscriptions.Handler{subscriptions.HandlerWebhook: sender}
		svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: noDeliverer{}, Handlers: kinds})
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		sub, err := svc.Subscribe(b.Context(), "alice", subscriptions.SubscribeRequest{
			Filter:  subscriptions.Filter{EventTypes: []string{"*"}},
			Handler: &subscriptions.HandlerSpec{Type: subscriptions.HandlerWebhook, URL: rcv.URL},
		})
		if err != nil {
			b.Fatal(err)
		}
		secret = sub.Handler.Secret
		for i := range events {
			if _, err := svc.Publish(b.Context(), subscriptions.Event{Type: "deploy.finished", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
				b.Fatal(err)
			}
		}
		runner, err := handlers.New(handlers.Options{Jobs: store, Handlers: kinds})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := runner.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		select {
		case <-all:
		case <-time.After(2 * time.Minute):
			b.Fatalf("%d of %d deliveries verified within 2 minutes", count, events)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		runner.Stop()
		mu.Lock()
		dups := 0
		for _, n := range seen {
			dups += n - 1
		}
		if bad > 0 || len(seen) != events {
			b.Fatalf("%d distinct deliveries verified, %d refused; want %d and 0", len(seen), bad, events)
		}
		mu.Unlock()
		b.ReportMetric(events/elapsed.Seconds(), "deliveries/s")
		b.ReportMetric(float64(dups), "duplicates")
		svc.Stop()
		sender.Close()
		store.Close()
		rcv.Close()
	}
}
