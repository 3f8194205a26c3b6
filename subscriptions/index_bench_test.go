package subscriptions_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// routeEvents is E of the routing workload: enough events to cycle through
// every group.
const routeEvents = 1000

// BenchmarkRoute measures the matcher alone on the routing workload of
// /work/shared/bench/routing-workload.md, with the default result cache.
func BenchmarkRoute(b *testing.B) {
	benchmarkRoute(b, nil)
}

// BenchmarkRouteUncached is BenchmarkRoute with the result cache disabled,
// so every event walks the exact map and the pattern buckets.
func BenchmarkRouteUncached(b *testing.B) {
	benchmarkRoute(b, &subscriptions.IndexOptions{CacheSize: -1})
}

func benchmarkRoute(b *testing.B, opts *subscriptions.IndexOptions) {
	events := routeWorkloadEvents(b, routeEvents)
	for _, s := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("S=%d", s), func(b *testing.B) {
			x := routeWorkloadIndex(b, s, opts)
			b.ReportAllocs()
			matches := 0
			i := 0
			for b.Loop() {
				matches += len(x.Match(events[i%len(events)]))
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(matches)/float64(b.N), "matches/op")
		})
	}
}

// BenchmarkRouteDistinctTypes routes events of 100 000 distinct types
// (svc<g>.t<n>, matched by the svc<g>.* patterns), so that the result cache
// rarely helps: each type is seen once per 100 000 events.
func BenchmarkRouteDistinctTypes(b *testing.B) {
	const types = 100_000
	events := make([]*mcpe.Event, types)
	for i := range events {
		events[i] = &mcpe.Event{Type: fmt.Sprintf("svc%d.t%d", i%100, i), Metadata: mcpe.Metadata{Priority: mcpe.PriorityNormal}}
	}
	for _, s := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("S=%d", s), func(b *testing.B) {
			x := routeWorkloadIndex(b, s, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x.Match(events[i%types])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkRouteUnderChurn routes the workload's events while another
// goroutine creates and removes a subscription every millisecond (1 000 a
// second, half of them patterns), as the index sees them: each change
// invalidates only the cached types it can affect.
func BenchmarkRouteUnderChurn(b *testing.B) {
	events := routeWorkloadEvents(b, routeEvents)
	for _, s := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("S=%d", s), func(b *testing.B) {
			x := routeWorkloadIndex(b, s, nil)
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				n := 0
				for {
					select {
					case <-stop:
						done <- n
						return
					case <-tick.C:
					}
					typ := fmt.Sprintf("svc%d.created", n%100)
					if n%2 == 0 {
						typ = fmt.Sprintf("svc%d.*", n%100)
					}
					id := fmt.Sprintf("churn-%d", n)
					e, err := subscriptions.NewEntry(&subscriptions.Subscription{
						Principal: "churn",
						Subscription: mcpe.Subscription{
							ID: id, Status: mcpe.StatusActive,
							Filter:   mcpe.Filter{EventTypes: []string{typ}},
							Delivery: mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime}},
						},
					})
					if err != nil {
						panic(err)
					}
					x.Put(e)
					if n >= 10 {
						x.Remove(fmt.Sprintf("churn-%d", n-10))
					}
					n++
				}
			}()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x.Match(events[i%len(events)])
				i++
			}
			close(stop)
			changes := <-done
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(changes)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

// routeWorkloadIndex builds the index of S subscriptions: subscription i is in
// group g = i mod 100, and blocks of 100 alternate between the pattern
// svc<g>.* and the exact type svc<g>.created. All are realtime and active,
// owned by one principal, with no tag or priority filter.
func routeWorkloadIndex(b *testing.B, s int, opts *subscriptions.IndexOptions) *subscriptions.Index {
	b.Helper()
	x := subscriptions.NewIndex(opts)
	for i := range s {
		g := i % 100
		typ := fmt.Sprintf("svc%d.*", g)
		if (i/100)%2 == 1 {
			typ = fmt.Sprintf("svc%d.created", g)
		}
		e, err := subscriptions.NewEntry(&subscriptions.Subscription{
			Principal: "bench",
			Subscription: mcpe.Subscription{
				ID:       fmt.Sprintf("sub-%05d", i),
				Status:   mcpe.StatusActive,
				Filter:   mcpe.Filter{EventTypes: []string{typ}},
				Delivery: mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime}},
			},
		})
		if err != nil {
			b.Fatalf("NewEntry: %v", err)
		}
		x.Put(e)
	}
	if x.Len() != s {
		b.Fatalf("index holds %d subscriptions, want %d", x.Len(), s)
	}
	return x
}

