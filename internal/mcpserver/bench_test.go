package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// The benchmarks here use the workload of shared/bench/routing-workload.md:
// subscription i is in group i mod 100, and blocks of 100 alternate between
// the pattern svc<g>.* and the exact type svc<g>.created; event e has type
// svc<e mod 100>.created, so it matches S/100 subscriptions.

const benchPrincipal = "bench"

type benchEnv struct {
	svc    *subscriptions.Service
	reg    *realtime.Registry
	srv    *mcpserver.Server
	ingest http.Handler
	client *mcpetest.Client
}

// newBenchEnv builds a server with subs workload subscriptions of
// benchPrincipal and one in-memory client connected as principal; live
// sessions catch up from the inbox as the binary's do.
func newBenchEnv(b *testing.B, subs int, principal string) *benchEnv {
	b.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	reg := realtime.NewRegistry(&realtime.Options{Inbox: store})
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{
		Store:            store,
		Deliverer:        reg,
		Presence:         reg,
		Backlog:          reg,
		Clock:            clock.Real{},
		MaxSubscriptions: max(subs, 1) + 1_000_000,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Service: svc, Sessions: reg})
	if err != nil {
		b.Fatal(err)
	}
	ih, err := httpapi.NewIngest(httpapi.IngestOptions{Publisher: svc})
	if err != nil {
		b.Fatal(err)
	}
	for i := range subs {
		if _, err := svc.Subscribe(ctx, benchPrincipal, mcpe.SubscribeRequest{Filter: workloadFilter(i)}); err != nil {
			b.Fatal(err)
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, principal); err != nil {
		b.Fatal(err)
	}
	c := mcpetest.Connect(b, ct, nil)
	c.MustCall(b, "events_list", map[string]any{"status": "paused"}, nil) // attaches the session
	b.Cleanup(func() {
		for ss := range srv.MCP().Sessions() {
			ss.Close()
		}
		reg.Close()
		srv.Wait()
		svc.Stop()
		store.Close()
	})
	return &benchEnv{svc: svc, reg: reg, srv: srv, ingest: ih, client: c}
}

func workloadFilter(i int) mcpe.Filter {
	g := i % 100
	if (i/100)%2 == 0 {
		return mcpe.Filter{EventTypes: []string{fmt.Sprintf("svc%d.*", g)}}
	}
	return mcpe.Filter{EventTypes: []string{fmt.Sprintf("svc%d.created", g)}}
}

// post publishes event e through the ingest handler, as an HTTP client would.
func (e *benchEnv) post(b *testing.B, seq int, eventID string) {
	body := fmt.Sprintf(`{"id": %q, "type": "svc%d.created", "data": {"seq": %d}}`, eventID, seq%100, seq)
	req := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ingest.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		b.Fatalf("ingest answered %d: %s", rec.Code, rec.Body)
	}
}

// timedSink writes through to a session and records when each write
// returned. Notifications reach a session in order, so write k carries
// notification k.
type timedSink struct {
	inner *mcpserver.Sink
	mu    sync.Mutex
	at    []time.Time
	done  chan struct{}
	want  int
}

func (s *timedSink) Write(ctx context.Context, msgs []realtime.Message) error {
	err := s.inner.Write(ctx, msgs)
	now := time.Now()
	s.mu.Lock()
	for range msgs {
		s.at = append(s.at, now)
		if len(s.at) == s.want {
			close(s.done)
		}
	}
	s.mu.Unlock()
	return err
}

// BenchmarkPublishToNotify measures latency with 1 000 subscriptions (10
// matches per event) at one event per millisecond, from the HTTP ingest call:
//
//   - written: until the last of the event's notifications has been written
//     to the session's connection, read by a client that takes the bytes
//     as fast as they come (the server's own latency);
//   - received: until a go-sdk client on an in-memory transport has decoded
//     the last of them (end to end, as the shared workload asks; its JSON
//     decoding is then part of the figure).
func BenchmarkPublishToNotify(b *testing.B) {
	const subs, perEvent = 1000, 10
	b.Run("written", func(b *testing.B) {
		e := newBenchEnv(b, subs, "bench-session")
		c1, c2 := net.Pipe()
		ss, err := e.srv.Connect(context.Background(), &mcp.IOTransport{Reader: c1, Writer: c1}, "bench-raw")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ss.Close() })
		drained := rawClient(b, c2)
		inner, err := mcpserver.SessionSink(ss)
		if err != nil {
			b.Fatal(err)
		}
		ts := &timedSink{inner: inner, done: make(chan struct{}), want: b.N * perEvent}
		b.Cleanup(e.reg.Attach(benchPrincipal, ts))
		paced(b, e, perEvent, ts.done, func(i int) time.Time {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			return ts.at[(i+1)*perEvent-1]
		})
		_ = drained
	})
	b.Run("received", func(b *testing.B) {
		e := newBenchEnv(b, subs, benchPrincipal)
		var mu sync.Mutex
		var at []time.Time
		done := make(chan struct{})
		go func() {
			for {
				if _, ok := e.client.NextOrClosed(); !ok {
					return
				}
				mu.Lock()
				if at = append(at, time.Now()); len(at) == b.N*perEvent {
					close(done)
				}
				mu.Unlock()
			}
		}()
		paced(b, e, perEvent, done, func(i int) time.Time {
			mu.Lock()
			defer mu.Unlock()
			return at[(i+1)*perEvent-1]
		})
	})
}

