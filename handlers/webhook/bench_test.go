package webhook

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// BenchmarkFanOut sends 10 000 signed deliveries per iteration from 64
// goroutines to a loopback receiver that verifies every signature.
func BenchmarkFanOut(b *testing.B) {
	const (
		deliveries = 10_000
		workers    = 64
	)
	secret := subscriptions.NewWebhookSecret()
	var verified, invalid atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = Verify(secret, r.Header, body, time.Now())
		}
		if err != nil {
			invalid.Add(1)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		verified.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s, err := New(&Options{AllowHTTP: true, AllowNetworks: loopback})
	if err != nil {
		b.Fatal(err)
	}
	s.transport.MaxConnsPerHost, s.transport.MaxIdleConnsPerHost = workers, workers
	defer s.Close()
	spec := &mcpe.HandlerSpec{
		Type: mcpe.HandlerWebhook,
		URL:  srv.URL + "/hook",
	}
	secrets := &subscriptions.WebhookSecrets{Current: secret}
	event := json.RawMessage(`{"id":"evt_1","type":"deploy.done","source":"ci","time":"2026-03-04T05:06:07Z","data":{"service":"api","version":"1.2.3","ok":true}}`)

	var failed atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					n := next.Add(1)
					if n > deliveries {
						return
					}
					o := s.Handle(b.Context(), &subscriptions.Invocation{
						JobID: strconv.Itoa(i) + "_" + strconv.FormatInt(n, 10), SubscriptionID: "sub_1",
						Spec: spec, Secrets: secrets, Attempt: 1, Kind: mcpe.InboxEvent, Event: event,
					})
					if o.Err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, o.Err)
					}
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	total := int64(b.N) * deliveries
	if failed.Load() != 0 || invalid.Load() != 0 || verified.Load() != total {
		b.Fatalf("%d deliveries: %d verified, %d invalid, %d failed (first error: %v)",
			total, verified.Load(), invalid.Load(), failed.Load(), firstErr.Load())
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(0, "ns/op") // meaningless for a batch of 10 000
}
