package handlers

import (
	"maps"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file is how the runner shares its workers among principals: the
// jobs each may have taken, the order the store hands them out, and the
// order workers take them in.

// takeAhead is how many jobs the runner takes per run it may have in
// progress: taking ahead keeps the workers busy while outcomes are written.
const takeAhead = 4

// shareTaken bounds the jobs of one principal taken and not yet recorded.
func (r *Runner) shareTaken() int { return takeAhead * r.perPrincipal }

// lease is how long a job the store hands out stays claimed for this
// runner (subscriptions.JobQuery.Lease), so that another process sharing
// the store leaves it alone: long enough for the jobs taken ahead of it to
// run to their ceiling, and its own run.
func (r *Runner) lease() time.Duration {
	return (takeAhead+1)*r.opts.RunTimeout + min(r.opts.RunTimeout, time.Minute)
}

// query returns what the store is to leave out: the jobs taken, and the
// principals at their share; and the room left under maxTaken.
func (r *Runner) query() (q subscriptions.JobQuery, room int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q = subscriptions.JobQuery{
		Skip:         slices.AppendSeq(make([]string, 0, len(r.taken)), maps.Keys(r.taken)),
		PerPrincipal: r.shareTaken(),
		InFlight:     maps.Clone(r.inFlight),
		Lease:        r.lease(),
	}
	return q, r.maxTaken() - len(r.taken)
}

// take queues up to room jobs for the workers and returns how many it took,
// and the jobs it left: a job already taken, or past its principal's share
// (the store should not have returned it).
func (r *Runner) take(jobs []*subscriptions.Invocation, room int) (n int, left []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range jobs {
		if _, ok := r.taken[j.JobID]; ok {
			continue // this runner has it: its claim is this runner's
		}
		if n == room || r.inFlight[j.Principal] >= r.shareTaken() {
			left = append(left, j.JobID)
			continue
		}
		r.taken[j.JobID] = j.Principal
		r.inFlight[j.Principal]++
		r.queue.push(j)
		r.ready.Signal()
		n++
	}
	return n, left
}

// next waits for a job a worker may run, and returns it; nil once the
// runner stops. A worker that ends a run takes the next job itself, so a
// run's end signals no one.
func (r *Runner) next() *subscriptions.Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.ctx.Err() == nil {
		if inv := r.queue.pop(r.perPrincipal); inv != nil {
			return inv
		}
		r.ready.Wait()
	}
	return nil
}

// fairQueue holds the jobs taken and waiting for a worker, by principal,
// and counts each principal's runs in progress. A free worker takes the
// oldest job of the principal with the fewest runs in progress, on a tie
// the one that waited longest, leaving out principals at their limit of
// runs: a principal with nothing running goes ahead of one that already
// holds workers, whatever the order the jobs came in. It is not safe for
// concurrent use.
type fairQueue struct {
	waiting map[string][]*subscriptions.Invocation
	// order are the principals with waiting jobs, longest waiting first.
	order   []string
	running map[string]int
}

func newFairQueue() *fairQueue {
	return &fairQueue{waiting: make(map[string][]*subscriptions.Invocation), running: make(map[string]int)}
}

// push adds a job to its principal's waiting jobs.
func (q *fairQueue) push(inv *subscriptions.Invocation) {
	p := inv.Principal
	if len(q.waiting[p]) == 0 {
		q.order = append(q.order, p)
	}
	q.waiting[p] = append(q.waiting[p], inv)
}

// pop takes the next job to run, of a principal with fewer than limit runs
// in progress, and counts it as running until done; nil when there is none.
func (q *fairQueue) pop(limit int) *subscriptions.Invocation {
	best := -1
	for i, p := range q.order {
		if n := q.running[p]; n < limit && (best < 0 || n < q.running[q.order[best]]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	p := q.order[best]
	jobs := q.waiting[p]
	inv := jobs[0]
	jobs[0] = nil
	q.order = slices.Delete(q.order, best, best+1)
	if len(jobs) == 1 {
		delete(q.waiting, p)
	} else {
		q.waiting[p] = jobs[1:]
		q.order = append(q.order, p) // its turn is over: to the back
	}
	q.running[p]++
	return inv
}

// done ends a run that pop returned.
func (q *fairQueue) done(principal string) {
	if q.running[principal]--; q.running[principal] <= 0 {
		delete(q.running, principal)
	}
}
