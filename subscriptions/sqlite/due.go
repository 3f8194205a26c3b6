package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// firstDue is the subquery that finds principal NAME's oldest due job not
// in ?2 (after the one EXTRA names), one index seek.
const firstDue = `SELECT j.id FROM handler_jobs j JOIN subscriptions t ON t.id = j.subscription_id
			WHERE j.principal = NAME AND j.due_at <= ?1 AND j.id NOT IN (SELECT value FROM json_each(?2))
				AND t.handler IS NOT NULL AND t.handler_disabled IS NULL EXTRA
			ORDER BY j.due_at, j.id LIMIT 1`

// dueTurnsQuery lists the IDs of the jobs DueJobs hands out, in order. For
// each principal with room (?4 less its jobs in flight, counted in the
// object ?5, when ?4 is positive; at most the limit ?3) it walks that many
// of its oldest due jobs not in ?2, one index seek each, and orders all by
// turn (the principal's jobs in flight plus its jobs due before this one),
// then due time.
var dueTurnsQuery = ownersCTE + `,
	share(name, busy, room) AS (
		SELECT o.name, coalesce(b.value, 0),
			CASE WHEN ?4 > 0 THEN min(?3, ?4 - coalesce(b.value, 0)) ELSE ?3 END
		FROM owners o LEFT JOIN json_each(?5) b ON b.key = o.name
		WHERE o.name IS NOT NULL
	),
	walk(name, busy, room, k, id, due) AS (
		SELECT s.name, s.busy, s.room, 0, h.id, h.due_at FROM share s
		JOIN handler_jobs h ON h.id = (` + strings.NewReplacer("NAME", "s.name", "EXTRA", "").Replace(firstDue) + `)
		WHERE s.room > 0
		UNION ALL
		SELECT w.name, w.busy, w.room, w.k + 1, h.id, h.due_at FROM walk w
		JOIN handler_jobs h ON h.id = (` + strings.NewReplacer("NAME", "w.name", "EXTRA", "AND (j.due_at, j.id) > (w.due, w.id)").Replace(firstDue) + `)
		WHERE w.k + 1 < w.room
	)
	SELECT id FROM walk ORDER BY busy + k, due, id LIMIT ?3`

// dueJobsQuery reads the runs of the jobs listed in ?1, in that order.
const dueJobsQuery = `SELECT h.id, h.subscription_id, h.attempts, h.created_at, s.principal, s.handler, s.handler_secrets,
		i.kind, i.event_id, i.event_ids, i.remaining
	FROM json_each(?1) k
	JOIN handler_jobs h ON h.id = k.value
	JOIN subscriptions s ON s.id = h.subscription_id
	LEFT JOIN inbox i ON i.seq = h.inbox_seq
	WHERE h.due_at <= ?2 AND s.handler IS NOT NULL AND s.handler_disabled IS NULL
	ORDER BY k.key`

// nextJobQuery finds when the earliest job not in ?1 of a principal with
// fewer than ?3 jobs in flight (counted in the object ?2) is due; any
// principal's when ?3 is not positive.
const nextJobQuery = ownersCTE + `
	SELECT min((SELECT h.due_at FROM handler_jobs h
			WHERE h.principal = o.name AND h.id NOT IN (SELECT value FROM json_each(?1))
			ORDER BY h.due_at, h.id LIMIT 1))
	FROM owners o LEFT JOIN json_each(?2) b ON b.key = o.name
	WHERE o.name IS NOT NULL AND (?3 <= 0 OR coalesce(b.value, 0) < ?3)`

// DueJobs implements subscriptions.Store.
func (s *Store) DueJobs(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]*subscriptions.Invocation, error) {
	return storecore.DueJobs(ctx, jobsDriver{s}, now, limit, q)
}

// jobsDriver is the statements of DueJobs.
type jobsDriver struct{ *Store }

