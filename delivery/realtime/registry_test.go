package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// waitLimit bounds every wait for another goroutine. It is never reached
// when the code works; it only turns a hang into a failure.
const waitLimit = 10 * time.Second

var start = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

// received is one notification as a sink saw it.
type received struct {
	Method string
	Params string
}

// note returns the notification numbered n and how a sink receives it.
func note(n int) (Notification, received) {
	return Notification{Method: mcpe.MethodEvent, Params: map[string]int{"n": n}},
		received{Method: mcpe.MethodEvent, Params: fmt.Sprintf(`{"n":%d}`, n)}
}

// recv returns the next value of ch, failing the test if none comes.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// chanSink hands every notification to a channel; it never fails.
type chanSink struct{ got chan received }

func newChanSink() *chanSink { return &chanSink{got: make(chan received, 1024)} }

func (s *chanSink) Notify(_ context.Context, method string, params json.RawMessage) error {
	s.got <- received{Method: method, Params: string(params)}
	return nil
}

// expect reads the next len(want) notifications of s and compares them.
func (s *chanSink) expect(t *testing.T, name string, want ...received) {
	t.Helper()
	var got []received
	for range want {
		got = append(got, recv(t, s.got, "a notification for "+name))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: mismatch (-want +got):\n%s", name, diff)
	}
}

// expectNone checks that s holds nothing more. Call it once the registry
// is closed, when no writer can still be sending.
func (s *chanSink) expectNone(t *testing.T, name string) {
	t.Helper()
	select {
	case m := <-s.got:
		t.Errorf("%s received %+v; want nothing", name, m)
	default:
	}
}

// blockingSink blocks in its first Notify until release is closed, after
// telling the test through entered. Later calls do not block.
type blockingSink struct {
	chanSink
	entered chan struct{}
	release chan struct{}
	first   bool
}

func newBlockingSink() *blockingSink {
	return &blockingSink{chanSink: *newChanSink(), entered: make(chan struct{}), release: make(chan struct{}), first: true}
}

func (s *blockingSink) Notify(ctx context.Context, method string, params json.RawMessage) error {
	// Only the session's writer calls Notify, so first needs no lock.
	if s.first {
		s.first = false
		close(s.entered)
		<-s.release
	}
	return s.chanSink.Notify(ctx, method, params)
}

// call is one Notify of a scriptedSink, waiting for the test's answer.
type call struct {
	received
	reply chan error
}

// scriptedSink lets the test answer each Notify with success or an error.
type scriptedSink struct{ calls chan call }

func newScriptedSink() *scriptedSink { return &scriptedSink{calls: make(chan call)} }

func (s *scriptedSink) Notify(ctx context.Context, method string, params json.RawMessage) error {
	c := call{received: received{Method: method, Params: string(params)}, reply: make(chan error)}
	s.calls <- c
	return <-c.reply
}

// answer waits for the next Notify, checks what it carries and answers it.
func (s *scriptedSink) answer(t *testing.T, want received, err error) {
	t.Helper()
	c := recv(t, s.calls, "a write attempt")
	if diff := cmp.Diff(want, c.received); diff != "" {
		t.Errorf("write attempt: mismatch (-want +got):\n%s", diff)
	}
	c.reply <- err
}

// armedClock is a fake clock that reports each timer it arms, so a test
// advances it only once the writer is waiting on it.
type armedClock struct {
	*clock.Fake
	armed chan time.Duration
}

func newArmedClock() *armedClock {
	return &armedClock{Fake: clock.NewFake(start), armed: make(chan time.Duration, 64)}
}

func (c *armedClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := c.Fake.AfterFunc(d, f)
	c.armed <- d
	return t
}

// newRegistry returns a registry closed when the test ends.
func newRegistry(t *testing.T, opts *Options) *Registry {
	t.Helper()
	r := NewRegistry(opts)
	t.Cleanup(r.Close)
	return r
}

