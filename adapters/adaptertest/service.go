package adaptertest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// NewService returns a started subscriptions.Service on a SQLite store in
// a temporary directory, on clk, delivering to d, with principal subscribed
// to each of filters. It is stopped, and its store closed, when the test
// ends.
func NewService(t testing.TB, clk clock.Clock, d subscriptions.Deliverer, principal string, filters ...mcpe.Filter) *subscriptions.Service {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "mcpe.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: d, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	for _, f := range filters {
		if _, err := svc.Subscribe(ctx, principal, mcpe.SubscribeRequest{Filter: f}); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// Subscriber is the realtime Deliverer of a Service: it keeps the events it
// is given to deliver, as the subscriber's live session would receive them.
// The zero value is ready to use.
type Subscriber struct {
	mu      sync.Mutex
	events  []mcpe.Event
	changed chan struct{} // closed and replaced on every delivery
}

// Deliver keeps the events among entries.
func (s *Subscriber) Deliver(entries []subscriptions.InboxEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		if e.Kind != mcpe.InboxEvent {
			continue
		}
		var ev mcpe.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			panic(err)
		}
		s.events = append(s.events, ev)
	}
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// Replay keeps entries as Deliver does.
func (s *Subscriber) Replay(_ string, entries []subscriptions.InboxEntry) { s.Deliver(entries) }

// Delivered returns the events delivered so far, in order.
func (s *Subscriber) Delivered() []mcpe.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mcpe.Event(nil), s.events...)
}

// Types returns the type of each event delivered so far.
func (s *Subscriber) Types() []string {
	var out []string
	for _, ev := range s.Delivered() {
		out = append(out, ev.Type)
	}
	return out
}

// TypesAndPriorities returns "<type> <priority>" for each event delivered
// so far.
func (s *Subscriber) TypesAndPriorities() []string {
	var out []string
	for _, ev := range s.Delivered() {
		out = append(out, ev.Type+" "+string(ev.Metadata.Priority))
	}
	return out
}

// Wait waits until n events of type typ were delivered and returns them
// all, failing t after Wait.
func (s *Subscriber) Wait(t testing.TB, typ string, n int) []mcpe.Event {
	t.Helper()
	deadline := time.After(Wait)
	for {
		s.mu.Lock()
		var got []mcpe.Event
		for _, ev := range s.events {
			if ev.Type == typ {
				got = append(got, ev)
			}
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waited %v for %d delivery(ies) of %s; delivered: %v", Wait, n, typ, s.Types())
		}
	}
}
