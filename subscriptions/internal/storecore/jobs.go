package storecore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// OwnersCTE lists the principals that have handler jobs, one index seek
// each: the handler runner takes the due jobs principal by principal
// through the index handler_jobs_principal_due, so that the cost follows
// the principals and the jobs handed out, not the length of one
// principal's backlog.
const OwnersCTE = `WITH RECURSIVE owners(name) AS (
		SELECT min(principal) FROM handler_jobs
		UNION ALL
		SELECT (SELECT min(principal) FROM handler_jobs WHERE principal > owners.name)
		FROM owners WHERE owners.name IS NOT NULL
	)`

// DueJobs implements subscriptions.Store. Queries.DueTurns lists the IDs of
// the jobs it hands out, in order, from the arguments now, the jobs to
// skip, the limit, PerPrincipal and the object InFlight.
func (c *Core) DueJobs(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]*subscriptions.Invocation, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := Column[int64](ctx, c.DB, c.Q.DueTurns, now, jobIDs(q.Skip), limit, q.PerPrincipal, inFlight(q))
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	dueBy := now
	if q.Lease > 0 {
		// Those of ids still due: another process sharing the store may
		// have claimed some since they were read.
		dueBy = now.Add(q.Lease)
		var got []int64
		err := c.Tx(ctx, nil, func(tx DB) (err error) {
			got, err = Column[int64](ctx, tx, c.Q.ClaimJobs, dueBy, ids, now)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("claim handler jobs: %w", err)
		}
		claimed := make(map[int64]bool, len(got))
		for _, id := range got {
			claimed[id] = true
		}
		ids = slices.DeleteFunc(ids, func(id int64) bool { return !claimed[id] })
		if len(ids) == 0 {
			return nil, nil
		}
	}
	out, err := c.readJobs(ctx, ids, now, dueBy)
	if err != nil && q.Lease > 0 {
		// Claimed and not handed out: give them back, whatever ended ctx.
		back := make([]string, len(ids))
		for i, id := range ids {
			back[i] = strconv.FormatInt(id, 10)
		}
		if rerr := c.ReleaseJobs(context.WithoutCancel(ctx), back, now); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return out, err
}

// readJobs reads the runs of the jobs ids, due by dueBy, in that order,
// with the bodies of their events (leaving out those retention removed);
// the jobs whose delivery is gone are finished as failed at now.
func (c *Core) readJobs(ctx context.Context, ids []int64, now, dueBy time.Time) ([]*subscriptions.Invocation, error) {
	var out []*subscriptions.Invocation
	var lost []subscriptions.JobDone
	events := make(map[*subscriptions.Invocation][]string)
	bodies := make(map[string]json.RawMessage)
	err := c.DB.Query(ctx, func(r Row) error {
		var (
			id, attempts  int64
			run           subscriptions.Invocation
			h             storedHandler
			kind, eventID *string
			want          []string
			remaining     *int
		)
		if err := r.Scan(&id, &run.SubscriptionID, &attempts, &run.CreatedAt, &run.Principal, &h.spec, &h.secrets,
			&kind, &eventID, &want, &remaining); err != nil {
			return err
		}
		run.JobID = strconv.FormatInt(id, 10)
		if kind == nil { // its delivery is gone
			lost = append(lost, subscriptions.JobDone{JobID: run.JobID, At: now,
				Outcome: subscriptions.Outcome{Err: errors.New("the delivery was removed before the handler ran")}})
			return nil
		}
		var sub subscriptions.Subscription
		sub.ID = run.SubscriptionID
		if err := h.decode(&sub); err != nil {
			return err
		}
		run.Spec, run.Secrets, run.Attempt = sub.Handler, sub.Secrets, int(attempts)+1
		run.Kind, run.Remaining = mcpe.InboxKind(*kind), deref(remaining)
		if eventID != nil {
			want = []string{*eventID}
		}
		for _, e := range want {
			bodies[e] = nil
		}
		events[&run] = want
		out = append(out, &run)
		return nil
	}, c.Q.DueJobs, ids, dueBy)
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	if len(bodies) > 0 {
		if err := ReadBodies(ctx, c.DB, c.Q.Bodies, bodies); err != nil {
			return nil, err
		}
	}
	for _, run := range out {
		for _, e := range events[run] {
			if b := bodies[e]; b == nil {
				continue
			} else if run.Kind == mcpe.InboxBatch {
				run.Events = append(run.Events, b)
			} else {
				run.Event = b
			}
		}
	}
	if len(lost) > 0 {
		if err := c.FinishJobs(ctx, lost); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReleaseJobs implements subscriptions.Store: the jobs given back are due
// at now (those due earlier stay so).
func (c *Core) ReleaseJobs(ctx context.Context, ids []string, now time.Time) error {
	n := jobIDs(ids)
	if len(n) == 0 {
		return nil
	}
	_, err := c.DB.Exec(ctx, c.Q.ReleaseJobs, now, n)
	return wrap("release handler jobs", err)
}

// NextJobDue implements subscriptions.Store. Queries.NextJob finds when the
// earliest job not in $1 of a principal with fewer than $3 jobs in flight
// (counted in the object $2) is due; any principal's when $3 is not
// positive.
func (c *Core) NextJobDue(ctx context.Context, q subscriptions.JobQuery) (time.Time, bool, error) {
	return c.earliest(ctx, c.Q.NextJob, jobIDs(q.Skip), inFlight(q), q.PerPrincipal)
}

// earliest reads the time query returns, false when NULL.
func (c *Core) earliest(ctx context.Context, query string, args ...any) (time.Time, bool, error) {
	var t *time.Time
	if err := one(ctx, c.DB, query, args, &t); err != nil || t == nil {
		return time.Time{}, false, err
	}
	return *t, true, nil
}

// jobIDs turns job IDs into the integers the queries take, leaving out what
// is not one.
func jobIDs(ids []string) []int64 {
	n := make([]int64, 0, len(ids))
	for _, id := range ids {
		if v, err := strconv.ParseInt(id, 10, 64); err == nil {
			n = append(n, v)
		}
	}
	return n
}

// inFlight is q.InFlight, never nil.
func inFlight(q subscriptions.JobQuery) map[string]int {
	if q.InFlight == nil {
		return map[string]int{}
	}
	return q.InFlight
}

// DueFires implements subscriptions.Store. It only reads: each fire's Due
// is the subscription's next fire as read (in the store's precision), and
// Fire claims, recording the fire only while the next fire is still that,
// so that of two processes firing the same due fire one does.
func (c *Core) DueFires(ctx context.Context, ch mcpe.Channel, now time.Time, limit int) ([]subscriptions.DueFire, error) {
	if limit <= 0 {
		return nil, c.errLimit("DueFires", limit)
	}
	out, err := scanAll(ctx, c.DB, func(r Row, d *subscriptions.DueFire) error {
		var delivery string
		if err := r.Scan(&d.SubscriptionID, &d.Principal, &delivery, &d.Due); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(delivery), &d.Delivery); err != nil {
			return fmt.Errorf("subscription %s: decode delivery: %w", d.SubscriptionID, err)
		}
		return nil
	}, `SELECT id, principal, delivery, next_fire_at FROM subscriptions
		WHERE timed = $1 AND status = 'active' AND next_fire_at IS NOT NULL AND next_fire_at <= $2
		ORDER BY next_fire_at, id LIMIT $3`, string(ch), now, limit)
	if err != nil {
		return nil, fmt.Errorf("read due fires: %w", err)
	}
	return out, nil
}

// NextFire implements subscriptions.Store.
func (c *Core) NextFire(ctx context.Context, ch mcpe.Channel) (time.Time, bool, error) {
	t, ok, err := c.earliest(ctx, `SELECT min(next_fire_at) FROM subscriptions
		WHERE timed = $1 AND status = 'active' AND next_fire_at IS NOT NULL`, string(ch))
	return t, ok, wrap("read next fire", err)
}

// NextExpiry implements subscriptions.Store.
func (c *Core) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	return c.earliest(ctx, `SELECT min(expires_at) FROM subscriptions
		WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL`)
}
