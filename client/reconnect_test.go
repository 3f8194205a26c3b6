package client_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// instantClock is a client clock whose timers fire at once; it records
// the waits asked for.
type instantClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *instantClock) Now() time.Time { return start }

func (c *instantClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	go f()
	return stoppedTimer{}
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }

// manualClock is a client clock whose timers fire when the test says.
type manualClock struct {
	timers chan manualTimer
}

type manualTimer struct {
	d    time.Duration
	fire func()
}

func (c *manualClock) Now() time.Time { return start }

func (c *manualClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.timers <- manualTimer{d: d, fire: f}
	return stoppedTimer{}
}

// next returns the next timer set, failing after wait.
func (c *manualClock) next(t *testing.T) manualTimer {
	t.Helper()
	select {
	case tm := <-c.timers:
		return tm
	case <-time.After(wait):
		t.Fatal("no timer was set")
		return manualTimer{}
	}
}

// TestReconnectLosesNothing breaks the connection in the middle of a stream
// of 1000 events, in every way a connection breaks, and checks that the
// handler sees each event exactly once.
func TestReconnectLosesNothing(t *testing.T) {
	const total = 1000
	tests := []struct {
		name string
		link func(t *testing.T) link
		// sessionEnds is true when the break ends the MCP session, so
		// that the client has to dial again.
		sessionEnds bool
	}{
		{"memory/2026-07-28 session closed by the server", func(t *testing.T) link { return memoryLink(t, "2026-07-28") }, true},
		{"memory/2025-11-25 session closed by the server", func(t *testing.T) link { return memoryLink(t, "2025-11-25") }, true},
		{"http session closed by the server", func(t *testing.T) link { return httpLink(t, "") }, true},
		{"http connections dropped", func(t *testing.T) link {
			l := httpLink(t, "")
			l.kill = func(*testing.T) { l.server.CloseConnections() }
			return l
		}, false},
		{"stdio server killed", func(t *testing.T) link { return stdioLink(t, "") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.link(t)
			var dials atomic.Int64
			dial := func(ctx context.Context) (mcp.Transport, error) {
				dials.Add(1)
				return l.transport(ctx)
			}
			got := make(chan string, 2*total)
			clk := &instantClock{}
			c, err := client.New(&client.Options{Reconnect: dial, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if _, err := c.OnEvent("stream.*", func(_ context.Context, _ string, ev mcpe.Event) { got <- ev.ID }); err != nil {
				t.Fatal(err)
			}
			if err := c.Connect(ctxT(t), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Subscribe(ctxT(t), mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"stream.*"}}}); err != nil {
				t.Fatal(err)
			}
			first := c.Session()

			want := make(map[string]bool, total)
			seen := make(map[string]int, total)
			receive := func() {
				for {
					select {
					case id := <-got:
						seen[id]++
					default:
						return
					}
				}
			}
			for i := range total {
				if i == total/2 {
					l.kill(t)
				}
				want[l.publish(t, "stream.tick", fmt.Sprintf(`{"n": %d}`, i))] = true
				receive()
			}
			deadline := time.After(3 * wait)
			for len(seen) < total {
				select {
				case id := <-got:
					seen[id]++
				case <-deadline:
					t.Fatalf("the handler saw %d of %d events", len(seen), total)
				}
			}
			// Anything still on its way shows up after a catch-up.
			if err := c.CatchUp(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			receive()
			for id, n := range seen {
				if !want[id] {
					t.Errorf("the handler saw event %s, which was not published", id)
				}
				if n != 1 {
					t.Errorf("the handler saw event %s %d times", id, n)
				}
			}
			if tc.sessionEnds {
				if dials.Load() < 2 || c.Session() == first {
					t.Errorf("the client did not reconnect: %d dials", dials.Load())
				}
				clk.mu.Lock()
				if len(clk.waits) == 0 || clk.waits[0] <= 0 || clk.waits[0] > client.DefaultBackoffMin {
					t.Errorf("waits before reconnecting = %v; want a first wait in (0, %v]", clk.waits, client.DefaultBackoffMin)
				}
				clk.mu.Unlock()
			}
		})
	}
}

// TestReconnectBackoff checks the waits between reconnection attempts:
// they double from BackoffMin up to BackoffMax, less up to half at random,
// and no attempt is made before its wait is over.
func TestReconnectBackoff(t *testing.T) {
	s, _ := inProcess(t, nil)
	clk := &manualClock{timers: make(chan manualTimer)}
	var fail atomic.Bool
	attempts := make(chan struct{}, 100)
	dial := func(ctx context.Context) (mcp.Transport, error) {
		attempts <- struct{}{}
		if fail.Load() {
			return nil, errors.New("connection refused")
		}
		return s.Transport(ctx, principal)
	}
	c, err := client.New(&client.Options{Reconnect: dial, Clock: clk, BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Connect(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	<-attempts

	fail.Store(true)
	s.CloseSessions()
	for i, max := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		max *= time.Millisecond
		tm := clk.next(t)
		if tm.d < max/2 || tm.d > max {
			t.Errorf("wait %d = %v, want between %v and %v", i, tm.d, max/2, max)
		}
		select {
		case <-attempts:
			t.Fatalf("attempt %d made before its wait was over", i)
		default:
		}
		if i == 5 {
			fail.Store(false)
		}
		tm.fire()
		select {
		case <-attempts:
		case <-time.After(wait):
			t.Fatalf("no attempt after wait %d", i)
		}
	}
	// The last attempt succeeded: calls work again.
	if _, err := c.List(ctxT(t), ""); err != nil {
		t.Fatalf("List after reconnecting: %v", err)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v while reconnecting", err)
	}
	c.Close()
	<-c.Done()
	if err := c.Err(); err != client.ErrClosed {
		t.Errorf("Err() after Close = %v, want ErrClosed", err)
	}
}

// TestSessionEndedWithoutReconnect checks that, without Options.Reconnect,
// calls after the session ended fail with ErrSessionEnded, and calls after
// Close with ErrClosed.
func TestSessionEndedWithoutReconnect(t *testing.T) {
	s, _ := inProcess(t, nil)
	tr, err := s.Transport(ctxT(t), principal)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Connect(ctxT(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() while connected = %v", err)
	}
	s.CloseSessions()
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("Done() not closed after the session ended")
	}
	if err := c.Err(); !errors.Is(err, client.ErrSessionEnded) {
		t.Errorf("Err() = %v, want ErrSessionEnded", err)
	}
	if _, err := c.List(ctxT(t), ""); !errors.Is(err, client.ErrSessionEnded) {
		t.Errorf("List after the session ended = %v, want ErrSessionEnded", err)
	}
	if err := c.CatchUp(ctxT(t)); !errors.Is(err, client.ErrSessionEnded) {
		t.Errorf("CatchUp after the session ended = %v, want ErrSessionEnded", err)
	}
	if c.SupportsEvents() {
		t.Error("SupportsEvents() = true without a session")
	}
	c.Close()
	c.Close()
	if _, err := c.List(ctxT(t), ""); !errors.Is(err, client.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
}

// TestResumeFromCursor checks Options.Cursor: a client started with the
// Cursor of an earlier one gets what was delivered in between, once.
func TestResumeFromCursor(t *testing.T) {
	l := memoryLink(t, "")
	rec := newRecorder()
	first := connect(t, l, nil, func(c *client.Client) {
		if _, err := c.OnEvent("*", rec.event("first")); err != nil {
			t.Fatal(err)
		}
	})
	sub, err := first.Subscribe(ctxT(t), mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"job.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	a := l.publish(t, "job.a", `{}`)
	rec.expect(t, received{Handler: "first", SubscriptionID: sub.ID, Type: "job.a", ID: a})
	cursor := first.Cursor()
	first.Close()

	b := l.publish(t, "job.b", `{}`)
	cc := l.publish(t, "job.c", `{}`)
	second := connect(t, l, &client.Options{Cursor: cursor}, func(c *client.Client) {
		if _, err := c.OnEvent("*", rec.event("second")); err != nil {
			t.Fatal(err)
		}
	})
	rec.expect(t,
		received{Handler: "second", SubscriptionID: sub.ID, Type: "job.b", ID: b},
		received{Handler: "second", SubscriptionID: sub.ID, Type: "job.c", ID: cc},
	)
	rec.none(t, second)

	// Without a cursor, a client starts at the end of the inbox.
	third := connect(t, l, nil, func(c *client.Client) {
		if _, err := c.OnEvent("*", rec.event("third")); err != nil {
			t.Fatal(err)
		}
	})
	rec.none(t, third)
	if third.Cursor() != second.Cursor() {
		t.Errorf("a new client starts at %q, want the end of the inbox %q", third.Cursor(), second.Cursor())
	}
}

// TestSlowSessionGetsEverything holds up a session's reads while more
// events arrive than the server keeps in memory for it: the session lags,
// and gets every one, once, when it reads again.
func TestSlowSessionGetsEverything(t *testing.T) {
	s, _ := inProcess(t, &clienttest.Options{WindowEntries: 2})
	readSlowly(t, s)
	if st := s.Sessions.Stats(); st.Skipped != 0 {
		t.Errorf("the server skipped %d deliveries; want none", st.Skipped)
	}
}

// TestMissedNoticeCatchesUp has the session lose the first events the
// server sends, then bring an events/missed notice, as the server sends
// one when retention removed deliveries a session was owed: the notice
// makes the client read what it missed from the inbox.
func TestMissedNoticeCatchesUp(t *testing.T) {
	s, _ := inProcess(t, nil)
	readAll(t, s, func(tr mcp.Transport) mcp.Transport { return &losingTransport{Transport: tr, lose: 5} }, nil, nil)
}

// readSlowly connects a client whose reads wait while 20 events are
// published, and checks that its handler then sees each of them once.
func readSlowly(t *testing.T, s *clienttest.Server) {
	t.Helper()
	gate := mcpetest.NewGate()
	readAll(t, s, gate.Transport, gate.Close, gate.Open)
}

// readAll connects a client through wrap, publishes 20 events between
// before and after (when set), and checks that its handler sees each of
// them once.
func readAll(t *testing.T, s *clienttest.Server, wrap func(mcp.Transport) mcp.Transport, before, after func()) {
	t.Helper()
	dial := func(ctx context.Context) (mcp.Transport, error) {
		tr, err := s.Transport(ctx, principal)
		if err != nil {
			return nil, err
		}
		return wrap(tr), nil
	}
	got := make(chan string, 100)
	c, err := client.New(&client.Options{Reconnect: dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.OnEvent("*", func(_ context.Context, _ string, ev mcpe.Event) { got <- ev.ID }); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctxT(t), mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"*"}}}); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before()
	}
	want := map[string]bool{}
	for i := range 20 {
		id, err := s.Publish(ctxT(t), mcpe.EventInput{Type: fmt.Sprintf("burst.e%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = true
	}
	if after != nil {
		after()
	}
	seen := map[string]int{}
	deadline := time.After(wait)
	for len(seen) < len(want) {
		select {
		case id := <-got:
			seen[id]++
		case <-deadline:
			t.Fatalf("the handler saw %d of %d events", len(seen), len(want))
		}
	}
	for id, n := range seen {
		if !want[id] || n != 1 {
			t.Errorf("event %s seen %d times (published: %v)", id, n, want[id])
		}
	}
}

// TestSlowHandlerSeesEachEventOnce holds up the first handler call while a
// burst arrives and waits in the Client's queue, then catches up: each
// event must reach the handler once, whether the inbox read or the
// notification brings it first.
func TestSlowHandlerSeesEachEventOnce(t *testing.T) {
	s, _ := inProcess(t, nil)
	const events = 40
	c, err := client.New(&client.Options{
		Reconnect: func(ctx context.Context) (mcp.Transport, error) { return s.Transport(ctx, principal) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	release := make(chan struct{})
	got := make(chan string, 4*events)
	var first sync.Once
	if _, err := c.OnEvent("*", func(_ context.Context, _ string, ev mcpe.Event) {
		first.Do(func() { <-release })
		got <- ev.ID
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctxT(t), mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"*"}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := range events {
		id, err := s.Publish(ctxT(t), mcpe.EventInput{Type: fmt.Sprintf("burst.e%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = true
	}
	// Every notification is written (and so read into the Client's queue:
	// the in-memory transport writes only as fast as the other end reads)
	// before the first handler call returns.
	deadline := time.Now().Add(wait)
	for s.Sessions.Stats().Sent < events {
		if time.Now().After(deadline) {
			t.Fatalf("the server sent %d of %d notifications", s.Sessions.Stats().Sent, events)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	seen := map[string]int{}
	for len(seen) < len(want) {
		select {
		case id := <-got:
			seen[id]++
		case <-time.After(wait):
			t.Fatalf("the handler saw %d of %d events", len(seen), len(want))
		}
	}
	// Whatever else comes, comes now: a catch-up finds nothing more.
	if err := c.CatchUp(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for drained := false; !drained; {
		select {
		case id := <-got:
			seen[id]++
		default:
			drained = true
		}
	}
	for id, n := range seen {
		if !want[id] || n != 1 {
			t.Errorf("event %s seen %d times (published: %v)", id, n, want[id])
		}
	}
}

// TestNewClientGetsKeptDigest checks that a client started without
// Options.Cursor is handed the digest that fired while its owner had no
// session (the laptop closed at 9:00), once, when it connects: the server
// sends it to the new session although its cursor lies below the end of the
// inbox. The old inbox (an event delivered to an earlier session, one that
// came while no session was live) is not handed over. The digest is held
// back until Connect has read where the inbox ends, as a slow network
// would.
func TestNewClientGetsKeptDigest(t *testing.T) {
	for _, mk := range []func(*testing.T, string) link{memoryLink, httpLink} {
		for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
			l := mk(t, protocol)
			t.Run(l.name+"/"+protocol, func(t *testing.T) { newClientGetsKeptDigest(t, l) })
		}
	}
}

func newClientGetsKeptDigest(t *testing.T, l link) {
	s := l.server
	rec := newRecorder()
	register := func(name string) func(c *client.Client) {
		return func(c *client.Client) {
			if _, err := c.OnEvent("*", rec.event(name)); err != nil {
				t.Fatal(err)
			}
			c.OnBatch(rec.batch)
		}
	}
	first := connect(t, l, nil, register("first"))
	now, err := first.Subscribe(ctxT(t), mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"job.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	daily, err := first.Subscribe(ctxT(t), mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"deploy.*"}},
		Delivery: &mcpe.Delivery{
			Channels:     []mcpe.Channel{mcpe.ChannelCron},
			CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "America/New_York"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	old := l.publish(t, "job.old", `{}`)
	rec.expect(t, received{Handler: "first", SubscriptionID: now.ID, Type: "job.old", ID: old})
	d1 := l.publish(t, "deploy.started", `{}`)
	first.Close()
	for deadline := time.Now().Add(wait); s.Sessions.Live(principal) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server still has a session after Close")
		}
	}

	// Away: an event comes, and the digest fires at 09:00 with no session
	// to send it to; both wait in the inbox, the digest kept.
	l.publish(t, "job.away", `{}`)
	l.fake.Advance(time.Hour)
	for deadline := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
		entries, _, err := s.Service.ReadInbox(ctxT(t), principal, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(entries, func(e subscriptions.InboxEntry) bool { return e.Kind == mcpe.InboxBatch }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the digest did not fire")
		}
	}

	release := make(chan struct{})
	held := l
	held.transport = func(ctx context.Context) (mcp.Transport, error) {
		tr, err := l.transport(ctx)
		return holdNotifications(tr, release), err
	}
	second := connect(t, held, nil, register("second"))
	close(release)
	rec.expect(t, received{Handler: "batch", SubscriptionID: daily.ID, Events: []string{d1}, Remaining: 0})
	rec.none(t, second) // neither job.old nor job.away, nor the digest again
	end, _, err := s.Service.ReadInbox(ctxT(t), principal, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := mcpe.FormatCursor(end[len(end)-1].Seq); second.Cursor() != want {
		t.Errorf("Cursor() = %q, want the end of the inbox %q", second.Cursor(), want)
	}

	// What comes next is delivered, once.
	next := l.publish(t, "job.next", `{}`)
	rec.expect(t, received{Handler: "second", SubscriptionID: now.ID, Type: "job.next", ID: next})
	rec.none(t, second)
}

// holdNotifications returns t with the notifications it brings held back
// until release is closed; responses pass. Over Streamable HTTP, it holds
// the standalone event stream, where the server sends notifications.
func holdNotifications(t mcp.Transport, release <-chan struct{}) mcp.Transport {
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		cp, hc := *st, *http.DefaultClient
		if st.HTTPClient != nil {
			hc = *st.HTTPClient
		}
		hc.Transport = heldStream{base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), release: release}
		cp.HTTPClient = &hc
		return &cp
	}
	return &heldTransport{Transport: t, release: release}
}

// heldStream holds up the reads of the event streams opened by GET.
type heldStream struct {
	base    http.RoundTripper
	release <-chan struct{}
}

func (h heldStream) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet {
		resp.Body = &heldBody{ReadCloser: resp.Body, release: h.release}
	}
	return resp, err
}

type heldBody struct {
	io.ReadCloser
	release <-chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	<-b.release
	return b.ReadCloser.Read(p)
}

// heldTransport reads its connection ahead, passing responses on at once
// and holding notifications back until release is closed.
type heldTransport struct {
	mcp.Transport
	release <-chan struct{}
}

func (t *heldTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &heldConn{Connection: conn, release: t.release, in: make(chan readResult), done: make(chan struct{})}
	go c.pump()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type heldConn struct {
	mcp.Connection
	release <-chan struct{}
	in      chan readResult
	done    chan struct{}
	once    sync.Once
	held    []jsonrpc.Message // only Read touches it: the go-sdk reads from one goroutine
}

func (c *heldConn) pump() {
	for {
		msg, err := c.Connection.Read(context.Background())
		select {
		case c.in <- readResult{msg, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *heldConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var released <-chan struct{}
		if len(c.held) > 0 {
			released = c.release
		}
		if closed(released) {
			msg := c.held[0]
			c.held = c.held[1:]
			return msg, nil
		}
		select {
		case <-released:
			continue
		case r := <-c.in:
			if req, ok := r.msg.(*jsonrpc.Request); ok && !req.IsCall() && !closed(c.release) {
				c.held = append(c.held, r.msg)
				continue
			}
			return r.msg, r.err
		case <-c.done:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *heldConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Connection.Close()
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// losingTransport drops the first lose events/event notifications its
// connection brings, then brings an events/missed notice in their place.
type losingTransport struct {
	mcp.Transport
	lose int
}

func (t *losingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &losingConn{Connection: conn, lose: t.lose}, nil
}

type losingConn struct {
	mcp.Connection
	lose int // only Read touches it: the go-sdk reads from one goroutine
}

func (c *losingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || c.lose == 0 || !ok || req.Method != mcpe.MethodEvent {
			return msg, err
		}
		if c.lose--; c.lose == 0 {
			params := `{"fromCursor":"0","toCursor":"0","reason":"retention"}`
			return &jsonrpc.Request{Method: mcpe.MethodMissed, Params: []byte(params)}, nil
		}
	}
}
