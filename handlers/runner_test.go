package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/handlers"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// fakeHandler records its runs and answers with outcome(attempt).
type fakeHandler struct {
	mu      sync.Mutex
	runs    []*subscriptions.Invocation
	outcome func(inv *subscriptions.Invocation) subscriptions.Outcome
	ran     chan *subscriptions.Invocation
	block   chan struct{} // when set, a run waits for it or for ctx
}

func newFakeHandler(outcome func(*subscriptions.Invocation) subscriptions.Outcome) *fakeHandler {
	return &fakeHandler{outcome: outcome, ran: make(chan *subscriptions.Invocation, 100)}
}

func (h *fakeHandler) Check(context.Context, string, *mcpe.HandlerSpec) error { return nil }

func (h *fakeHandler) Handle(ctx context.Context, inv *subscriptions.Invocation) subscriptions.Outcome {
	if h.block != nil {
		select {
		case <-h.block:
		case <-ctx.Done():
			return subscriptions.Outcome{Err: ctx.Err()}
		}
	}
	h.mu.Lock()
	h.runs = append(h.runs, inv)
	h.mu.Unlock()
	o := subscriptions.Outcome{Output: "ok"}
	if h.outcome != nil {
		o = h.outcome(inv)
	}
	h.ran <- inv
	return o
}

func (h *fakeHandler) wait(t *testing.T) *subscriptions.Invocation {
	t.Helper()
	select {
	case inv := <-h.ran:
		return inv
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not run within 10 s")
		return nil
	}
}

func (h *fakeHandler) none(t *testing.T) {
	t.Helper()
	select {
	case inv := <-h.ran:
		t.Fatalf("unexpected run: %+v", inv)
	case <-time.After(50 * time.Millisecond):
	}
}

type noDeliverer struct{}

func (noDeliverer) Deliver([]subscriptions.InboxEntry) {}

func (noDeliverer) Replay(string, []subscriptions.InboxEntry) {}

// env is a service and a runner on one SQLite file and a fake clock.
type env struct {
	store      *sqlite.Store
	svc        *subscriptions.Service
	schedulers delivery.Schedulers
	runner     *handlers.Runner
	clk        *clocktest.Fake
}

// envOptions vary what newEnvWith builds.
type envOptions struct {
	// kinds are the handlers, by type.
	kinds map[mcpe.HandlerType]subscriptions.Handler
	// timed offers the cron and scheduled channels besides realtime.
	timed bool
	// stopped leaves the runner unstarted: e.runner.Start starts it.
	stopped bool
	// jobs, when set, wraps the store the runner takes jobs from.
	jobs func(handlers.Jobs) handlers.Jobs
	// labels gives runs their labels (handlers.Options.Labels).
	labels func(string) string
}

// newEnv runs h as the bash handler.
func newEnv(t *testing.T, path string, clk *clocktest.Fake, h subscriptions.Handler) *env {
	t.Helper()
	return newEnvWith(t, path, clk, envOptions{kinds: map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerBash: h}})
}