// rawClient speaks just enough MCP on conn to open a session, then reads
// and discards everything the server writes.
func rawClient(b *testing.B, conn net.Conn) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(conn, 1<<16)
		for {
			if _, err := r.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
				return
			}
		}
	}()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		if _, err := io.WriteString(conn, line+"\n"); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { conn.Close(); <-done })
	return done
}

// paced posts b.N events, one per millisecond, through the ingest handler,
// waits for done, and reports the latency percentiles, where lastAt(i) is
// when the last notification of event i was seen.
func paced(b *testing.B, e *benchEnv, perEvent int, done <-chan struct{}, lastAt func(i int) time.Time) {
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	starts := make([]time.Time, b.N)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		starts[i] = time.Now()
		e.post(b, i, ids[i])
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("not all %d notifications within a minute (%+v)", b.N*perEvent, e.reg.Stats())
	}
	b.StopTimer()
	lat := make([]time.Duration, b.N)
	for i := range lat {
		lat[i] = lastAt(i).Sub(starts[i])
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds())/1e3, "max-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkThroughMCP publishes as fast as one goroutine can and measures
// events and notifications per second received by a go-sdk client on an
// in-memory transport, with 1 000 subscriptions (10 matches per event).
func BenchmarkThroughMCP(b *testing.B) {
	const subs, perEvent = 1000, 10
	e := newBenchEnv(b, subs, benchPrincipal)
	received := make(chan struct{})
	go func() {
		for range b.N * perEvent {
			if _, ok := e.client.NextOrClosed(); !ok {
				return
			}
		}
		close(received)
	}()
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		_, err := e.svc.Publish(ctx, mcpe.Event{
			Type: fmt.Sprintf("svc%d.created", i%100),
			Data: json.RawMessage(fmt.Sprintf(`{"seq": %d}`, i)),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-received:
	case <-time.After(time.Minute):
		b.Fatalf("not all notifications received within a minute (%+v)", e.reg.Stats())
	}
	b.StopTimer()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/secs, "events/s")
	b.ReportMetric(float64(b.N*perEvent)/secs, "notifications/s")
}

// BenchmarkSubscribe measures 10 000-subscription workloads from one
// principal: through the events_subscribe tool on an in-memory transport, on
// the protocol the go-sdk negotiates there (tool, 2026-07-28) and on the one
// most hosts speak today (tool-2025-11-25), through the tool on a session
// that ConnectIO serves on OS pipes, as stdio does (tool-stdio), and
// through Service.Subscribe without MCP (service); each subscription is
// committed to a SQLite file before the call returns. It reports the time per 10 000 calls, the CPU
// time per call and the heap retained per subscription. Sessions have the
// server's defaults, and the collector runs at mcpserver.GCPercent
// unless GOGC is set, as in the binary.
func BenchmarkSubscribe(b *testing.B) {
	// Measure with the collector target the binary runs with.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(mcpserver.GCPercent))
	}
	for _, via := range []string{"tool", "tool-2025-11-25", "tool-stdio", "service"} {
		b.Run(via, func(b *testing.B) {
			e := newBenchEnv(b, 0, benchPrincipal)
			client := e.client
			switch via {
			case "tool-2025-11-25":
				ct, st := mcp.NewInMemoryTransports()
				if _, err := e.srv.Connect(context.Background(), st, benchPrincipal); err != nil {
					b.Fatal(err)
				}
				client = mcpetest.Connect(b, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			case "tool-stdio":
				client = mcpetest.Connect(b, stdioPipes(b, e.srv), nil)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			cpu := cpuMeter(b)
			b.ResetTimer()
			for i := range b.N {
				if via != "service" {
					client.MustCall(b, "events_subscribe", map[string]any{"filter": workloadFilter(i)}, nil)
					continue
				}
				if _, err := e.svc.Subscribe(context.Background(), benchPrincipal, mcpe.SubscribeRequest{Filter: workloadFilter(i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())*10_000/float64(b.N)/1e9, "s/10k-subscribes")
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/subscription")
		})
	}
}

// stdioPipes connects a session of benchPrincipal to srv through
// ConnectIO on two OS pipes, as the binary serves stdio, and returns the
// client's end as a transport.
func stdioPipes(b *testing.B, srv *mcpserver.Server) mcp.Transport {
	b.Helper()
	sr, cw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cw.Close()
		sw.Close()
		sr.Close()
		cr.Close()
	})
	if _, err := srv.ConnectIO(context.Background(), sr, sw, benchPrincipal); err != nil {
		b.Fatal(err)
	}
	return &mcp.IOTransport{Reader: cr, Writer: cw}
}

// cpuMeter starts counting the process's CPU time; the returned function
// reports it per operation as "cpu-µs/op", a figure that, unlike ns/op, does
// not grow when other processes compete for the machine. It reports nothing
// where the CPU time cannot be read.
func cpuMeter(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64((end-start).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
}

// BenchmarkDigest fires digests and measures, from the fire to the last
// notification written to the owner's session (read by a client that takes
// the bytes as they come), the time and the peak heap:
//
//   - one: one subscription with 10 000 buffered events, delivered as one
//     events/batch (maxEventsPerDelivery 10 000);
//   - many: 10 000 subscriptions firing in the same minute with 10 events
//     each, 10 000 events/batch notifications.
//
// Run it with -benchtime=1x: each iteration builds its own buffers.
func BenchmarkDigest(b *testing.B) {
	for _, tc := range []struct {
		name         string
		subs, events int
	}{{"one", 1, 10000}, {"many", 10000, 10}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				e, clk, ts := newDigestEnv(b, tc.subs, tc.events)
				runtime.GC()
				peak := sampleHeap()
				b.StartTimer()
				fireStart := time.Now()
				clk.AdvanceTo(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
				b.ReportMetric(time.Since(fireStart).Seconds(), "fire-s")
				select {
				case <-ts.done:
				case <-time.After(time.Minute):
					b.Fatalf("%d of %d digests written within a minute (%+v)", len(ts.at), tc.subs, e.reg.Stats())
				}
				b.StopTimer()
				b.ReportMetric(float64(peak()), "peak-heap-B")
			}
		})
	}
}

