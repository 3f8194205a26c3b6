package storetest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// The benchmarks every store runs, so that their figures compare: each
// store's bench_test.go calls Bench with an opener of its own.

// Bench runs every store benchmark as a sub-benchmark of b: Publish, Fire,
// DueJobsBacklog and Create.
func Bench(b *testing.B, open BenchOpener) {
	b.Run("Publish", func(b *testing.B) { BenchPublish(b, open) })
	b.Run("Fire", func(b *testing.B) { BenchFire(b, open) })
	b.Run("DueJobsBacklog", func(b *testing.B) { BenchDueJobsBacklog(b, open) })
	b.Run("Create", func(b *testing.B) { BenchCreate(b, open) })
}

// BenchOpener returns a new, empty store for a benchmark and registers its
// cleanup with b.
type BenchOpener = func(b *testing.B) subscriptions.Store

// BenchPublish publishes one event routed to 0, 1, 10 and 100 active
// subscriptions of a store, spread over up to 10 principals (one
// inbox entry each), each event with a sourceEventId (so the store checks
// it for a duplicate); and, as bench/e2e's events are, without one and
// routed to 10 subscriptions of one principal.
func BenchPublish(b *testing.B, open BenchOpener) {
	cases := []struct {
		name       string
		targets    int
		principals int
		sourced    bool
	}{
		{"targets=0", 0, 10, true},
		{"targets=1", 1, 10, true},
		{"targets=10", 10, 10, true},
		{"targets=100", 100, 10, true},
		{"targets=10,principals=1,unsourced", 10, 1, false},
	}
	for _, c := range cases {
		n := c.targets
		b.Run(c.name, func(b *testing.B) {
			s := open(b)
			targets := make([]subscriptions.Target, 0, n)
			for i := range n {
				sub := &subscriptions.Subscription{
					Principal: fmt.Sprintf("principal-%d", i%c.principals),
					Subscription: mcpe.Subscription{
						ID:        fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
						Status:    mcpe.StatusActive,
						Filter:    mcpe.Filter{EventTypes: []string{"bench.*"}},
						Delivery:  mcpe.DefaultDelivery(),
						CreatedAt: t0,
						UpdatedAt: t0,
					},
				}
				if err := s.CreateSubscription(b.Context(), sub, n); err != nil {
					b.Fatal(err)
				}
				targets = append(targets, subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelRealtime})
			}
			ev := &mcpe.Event{
				Type:     "bench.created",
				Data:     json.RawMessage(`{"number":42}`),
				Metadata: mcpe.Metadata{Timestamp: t0, Priority: mcpe.PriorityNormal},
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
				if c.sourced {
					ev.Metadata.SourceEventID = ev.ID
				}
				res, err := PublishOne(b.Context(), s, ev, raw, targets, t0.Add(time.Duration(i)*time.Millisecond))
				if err != nil {
					b.Fatal(err)
				}
				if want := min(n, c.principals); len(res.Delivered) != want {
					b.Fatalf("Publish delivered %d entries, want %d", len(res.Delivered), want)
				}
			}
		})
	}
}