func newEnvWith(t *testing.T, path string, clk *clocktest.Fake, o envOptions) *env {
	t.Helper()
	store, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	var jobs handlers.Jobs = store
	if o.jobs != nil {
		jobs = o.jobs(store)
	}
	runner, err := handlers.New(handlers.Options{Jobs: jobs, Handlers: o.kinds, Clock: clk, Labels: o.labels})
	if err != nil {
		t.Fatal(err)
	}
	opts := subscriptions.ServiceOptions{
		Store: store, Deliverer: noDeliverer{}, Clock: clk, Handlers: o.kinds, JobsWritten: runner.Wake,
		// These tests cross hours of fake time; retention is tested elsewhere.
		PruneInterval: 24 * time.Hour,
	}
	if o.timed {
		opts.Timings = map[mcpe.Channel]subscriptions.Timing{
			mcpe.ChannelCron:      cron.New(nil),
			mcpe.ChannelScheduled: scheduled.Channel{},
		}
	}
	svc, err := subscriptions.NewService(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	schedOpts := &delivery.SchedulerOptions{Clock: clk}
	schedulers := delivery.Schedulers{cron.NewScheduler(svc, schedOpts), scheduled.NewScheduler(svc, schedOpts)}
	for _, s := range schedulers {
		if err := s.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if !o.stopped {
		if err := runner.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{store: store, svc: svc, schedulers: schedulers, runner: runner, clk: clk}
	t.Cleanup(e.stop)
	return e
}

func (e *env) stop() {
	e.runner.Stop()
	e.schedulers.Stop()
	e.svc.Stop()
	e.store.Close()
}

func (e *env) subscribe(t *testing.T) *subscriptions.Subscription {
	t.Helper()
	sub, err := e.svc.Subscribe(t.Context(), "alice", mcpe.SubscribeRequest{
		Filter:  mcpe.Filter{EventTypes: []string{"test.*"}},
		Handler: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func (e *env) publish(t *testing.T, sourceID string) {
	t.Helper()
	if _, err := e.svc.Publish(t.Context(), mcpe.Event{Type: "test.created", Data: json.RawMessage(`{}`),
		Metadata: mcpe.Metadata{SourceEventID: sourceID}}); err != nil {
		t.Fatal(err)
	}
}

// status waits until the handler status of alice's subscription id
// satisfies ok.
func (e *env) status(t *testing.T, id string, ok func(mcpe.HandlerStatus) bool) mcpe.HandlerStatus {
	t.Helper()
	return e.statusOf(t, "alice", id, ok)
}

// statusOf waits until the handler status of principal's subscription id
// satisfies ok.
func (e *env) statusOf(t *testing.T, principal, id string, ok func(mcpe.HandlerStatus) bool) mcpe.HandlerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sub, err := e.svc.Get(t.Context(), principal, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(*sub.HandlerStatus) {
			return *sub.HandlerStatus
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler status never reached the expected state: %+v", *sub.HandlerStatus)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var t0 = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

func TestRunsEachDeliveryOnce(t *testing.T) {
	h := newFakeHandler(nil)
	e := newEnv(t, filepath.Join(t.TempDir(), "db"), clocktest.NewFake(t0), h)
	sub := e.subscribe(t)
	for _, id := range []string{"a", "b", "c", "a"} { // "a" again: a duplicate
		e.publish(t, id)
	}
	seen := map[string]bool{}
	for range 3 {
		inv := h.wait(t)
		if inv.SubscriptionID != sub.ID || inv.Attempt != 1 || inv.Kind != mcpe.InboxEvent || seen[inv.JobID] {
			t.Errorf("unexpected invocation %+v", inv)
		}
		seen[inv.JobID] = true
	}
	h.none(t)
	st := e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == 3 })
	if st.Pending != 0 || st.LastOutput != "ok" || st.LastRunAt == nil {
		t.Errorf("status %+v", st)
	}
}

// TestRunsCarryTheLabel checks that each run is given its subscription's
// label, which a digest's payload carries beside its subscriptionId.
func TestRunsCarryTheLabel(t *testing.T) {
	h := newFakeHandler(nil)
	e := newEnvWith(t, filepath.Join(t.TempDir(), "db"), clocktest.NewFake(t0), envOptions{
		kinds:  map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerBash: h},
		labels: func(id string) string { return "label of " + id },
	})
	sub := e.subscribe(t)
	e.publish(t, "a")
	inv := h.wait(t)
	if inv.Label != "label of "+sub.ID {
		t.Errorf("run label %q, want %q", inv.Label, "label of "+sub.ID)
	}
	inv.Kind = mcpe.InboxBatch
	if p := string(inv.Payload()); !strings.Contains(p, `"label":"label of `+sub.ID+`"`) {
		t.Errorf("digest payload %s has no label", p)
	}
}

func TestRetryAfterDelayAndAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clk := clocktest.NewFake(t0)
	failing := newFakeHandler(func(inv *subscriptions.Invocation) subscriptions.Outcome {
		return subscriptions.Outcome{Err: errors.New("503 Service Unavailable"), RetryIn: 30 * time.Second}
	})
	e := newEnv(t, path, clk, failing)
	sub := e.subscribe(t)
	e.publish(t, "a")
	if inv := failing.wait(t); inv.Attempt != 1 {
		t.Fatalf("attempt %d, want 1", inv.Attempt)
	}
	e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.LastError != "" })
	clk.Advance(29 * time.Second)
	failing.none(t)
	clk.Advance(time.Second)
	if inv := failing.wait(t); inv.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", inv.Attempt)
	}
	e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool {
		return s.LastRunAt != nil && s.LastRunAt.Equal(t0.Add(30*time.Second))
	})

	// Restart with the retry pending: the new runner runs it when due.
	e.stop()
	ok := newFakeHandler(nil)
	e2 := newEnv(t, path, clk, ok)
	ok.none(t)
	clk.Advance(30 * time.Second)
	if inv := ok.wait(t); inv.Attempt != 3 || inv.SubscriptionID != sub.ID {
		t.Fatalf("after restart: %+v, want attempt 3 of %s", inv, sub.ID)
	}
	st := e2.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == 1 })
	if st.Failed != 0 || st.Pending != 0 {
		t.Errorf("status %+v; retries are not failures", st)
	}
}

