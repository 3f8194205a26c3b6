// Package handlers runs subscriptions' handlers. The store records a job with
// every delivery of a subscription that has a handler, in the same
// transaction; a Runner takes the jobs that are due, hands each to the
// handler of its type (handlers/bash, handlers/webhook, handlers/agent), and
// records the outcome: done, failed, due again later when the handler asks
// for a retry, or the handler turned off. A job is only forgotten once its
// outcome is stored, so a run cut short by a crash or a stop runs again at the
// next start: handlers run at least once per delivery.
package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Defaults for Options.
const (
	DefaultConcurrency = 32
	DefaultRunTimeout  = 10 * time.Minute
	// retryStore is how long the runner waits after the store failed.
	retryStore = time.Second
	// finishBatch bounds the outcomes written in one transaction, and
	// finishWindow how long the first of them waits for others.
	finishBatch  = 256
	finishWindow = 2 * time.Millisecond
)

// Jobs is the part of subscriptions.Store the runner uses.
type Jobs interface {
	DueJobs(ctx context.Context, now time.Time, limit int, skip []string) ([]*subscriptions.Invocation, error)
	FinishJobs(ctx context.Context, done []subscriptions.JobDone) error
	NextJobDue(ctx context.Context, skip []string) (time.Time, bool, error)
}

// Options configure a Runner.
type Options struct {
	// Jobs is the store; required.
	Jobs Jobs
	// Handlers run each type of handler; a job whose type has none fails.
	Handlers map[subscriptions.HandlerType]subscriptions.Handler
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Concurrency bounds the runs in progress; zero means
	// DefaultConcurrency. Each handler may bound its own runs further.
	Concurrency int
	// RunTimeout is a ceiling on one run, above the handlers' own
	// timeouts; zero means DefaultRunTimeout.
	RunTimeout time.Duration
}

// Runner takes due handler jobs from the store and runs them. Start it, call
// Wake when deliveries were recorded, and Stop it when done.
type Runner struct {
	opts Options
	log  *slog.Logger

	wake chan struct{}
	done chan subscriptions.JobDone

	mu      sync.Mutex
	running map[string]bool // jobs taken and not yet recorded
	timer   clock.Timer
	started bool
	stopped bool

	ctx    context.Context
	cancel context.CancelFunc
	runs   sync.WaitGroup // the runs
	loops  sync.WaitGroup // the dispatch and finish loops
}

// New checks opts and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Jobs == nil {
		return nil, errors.New("handlers: Options.Jobs is required")
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("handlers: Options.Concurrency is %d; it must be positive, or zero for %d", opts.Concurrency, DefaultConcurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = DefaultRunTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Runner{
		opts:    opts,
		log:     opts.Logger,
		wake:    make(chan struct{}, 1),
		done:    make(chan subscriptions.JobDone, opts.Concurrency),
		running: make(map[string]bool),
	}, nil
}

// Start starts running due jobs, beginning with those left from a previous
// run of the server.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("handlers: Runner already started")
	}
	r.started = true
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.loops.Add(2)
	go r.dispatchLoop()
	go r.finishLoop()
	r.Wake()
	return nil
}

// Wake makes the runner look for due jobs. It never blocks.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Stop cancels the runs in progress, waits for them, and records the outcomes
// of those that finished. A run cut short stays due and runs again at the
// next start. Stop is safe to call more than once.
func (r *Runner) Stop() {
	r.mu.Lock()
	if !r.started || r.stopped {
		r.stopped = true
		r.mu.Unlock()
		return
	}
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.cancel()
	r.mu.Unlock()
	r.loops.Wait()
}

// dispatchLoop starts due jobs whenever woken, then waits for the runs and
// closes the outcome channel when stopped.
func (r *Runner) dispatchLoop() {
	defer r.loops.Done()
	for {
		select {
		case <-r.ctx.Done():
			r.runs.Wait()
			close(r.done)
			return
		case <-r.wake:
			r.dispatch()
		}
	}
}