// routeWorkloadEvents returns the events of the workload: event e has type
// svc<e mod 100>.created, priority normal and data {"seq": e}.
func routeWorkloadEvents(b *testing.B, n int) []*mcpe.Event {
	b.Helper()
	events := make([]*mcpe.Event, n)
	for e := range events {
		ev := &mcpe.Event{
			Type:     fmt.Sprintf("svc%d.created", e%100),
			Data:     json.RawMessage(fmt.Sprintf(`{"seq": %d}`, e)),
			Metadata: mcpe.Metadata{Priority: mcpe.PriorityNormal},
		}
		if err := subscriptions.NormalizeEvent(ev, testNow); err != nil {
			b.Fatalf("Normalize: %v", err)
		}
		events[e] = ev
	}
	return events
}

// adversarialFilters fills one principal's pattern budget
// (DefaultMaxPatternCost) with the costliest patterns the bounds of
// mcpe.ParsePattern let through, distinct (the index matches each distinct
// pattern once) but over the same letters, so that none is ruled out early
// by a prefix or suffix, in subscriptions of at most 64 patterns.
func adversarialFilters(shape string, principal int) []mcpe.Filter {
	pattern := func(i int) string {
		var b strings.Builder
		switch shape {
		case "alternatives": // 64 alternatives, 12 wildcards: cost 832
			for bit := range 6 {
				if i>>bit&1 == 0 {
					b.WriteString("{*a,*b}")
				} else {
					b.WriteString("{*b,*a}")
				}
			}
			b.WriteString("Zb")
		case "wildcards": // 16 wildcards, no alternatives: cost 17
			for bit := range 15 {
				b.WriteString("*" + string("ab"[i>>bit&1]))
			}
			b.WriteString("*Zb")
		}
		return b.String()
	}
	p, err := mcpe.ParsePattern("eventTypes", pattern(0))
	if err != nil {
		panic(err)
	}
	var filters []mcpe.Filter
	n := subscriptions.DefaultMaxPatternCost / p.Cost()
	for i := range n {
		if i%mcpe.MaxFilterPatterns == 0 {
			filters = append(filters, mcpe.Filter{})
		}
		f := &filters[len(filters)-1]
		// Each principal's own patterns, so that nothing is shared.
		f.EventTypes = append(f.EventTypes, pattern(principal*n+i))
	}
	return filters
}

// BenchmarkRouteAdversarial measures what routing one new event type costs
// when principals have filled their pattern budget with the patterns that
// cost most to match, against types of the longest length over the same
// letters. The cache cannot help: every event has a new type.
func BenchmarkRouteAdversarial(b *testing.B) {
	for _, shape := range []string{"alternatives", "wildcards"} {
		for _, principals := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/principals=%d", shape, principals), func(b *testing.B) {
				x := subscriptions.NewIndex(nil)
				id := 0
				for p := range principals {
					for _, f := range adversarialFilters(shape, p) {
						id++
						sub := &subscriptions.Subscription{Principal: fmt.Sprint("mallory", p), Subscription: mcpe.Subscription{
							ID: fmt.Sprint(id), Status: mcpe.StatusActive, Filter: f, Delivery: mcpe.DefaultDelivery()}}
						e, err := subscriptions.NewEntry(sub)
						if err != nil {
							b.Fatal(err)
						}
						x.Put(e)
					}
				}
				r := rand.New(rand.NewPCG(1, 2))
				letters := make([]byte, mcpe.MaxTypeLength-2)
				for b.Loop() {
					for i := range letters {
						letters[i] = "ab"[r.IntN(2)]
					}
					x.Match(&mcpe.Event{Type: string(letters) + "Zb", Metadata: mcpe.Metadata{Priority: mcpe.PriorityNormal}})
				}
			})
		}
	}
}
