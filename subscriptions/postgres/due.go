package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
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
	return storecore.DueJobs(ctx, jobsDriver{s}, now, limit, q)
}

// jobsDriver is the statements of DueJobs.
type jobsDriver struct{ *Store }

func (d jobsDriver) DueTurns(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]int64, error) {
	names, busy := inFlight(q)
	rows, err := d.pool.Query(ctx, dueTurnsQuery, now, jobIDs(q.Skip), limit, q.PerPrincipal, names, busy)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// ClaimJobs: the UPDATE takes each row; one that another transaction
// claimed meanwhile is read again once that one commits (READ COMMITTED
// re-checks the WHERE clause on the newest version), and is then no longer
// due, so each job goes to one claimant.
func (d jobsDriver) ClaimJobs(ctx context.Context, ids []int64, now, until time.Time) ([]int64, error) {
	rows, err := d.pool.Query(ctx, `UPDATE handler_jobs SET due_at = $1
		WHERE id = ANY($2) AND due_at <= $3 RETURNING id`, until, ids, now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (d jobsDriver) ReadJobs(ctx context.Context, ids []int64, dueBy time.Time, add func(*subscriptions.Invocation, []string)) error {
	rows, err := d.pool.Query(ctx, dueJobsQuery, ids, dueBy)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
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
		if kind != nil { // else its delivery is gone
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
			if eventID != nil {
				eventIDs = []string{*eventID}
			}
		}
		add(&inv, eventIDs)
	}
	return rows.Err()
}

func (d jobsDriver) Bodies(ctx context.Context, bodies map[string]json.RawMessage) error {
	return eventBodies(ctx, d.pool, bodies)
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