// dispatch starts as many due jobs as there are free slots, then sets the
// timer for the next due job.
func (r *Runner) dispatch() {
	for {
		r.mu.Lock()
		free := r.opts.Concurrency - len(r.running)
		busy := len(r.running) > 0
		skip := r.runningLocked()
		r.mu.Unlock()
		// While runs are in progress, wait until a quarter of the slots are
		// free, so that jobs are read in batches rather than one by one.
		if free <= 0 || busy && free < max(1, r.opts.Concurrency/4) {
			return // a finished run wakes the runner
		}
		now := r.opts.Clock.Now()
		jobs, err := r.opts.Jobs.DueJobs(r.ctx, now, free, skip)
		if err != nil {
			if r.ctx.Err() == nil {
				r.log.Error("read due handler jobs; trying again shortly", "error", err)
				r.arm(now.Add(retryStore))
			}
			return
		}
		r.mu.Lock()
		for _, j := range jobs {
			r.running[j.JobID] = true
			r.runs.Add(1)
			go r.run(j)
		}
		r.mu.Unlock()
		if len(jobs) < free {
			break
		}
	}
	r.mu.Lock()
	skip := r.runningLocked()
	r.mu.Unlock()
	next, ok, err := r.opts.Jobs.NextJobDue(r.ctx, skip)
	switch {
	case err != nil:
		if r.ctx.Err() == nil {
			r.log.Error("find the next handler job; trying again shortly", "error", err)
			r.arm(r.opts.Clock.Now().Add(retryStore))
		}
	case ok:
		r.arm(next)
	}
}

func (r *Runner) runningLocked() []string {
	skip := make([]string, 0, len(r.running))
	for id := range r.running {
		skip = append(skip, id)
	}
	return skip
}

// arm sets the timer to wake the runner at t.
func (r *Runner) arm(t time.Time) {
	d := max(t.Sub(r.opts.Clock.Now()), 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.timer = r.opts.Clock.AfterFunc(d, r.Wake)
}

// run runs one job and hands its outcome to the finish loop, unless the
// runner was stopped meanwhile: then the job stays due.
func (r *Runner) run(inv *subscriptions.Invocation) {
	defer r.runs.Done()
	o := r.handle(inv)
	if r.ctx.Err() != nil {
		r.log.Info("handler run cut short by shutdown; it runs again at the next start",
			"subscription_id", inv.SubscriptionID, "job_id", inv.JobID)
		return
	}
	attrs := []any{"subscription_id", inv.SubscriptionID, "job_id", inv.JobID, "handler", inv.Spec.Type, "attempt", inv.Attempt}
	switch {
	case o.Err == nil:
		r.log.Debug("handler ran", attrs...)
	case o.RetryIn > 0 && !o.Disable:
		r.log.Warn("handler failed; retrying", append(attrs, "error", o.Err, "retry_in", o.RetryIn)...)
	default:
		r.log.Warn("handler failed", append(attrs, "error", o.Err, "disabled", o.Disable)...)
	}
	r.done <- subscriptions.JobDone{JobID: inv.JobID, SubscriptionID: inv.SubscriptionID, Outcome: o, At: r.opts.Clock.Now()}
}

// handle runs inv with its handler, turning a panic into a failure.
func (r *Runner) handle(inv *subscriptions.Invocation) (o subscriptions.Outcome) {
	h := r.opts.Handlers[inv.Spec.Type]
	if h == nil {
		return subscriptions.Outcome{Err: fmt.Errorf("this server no longer runs %q handlers", inv.Spec.Type)}
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("handler panicked", "subscription_id", inv.SubscriptionID, "panic", p)
			o = subscriptions.Outcome{Err: fmt.Errorf("the %s handler failed unexpectedly", inv.Spec.Type)}
		}
	}()
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.RunTimeout)
	defer cancel()
	return h.Handle(ctx, inv)
}

// finishLoop records outcomes in batches, and only then forgets their jobs
// as running: a job is never taken again before its outcome is stored.
func (r *Runner) finishLoop() {
	defer r.loops.Done()
	for d := range r.done {
		// Outcomes that come within finishWindow of the first share its
		// transaction: one commit for many runs.
		batch := []subscriptions.JobDone{d}
		window := time.NewTimer(finishWindow)
	more:
		for len(batch) < finishBatch {
			select {
			case d, ok := <-r.done:
				if !ok {
					break more
				}
				batch = append(batch, d)
			case <-window.C:
				break more
			}
		}
		window.Stop()
		r.record(batch)
	}
}

// record stores a batch of outcomes, trying until it succeeds or the runner
// stops (then the jobs stay due and run again at the next start).
func (r *Runner) record(batch []subscriptions.JobDone) {
	for attempt := 0; ; attempt++ {
		// A stopping runner still records what finished.
		err := r.opts.Jobs.FinishJobs(context.WithoutCancel(r.ctx), batch)
		if err == nil {
			break
		}
		r.log.Error("record handler outcomes", "jobs", len(batch), "error", err)
		if r.ctx.Err() != nil || attempt >= 10 {
			break
		}
		select {
		case <-time.After(retryStore):
		case <-r.ctx.Done():
		}
	}
	r.mu.Lock()
	for _, d := range batch {
		delete(r.running, d.JobID)
	}
	r.mu.Unlock()
	r.Wake()
}
