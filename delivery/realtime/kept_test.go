package realtime

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// liveScriptedSink is a scriptedSink whose liveness the test sets.
type liveScriptedSink struct {
	*scriptedSink
	live *liveSink
}

func (s liveScriptedSink) Live() bool { return s.live.Live() }

// TestReplayQueuedAcrossADrop checks that messages waiting in a session's
// replay queue, in a write that fails while the session stops being live
// and a delivery passes it by, are sent once it is live again: nothing is
// lost and the writer does not fail (it once sliced a queue another
// goroutine had emptied).
func TestReplayQueuedAcrossADrop(t *testing.T) {
	clk := newArmedClock()
	r := newRegistry(t, &Options{StreamWait: time.Hour, Clock: clk})
	sink := liveScriptedSink{newScriptedSink(), &liveSink{chanSink: newChanSink()}}
	sink.live.live.Store(true)
	r.Attach("alice", sink)

	old, wOld := entry("alice", 1)
	r.Replay("alice", []subscriptions.InboxEntry{old})
	sink.answer(t, []received{wOld}, errors.New("connection reset"))
	d := recv(t, clk.armed, "the writer to arm its back-off")
	sink.live.live.Store(false)
	e1, _ := entry("alice", 2) // passes the session by: it is not live
	r.Deliver([]subscriptions.InboxEntry{e1})
	sink.live.live.Store(true)
	clk.Advance(d)
	sink.answer(t, []received{wOld}, nil)
	e2, w2 := entry("alice", 3)
	r.Deliver([]subscriptions.InboxEntry{e2})
	sink.answer(t, []received{w2}, nil)
}

// kept returns an entry like entry's, kept for its owner (a digest fired
// while no session was live).
func kept(principal string, n int) (subscriptions.InboxEntry, received) {
	e, w := entry(principal, n)
	e.Pending = true
	return e, w
}

// TestKeptSentWhenTheStreamOpens checks that what was kept for an owner is
// sent to its session when its event stream opens, however long after the
// session attached, in inbox order before what follows; that it is unmarked
// once sent, so that the next session is not sent it again; and that
// nothing else delivered before the session was live is sent.
func TestKeptSentWhenTheStreamOpens(t *testing.T) {
	in := &fakeInbox{}
	r := newRegistry(t, &Options{Inbox: in})
	before, _ := entry("alice", 1) // delivered with no session: events_poll's
	k1, w1 := kept("alice", 2)
	between, _ := entry("alice", 3)
	k2, w2 := kept("alice", 4)
	deliver(r, in, before, k1, between, k2)

	s := &liveSink{chanSink: newChanSink()}
	r.Attach("alice", s) // initialized; no event stream yet
	r.Wake("alice")
	notLive, _ := entry("alice", 5)
	deliver(r, in, notLive)
	if got := in.pending("alice"); len(got) != 2 {
		t.Fatalf("kept before any stream opened = %v; want both", got)
	}

	s.live.Store(true) // the stream opens
	r.Wake("alice")
	s.expect(t, "the session once its stream opened", w1, w2)
	after, wAfter := entry("alice", 6)
	deliver(r, in, after)
	s.expect(t, "the session", wAfter)

	next := newChanSink() // a later session: nothing kept is left
	r.Attach("alice", next)
	last, wLast := entry("alice", 7)
	deliver(r, in, last)
	s.expect(t, "the first session", wLast)
	next.expect(t, "the later session", wLast)
	r.Close()
	s.expectNone(t, "the first session")
	next.expectNone(t, "the later session")
	if got := in.pending("alice"); len(got) != 0 {
		t.Errorf("still kept after being sent: %v", got)
	}
}

// TestKeptStaysUntilALiveSessionIsSent checks that a delivery kept for an
// owner stays kept while its sessions are not live (a session dropped
// without ending, a listen that does not take MCPE notifications), and
// that one that is live when it is delivered is sent it and unmarks it.
func TestKeptStaysUntilALiveSessionIsSent(t *testing.T) {
	in := &fakeInbox{}
	r := newRegistry(t, &Options{Inbox: in})
	dropped := &liveSink{chanSink: newChanSink()}
	r.Attach("alice", dropped)
	resourcesOnly := &keepingSink{chanSink: newChanSink()}
	r.Attach("alice", resourcesOnly)
	k1, w1 := kept("alice", 1)
	deliver(r, in, k1)
	resourcesOnly.expect(t, "the listen for resources", w1)
	if diff := cmp.Diff([]int64{k1.Seq}, in.pending("alice")); diff != "" {
		t.Errorf("kept mismatch (-want +got):\n%s", diff)
	}
	live := newChanSink()
	r.Attach("alice", live)
	live.expect(t, "a session that attaches live", w1)
	k2, w2 := kept("alice", 2)
	deliver(r, in, k2)
	live.expect(t, "the live session", w2)
	resourcesOnly.expect(t, "the listen for resources", w2)
	r.Close()
	if got := in.pending("alice"); len(got) != 0 {
		t.Errorf("still kept after being sent: %v", got)
	}
	dropped.expectNone(t, "the dropped session")
}

// keepingSink is a chanSink that does not take what was kept.
type keepingSink struct{ *chanSink }

func (keepingSink) Keeps() bool { return false }

// TestKeptAreBounded checks that a session that becomes live is sent only
// the most recent of what was kept, oldest first, and that the rest is
// unmarked with them.
func TestKeptAreBounded(t *testing.T) {
	in := &fakeInbox{}
	r := newRegistry(t, &Options{Inbox: in})
	var want []received
	for i := range keptDigests + 3 {
		e, w := kept("alice", i)
		deliver(r, in, e)
		if i >= 3 {
			want = append(want, w)
		}
	}
	s := newChanSink()
	r.Attach("alice", s)
	s.expect(t, "alice", want...)
	r.Close()
	s.expectNone(t, "alice")
	if got := in.pending("alice"); len(got) != 0 {
		t.Errorf("still kept after the session was sent the newest: %v", got)
	}
}
