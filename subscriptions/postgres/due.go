package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file is what the handler runner reads: the jobs that are due, taken
// principal by principal through the index handler_jobs_principal_due, so
// that the cost follows the principals and the jobs handed out, not the
// length of one principal's backlog.

// ownersCTE lists the principals that have handler jobs, one index seek
// each.
const ownersCTE = `WITH RECURSIVE owners(name) AS (
		SELECT min(principal) FROM handler_jobs
		UNION ALL
		SELECT (SELECT min(principal) FROM handler_jobs WHERE principal > owners.name)
		FROM owners WHERE owners.name IS NOT NULL
	)`

// dueTurnsQuery lists the IDs of the jobs DueJobs hands out, in order. For
// each principal with room ($4 less its jobs in flight, given as the
// arrays $5 and $6, when $4 is positive; at most the limit $3) it reads that
// many of its oldest due jobs not in $2 through the index, and orders all
// by turn (the principal's jobs in flight plus its jobs due before this
// one), then due time.
var dueTurnsQuery = ownersCTE + `,
	share AS (
		SELECT o.name, coalesce(b.busy, 0) AS busy,
			CASE WHEN $4::integer > 0 THEN least($3::integer, $4::integer - coalesce(b.busy, 0)) ELSE $3::integer END AS room
		FROM owners o LEFT JOIN unnest($5::text[], $6::integer[]) AS b(name, busy) ON b.name = o.name
		WHERE o.name IS NOT NULL
	)
	SELECT w.id FROM share s
	CROSS JOIN LATERAL (
		SELECT d.id, d.due_at, row_number() OVER (ORDER BY d.due_at, d.id) - 1 AS k
		FROM (SELECT j.id, j.due_at FROM handler_jobs j
			WHERE j.principal = s.name AND j.due_at <= $1 AND j.id <> ALL($2::bigint[])
				AND ` + handlerOn + `
			ORDER BY j.due_at, j.id LIMIT s.room) AS d
	) AS w
	WHERE s.room > 0
	ORDER BY s.busy + w.k, w.due_at, w.id
	LIMIT $3`

// handlerOn says that job j's subscription has a handler that is on. A
// scalar sub-select, not a join, so that the planner walks the jobs in index
// order and stops at the limit, whatever its row estimates.
const handlerOn = `(SELECT t.handler IS NOT NULL AND t.handler_disabled IS NULL
	FROM subscriptions t WHERE t.id = j.subscription_id)`

// dueJobsQuery reads the runs of the jobs listed in $1, in that order.
const dueJobsQuery = `SELECT h.id, h.subscription_id, h.attempts, h.created_at, s.principal, s.handler, s.handler_secrets,
		i.kind, i.event_id, i.event_ids, i.remaining
	FROM unnest($1::bigint[]) WITH ORDINALITY AS k(id, ord)
	JOIN handler_jobs h ON h.id = k.id
	JOIN subscriptions s ON s.id = h.subscription_id
	LEFT JOIN inbox i ON i.seq = h.inbox_seq
	WHERE h.due_at <= $2 AND s.handler IS NOT NULL AND s.handler_disabled IS NULL
	ORDER BY k.ord`

// nextJobQuery finds when the earliest job not in $1 of a principal with
// fewer than $4 jobs in flight (the arrays $2 and $3) is due; any
// principal's when $4 is not positive.
const nextJobQuery = ownersCTE + `
	SELECT min((SELECT h.due_at FROM handler_jobs h
			WHERE h.principal = o.name AND h.id <> ALL($1::bigint[])
			ORDER BY h.due_at, h.id LIMIT 1))
	FROM owners o LEFT JOIN unnest($2::text[], $3::integer[]) AS b(name, busy) ON b.name = o.name
	WHERE o.name IS NOT NULL AND ($4::integer <= 0 OR coalesce(b.busy, 0) < $4::integer)`

// DueJobs implements subscriptions.Store.
func (s *Store) DueJobs(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]*subscriptions.Invocation, error) {
	if limit <= 0 {
		return nil, nil
	}
	names, busy := inFlight(q)
	rows, err := s.pool.Query(ctx, dueTurnsQuery, now, jobIDs(q.Skip), limit, q.PerPrincipal, names, busy)
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	dueBy := now
	if q.Lease > 0 {
		dueBy = now.Add(q.Lease)
		if ids, err = s.claimJobs(ctx, ids, now, dueBy); err != nil || len(ids) == 0 {
			return nil, err
		}
	}
	rows, err = s.pool.Query(ctx, dueJobsQuery, ids, dueBy)
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	jobs := &dueJobs{events: make(map[*subscriptions.Invocation][]string), bodies: make(map[string]json.RawMessage)}
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			if err := jobs.scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}
	if len(jobs.bodies) > 0 {
		if err := eventBodies(ctx, s.pool, jobs.bodies); err != nil {
			return nil, err
		}
	}
	jobs.fill()
	if len(jobs.lost) > 0 {
		if err := s.FinishJobs(ctx, lostJobs(jobs.lost, now)); err != nil {
			return nil, err
		}
	}
	return jobs.out, nil
}