// sampleHeap samples the heap every millisecond until the returned function
// is called, which returns the largest HeapAlloc seen.
func sampleHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(stop); <-done; return peak.Load() }
}

// newDigestEnv builds a server on a fake clock (08:00) with subs cron
// subscriptions ("0 9 * * *", digests of up to 10 000) of benchPrincipal,
// each with events buffered, and a raw client session whose writes are
// timed.
func newDigestEnv(b *testing.B, subs, events int) (*benchEnv, *clocktest.Fake, *timedSink) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	clk := clocktest.NewFake(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC))
	reg := realtime.NewRegistry(&realtime.Options{Inbox: store})
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{
		Store:            store,
		Deliverer:        reg,
		Presence:         reg,
		Backlog:          reg,
		Timings:          map[mcpe.Channel]subscriptions.Timing{mcpe.ChannelCron: cron.New(nil)},
		Clock:            clk,
		MaxSubscriptions: subs + 1,
		PruneInterval:    24 * time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	schedOpts := &delivery.SchedulerOptions{Clock: clk}
	schedulers := delivery.Schedulers{cron.NewScheduler(svc, schedOpts), scheduled.NewScheduler(svc, schedOpts)}
	for _, s := range schedulers {
		if err := s.Start(ctx); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := mcpserver.New(mcpserver.Options{Service: svc, Sessions: reg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for ss := range srv.MCP().Sessions() {
			ss.Close()
		}
		reg.Close()
		srv.Wait()
		schedulers.Stop()
		svc.Stop()
		store.Close()
	})
	cronDelivery := &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelCron},
		CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", MaxEventsPerDelivery: 10000}}
	for range subs {
		if _, err := svc.Subscribe(ctx, benchPrincipal, mcpe.SubscribeRequest{
			Filter: mcpe.Filter{EventTypes: []string{"digest.*"}}, Delivery: cronDelivery,
		}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range events {
		if _, err := svc.Publish(ctx, mcpe.Event{Type: "digest.item", Data: json.RawMessage(fmt.Sprintf(`{"seq": %d, "title": "an event of a realistic size, with a title and a url", "url": "https://example.com/items/%d"}`, i, i))}); err != nil {
			b.Fatal(err)
		}
	}
	c1, c2 := net.Pipe()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: c1, Writer: c1}, "bench-raw")
	if err != nil {
		b.Fatal(err)
	}
	rawClient(b, c2)
	inner, err := mcpserver.SessionSink(ss)
	if err != nil {
		b.Fatal(err)
	}
	ts := &timedSink{inner: inner, done: make(chan struct{}), want: subs}
	b.Cleanup(reg.Attach(benchPrincipal, ts))
	return &benchEnv{svc: svc, reg: reg, srv: srv}, clk, ts
}
