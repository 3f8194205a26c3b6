package adaptertest

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Publisher is a subscriptions.Publisher that validates events as the
// Service does, gives them predictable IDs (00000000-0000-4000-8000-
// 000000000001, then ...002), and accepts a type and sourceEventId once,
// answering a repeat as a duplicate of the first. It is safe for concurrent
// use; set its fields before the first Publish.
type Publisher struct {
	// Clock stamps events that come without a time; nil is the wall
	// clock.
	Clock clock.Clock
	// Fail, when set, can refuse an event before it is stored.
	Fail func(ev mcpe.Event) error

	mu     sync.Mutex
	calls  int
	events []mcpe.Event
	seen   map[string]string
}

// Publish stores ev unless Fail refuses it, it is invalid, or it repeats
// one stored before.
func (p *Publisher) Publish(_ context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.Fail != nil {
		if err := p.Fail(ev); err != nil {
			return subscriptions.PublishResult{}, err
		}
	}
	ev.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(p.events)+1)
	now := cmp.Or[clock.Clock](p.Clock, clock.Real{}).Now()
	if err := subscriptions.NormalizeEvent(&ev, now); err != nil {
		return subscriptions.PublishResult{}, err
	}
	key := ev.Type + "\x00" + ev.Metadata.SourceEventID
	if id, ok := p.seen[key]; ok && ev.Metadata.SourceEventID != "" {
		return subscriptions.PublishResult{EventID: id, Duplicate: true}, nil
	}
	if p.seen == nil {
		p.seen = make(map[string]string)
	}
	p.seen[key] = ev.ID
	p.events = append(p.events, ev)
	return subscriptions.PublishResult{EventID: ev.ID}, nil
}

// Published returns the events stored so far, in order.
func (p *Publisher) Published() []mcpe.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]mcpe.Event(nil), p.events...)
}

// Calls counts the calls of Publish, refused ones included.
func (p *Publisher) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// ValidatingPublisher accepts every valid event and stores nothing, for fuzz
// tests and allocation bounds.
type ValidatingPublisher struct {
	// Clock stamps events that come without a time; required.
	Clock clock.Clock
}

// Publish answers whether ev is valid.
func (p ValidatingPublisher) Publish(_ context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	if err := subscriptions.NormalizeEvent(&ev, p.Clock.Now()); err != nil {
		return subscriptions.PublishResult{}, err
	}
	return subscriptions.PublishResult{EventID: ev.ID}, nil
}