// BenchFire fires digests from a store whose buffers were filled
// through Publish:
//
//   - one-digest-of-10000: one subscription with 10,000 waiting events
//     fired as one digest (Max 10000, Aggregate); ms/fire and B/op.
//   - 10000-subscriptions-of-10: 10,000 subscriptions with 10 waiting events
//     each, fired 256 requests per Fire call as the Service does; s/fire-all
//     is the time to fire them all, peak-heap-MB the most heap in use after
//     a Fire call, above what was in use before the first.
func BenchFire(b *testing.B, open BenchOpener) {
	b.Run("one-digest-of-10000", func(b *testing.B) {
		const events = 10000
		s := open(b)
		sub := cronSubscription(0, "principal-0")
		if err := s.CreateSubscription(b.Context(), sub, 1); err != nil {
			b.Fatal(err)
		}
		targets := []subscriptions.Target{{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelCron}}
		pub := newPublisher(b, s)
		var fired time.Duration
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			for range events {
				pub.publish(targets)
			}
			req := subscriptions.FireRequest{SubscriptionID: sub.ID, Principal: sub.Principal, Max: events, Aggregate: true, Next: new(pub.now.Add(time.Hour))}
			b.StartTimer()
			start := time.Now()
			res, err := s.Fire(b.Context(), []subscriptions.FireRequest{req}, pub.now)
			fired += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if len(res) != 1 || len(res[0].Entries) != 1 || len(res[0].Entries[0].Events) != events || res[0].Remaining != 0 {
				b.Fatalf("Fire delivered %+v, want one digest of %d events", summarize(res), events)
			}
		}
		b.ReportMetric(float64(fired.Microseconds())/1000/float64(b.N), "ms/fire")
	})

	b.Run("10000-subscriptions-of-10", func(b *testing.B) {
		const (
			subs   = 10000
			events = 10
			chunk  = 256 // fireChunk of the Service
		)
		s := open(b)
		targets := make([]subscriptions.Target, subs)
		for i := range subs {
			sub := cronSubscription(i, fmt.Sprintf("principal-%d", i%1000))
			if err := s.CreateSubscription(b.Context(), sub, subs); err != nil {
				b.Fatal(err)
			}
			targets[i] = subscriptions.Target{SubscriptionID: sub.ID, Principal: sub.Principal, Channel: mcpe.ChannelCron}
		}
		pub := newPublisher(b, s)
		var (
			fired time.Duration
			peak  uint64
			ms    runtime.MemStats
		)
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			for range events {
				pub.publish(targets) // one event for every subscription
			}
			next := new(pub.now.Add(time.Hour))
			reqs := make([]subscriptions.FireRequest, subs)
			for i, t := range targets {
				reqs[i] = subscriptions.FireRequest{SubscriptionID: t.SubscriptionID, Principal: t.Principal, Max: 100, Aggregate: true, Next: next}
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			b.StartTimer()
			start := time.Now()
			delivered := 0
			for from := 0; from < subs; from += chunk {
				res, err := s.Fire(b.Context(), reqs[from:min(from+chunk, subs)], pub.now)
				if err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
				for _, r := range res {
					if len(r.Entries) == 1 {
						delivered += len(r.Entries[0].Events)
					}
				}
			}
			fired += time.Since(start)
			if delivered != subs*events {
				b.Fatalf("Fire delivered %d events in digests, want %d", delivered, subs*events)
			}
		}
		b.ReportMetric(fired.Seconds()/float64(b.N), "s/fire-all")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	})
}

// cronSubscription returns an active cron subscription, number i.
func cronSubscription(i int, principal string) *subscriptions.Subscription {
	return &subscriptions.Subscription{
		Principal:  principal,
		NextFireAt: new(t0.Add(24 * time.Hour)),
		Subscription: mcpe.Subscription{
			ID:     fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Status: mcpe.StatusActive,
			Filter: mcpe.Filter{EventTypes: []string{"bench.*"}},
			Delivery: mcpe.Delivery{
				Channels:     []mcpe.Channel{mcpe.ChannelCron},
				CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC"},
			},
			CreatedAt: t0,
			UpdatedAt: t0,
		},
	}
}

// publisher publishes distinct events, a millisecond apart.
type publisher struct {
	b   *testing.B
	s   subscriptions.Store
	n   int
	now time.Time
}

func newPublisher(b *testing.B, s subscriptions.Store) *publisher {
	return &publisher{b: b, s: s, now: t0}
}