// flakyJobs fails FinishJobs as often as told, and reports each call.
type flakyJobs struct {
	handlers.Jobs
	mu       sync.Mutex
	failures int
	finishes chan error
}

func (f *flakyJobs) FinishJobs(ctx context.Context, done []subscriptions.JobDone) error {
	f.mu.Lock()
	var err error
	if f.failures > 0 {
		f.failures--
		err = errors.New("database is locked")
	}
	f.mu.Unlock()
	if err == nil {
		err = f.Jobs.FinishJobs(ctx, done)
	}
	f.finishes <- err
	return err
}

// TestRecordRetriesOnTheClock checks that an outcome the store refused is
// written again once a second has passed on the runner's clock, not before.
func TestRecordRetriesOnTheClock(t *testing.T) {
	clk := clocktest.NewFake(t0)
	flaky := &flakyJobs{failures: 1, finishes: make(chan error, 10)}
	h := newFakeHandler(nil)
	e := newEnvWith(t, filepath.Join(t.TempDir(), "db"), clk, envOptions{
		kinds: map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerBash: h},
		jobs: func(j handlers.Jobs) handlers.Jobs {
			flaky.Jobs = j
			return flaky
		},
	})
	sub := e.subscribe(t)
	e.publish(t, "a")
	h.wait(t)
	finish := func() error {
		t.Helper()
		select {
		case err := <-flaky.finishes:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the outcome was not written within 10 s")
			return nil
		}
	}
	if err := finish(); err == nil {
		t.Fatal("the first write succeeded; want it refused")
	}
	// The retry waits on the clock: a timer one second ahead.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if due, ok := clk.NextDue(); ok && due.Equal(t0.Add(time.Second)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no retry was set one second ahead on the clock")
		}
	}
	clk.Advance(time.Second - time.Millisecond)
	select {
	case err := <-flaky.finishes:
		t.Fatalf("the outcome was written again (%v) before a second had passed", err)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	if err := finish(); err != nil {
		t.Fatalf("the second write: %v", err)
	}
	e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == 1 && s.Pending == 0 })
}

func TestStopLeavesRunningJobDue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clk := clocktest.NewFake(t0)
	hung := newFakeHandler(nil)
	hung.block = make(chan struct{}) // never closed: the run ends only with the stop
	e := newEnv(t, path, clk, hung)
	sub := e.subscribe(t)
	e.publish(t, "a")
	e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Pending == 1 })
	e.stop()

	ok := newFakeHandler(nil)
	e2 := newEnv(t, path, clk, ok)
	if inv := ok.wait(t); inv.Attempt != 1 {
		t.Fatalf("the cut run was not run again: %+v", inv)
	}
	e2.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == 1 && s.Pending == 0 })
}

func TestDisableAndPanic(t *testing.T) {
	clk := clocktest.NewFake(t0)
	var calls int
	h := newFakeHandler(func(inv *subscriptions.Invocation) subscriptions.Outcome {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return subscriptions.Outcome{Err: errors.New("410 Gone"), Disable: true}
	})
	e := newEnv(t, filepath.Join(t.TempDir(), "db"), clk, h)
	sub := e.subscribe(t)
	e.publish(t, "a")
	h.none(t) // the panicking run sends nothing
	e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Failed == 1 })
	e.publish(t, "b")
	h.wait(t)
	st := e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Disabled != "" })
	if st.Disabled != "410 Gone" {
		t.Errorf("disabled = %q", st.Disabled)
	}
	e.publish(t, "c")
	h.none(t)
	// events_update with a handler turns it back on.
	if _, err := e.svc.Update(t.Context(), "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID,
		Handler: mcpe.OptionalHandler{Set: true, Value: &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify"}}}); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "d")
	h.wait(t)
}