func TestNotifyReachesThePrincipalsSessions(t *testing.T) {
	r := newRegistry(t, nil)
	alice1, alice2, bob := newChanSink(), newChanSink(), newChanSink()
	r.Attach("alice", alice1)
	r.Attach("alice", alice2)
	r.Attach("bob", bob)

	n1, w1 := note(1)
	n2, w2 := note(2)
	n3, w3 := note(3)
	r.Notify("alice", n1)
	r.Notify("bob", n2)
	r.Notify("alice", n3)
	r.Notify("carol", n1) // no session: nothing happens

	alice1.expect(t, "alice's first session", w1, w3)
	alice2.expect(t, "alice's second session", w1, w3)
	bob.expect(t, "bob's session", w2)

	r.Close()
	alice1.expectNone(t, "alice's first session")
	alice2.expectNone(t, "alice's second session")
	bob.expectNone(t, "bob's session")
	if diff := cmp.Diff(Stats{Sent: 5}, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

func TestNotifyKeepsOrderPerSession(t *testing.T) {
	r := newRegistry(t, &Options{QueueSize: 200})
	a, b := newChanSink(), newChanSink()
	r.Attach("alice", a)
	r.Attach("alice", b)
	var want []received
	for i := range 200 {
		n, w := note(i)
		r.Notify("alice", n)
		want = append(want, w)
	}
	a.expect(t, "first session", want...)
	b.expect(t, "second session", want...)
}

func TestNotifyParams(t *testing.T) {
	r := newRegistry(t, nil)
	s := newChanSink()
	r.Attach("alice", s)
	r.Notify("alice", Notification{
		Method: mcpe.MethodSubscriptionExpired,
		Params: mcpe.ExpiredParams{SubscriptionID: "sub-1", Cursor: "9"},
	})
	// Params that cannot be encoded are dropped, not sent half-made.
	r.Notify("alice", Notification{Method: mcpe.MethodEvent, Params: func() {}})
	r.Notify("alice", Notification{
		Method: mcpe.MethodEvent,
		Params: mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "10", Event: json.RawMessage(`{"id":"e"}`)},
	})
	s.expect(t, "alice",
		received{Method: "events/subscription_expired", Params: `{"subscriptionId":"sub-1","cursor":"9"}`},
		received{Method: "events/event", Params: `{"subscriptionId":"sub-1","cursor":"10","event":{"id":"e"}}`},
	)
	r.Close()
	s.expectNone(t, "alice")
}

func TestLive(t *testing.T) {
	r := newRegistry(t, nil)
	live := func() map[string]int {
		return map[string]int{"alice": r.Live("alice"), "bob": r.Live("bob"), "carol": r.Live("carol")}
	}
	check := func(step string, want map[string]int) {
		t.Helper()
		if diff := cmp.Diff(want, live()); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", step, diff)
		}
	}
	check("empty", map[string]int{"alice": 0, "bob": 0, "carol": 0})
	detachA1 := r.Attach("alice", newChanSink())
	detachA2 := r.Attach("alice", newChanSink())
	detachB := r.Attach("bob", newChanSink())
	check("attached", map[string]int{"alice": 2, "bob": 1, "carol": 0})
	detachA1()
	check("one of alice's detached", map[string]int{"alice": 1, "bob": 1, "carol": 0})
	detachA1()
	check("detached twice", map[string]int{"alice": 1, "bob": 1, "carol": 0})
	detachA2()
	detachB()
	check("all detached", map[string]int{"alice": 0, "bob": 0, "carol": 0})
}

func TestDetachStopsDelivery(t *testing.T) {
	r := newRegistry(t, nil)
	gone, stays := newChanSink(), newChanSink()
	detach := r.Attach("alice", gone)
	r.Attach("alice", stays)

	n1, w1 := note(1)
	r.Notify("alice", n1)
	gone.expect(t, "detached session, before", w1)
	stays.expect(t, "remaining session", w1)

	detach()
	detach() // safe to call again
	n2, w2 := note(2)
	r.Notify("alice", n2)
	stays.expect(t, "remaining session", w2)

	// Once Close returns no writer is running: the detached session got
	// nothing after its detach.
	r.Close()
	gone.expectNone(t, "detached session")
	stays.expectNone(t, "remaining session")
}

