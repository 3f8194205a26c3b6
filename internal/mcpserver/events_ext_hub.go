package mcpserver

import (
	"context"
	"sync"

	"github.com/mcpe-server/mcpe-server/delivery/realtime"
)

// This file is how events/streams hear of deliveries: one attachment to the
// realtime registry per principal with streams (a hubSink), which wakes the
// streams of the subscriptions a delivery is for. Attaching each stream on
// its own would wake every stream of the principal, each in its own writer,
// at every delivery: with a thousand streams, a thousand inbox reads per
// event.

// streamHub keeps, per principal, the streams waiting for deliveries.
type streamHub struct {
	sessions interface {
		Attach(principal string, sink realtime.Sink) (detach func())
	}
	mu  sync.Mutex
	hub map[string]*principalStreams
}

// principalStreams are the streams of one principal, by subscription.
type principalStreams struct {
	detach func()
	bySub  map[string]map[*streamWake]struct{}
	count  int
}

// streamWake wakes one stream, and says where in the inbox the deliveries
// for it start: the hub sees every delivery for the stream's subscription
// from the moment the stream is added, in order, so the entries before the
// first one it saw are for other subscriptions, and the stream need not
// read them.
type streamWake struct {
	ch chan struct{}
	mu sync.Mutex
	// from is the seq of the first delivery for the stream not yet taken
	// (0: none); all is set when the hub cannot tell (events/missed).
	from int64
	all  bool
}

func newStreamWake() *streamWake { return &streamWake{ch: make(chan struct{}, 1)} }

func (w *streamWake) note(seq int64, all bool) {
	w.mu.Lock()
	if all || seq <= 0 {
		w.all = true
	} else if w.from == 0 || seq < w.from {
		w.from = seq
	}
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// skipTo returns the seq a stream positioned at seq may move to before
// reading (what lies between is for other subscriptions), and forgets what
// it noted.
func (w *streamWake) skipTo(seq int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	from, all := w.from, w.all
	w.from, w.all = 0, false
	if all || from == 0 || from-1 <= seq {
		return seq
	}
	return from - 1
}

func newStreamHub(sessions interface {
	Attach(string, realtime.Sink) func()
}) *streamHub {
	return &streamHub{sessions: sessions, hub: make(map[string]*principalStreams)}
}

// maxStreamsPerPrincipal bounds the events/streams one principal may have
// open at once: each holds a request, its goroutine and a timer.
const maxStreamsPerPrincipal = 10000

// add registers wake for the deliveries of principal's subscription sub,
// and returns the function that removes it; ok is false, and nothing is
// added, when principal has maxStreamsPerPrincipal streams already.
func (h *streamHub) add(principal, sub string, wake *streamWake) (remove func(), ok bool) {
	h.mu.Lock()
	ps := h.hub[principal]
	if ps != nil && ps.count >= maxStreamsPerPrincipal {
		h.mu.Unlock()
		return func() {}, false
	}
	attach := ps == nil
	if attach {
		ps = &principalStreams{bySub: make(map[string]map[*streamWake]struct{})}
		h.hub[principal] = ps
	}
	if ps.bySub[sub] == nil {
		ps.bySub[sub] = make(map[*streamWake]struct{})
	}
	ps.bySub[sub][wake] = struct{}{}
	ps.count++
	h.mu.Unlock()
	if attach {
		detach := h.sessions.Attach(principal, hubSink{h: h, principal: principal})
		h.mu.Lock()
		if h.hub[principal] == ps {
			ps.detach = detach
			detach = nil
		}
		h.mu.Unlock()
		if detach != nil {
			detach() // every stream of the principal ended meanwhile
		}
	}
	var once sync.Once
	return func() { once.Do(func() { h.remove(principal, sub, wake, ps) }) }, true
}

func (h *streamHub) remove(principal, sub string, wake *streamWake, ps *principalStreams) {
	h.mu.Lock()
	delete(ps.bySub[sub], wake)
	if len(ps.bySub[sub]) == 0 {
		delete(ps.bySub, sub)
	}
	ps.count--
	var detach func()
	if ps.count == 0 && h.hub[principal] == ps {
		delete(h.hub, principal)
		detach = ps.detach
	}
	h.mu.Unlock()
	if detach != nil {
		detach()
	}
}

// wake wakes the streams of principal that msgs are for: those of the
// messages' subscriptions, and all of them for a message that names none
// (events/missed).
func (h *streamHub) wake(principal string, msgs []realtime.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps := h.hub[principal]
	if ps == nil {
		return
	}
	for _, m := range msgs {
		if m.Subscription == "" {
			for _, streams := range ps.bySub {
				for w := range streams {
					w.note(0, true)
				}
			}
			continue
		}
		for w := range ps.bySub[m.Subscription] {
			w.note(m.Seq, false)
		}
	}
}

// hubSink is the registry attachment of one principal's streams.
type hubSink struct {
	h         *streamHub
	principal string
}

var _ realtime.WakeSink = hubSink{}

// OnlyWakes marks hubSink as a realtime.WakeSink: it is no session, and
// sends nothing itself.
func (hubSink) OnlyWakes() {}

func (s hubSink) Write(_ context.Context, msgs []realtime.Message) error {
	s.h.wake(s.principal, msgs)
	return nil
}