// claimJobs moves the jobs ids that are still due at now to until, and
// returns those it moved, in the order given: another process sharing the
// database may have claimed some since they were read. The UPDATE takes
// each row; one that another transaction claimed meanwhile is read again
// once that one commits (READ COMMITTED re-checks the WHERE clause on the
// newest version), and is then no longer due, so each job goes to one
// claimant.
func (s *Store) claimJobs(ctx context.Context, ids []int64, now, until time.Time) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `UPDATE handler_jobs SET due_at = $1
		WHERE id = ANY($2) AND due_at <= $3 RETURNING id`, until, ids, now)
	if err != nil {
		return nil, fmt.Errorf("claim handler jobs: %w", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("claim handler jobs: %w", err)
	}
	claimed := make(map[int64]bool, len(got))
	for _, id := range got {
		claimed[id] = true
	}
	out := ids[:0]
	for _, id := range ids {
		if claimed[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// ReleaseJobs implements subscriptions.Store: the jobs given back are due
// at now (those due earlier stay so).
func (s *Store) ReleaseJobs(ctx context.Context, ids []string, now time.Time) error {
	n := jobIDs(ids)
	if len(n) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE handler_jobs SET due_at = $1 WHERE id = ANY($2) AND due_at > $1`, now, n); err != nil {
		return fmt.Errorf("release handler jobs: %w", err)
	}
	return nil
}

// inFlight returns q.InFlight as two arrays: principals and their counts.
func inFlight(q subscriptions.JobQuery) ([]string, []int32) {
	names := make([]string, 0, len(q.InFlight))
	busy := make([]int32, 0, len(q.InFlight))
	for p, n := range q.InFlight {
		names = append(names, p)
		busy = append(busy, int32(n))
	}
	return names, busy
}

// dueJobs gathers the runs DueJobs returns.
type dueJobs struct {
	out []*subscriptions.Invocation
	// events are the IDs of each run's events, and bodies their bodies.
	events map[*subscriptions.Invocation][]string
	bodies map[string]json.RawMessage
	// lost are the jobs whose delivery is gone.
	lost []string
}

// scan reads one row of dueJobsQuery.
func (j *dueJobs) scan(rows pgx.Rows) error {
	var (
		id            int64
		attempts      int32
		created       time.Time
		inv           subscriptions.Invocation
		h             storedHandler
		kind, eventID *string
		eventIDs      []string
		remaining     *int32
	)
	if err := rows.Scan(&id, &inv.SubscriptionID, &attempts, &created, &inv.Principal, &h.spec, &h.secrets,
		&kind, &eventID, &eventIDs, &remaining); err != nil {
		return err
	}
	inv.JobID = strconv.FormatInt(id, 10)
	if kind == nil {
		// Its delivery is gone; nothing is left to hand on.
		j.lost = append(j.lost, inv.JobID)
		return nil
	}
	var sub subscriptions.Subscription
	sub.ID = inv.SubscriptionID
	if err := h.decode(&sub); err != nil {
		return err
	}
	inv.Spec, inv.Secrets, inv.Attempt, inv.CreatedAt = sub.Handler, sub.Secrets, int(attempts)+1, created.UTC()
	inv.Kind = mcpe.InboxKind(*kind)
	if remaining != nil {
		inv.Remaining = int(*remaining)
	}
	var want []string
	if eventID != nil {
		want = []string{*eventID}
	} else {
		want = eventIDs
	}
	for _, e := range want {
		j.bodies[e] = nil
	}
	j.events[&inv] = want
	j.out = append(j.out, &inv)
	return nil
}

// fill gives each run the bodies of its events, leaving out those
// retention removed.
func (j *dueJobs) fill() {
	for _, inv := range j.out {
		for _, e := range j.events[inv] {
			b := j.bodies[e]
			if b == nil {
				continue
			}
			if inv.Kind == mcpe.InboxBatch {
				inv.Events = append(inv.Events, b)
			} else {
				inv.Event = b
			}
		}
	}
}

func lostJobs(ids []string, now time.Time) []subscriptions.JobDone {
	out := make([]subscriptions.JobDone, len(ids))
	for i, id := range ids {
		out[i] = subscriptions.JobDone{JobID: id, At: now, Outcome: subscriptions.Outcome{Err: errors.New("the delivery was removed before the handler ran")}}
	}
	return out
}

// NextJobDue implements subscriptions.Store.
func (s *Store) NextJobDue(ctx context.Context, q subscriptions.JobQuery) (time.Time, bool, error) {
	names, busy := inFlight(q)
	var t *time.Time
	if err := s.pool.QueryRow(ctx, nextJobQuery, jobIDs(q.Skip), names, busy, q.PerPrincipal).Scan(&t); err != nil {
		return time.Time{}, false, err
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return t.UTC(), true, nil
}