// A session whose writes block holds up neither Notify nor any other
// session; once its queue is full, notifications for it are dropped and
// counted, and it later receives what was queued, in order.
func TestBlockedSessionDoesNotBlockOthers(t *testing.T) {
	const queueSize = 4
	const extra = 3 // notifications beyond what the blocked queue holds
	r := newRegistry(t, &Options{QueueSize: queueSize})
	blocked := newBlockingSink()
	sibling := newChanSink() // another session of the same principal
	other := newChanSink()   // a session of another principal
	r.Attach("alice", blocked)
	r.Attach("alice", sibling)
	r.Attach("bob", other)

	// The blocked session's writer takes notification 0 and blocks in it.
	n0, w0 := note(0)
	r.Notify("alice", n0)
	recv(t, blocked.entered, "the blocked sink to be called")
	sibling.expect(t, "sibling", w0)

	// Wait for each delivery to the other sessions, so that only the
	// blocked session's queue can fill.
	var wantBlocked []received
	for i := 1; i <= queueSize+extra; i++ {
		n, w := note(i)
		r.Notify("alice", n)
		sibling.expect(t, "sibling", w)
		nb, wb := note(1000 + i)
		r.Notify("bob", nb)
		other.expect(t, "other principal", wb)
		if i <= queueSize {
			wantBlocked = append(wantBlocked, w)
		}
	}
	if got := r.Stats().Dropped; got != extra {
		t.Errorf("Stats().Dropped = %d, want %d", got, extra)
	}

	close(blocked.release)
	blocked.expect(t, "blocked session", append([]received{w0}, wantBlocked...)...)

	r.Close()
	blocked.expectNone(t, "blocked session")
	want := Stats{
		Sent:    int64(1+queueSize) + int64(1+queueSize+extra) + int64(queueSize+extra),
		Dropped: extra,
	}
	if diff := cmp.Diff(want, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

// A session that cannot take notifications yet (an HTTP client whose event
// stream is not open) is retried with growing back-off while within
// StreamWait, and gets the notification once it recovers.
func TestFailingSinkRetriedUntilItRecovers(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: 10 * time.Second, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)

	n1, w1 := note(1)
	r.Notify("alice", n1)
	errNoStream := errors.New("no event stream yet")
	var backoffs []time.Duration
	for range 4 {
		sink.answer(t, w1, errNoStream)
		d := recv(t, clk.armed, "the writer to arm its back-off")
		backoffs = append(backoffs, d)
		clk.Advance(d)
	}
	sink.answer(t, w1, nil)
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	if diff := cmp.Diff(want, backoffs); diff != "" {
		t.Errorf("back-off mismatch (-want +got):\n%s", diff)
	}

	// The success (its write began 150ms after attach) restarts the stream
	// wait: a failure 10.05s after attach, 9.9s after the success, is
	// still retried.
	clk.Advance(9 * time.Second)
	n2, w2 := note(2)
	r.Notify("alice", n2)
	sink.answer(t, w2, errNoStream)
	if d := recv(t, clk.armed, "the writer to arm its back-off"); d != 10*time.Millisecond {
		t.Errorf("back-off after a success = %v, want it to start again at 10ms", d)
	}
	clk.Advance(900 * time.Millisecond)
	sink.answer(t, w2, errNoStream)
	clk.Advance(recv(t, clk.armed, "the writer to arm its back-off"))
	sink.answer(t, w2, nil)

	r.Close()
	if diff := cmp.Diff(Stats{Sent: 2}, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

// Back-off grows to one second and stays there.
func TestBackoffCap(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Hour, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)
	n1, w1 := note(1)
	r.Notify("alice", n1)
	var backoffs []time.Duration
	for range 10 {
		sink.answer(t, w1, errors.New("down"))
		d := recv(t, clk.armed, "the writer to arm its back-off")
		backoffs = append(backoffs, d)
		clk.Advance(d)
	}
	sink.answer(t, w1, nil)
	ms := time.Millisecond
	want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second, time.Second}
	if diff := cmp.Diff(want, backoffs); diff != "" {
		t.Errorf("back-off mismatch (-want +got):\n%s", diff)
	}
}

// Once StreamWait has passed without a successful write, a failed
// notification is dropped and counted, and the next one is tried once.
func TestFailingSinkDroppedAfterStreamWait(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Second, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)
	errNoStream := errors.New("no event stream")

	n1, w1 := note(1)
	r.Notify("alice", n1)
	sink.answer(t, w1, errNoStream)
	d := recv(t, clk.armed, "the writer to arm its back-off")
	clk.Advance(d)
	sink.answer(t, w1, errNoStream)
	clk.Advance(recv(t, clk.armed, "the writer to arm its back-off"))
	// Past StreamWait: this failure is final for notification 1.
	clk.Advance(time.Second)
	sink.answer(t, w1, errNoStream)

	// Notification 2 gets one attempt, no back-off, and is dropped too...
	n2, w2 := note(2)
	r.Notify("alice", n2)
	sink.answer(t, w2, errNoStream)
	// ...and notification 3 goes through when the session recovers.
	n3, w3 := note(3)
	r.Notify("alice", n3)
	sink.answer(t, w3, nil)

	r.Close()
	// Close arms closeWait for itself; nothing else may be armed.
	for len(clk.armed) > 0 {
		if d := <-clk.armed; d != closeWait {
			t.Errorf("a back-off of %v was armed after StreamWait had passed", d)
		}
	}
	if diff := cmp.Diff(Stats{Sent: 1, Failed: 2}, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

// StreamWait counts from the attach: a session that was never able to take
// a notification is not retried once StreamWait has passed since it
// attached.
func TestStreamWaitCountsFromAttach(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Second, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)
	clk.Advance(time.Second)

	n1, w1 := note(1)
	r.Notify("alice", n1)
	sink.answer(t, w1, errors.New("no event stream"))
	n2, w2 := note(2)
	r.Notify("alice", n2)
	sink.answer(t, w2, nil)

	r.Close()
	if diff := cmp.Diff(Stats{Sent: 1, Failed: 1}, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

// Detaching a session that is waiting out a back-off ends its writer
// without another attempt.
func TestDetachDuringBackoff(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Hour, Clock: clk})
	sink := newScriptedSink()
	detach := r.Attach("alice", sink)
	n1, w1 := note(1)
	r.Notify("alice", n1)
	sink.answer(t, w1, errors.New("no event stream"))
	recv(t, clk.armed, "the writer to arm its back-off")
	detach()
	r.Close() // returns once the writer has ended
	clk.Advance(time.Hour)
	select {
	case c := <-sink.calls:
		t.Errorf("write attempted after detach: %+v", c.received)
		c.reply <- nil
	default:
	}
	if diff := cmp.Diff(Stats{}, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

func TestClose(t *testing.T) {
	r := NewRegistry(nil)
	a, b := newChanSink(), newChanSink()
	detachA := r.Attach("alice", a)
	r.Attach("bob", b)
	n1, w1 := note(1)
	r.Notify("alice", n1)
	a.expect(t, "alice", w1)

	r.Close()
	if got := r.Live("alice") + r.Live("bob"); got != 0 {
		t.Errorf("%d sessions live after Close, want 0", got)
	}
	detachA() // detaching after Close is harmless
	r.Close() // so is a second Close

	// After Close, Attach registers nothing and Notify sends nothing.
	c := newChanSink()
	detachC := r.Attach("alice", c)
	detachC()
	if got := r.Live("alice"); got != 0 {
		t.Errorf("Live(alice) = %d after Attach on a closed registry, want 0", got)
	}
	r.Notify("alice", n1)
	r.Notify("bob", n1)
	a.expectNone(t, "alice")
	b.expectNone(t, "bob")
	c.expectNone(t, "session attached after Close")
}

// TestCloseGivesUpOnABlockedWriter checks that Close waits for a writer
// stuck in a write for closeWait on the registry's clock, and no longer.
func TestCloseGivesUpOnABlockedWriter(t *testing.T) {
	clk := newArmedClock()
	r := NewRegistry(&Options{Clock: clk})
	blocked := newBlockingSink()
	r.Attach("alice", blocked)
	n1, _ := note(1)
	r.Notify("alice", n1)
	recv(t, blocked.entered, "the sink to be called")
	defer close(blocked.release)

	closed := make(chan struct{})
	go func() {
		r.Close()
		close(closed)
	}()
	if d := recv(t, clk.armed, "Close to start waiting"); d != closeWait {
		t.Fatalf("Close waits %v, want %v", d, closeWait)
	}
	clk.Advance(closeWait - time.Millisecond)
	select {
	case <-closed:
		t.Fatal("Close returned before closeWait had passed, with a writer still blocked")
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	recv(t, closed, "Close to give up on the blocked writer")
}

func TestOptionsDefaults(t *testing.T) {
	for _, opts := range []*Options{nil, {}, {QueueSize: -1, WriteTimeout: -1, StreamWait: -1}} {
		r := NewRegistry(opts)
		got := r.opts
		if got.QueueSize != DefaultQueueSize || got.WriteTimeout != DefaultWriteTimeout || got.StreamWait != DefaultStreamWait ||
			got.Clock == nil || got.Logger == nil {
			t.Errorf("NewRegistry(%+v) options = %+v; want the defaults", opts, got)
		}
		r.Close()
	}
}
