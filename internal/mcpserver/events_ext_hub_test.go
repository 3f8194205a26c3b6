package mcpserver

import (
	"context"
	"testing"

	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// attachments counts what is attached to it, by principal, and keeps the
// sinks.
type attachments struct {
	sinks map[string]realtime.Sink
}

func (a *attachments) Attach(principal string, sink realtime.Sink) func() {
	a.sinks[principal] = sink
	return func() { delete(a.sinks, principal) }
}

func woken(w *streamWake) bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

// TestStreamHubWakesOnlyTheStreamsOfADelivery checks that a delivery wakes
// the streams of the subscriptions it is for, an events/missed all of the
// principal's, and that the principal's attachment goes with its last
// stream.
func TestStreamHubWakesOnlyTheStreamsOfADelivery(t *testing.T) {
	a := &attachments{sinks: map[string]realtime.Sink{}}
	h := newStreamHub(a)
	one, two, three := newStreamWake(), newStreamWake(), newStreamWake()
	removeOne, _ := h.add("alice", "sub-1", one)
	removeTwo, _ := h.add("alice", "sub-2", two)
	removeThree, _ := h.add("alice", "sub-2", three)
	if len(a.sinks) != 1 {
		t.Fatalf("%d attachments for one principal's streams; want 1", len(a.sinks))
	}
	sink := a.sinks["alice"]
	sink.Write(context.Background(), []realtime.Message{{Method: mcpe.MethodEvent, Subscription: "sub-2", Seq: 40},
		{Method: mcpe.MethodEvent, Subscription: "sub-2", Seq: 41}})
	if woken(one) || !woken(two) || !woken(three) {
		t.Error("a delivery for sub-2 did not wake exactly the streams of sub-2")
	}
	// A stream of sub-2 at 10 may skip to 39: what lies between is for
	// other subscriptions; a stream already past the delivery stays.
	if got := two.skipTo(10); got != 39 {
		t.Errorf("skipTo(10) = %d; want 39", got)
	}
	if got := three.skipTo(45); got != 45 {
		t.Errorf("skipTo(45) = %d; want 45 (no going back)", got)
	}
	if got := two.skipTo(10); got != 10 {
		t.Errorf("a second skipTo(10) = %d; want 10 (nothing noted since)", got)
	}
	sink.Write(context.Background(), []realtime.Message{{Method: mcpe.MethodMissed}})
	if !woken(one) || !woken(two) || !woken(three) {
		t.Error("events/missed did not wake every stream of the principal")
	}
	if got := one.skipTo(10); got != 10 {
		t.Errorf("after events/missed, skipTo(10) = %d; want 10 (read everything)", got)
	}
	removeOne()
	removeTwo()
	removeOne() // twice is harmless
	if len(a.sinks) != 1 {
		t.Fatal("the attachment went while a stream was left")
	}
	removeThree()
	if len(a.sinks) != 0 {
		t.Fatal("the attachment stayed after the last stream ended")
	}
}

// TestStreamHubBoundsStreamsPerPrincipal checks that one principal cannot
// open more than maxStreamsPerPrincipal streams, and that another still can.
func TestStreamHubBoundsStreamsPerPrincipal(t *testing.T) {
	h := newStreamHub(&attachments{sinks: map[string]realtime.Sink{}})
	var removes []func()
	for i := range maxStreamsPerPrincipal {
		remove, ok := h.add("alice", "sub", newStreamWake())
		if !ok {
			t.Fatalf("stream %d refused; want %d allowed", i, maxStreamsPerPrincipal)
		}
		removes = append(removes, remove)
	}
	if _, ok := h.add("alice", "sub", newStreamWake()); ok {
		t.Fatal("a stream past the bound was added")
	}
	if _, ok := h.add("bob", "sub", newStreamWake()); !ok {
		t.Fatal("another principal's stream was refused")
	}
	removes[0]()
	if _, ok := h.add("alice", "sub", newStreamWake()); !ok {
		t.Fatal("a stream was refused after one ended")
	}
}
