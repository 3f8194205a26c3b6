package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
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

// seqs hands out increasing inbox positions, as commits do.
var seqs atomic.Int64

// entry returns an events/event delivery numbered n for principal and one
// subscription, with a fresh position, and how a sink receives it.
func entry(principal string, n int) (subscriptions.InboxEntry, received) {
	seq := seqs.Add(1)
	ev := json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))
	e := subscriptions.InboxEntry{Seq: seq, Principal: principal, SubscriptionIDs: []string{"sub-" + principal}, Kind: mcpe.InboxEvent, Event: ev}
	return e, received{Method: mcpe.MethodEvent, Params: fmt.Sprintf(`{"subscriptionId":"sub-%s","cursor":"%d","event":%s}`, principal, seq, ev)}
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

// chanSink hands every notification to a channel, and counts writes.
type chanSink struct {
	got    chan received
	writes atomic.Int64
}

func newChanSink() *chanSink { return &chanSink{got: make(chan received, 4096)} }

func (s *chanSink) Write(_ context.Context, msgs []Message) error {
	s.writes.Add(1)
	for _, m := range msgs {
		s.got <- received{Method: m.Method, Params: string(m.Params)}
	}
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

// blockingSink blocks in its first Write until release is closed, after
// telling the test through entered. Later calls do not block.
type blockingSink struct {
	*chanSink
	entered chan struct{}
	release chan struct{}
	first   bool
}

func newBlockingSink() *blockingSink {
	return &blockingSink{chanSink: newChanSink(), entered: make(chan struct{}), release: make(chan struct{}), first: true}
}

func (s *blockingSink) Write(ctx context.Context, msgs []Message) error {
	// Only the session's writer calls Write, so first needs no lock.
	if s.first {
		s.first = false
		close(s.entered)
		<-s.release
	}
	return s.chanSink.Write(ctx, msgs)
}

// call is one Write of a scriptedSink, waiting for the test's answer.
type call struct {
	got   []received
	reply chan error
}

// scriptedSink lets the test answer each Write with success or an error.
type scriptedSink struct{ calls chan call }

func newScriptedSink() *scriptedSink { return &scriptedSink{calls: make(chan call)} }

func (s *scriptedSink) Write(ctx context.Context, msgs []Message) error {
	c := call{reply: make(chan error)}
	for _, m := range msgs {
		c.got = append(c.got, received{Method: m.Method, Params: string(m.Params)})
	}
	s.calls <- c
	return <-c.reply
}

// answer waits for the next Write, checks what it carries and answers it.
func (s *scriptedSink) answer(t *testing.T, want []received, err error) {
	t.Helper()
	c := recv(t, s.calls, "a write attempt")
	if diff := cmp.Diff(want, c.got); diff != "" {
		t.Errorf("write attempt: mismatch (-want +got):\n%s", diff)
	}
	c.reply <- err
}

// liveSink is a chanSink whose liveness the test sets.
type liveSink struct {
	*chanSink
	live atomic.Bool
}

func (s *liveSink) Live() bool { return s.live.Load() }

// armedClock is a fake clock that reports each timer it arms, so a test
// advances it only once the writer is waiting on it.
type armedClock struct {
	*clocktest.Fake
	armed chan time.Duration
}

func newArmedClock() *armedClock {
	return &armedClock{Fake: clocktest.NewFake(start), armed: make(chan time.Duration, 64)}
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

// fakeInbox is an Inbox over the entries the test delivers.
type fakeInbox struct {
	mu      sync.Mutex
	entries []subscriptions.InboxEntry
	pruned  map[string]int64
	reads   int
}

func (f *fakeInbox) add(es ...subscriptions.InboxEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, es...)
}

func (f *fakeInbox) ReadInbox(_ context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []subscriptions.InboxEntry
	for _, e := range f.entries {
		if e.Principal == principal && e.Seq > after && e.Seq > f.pruned[principal] {
			if len(out) == limit {
				return out, true, nil
			}
			out = append(out, e)
		}
	}
	return out, false, nil
}

func (f *fakeInbox) PrunedThrough(_ context.Context, principal string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pruned[principal], nil
}

func (f *fakeInbox) PendingEntries(_ context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []subscriptions.InboxEntry
	for _, e := range f.entries {
		if e.Principal == principal && e.Pending {
			out = append(out, e)
		}
	}
	return out[max(0, len(out)-limit):], nil
}

func (f *fakeInbox) ClearPending(_ context.Context, principal string, seq int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range f.entries {
		if e.Principal == principal && e.Seq <= seq {
			f.entries[i].Pending = false
		}
	}
	return nil
}

func (f *fakeInbox) LatestInbox(_ context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []subscriptions.InboxEntry
	for i := len(f.entries) - 1; i >= 0 && len(out) < limit; i-- {
		if f.entries[i].Principal == principal {
			out = append(out, f.entries[i])
		}
	}
	return out, nil
}

// pending lists the seqs of principal's entries still kept.
func (f *fakeInbox) pending(principal string) []int64 {
	es, _ := f.PendingEntries(context.Background(), principal, len(f.entries)+1)
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// deliver commits entries to the inbox and hands them to the registry, as
// the service does.
func deliver(r *Registry, in *fakeInbox, es ...subscriptions.InboxEntry) {
	if in != nil {
		in.add(es...)
	}
	r.Deliver(es)
}

func TestDeliverReachesThePrincipalsSessions(t *testing.T) {
	r := newRegistry(t, nil)
	alice1, alice2, bob := newChanSink(), newChanSink(), newChanSink()
	r.Attach("alice", alice1)
	r.Attach("alice", alice2)
	r.Attach("bob", bob)

	e1, w1 := entry("alice", 1)
	e2, w2 := entry("bob", 2)
	e3, w3 := entry("alice", 3)
	e4, _ := entry("carol", 4) // no session: nothing happens
	r.Deliver([]subscriptions.InboxEntry{e1, e2, e3, e4})

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

// On servers sharing a store each hands over every entry it commits: those
// of principals with no session here are not made into notifications.
func TestDeliverRendersOnlyWhatASessionHereIsOwed(t *testing.T) {
	var mu sync.Mutex
	rendered := map[string]int{}
	r := newRegistry(t, &Options{Rendering: func(id string) (string, mcpe.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		rendered[id]++
		return "", mcpe.Delivery{}
	}})
	alice := newChanSink()
	r.Attach("alice", alice)
	e1, w1 := entry("alice", 1)
	e2, _ := entry("bob", 2)
	e3, _ := entry("carol", 3)
	r.Deliver([]subscriptions.InboxEntry{e1, e2, e3})
	r.Deliver([]subscriptions.InboxEntry{e1}) // already handed over
	alice.expect(t, "alice's session", w1)
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{}
	for _, id := range e1.SubscriptionIDs {
		want[id] = 1
	}
	if diff := cmp.Diff(want, rendered); diff != "" {
		t.Errorf("notifications made, by subscription (-want +got):\n%s", diff)
	}
}

// A session gets what is delivered after it attached, in order, several
// notifications to a write when they wait together.
func TestDeliverKeepsOrderAndBatches(t *testing.T) {
	r := newRegistry(t, nil)
	blocked := newBlockingSink()
	r.Attach("alice", blocked)
	first, w0 := entry("alice", 0)
	r.Deliver([]subscriptions.InboxEntry{first})
	recv(t, blocked.entered, "the first write")
	want := []received{w0}
	for i := 1; i <= 200; i++ {
		e, w := entry("alice", i)
		r.Deliver([]subscriptions.InboxEntry{e})
		want = append(want, w)
	}
	close(blocked.release)
	blocked.expect(t, "alice", want...)
	if n := blocked.writes.Load(); n > 3 {
		t.Errorf("%d writes for 201 notifications that waited together; want them batched", n)
	}
}

// An entry of several subscriptions is one notification for each.
func TestDeliverOneNotificationPerSubscription(t *testing.T) {
	r := newRegistry(t, nil)
	s := newChanSink()
	r.Attach("alice", s)
	seq := seqs.Add(1)
	r.Deliver([]subscriptions.InboxEntry{
		{Seq: seq, Principal: "alice", SubscriptionIDs: []string{"s1", "s2"}, Kind: mcpe.InboxEvent, Event: json.RawMessage(`{"id":"e"}`)},
	})
	c := fmt.Sprint(seq)
	s.expect(t, "alice",
		received{Method: "events/event", Params: `{"subscriptionId":"s1","cursor":"` + c + `","event":{"id":"e"}}`},
		received{Method: "events/event", Params: `{"subscriptionId":"s2","cursor":"` + c + `","event":{"id":"e"}}`},
	)
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

// A session that is not live (an HTTP session without an event stream) is
// not written to, does not count as connected, and gets what comes once it
// is live.
func TestSessionNotLiveIsSkipped(t *testing.T) {
	r := newRegistry(t, nil)
	s := &liveSink{chanSink: newChanSink()}
	r.Attach("alice", s)
	if r.Connected("alice") {
		t.Error("a session that is not live counts as connected")
	}
	e1, _ := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	if r.Full("alice") || len(r.Cursors()) != 0 {
		t.Error("a session that is not live holds a backlog")
	}
	s.live.Store(true)
	if !r.Connected("alice") {
		t.Error("a live session does not count as connected")
	}
	e2, w2 := entry("alice", 2)
	r.Deliver([]subscriptions.InboxEntry{e2})
	s.expect(t, "alice", w2)
	r.Close()
	s.expectNone(t, "alice")
}

func TestDetachStopsDelivery(t *testing.T) {
	r := newRegistry(t, nil)
	gone, stays := newChanSink(), newChanSink()
	detach := r.Attach("alice", gone)
	r.Attach("alice", stays)

	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	gone.expect(t, "detached session, before", w1)
	stays.expect(t, "remaining session", w1)

	detach()
	detach() // safe to call again
	e2, w2 := entry("alice", 2)
	r.Deliver([]subscriptions.InboxEntry{e2})
	stays.expect(t, "remaining session", w2)

	r.Close()
	gone.expectNone(t, "detached session")
	stays.expectNone(t, "remaining session")
}

// A session whose writes block holds up neither Deliver nor any other
// session; it lags, and when its writes resume it gets everything in
// order, what fell out of the window read from the inbox: it loses nothing.
func TestBlockedSessionLagsAndLosesNothing(t *testing.T) {
	const window = 4
	in := &fakeInbox{}
	r := newRegistry(t, &Options{WindowEntries: window, Inbox: in})
	blocked := newBlockingSink()
	sibling := newChanSink() // another session of the same principal
	other := newChanSink()   // a session of another principal
	r.Attach("alice", blocked)
	r.Attach("alice", sibling)
	r.Attach("bob", other)

	e0, w0 := entry("alice", 0)
	deliver(r, in, e0)
	recv(t, blocked.entered, "the blocked sink to be called")
	sibling.expect(t, "sibling", w0)
	want := []received{w0}
	for i := 1; i <= 10*window; i++ {
		e, w := entry("alice", i)
		deliver(r, in, e)
		sibling.expect(t, "sibling", w)
		eb, wb := entry("bob", 1000+i)
		deliver(r, in, eb)
		other.expect(t, "other principal", wb)
		want = append(want, w)
	}
	// e0, in the write that blocks, is not sent until the write returns.
	// Other sessions may be between their write and its bookkeeping.
	var alice []Lag
	for _, l := range r.Lags() {
		if l.Principal == "alice" && l.Deliveries > 1 {
			alice = append(alice, l)
		}
	}
	if len(alice) != 1 || alice[0].Deliveries != 10*window+1 {
		t.Errorf("alice's Lags = %+v; want one session %d behind", alice, 10*window+1)
	}
	close(blocked.release)
	blocked.expect(t, "blocked session", want...)
	if in.reads == 0 {
		t.Error("the session that fell behind the window did not read the inbox")
	}
	r.Close()
	blocked.expectNone(t, "blocked session")
}

// A live session owed as much as its bound
// makes its owner Full until it catches up, and retention is told to keep
// what it has not been sent.
func TestBacklogRefuse(t *testing.T) {
	in := &fakeInbox{}
	r := newRegistry(t, &Options{BacklogEntries: 3, Inbox: in})
	blocked := newBlockingSink()
	r.Attach("alice", blocked)
	e0, w0 := entry("alice", 0)
	deliver(r, in, e0)
	recv(t, blocked.entered, "the blocked sink to be called")
	// The delivery being written counts until it is written.
	want := []received{w0}
	for i := 1; i <= 2; i++ {
		if r.Full("alice") {
			t.Fatalf("Full after %d deliveries; the bound is 3", i)
		}
		e, w := entry("alice", i)
		deliver(r, in, e)
		want = append(want, w)
	}
	if !r.Full("alice") || r.Full("bob") {
		t.Errorf("Full(alice) = %t, Full(bob) = %t; want alice full", r.Full("alice"), r.Full("bob"))
	}
	if c, ok := r.Cursors()["alice"]; !ok || c >= e0.Seq {
		t.Errorf("Cursors() = %v; want alice kept from before %d", r.Cursors(), e0.Seq)
	}
	close(blocked.release)
	blocked.expect(t, "alice", want...)
	deadline := time.Now().Add(waitLimit)
	for r.Full("alice") {
		if time.Now().After(deadline) {
			t.Fatal("still full after catching up")
		}
		time.Sleep(time.Millisecond)
	}
}

// A session behind what retention kept is told once where to poll from,
// then gets what follows.
func TestRetentionGapIsNoticed(t *testing.T) {
	in := &fakeInbox{pruned: map[string]int64{}}
	r := newRegistry(t, &Options{WindowEntries: 1, Inbox: in})
	blocked := newBlockingSink()
	r.Attach("alice", blocked)
	e0, w0 := entry("alice", 0)
	deliver(r, in, e0)
	recv(t, blocked.entered, "the blocked sink to be called")
	e1, _ := entry("alice", 1)
	e2, _ := entry("alice", 2)
	e3, w3 := entry("alice", 3)
	deliver(r, in, e1, e2, e3)
	in.mu.Lock()
	in.pruned["alice"] = e2.Seq
	in.mu.Unlock()
	close(blocked.release)
	notice := received{Method: mcpe.MethodMissed, Params: fmt.Sprintf(`{"fromCursor":"%d","toCursor":"%d","reason":"retention"}`, e0.Seq, e2.Seq)}
	blocked.expect(t, "alice", w0, notice, w3)
}

// Replay sends entries kept while the owner was away, before what follows.
func TestReplay(t *testing.T) {
	r := newRegistry(t, nil)
	s := newChanSink()
	r.Attach("alice", s)
	old, wOld := entry("alice", 1)
	r.Replay("alice", []subscriptions.InboxEntry{old})
	e, w := entry("alice", 2)
	r.Deliver([]subscriptions.InboxEntry{e})
	s.expect(t, "alice", wOld, w)
	r.Replay("bob", []subscriptions.InboxEntry{old}) // no session: nothing
}

// A session that cannot take notifications yet (an HTTP client whose event
// stream is not open) is retried with growing back-off while within
// StreamWait, and gets them once it recovers.
func TestFailingSinkRetriedUntilItRecovers(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: 10 * time.Second, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)

	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	errNoStream := errors.New("no event stream yet")
	var backoffs []time.Duration
	for range 4 {
		sink.answer(t, []received{w1}, errNoStream)
		d := recv(t, clk.armed, "the writer to arm its back-off")
		backoffs = append(backoffs, d)
		clk.Advance(d)
	}
	sink.answer(t, []received{w1}, nil)
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	if diff := cmp.Diff(want, backoffs); diff != "" {
		t.Errorf("back-off mismatch (-want +got):\n%s", diff)
	}

	// The success (its write began 150ms after attach) restarts the stream
	// wait: a failure 10.05s after attach, 9.9s after the success, is
	// still retried.
	clk.Advance(9 * time.Second)
	e2, w2 := entry("alice", 2)
	r.Deliver([]subscriptions.InboxEntry{e2})
	sink.answer(t, []received{w2}, errNoStream)
	if d := recv(t, clk.armed, "the writer to arm its back-off"); d != 10*time.Millisecond {
		t.Errorf("back-off after a success = %v, want it to start again at 10ms", d)
	}
	clk.Advance(900 * time.Millisecond)
	sink.answer(t, []received{w2}, errNoStream)
	clk.Advance(recv(t, clk.armed, "the writer to arm its back-off"))
	sink.answer(t, []received{w2}, nil)

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
	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	var backoffs []time.Duration
	for range 10 {
		sink.answer(t, []received{w1}, errors.New("down"))
		d := recv(t, clk.armed, "the writer to arm its back-off")
		backoffs = append(backoffs, d)
		clk.Advance(d)
	}
	sink.answer(t, []received{w1}, nil)
	ms := time.Millisecond
	want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second, time.Second}
	if diff := cmp.Diff(want, backoffs); diff != "" {
		t.Errorf("back-off mismatch (-want +got):\n%s", diff)
	}
}

// Once StreamWait has passed without a successful write, the session is
// given up: its client is gone. It is counted and no longer connected.
func TestFailingSinkGivenUpAfterStreamWait(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Second, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)
	errNoStream := errors.New("no event stream")

	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	sink.answer(t, []received{w1}, errNoStream)
	clk.Advance(recv(t, clk.armed, "the writer to arm its back-off"))
	sink.answer(t, []received{w1}, errNoStream)
	clk.Advance(recv(t, clk.armed, "the writer to arm its back-off"))
	clk.Advance(time.Second) // past StreamWait: this failure is final
	sink.answer(t, []received{w1}, errNoStream)

	deadline := time.Now().Add(waitLimit)
	for r.Live("alice") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session was not given up")
		}
		time.Sleep(time.Millisecond)
	}
	e2, _ := entry("alice", 2)
	r.Deliver([]subscriptions.InboxEntry{e2})
	r.Close()
	select {
	case c := <-sink.calls:
		t.Errorf("write attempted after the session was given up: %+v", c.got)
		c.reply <- nil
	default:
	}
	if diff := cmp.Diff(Stats{Failed: 1}, r.Stats()); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

