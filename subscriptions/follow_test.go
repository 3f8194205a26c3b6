package subscriptions_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// sessions is a Deliverer with live sessions for some principals, as the
// realtime registry is: it keeps the types of the events it is given.
type sessions struct {
	mu         sync.Mutex
	principals []string
	types      []string
	arrived    chan struct{}
}

func (s *sessions) Principals() []string { return s.principals }

func (s *sessions) Owners(principals []string) []subscriptions.Owner {
	out := make([]subscriptions.Owner, len(principals))
	for i, p := range principals {
		if slices.Contains(s.principals, p) {
			out[i] = subscriptions.Owner{ID: 1, Start: -1}
		}
	}
	return out
}

func (s *sessions) Arrived() <-chan struct{} { return s.arrived }

func (s *sessions) Deliver(es []subscriptions.InboxEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range es {
		var ev mcpe.Event
		if e.Kind == mcpe.InboxEvent && json.Unmarshal(e.Event, &ev) == nil {
			s.types = append(s.types, ev.Type)
		}
	}
}

func (s *sessions) Replay(string, []subscriptions.InboxEntry) {}

func (s *sessions) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.types)
}

// process is one server's service on a shared database file.
type process struct {
	svc      *subscriptions.Service
	sessions *sessions
}

func startProcess(t *testing.T, path string, clk clock.Clock) *process {
	t.Helper()
	p := &process{sessions: &sessions{principals: []string{"alice"}}}
	// Followed by hand (FollowNow), not by the timer.
	p.svc = follow(t, openShared(t, path), p.sessions, clk, time.Minute)
	return p
}

// openShared opens the SQLite file at path.
func openShared(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// follow starts a Service on store, which it closes at the end of the
// test, delivering to sess and looking at what other processes wrote every
// interval (and when the store or an arriving session tells it).
func follow(t *testing.T, store interface {
	subscriptions.Store
	Close() error
}, sess *sessions, clk clock.Clock, interval time.Duration) *subscriptions.Service {
	t.Helper()
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: sess, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	subscriptions.SetFollowInterval(svc, interval)
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(); store.Close() })
	return svc
}

// within5s waits until done, failing the test after 5 s.
func within5s(t *testing.T, what string, done func() bool) {
	t.Helper()
	for i := 0; !done(); i++ {
		if i == 500 {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *process) publish(t *testing.T, typ string) subscriptions.PublishResult {
	t.Helper()
	res, err := p.svc.Publish(context.Background(), mcpe.Event{Type: typ, Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSharedStoreIsFollowed runs two services on one file, as two server
// processes on one machine: what is subscribed through one routes in the
// other once it has followed the store, what one accepts reaches the
// other's sessions in commit order, and a pause through one holds in the
// other at once.
func TestSharedStoreIsFollowed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	clk := clocktest.NewFake(svcStart)
	a, b := startProcess(t, path, clk), startProcess(t, path, clk)
	ctx := context.Background()

	sub, err := a.svc.Subscribe(ctx, "alice", every("x.*"))
	if err != nil {
		t.Fatal(err)
	}
	if res := b.publish(t, "x.before"); len(res.Delivered) != 0 {
		t.Fatalf("b routed by a subscription it has not read yet: %+v", res.Delivered)
	}
	subscriptions.FollowNow(b.svc)
	if res := b.publish(t, "x.one"); len(res.Delivered) != 1 {
		t.Fatalf("after following, b delivered %d entries; want 1", len(res.Delivered))
	}
	if got := b.sessions.got(); !slices.Equal(got, []string{"x.one"}) {
		t.Fatalf("b's sessions got %q; want x.one", got)
	}
	// a hears of what b accepted when it follows the store.
	subscriptions.FollowNow(a.svc)
	if got := a.sessions.got(); !slices.Equal(got, []string{"x.one"}) {
		t.Fatalf("a's sessions got %q; want x.one, accepted by b", got)
	}
	// What a accepts just before b's own comes first at b, without waiting
	// for b to follow.
	a.publish(t, "x.two")
	b.publish(t, "x.three")
	if got := b.sessions.got(); !slices.Equal(got, []string{"x.one", "x.two", "x.three"}) {
		t.Fatalf("b's sessions got %q; want x.one, x.two (a's), x.three in commit order", got)
	}
	subscriptions.FollowNow(a.svc)
	if got := a.sessions.got(); !slices.Equal(got, []string{"x.one", "x.two", "x.three"}) {
		t.Fatalf("a's sessions got %q; want each event once, in commit order", got)
	}
	// Paused through b: a, which has not followed yet, stores nothing for it.
	if _, err := b.svc.Pause(ctx, "alice", sub.ID); err != nil {
		t.Fatal(err)
	}
	if res := a.publish(t, "x.paused"); len(res.Delivered) != 0 {
		t.Fatalf("a delivered to a subscription paused through b: %+v", res.Delivered)
	}
	// Resumed through a, deleted through b: a stops routing once it follows.
	if _, err := a.svc.Resume(ctx, "alice", sub.ID); err != nil {
		t.Fatal(err)
	}
	subscriptions.FollowNow(b.svc)
	if res := b.publish(t, "x.resumed"); len(res.Delivered) != 1 {
		t.Fatalf("b did not route by the resume made through a: %+v", res.Delivered)
	}
	if err := b.svc.Unsubscribe(ctx, "alice", sub.ID); err != nil {
		t.Fatal(err)
	}
	subscriptions.FollowNow(a.svc)
	if res := a.publish(t, "x.gone"); len(res.Delivered) != 0 {
		t.Fatalf("a delivered to a subscription deleted through b: %+v", res.Delivered)
	}
}

// TestFollowedChangesShareATime checks that a change made through one
// process is applied by another that holds an earlier version with the same
// UpdatedAt (two changes in one tick of the clock, or of a fake one): the
// version is not the time alone.
func TestFollowedChangesShareATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	clk := clocktest.NewFake(svcStart) // never moves: every change has one time
	a, b := startProcess(t, path, clk), startProcess(t, path, clk)
	ctx := context.Background()
	sub, err := a.svc.Subscribe(ctx, "alice", every("x.*"))
	if err != nil {
		t.Fatal(err)
	}
	subscriptions.FollowNow(b.svc)
	if _, err := a.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Filter: &mcpe.Filter{EventTypes: []string{"y.*"}}}); err != nil {
		t.Fatal(err)
	}
	subscriptions.FollowNow(b.svc)
	if res := b.publish(t, "y.one"); len(res.Delivered) != 1 {
		t.Fatalf("b routed y.one to %d entries after the filter changed to y.* through a; want 1", len(res.Delivered))
	}
	if res := b.publish(t, "x.one"); len(res.Delivered) != 0 {
		t.Fatalf("b still routes by the filter a replaced: %+v", res.Delivered)
	}
}

// watchingStore is a shared store that can be told whose inbox entries
// wake its follower (subscriptions.Watcher), and records what it is told.
type watchingStore struct {
	*sqlite.Store
	mu      sync.Mutex
	watched [][]string
}

func (w *watchingStore) Watch(principals []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched = append(w.watched, slices.Sorted(slices.Values(principals)))
}

func (w *watchingStore) last() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watched) == 0 {
		return nil
	}
	return w.watched[len(w.watched)-1]
}

