// Package handlers runs subscriptions' handlers. The store records a job with
// every delivery of a subscription that has a handler, in the same
// transaction; a Runner takes the jobs that are due, hands each to the
// handler of its type (handlers/bash, handlers/webhook, handlers/agent), and
// records the outcome: done, failed, due again later when the handler asks
// for a retry, or the handler turned off. A job is only forgotten once its
// outcome is stored, so a run cut short by a crash or a stop runs again at the
// next start: handlers run at least once per delivery.
//
// Principals share the workers fairly. One principal has at most a
// quarter of Concurrency runs in progress, so that runs that hang hold no
// more workers than that, and at most four times as many jobs taken
// (running, waiting for a worker or being recorded), as the runner takes at
// most four times Concurrency. A free worker goes to the waiting principal
// with the fewest runs in progress, and the store hands out the jobs of the
// principals with the fewest in flight first. A principal whose runs hang
// for their whole timeout does not delay another's while workers are free,
// which they are unless four principals (Concurrency, when fewer than four)
// hold their share.
package handlers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Tunings of the runner.
const (
	// retryStore is how long the runner waits after the store failed.
	retryStore = time.Second
	// finishBatch bounds the outcomes written in one transaction, and
	// finishWindow how long the first of them waits for others.
	finishBatch  = 256
	finishWindow = 2 * time.Millisecond
)

// Runner takes due handler jobs from the store and runs them. Start it, call
// Wake when deliveries were recorded, and Stop it when done.
type Runner struct {
	opts Options
	// perPrincipal bounds one principal's runs in progress.
	perPrincipal int

	wake chan struct{}
	done chan subscriptions.JobDone

	mu       sync.Mutex
	taken    map[string]string // principal of each job taken and not yet recorded
	inFlight map[string]int    // jobs taken and not yet recorded, by principal
	queue    *fairQueue        // jobs taken, waiting for a worker
	ready    *sync.Cond        // on mu: a job was queued, or the runner stops
	timer    clock.Timer
	started  bool
	stopped  bool

	ctx     context.Context
	cancel  context.CancelFunc
	workers sync.WaitGroup
	loops   sync.WaitGroup // the dispatch and finish loops
}

// maxTaken bounds the jobs taken and not yet recorded: those running, those
// queued for a worker, and those whose outcome is being written.
func (r *Runner) maxTaken() int { return takeAhead * r.opts.Concurrency }

// New checks opts and returns a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Jobs == nil {
		return nil, errors.New("handlers: Options.Jobs is required")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("handlers: %w", err)
	}
	opts.Concurrency = cmp.Or(opts.Concurrency, DefaultConcurrency)
	opts.RunTimeout = cmp.Or(opts.RunTimeout, DefaultRunTimeout)
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	r := &Runner{
		opts:         opts,
		perPrincipal: max(1, opts.Concurrency/4),
		wake:         make(chan struct{}, 1),
		done:         make(chan subscriptions.JobDone, opts.Concurrency),
		taken:        make(map[string]string),
		inFlight:     make(map[string]int),
		queue:        newFairQueue(),
	}
	r.ready = sync.NewCond(&r.mu)
	return r, nil
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
	r.loops.Go(r.dispatchLoop)
	r.loops.Go(r.finishLoop)
	for range r.opts.Concurrency {
		r.workers.Go(r.work)
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
	r.ready.Broadcast()
	r.mu.Unlock()
	r.loops.Wait()
	r.release()
}

// release gives back the claims on the jobs taken and not finished, so that
// they are due at once for the next start or another process sharing the
// store, rather than after their lease.
func (r *Runner) release() {
	r.mu.Lock()
	ids := slices.Collect(maps.Keys(r.taken))
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := r.opts.Jobs.ReleaseJobs(ctx, ids, r.opts.Clock.Now()); err != nil {
		r.opts.Logger.Warn("give back unfinished handler jobs; they run again once their lease is over", "jobs", len(ids), "error", err)
	}
}

// releaseTimeout bounds the write that gives back unfinished jobs at Stop.
const releaseTimeout = 5 * time.Second

// dispatchLoop takes due jobs whenever woken and queues them for the
// workers; when stopped, it waits for the workers and closes the outcome
// channel.
func (r *Runner) dispatchLoop() {
	for {
		select {
		case <-r.ctx.Done():
			r.workers.Wait()
			close(r.done)
			return
		case <-r.wake:
			r.dispatch()
		}
	}
}