// StreamWait counts from the attach: a session that was never able to take
// a notification is given up at its first failure once StreamWait has
// passed since it attached.
func TestStreamWaitCountsFromAttach(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Second, Clock: clk})
	sink := newScriptedSink()
	r.Attach("alice", sink)
	clk.Advance(time.Second)

	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	sink.answer(t, []received{w1}, errors.New("no event stream"))
	r.Close()
	if diff := cmp.Diff(Stats{Failed: 1}, r.Stats()); diff != "" {
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
	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	sink.answer(t, []received{w1}, errors.New("no event stream"))
	recv(t, clk.armed, "the writer to arm its back-off")
	detach()
	r.Close() // returns once the writer has ended
	clk.Advance(time.Hour)
	select {
	case c := <-sink.calls:
		t.Errorf("write attempted after detach: %+v", c.got)
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
	e1, w1 := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	a.expect(t, "alice", w1)

	r.Close()
	if got := r.Live("alice") + r.Live("bob"); got != 0 {
		t.Errorf("%d sessions live after Close, want 0", got)
	}
	detachA() // detaching after Close is harmless
	r.Close() // so is a second Close

	// After Close, Attach registers nothing and Deliver sends nothing.
	c := newChanSink()
	detachC := r.Attach("alice", c)
	detachC()
	if got := r.Live("alice"); got != 0 {
		t.Errorf("Live(alice) = %d after Attach on a closed registry, want 0", got)
	}
	e2, _ := entry("alice", 2)
	r.Deliver([]subscriptions.InboxEntry{e2})
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
	e1, _ := entry("alice", 1)
	r.Deliver([]subscriptions.InboxEntry{e1})
	recv(t, blocked.entered, "the sink to be called")
	defer close(blocked.release)
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	if d := recv(t, clk.armed, "Close to arm its wait"); d != closeWait {
		t.Fatalf("Close armed %v, want %v", d, closeWait)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before its wait was over")
	default:
	}
	clk.Advance(closeWait)
	recv(t, closed, "Close to return")
}

func TestOptionsDefaults(t *testing.T) {
	r := NewRegistry(nil)
	defer r.Close()
	o := r.opts
	got := []any{o.WindowEntries, o.WindowBytes, o.BatchMessages, o.WriteTimeout, o.StreamWait, o.BacklogEntries}
	want := []any{DefaultWindowEntries, DefaultWindowBytes, DefaultBatchMessages, DefaultWriteTimeout, DefaultStreamWait, int64(DefaultBacklogEntries)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
}

// TestArrivedTellsNewPrincipals checks that Arrived receives when a
// principal with no session here gets one, and not for a second session of
// a principal already here.
func TestArrivedTellsNewPrincipals(t *testing.T) {
	r := newRegistry(t, nil)
	arrived := func() bool {
		select {
		case <-r.Arrived():
			return true
		default:
			return false
		}
	}
	if arrived() {
		t.Fatal("Arrived received before any session")
	}
	detach := r.Attach("alice", newChanSink())
	if !arrived() {
		t.Fatal("Arrived did not receive for alice's first session")
	}
	r.Attach("alice", newChanSink())
	if arrived() {
		t.Fatal("Arrived received for alice's second session")
	}
	detach()
	r.Attach("bob", newChanSink())
	if !arrived() {
		t.Fatal("Arrived did not receive for bob's first session")
	}
	r.Close()
}

// gatedInbox holds PendingEntries (what an Attach reads of what was kept)
// until gate is closed, telling entered when it is called.
type gatedInbox struct {
	*fakeInbox
	entered, gate chan struct{}
}

func (g gatedInbox) PendingEntries(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.fakeInbox.PendingEntries(ctx, principal, limit)
}

// TestReplayWhileAttaching: while Attach still reads what was kept for the
// owner, the session counts as Connected (what Replay checks), and a replay
// made then is sent once Attach is done.
func TestReplayWhileAttaching(t *testing.T) {
	in := gatedInbox{&fakeInbox{}, make(chan struct{}), make(chan struct{})}
	r := newRegistry(t, &Options{Inbox: in})
	sink := newChanSink()
	attached := make(chan struct{})
	go func() {
		r.Attach("alice", sink)
		close(attached)
	}()
	recv(t, in.entered, "Attach to read what was kept")
	if !r.Connected("alice") {
		t.Error("not Connected while Attach reads what was kept: a replay then would be refused, though it is sent")
	}
	old, w := entry("alice", 1)
	r.Replay("alice", []subscriptions.InboxEntry{old})
	close(in.gate)
	recv(t, attached, "Attach to return")
	sink.expect(t, "alice", w)
}