// TestFollowerWatchesItsPrincipals checks that each look at a shared store
// tells it the principals with sessions here, as they come and go: another
// process's inbox entries for any other principal then wake nobody here.
func TestFollowerWatchesItsPrincipals(t *testing.T) {
	ws := &watchingStore{Store: openShared(t, filepath.Join(t.TempDir(), "shared.db"))}
	sess := &sessions{principals: []string{"alice"}, arrived: make(chan struct{}, 1)}
	svc := follow(t, ws, sess, clocktest.NewFake(svcStart), time.Minute)
	subscriptions.FollowNow(svc)
	if got := ws.last(); !slices.Equal(got, []string{"alice"}) {
		t.Fatalf("watched %q; want alice, whose session is here", got)
	}
	sess.principals = []string{"bob", "alice"}
	subscriptions.FollowNow(svc)
	if got := ws.last(); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("watched %q; want alice and bob once bob's session came", got)
	}
	sess.principals = nil
	subscriptions.FollowNow(svc)
	if got := ws.last(); len(got) != 0 {
		t.Fatalf("watched %q; want none once the sessions left", got)
	}
	// A session of a new principal is watched at once, not at the next
	// interval (a minute here).
	sess.principals = []string{"carol"}
	sess.arrived <- struct{}{}
	within5s(t, "carol watched after her session arrived", func() bool { return slices.Equal(ws.last(), []string{"carol"}) })
}

// toldStore is a shared store whose Notifier leaves out this process's own
// commits (as PostgreSQL's does): the test tells it when others wrote.
type toldStore struct {
	*sqlite.Store
	told chan struct{}
}

func (s *toldStore) Written() <-chan struct{} { return s.told }
func (s *toldStore) OwnWritesTold() bool      { return false }

// TestFirstChangeRoutesAtOnce checks that a process on a store whose
// Notifier leaves out its own commits follows the first change another
// process makes as soon as the store tells, not one follow interval later.
func TestFirstChangeRoutesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	clk := clocktest.NewFake(svcStart)
	told := &toldStore{Store: openShared(t, path), told: make(chan struct{}, 1)}
	svc := follow(t, told, &sessions{principals: []string{"alice"}}, clk, time.Hour)
	other := startProcess(t, path, clk)
	if _, err := other.svc.Subscribe(context.Background(), "alice", every("x.*")); err != nil {
		t.Fatal(err)
	}
	told.told <- struct{}{}
	for range 500 {
		res, err := svc.Publish(context.Background(), mcpe.Event{Type: "x.probe", Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Delivered) == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("a subscription made by another process did not route within 5 s of the store telling")
}

// wokenStore is a shared store whose Notifier the test drives, and which
// counts the follower's looks (Heads) and Watch calls.
type wokenStore struct {
	*sqlite.Store
	told           chan struct{}
	heads, watches atomic.Int32
}

func (s *wokenStore) Written() <-chan struct{} { return s.told }
func (s *wokenStore) OwnWritesTold() bool      { return false }
func (s *wokenStore) Watch([]string)           { s.watches.Add(1) }

func (s *wokenStore) Heads(ctx context.Context, principals []string) (map[string]int64, int64, error) {
	s.heads.Add(1)
	return s.Store.Heads(ctx, principals)
}

// TestWakeDoesNotRewatch checks that a look woken by the store (one per
// commit elsewhere, under load) does not tell the store the principals
// again: that is done at each interval and when a principal arrives.
func TestWakeDoesNotRewatch(t *testing.T) {
	ws := &wokenStore{Store: openShared(t, filepath.Join(t.TempDir(), "shared.db")), told: make(chan struct{}, 1)}
	sess := &sessions{principals: []string{"alice"}, arrived: make(chan struct{}, 1)}
	follow(t, ws, sess, clocktest.NewFake(svcStart), time.Hour)
	heads := ws.heads.Load()
	ws.told <- struct{}{}
	within5s(t, "the woken look", func() bool { return ws.heads.Load() > heads })
	if n := ws.watches.Load(); n != 0 {
		t.Fatalf("a woken look called Watch %d times; want 0", n)
	}
	sess.arrived <- struct{}{}
	within5s(t, "Watch after an arrival", func() bool { return ws.watches.Load() == 1 })
}