// dispatch takes due jobs until none is due or maxTaken are taken, each
// principal up to its share, then sets the timer for the next due job.
func (r *Runner) dispatch() {
	for {
		q, room := r.query()
		if room <= 0 {
			return // a recorded outcome wakes the runner
		}
		now := r.opts.Clock.Now()
		jobs, err := r.opts.Jobs.DueJobs(r.ctx, now, room, q)
		if err != nil {
			if r.ctx.Err() == nil {
				r.opts.Logger.Error("read due handler jobs; trying again shortly", "error", err)
				r.arm(now.Add(retryStore))
			}
			return
		}
		took, left := r.take(jobs, room)
		if len(left) > 0 {
			// Claimed for this runner and not taken: due again at once.
			if err := r.opts.Jobs.ReleaseJobs(context.WithoutCancel(r.ctx), left, now); err != nil {
				r.opts.Logger.Warn("give back handler jobs not taken; they run once their lease is over", "jobs", len(left), "error", err)
			}
		}
		if took == 0 || len(jobs) < room {
			break
		}
	}
	q, _ := r.query()
	next, ok, err := r.opts.Jobs.NextJobDue(r.ctx, q)
	switch {
	case err != nil:
		if r.ctx.Err() == nil {
			r.opts.Logger.Error("find the next handler job; trying again shortly", "error", err)
			r.arm(r.opts.Clock.Now().Add(retryStore))
		}
	case ok && !next.After(r.opts.Clock.Now()):
		// A job fell due (was written) after DueJobs read: look again.
		r.Wake()
	case ok:
		r.arm(next)
	}
}

// work runs queued jobs until the runner stops; a job still queued then
// stays due.
func (r *Runner) work() {
	for inv := r.next(); inv != nil; inv = r.next() {
		r.run(inv)
		r.mu.Lock()
		r.queue.done(inv.Principal)
		r.mu.Unlock()
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
	began := time.Now()
	o := r.handle(inv)
	took := time.Since(began)
	if r.ctx.Err() != nil {
		r.opts.Logger.Info("handler run cut short by shutdown; it runs again at the next start",
			"subscription_id", inv.SubscriptionID, "job_id", inv.JobID)
		return
	}
	attrs := []any{"subscription_id", inv.SubscriptionID, "job_id", inv.JobID, "handler", inv.Spec.Type, "attempt", inv.Attempt}
	switch {
	case o.Err == nil:
		r.opts.Logger.Debug("handler ran", attrs...)
	case o.RetryIn > 0 && !o.Disable:
		r.opts.Logger.Warn("handler failed; retrying", append(attrs, "error", o.Err, "retry_in", o.RetryIn)...)
	default:
		r.opts.Logger.Warn("handler failed", append(attrs, "error", o.Err, "disabled", o.Disable)...)
	}
	if r.opts.Ran != nil {
		r.opts.Ran(inv, o, took)
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
			r.opts.Logger.Error("handler panicked", "subscription_id", inv.SubscriptionID, "panic", p)
			o = subscriptions.Outcome{Err: fmt.Errorf("the %s handler failed unexpectedly", inv.Spec.Type)}
		}
	}()
	if r.opts.Labels != nil {
		inv.Label = r.opts.Labels(inv.SubscriptionID)
	}
	// A context deadline runs on the wall clock, whatever Options.Clock is.
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.RunTimeout)
	defer cancel()
	return h.Handle(ctx, inv)
}

// finishLoop records outcomes in batches, and only then forgets their jobs
// as running: a job is never taken again before its outcome is stored.
func (r *Runner) finishLoop() {
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
		r.opts.Logger.Error("record handler outcomes", "jobs", len(batch), "error", err)
		if r.ctx.Err() != nil || attempt >= 10 {
			break
		}
		wait := make(chan struct{})
		timer := r.opts.Clock.AfterFunc(retryStore, func() { close(wait) })
		select {
		case <-wait:
		case <-r.ctx.Done():
			timer.Stop()
		}
	}
	r.mu.Lock()
	for _, d := range batch {
		p, ok := r.taken[d.JobID]
		if !ok {
			continue
		}
		delete(r.taken, d.JobID)
		if r.inFlight[p]--; r.inFlight[p] <= 0 {
			delete(r.inFlight, p)
		}
	}
	r.mu.Unlock()
	r.Wake()
}
