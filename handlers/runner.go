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
	"github.com/mcpe-server/mcpe-server/mcpe"
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
	DueJobs(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]*subscriptions.Invocation, error)
	FinishJobs(ctx context.Context, done []subscriptions.JobDone) error
	NextJobDue(ctx context.Context, q subscriptions.JobQuery) (time.Time, bool, error)
}

// Options configure a Runner.
type Options struct {
	// Jobs is the store; required.
	Jobs Jobs
	// Handlers run each type of handler; a job whose type has none fails.
	Handlers map[mcpe.HandlerType]subscriptions.Handler
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Concurrency is the number of workers, and so bounds the runs in
	// progress; zero means DefaultConcurrency. Each handler may bound its
	// own runs further.
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

	wake  chan struct{}
	queue chan *subscriptions.Invocation // taken, waiting for a worker
	done  chan subscriptions.JobDone

	mu      sync.Mutex
	taken   map[string]bool // jobs taken and not yet recorded
	timer   clock.Timer
	started bool
	stopped bool

	ctx     context.Context
	cancel  context.CancelFunc
	workers sync.WaitGroup
	loops   sync.WaitGroup // the dispatch and finish loops
}

// maxTaken bounds the jobs taken and not yet recorded: those running, those
// queued for a worker, and those whose outcome is being written. Taking
// ahead keeps the workers busy while outcomes are written.
func (r *Runner) maxTaken() int { return 4 * r.opts.Concurrency }

// Validate checks the settings of o. An error is an *mcpe.InvalidError
// whose Field is the setting's key in the configuration file, relative to
// the handlers section, such as "concurrency".
func (o *Options) Validate() error {
	if o.Concurrency < 0 {
		return mcpe.Invalid("concurrency", "is %d; give a positive number, or leave it out for %d", o.Concurrency, DefaultConcurrency)
	}
	return nil
}

// New checks opts and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Jobs == nil {
		return nil, errors.New("handlers: Options.Jobs is required")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("handlers: %w", err)
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
		opts:  opts,
		log:   opts.Logger,
		wake:  make(chan struct{}, 1),
		queue: make(chan *subscriptions.Invocation, opts.Concurrency),
		done:  make(chan subscriptions.JobDone, opts.Concurrency),
		taken: make(map[string]bool),
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
	r.workers.Add(r.opts.Concurrency)
	for range r.opts.Concurrency {
		go r.work()
	}
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

// dispatchLoop takes due jobs whenever woken and queues them for the
// workers; when stopped, it closes the queue, waits for the workers, and
// closes the outcome channel.
func (r *Runner) dispatchLoop() {
	defer r.loops.Done()
	for {
		select {
		case <-r.ctx.Done():
			close(r.queue)
			r.workers.Wait()
			close(r.done)
			return
		case <-r.wake:
			r.dispatch()
		}
	}
}

// dispatch takes due jobs until none is due or maxTaken are taken, then sets
// the timer for the next due job.
func (r *Runner) dispatch() {
	for {
		r.mu.Lock()
		room := r.maxTaken() - len(r.taken)
		skip := r.takenLocked()
		r.mu.Unlock()
		if room <= 0 {
			return // a recorded outcome wakes the runner
		}
		now := r.opts.Clock.Now()
		jobs, err := r.opts.Jobs.DueJobs(r.ctx, now, room, subscriptions.JobQuery{Skip: skip})
		if err != nil {
			if r.ctx.Err() == nil {
				r.log.Error("read due handler jobs; trying again shortly", "error", err)
				r.arm(now.Add(retryStore))
			}
			return
		}
		r.mu.Lock()
		for _, j := range jobs {
			r.taken[j.JobID] = true
		}
		r.mu.Unlock()
		for i, j := range jobs {
			select {
			case r.queue <- j:
			case <-r.ctx.Done():
				r.forget(jobs[i:])
				return
			}
		}
		if len(jobs) < room {
			break
		}
	}
	r.mu.Lock()
	skip := r.takenLocked()
	r.mu.Unlock()
	next, ok, err := r.opts.Jobs.NextJobDue(r.ctx, subscriptions.JobQuery{Skip: skip})
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

func (r *Runner) takenLocked() []string {
	skip := make([]string, 0, len(r.taken))
	for id := range r.taken {
		skip = append(skip, id)
	}
	return skip
}

// forget releases jobs taken but not run; they stay due in the store.
func (r *Runner) forget(jobs []*subscriptions.Invocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range jobs {
		delete(r.taken, j.JobID)
	}
}

// work runs queued jobs until the queue closes.
func (r *Runner) work() {
	defer r.workers.Done()
	for inv := range r.queue {
		if r.ctx.Err() != nil {
			continue // stopping: the job stays due
		}
		r.run(inv)
	}
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
	// A context deadline runs on the wall clock, whatever Options.Clock is.
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
		// Wall time, not Options.Clock: the window bounds how long an
		// outcome waits for company, and a fake clock that a test does not
		// move would hold every outcome back.
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
		wait, timer := after(r.opts.Clock, retryStore)
		select {
		case <-wait:
		case <-r.ctx.Done():
			timer.Stop()
		}
	}
	r.mu.Lock()
	for _, d := range batch {
		delete(r.taken, d.JobID)
	}
	r.mu.Unlock()
	r.Wake()
}

// after returns a channel closed once d has passed on c, and the timer that
// closes it.
func after(c clock.Clock, d time.Duration) (<-chan struct{}, clock.Timer) {
	ch := make(chan struct{})
	return ch, c.AfterFunc(d, func() { close(ch) })
}