func (d jobsDriver) DueTurns(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]int64, error) {
	st, err := d.rstmts.get(ctx, dueTurnsQuery)
	if err != nil {
		return nil, err
	}
	return column[int64](st.QueryContext(ctx, nanos(now), jobIDs(q.Skip), limit, q.PerPrincipal, inFlightJSON(q)))
}

func (d jobsDriver) ClaimJobs(ctx context.Context, ids []int64, now, until time.Time) (claimed []int64, err error) {
	err = d.tx(ctx, func(tx *sql.Tx) error {
		claimed, err = column[int64](tx.QueryContext(ctx, `UPDATE handler_jobs SET due_at = ?1
			WHERE id IN (SELECT value FROM json_each(?2)) AND due_at <= ?3 RETURNING id`,
			nanos(until), mustJSON(ids), nanos(now)))
		return err
	})
	return claimed, err
}

func (d jobsDriver) ReadJobs(ctx context.Context, ids []int64, dueBy time.Time, add func(*subscriptions.Invocation, []string)) error {
	st, err := d.rstmts.get(ctx, dueJobsQuery)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, mustJSON(ids), nanos(dueBy))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, attempts, created int64
			inv                   subscriptions.Invocation
			h                     storedHandler
			kind, eventID, evIDs  sql.NullString
			remaining             sql.NullInt64
			want                  []string
		)
		if err := rows.Scan(&id, &inv.SubscriptionID, &attempts, &created, &inv.Principal, &h.spec, &h.secrets,
			&kind, &eventID, &evIDs, &remaining); err != nil {
			return err
		}
		inv.JobID = strconv.FormatInt(id, 10)
		if kind.Valid { // else its delivery is gone
			var sub subscriptions.Subscription
			sub.ID = inv.SubscriptionID
			if err := h.decode(&sub); err != nil {
				return err
			}
			inv.Spec, inv.Secrets, inv.Attempt, inv.CreatedAt = sub.Handler, sub.Secrets, int(attempts)+1, fromNanos(created)
			inv.Kind, inv.Remaining = mcpe.InboxKind(kind.String), int(remaining.Int64)
			if eventID.Valid {
				want = []string{eventID.String}
			} else if evIDs.Valid {
				if err := json.Unmarshal([]byte(evIDs.String), &want); err != nil {
					return fmt.Errorf("handler job %d: decode event IDs: %w", id, err)
				}
			}
		}
		add(&inv, want)
	}
	return rows.Err()
}

func (d jobsDriver) Bodies(ctx context.Context, bodies map[string]json.RawMessage) error {
	return d.eventBodies(ctx, &d.rstmts, nil, bodies)
}

// ReleaseJobs implements subscriptions.Store.
func (s *Store) ReleaseJobs(ctx context.Context, ids []string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE handler_jobs SET due_at = ?1
			WHERE id IN (SELECT CAST(value AS INTEGER) FROM json_each(?2)) AND due_at > ?1`, nanos(now), mustJSON(ids))
		return err
	})
}

// inFlightJSON returns q.InFlight as a JSON object.
func inFlightJSON(q subscriptions.JobQuery) string {
	if q.InFlight == nil {
		return "{}"
	}
	return mustJSON(q.InFlight)
}

// column reads the one column of rows.
func column[T any](rows *sql.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// NextJobDue implements subscriptions.Store.
func (s *Store) NextJobDue(ctx context.Context, q subscriptions.JobQuery) (time.Time, bool, error) {
	st, err := s.rstmts.get(ctx, nextJobQuery)
	if err != nil {
		return time.Time{}, false, err
	}
	var t sql.NullInt64
	if err := st.QueryRowContext(ctx, jobIDs(q.Skip), inFlightJSON(q), q.PerPrincipal).Scan(&t); err != nil {
		return time.Time{}, false, err
	}
	if !t.Valid {
		return time.Time{}, false, nil
	}
	return fromNanos(t.Int64), true, nil
}
