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
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// fanOutReceiver verifies the signature of every request and counts the
// deliveries by webhook-id; a repeated id is a duplicate.
type fanOutReceiver struct {
	mu     sync.Mutex
	secret string
	want   int
	seen   map[string]int
	bad    int
	all    chan struct{} // closed when want distinct deliveries were verified
}

func (r *fanOutReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := webhook.Verify(r.secret, req.Header, body, time.Now()); err != nil {
		r.bad++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	id := req.Header.Get(webhook.HeaderID)
	r.seen[id]++
	if r.seen[id] == 1 && len(r.seen) == r.want {
		close(r.all)
	}
	w.WriteHeader(http.StatusNoContent)
}

// counts returns the distinct deliveries verified, the repeats, and the
// requests refused.
func (r *fanOutReceiver) counts() (distinct, dups, bad int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.seen {
		dups += n - 1
	}
	return len(r.seen), dups, r.bad
}

// BenchmarkWebhookFanOut publishes 10 000 events to a subscription with a
// webhook handler while the runner is stopped, then starts it and measures
// until a loopback receiver has verified the signature of every delivery:
// the whole durable path (jobs read from SQLite, signed POSTs, outcomes
// written back). It fails when a delivery is missing or refused, when the
// store does not record 10 000 successes, or when a delivery came twice
// although no attempt failed (at-least-once allows a repeat only after a
// failed or cut-short attempt).
func BenchmarkWebhookFanOut(b *testing.B) {
	const events = 10000
	var total time.Duration
	var delivered, duplicates int
	for range b.N {
		b.StopTimer()
		rcv := &fanOutReceiver{want: events, seen: make(map[string]int, events), all: make(chan struct{})}
		srv := httptest.NewServer(rcv)
		store, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		sender, err := webhook.New(&webhook.Options{AllowHTTP: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
		if err != nil {
			b.Fatal(err)
		}
		kinds := map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerWebhook: sender}
		svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: noDeliverer{}, Handlers: kinds})
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		sub, err := svc.Subscribe(b.Context(), "alice", mcpe.SubscribeRequest{
			Filter:  mcpe.Filter{EventTypes: []string{"*"}},
			Handler: &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: srv.URL},
		})
		if err != nil {
			b.Fatal(err)
		}
		rcv.mu.Lock()
		rcv.secret = sub.Handler.Secret
		rcv.mu.Unlock()
		for i := range events {
			if _, err := svc.Publish(b.Context(), mcpe.Event{Type: "deploy.finished", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
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
		case <-rcv.all:
		case <-time.After(2 * time.Minute):
			n, _, bad := rcv.counts()
			b.Fatalf("%d of %d deliveries verified within 2 minutes (%d refused)", n, events, bad)
		}
		total += time.Since(start)
		b.StopTimer()

		// Every outcome is recorded: 10 000 successes, nothing left.
		var st mcpe.HandlerStatus
		for deadline := time.Now().Add(time.Minute); ; {
			got, err := svc.Get(b.Context(), "alice", sub.ID)
			if err != nil {
				b.Fatal(err)
			}
			st = *got.HandlerStatus
			if st.Succeeded+st.Failed >= events && st.Pending == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		runner.Stop()
		n, dups, bad := rcv.counts()
		if n != events || bad != 0 {
			b.Fatalf("%d distinct deliveries verified, %d refused; want %d and 0", n, bad, events)
		}
		if st.Succeeded != events || st.Failed != 0 || st.Pending != 0 {
			b.Fatalf("handler status %+v; want %d succeeded, none failed or pending", st, events)
		}
		if dups > 0 && st.LastError == "" {
			b.Fatalf("%d deliveries came more than once although no attempt failed", dups)
		}
		delivered += n
		duplicates += dups
		svc.Stop()
		sender.Close()
		store.Close()
		srv.Close()
	}
	b.ReportMetric(float64(delivered)/total.Seconds(), "deliveries/s")
	b.ReportMetric(float64(duplicates), "duplicates")
	b.ReportMetric(0, "ns/op") // meaningless for a batch of 10 000
}