func (p *publisher) publish(targets []subscriptions.Target) {
	p.n++
	p.now = t0.Add(time.Duration(p.n) * time.Millisecond)
	ev := &mcpe.Event{
		ID:       fmt.Sprintf("00000000-0000-4000-9000-%012d", p.n),
		Type:     "bench.created",
		Data:     json.RawMessage(fmt.Sprintf(`{"number":%d,"title":"a benchmark event of typical size"}`, p.n)),
		Metadata: mcpe.Metadata{Timestamp: p.now, Priority: mcpe.PriorityNormal, Tags: []string{"bench"}},
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		p.b.Fatal(err)
	}
	if _, err := PublishOne(p.b.Context(), p.s, ev, raw, targets, p.now); err != nil {
		p.b.Fatal(err)
	}
}

// summarize describes what Fire returned, without the events.
func summarize(res []subscriptions.FireResult) []string {
	var out []string
	for _, r := range res {
		sizes := make([]int, len(r.Entries))
		for i, e := range r.Entries {
			sizes[i] = len(e.Events)
		}
		out = append(out, fmt.Sprintf("%s: entries of %v events, %d remaining, skipped %t", r.SubscriptionID, sizes, r.Remaining, r.Skipped))
	}
	return out
}

// BenchDueJobsBacklog reads the due handler jobs the runner asks for
// while one principal, at its share, has a backlog of 10 000 due jobs and
// 100 other principals have one each: the cost follows the principals and
// the jobs handed out, not the backlog.
func BenchDueJobsBacklog(b *testing.B, open BenchOpener) {
	s := open(b)
	p := newPublisher(b, s)
	sub := func(i int, principal string) subscriptions.Target {
		c := &subscriptions.Subscription{
			Principal: principal,
			Subscription: mcpe.Subscription{
				ID:        fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
				Status:    mcpe.StatusActive,
				Filter:    mcpe.Filter{EventTypes: []string{"bench.*"}},
				Delivery:  mcpe.DefaultDelivery(),
				CreatedAt: t0,
				UpdatedAt: t0,
				Handler:   &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: "https://hooks.example.com/"},
			},
			Secrets: &subscriptions.WebhookSecrets{Current: "whsec_x"},
		}
		if err := s.CreateSubscription(b.Context(), c, 10); err != nil {
			b.Fatal(err)
		}
		return subscriptions.Target{SubscriptionID: c.ID, Principal: principal, Channel: mcpe.ChannelRealtime}
	}
	backlog := []subscriptions.Target{sub(0, "mallory")}
	for range 10000 {
		p.publish(backlog)
	}
	for i := 1; i <= 100; i++ {
		p.publish([]subscriptions.Target{sub(i, fmt.Sprintf("principal-%d", i))})
	}
	q := subscriptions.JobQuery{PerPrincipal: 32, InFlight: map[string]int{"mallory": 32}}
	now := p.now.Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		jobs, err := s.DueJobs(b.Context(), now, 128, q)
		if err != nil || len(jobs) != 100 {
			b.Fatalf("DueJobs = %d jobs, %v; want the 100 other principals' jobs", len(jobs), err)
		}
		if _, ok, err := s.NextJobDue(b.Context(), q); !ok || err != nil {
			b.Fatalf("NextJobDue = %v, %v", ok, err)
		}
	}
}

// BenchCreate creates subscriptions one after another for one principal,
// as a client calling events_subscribe in a row does: UUIDv7 IDs (as
// Service.Subscribe gives), a one-type filter, realtime delivery.
func BenchCreate(b *testing.B, open BenchOpener) {
	s := open(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		now := t0.Add(time.Duration(i) * time.Millisecond)
		sub := &subscriptions.Subscription{
			Principal: "principal",
			Subscription: mcpe.Subscription{
				ID:        subscriptions.NewID(),
				Status:    mcpe.StatusActive,
				Filter:    mcpe.Filter{EventTypes: []string{fmt.Sprintf("svc%d.*", i%100)}},
				Delivery:  mcpe.DefaultDelivery(),
				CreatedAt: now,
				UpdatedAt: now,
			},
		}
		if err := s.CreateSubscription(b.Context(), sub, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}
