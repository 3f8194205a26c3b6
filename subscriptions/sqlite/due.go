package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

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

const ownersQuery = ownersCTE + ` SELECT name FROM owners WHERE name IS NOT NULL`

// ownerDueQuery lists the oldest due jobs of principal ?1 not in ?3.
const ownerDueQuery = `SELECT h.id, h.due_at FROM handler_jobs h
	JOIN subscriptions s ON s.id = h.subscription_id
	WHERE h.principal = ?1 AND h.due_at <= ?2 AND h.id NOT IN (SELECT value FROM json_each(?3))
		AND s.handler IS NOT NULL AND s.handler_disabled IS NULL
	ORDER BY h.due_at, h.id LIMIT ?4`

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
	if limit <= 0 {
		return nil, nil
	}
	ids, err := s.dueTurns(ctx, now, limit, q)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	st, err := s.rstmts.get(ctx, dueJobsQuery)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, mustJSON(ids), nanos(now))
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
		if err := s.eventBodies(ctx, &s.rstmts, nil, jobs.bodies); err != nil {
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

// turn is a due job and its turn: the jobs its principal has in flight and
// those of its jobs due before it.
type turn struct {
	id, due int64
	n       int
}

// dueTurns returns the IDs of the jobs DueJobs hands out, in order: up to
// each principal's room of its oldest due jobs, by turn, then due time.
func (s *Store) dueTurns(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]int64, error) {
	owners, err := s.jobOwners(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.rstmts.get(ctx, ownerDueQuery)
	if err != nil {
		return nil, err
	}
	skip := jobIDs(q.Skip)
	var turns []turn
	for _, p := range owners {
		room := q.Room(p, limit)
		if room == 0 {
			continue
		}
		rows, err := st.QueryContext(ctx, p, nanos(now), skip, room)
		if err != nil {
			return nil, fmt.Errorf("read due handler jobs: %w", err)
		}
		for n := q.InFlight[p]; rows.Next(); n++ {
			t := turn{n: n}
			if err := rows.Scan(&t.id, &t.due); err != nil {
				rows.Close()
				return nil, err
			}
			turns = append(turns, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(turns, func(a, b turn) int {
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.due, b.due), cmp.Compare(a.id, b.id))
	})
	ids := make([]int64, 0, min(limit, len(turns)))
	for _, t := range turns[:min(limit, len(turns))] {
		ids = append(ids, t.id)
	}
	return ids, nil
}

// jobOwners returns the principals that have handler jobs.
func (s *Store) jobOwners(ctx context.Context) ([]string, error) {
	st, err := s.rstmts.get(ctx, ownersQuery)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("read handler job owners: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
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
func (j *dueJobs) scan(rows *sql.Rows) error {
	var (
		id, attempts, created int64
		inv                   subscriptions.Invocation
		h                     storedHandler
		kind, eventID, evIDs  sql.NullString
		remaining             sql.NullInt64
	)
	if err := rows.Scan(&id, &inv.SubscriptionID, &attempts, &created, &inv.Principal, &h.spec, &h.secrets,
		&kind, &eventID, &evIDs, &remaining); err != nil {
		return err
	}
	inv.JobID = strconv.FormatInt(id, 10)
	if !kind.Valid {
		// Its delivery is gone; nothing is left to hand on.
		j.lost = append(j.lost, inv.JobID)
		return nil
	}
	var sub subscriptions.Subscription
	sub.ID = inv.SubscriptionID
	if err := h.decode(&sub); err != nil {
		return err
	}
	inv.Spec, inv.Secrets, inv.Attempt, inv.CreatedAt = sub.Handler, sub.Secrets, int(attempts)+1, fromNanos(created)
	inv.Kind, inv.Remaining = mcpe.InboxKind(kind.String), int(remaining.Int64)
	var want []string
	if eventID.Valid {
		want = []string{eventID.String}
	} else if evIDs.Valid {
		if err := json.Unmarshal([]byte(evIDs.String), &want); err != nil {
			return fmt.Errorf("handler job %d: decode event IDs: %w", id, err)
		}
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
	st, err := s.rstmts.get(ctx, nextJobQuery)
	if err != nil {
		return time.Time{}, false, err
	}
	inFlight := q.InFlight
	if inFlight == nil {
		inFlight = map[string]int{}
	}
	var t sql.NullInt64
	if err := st.QueryRowContext(ctx, jobIDs(q.Skip), mustJSON(inFlight), q.PerPrincipal).Scan(&t); err != nil {
		return time.Time{}, false, err
	}
	if !t.Valid {
		return time.Time{}, false, nil
	}
	return fromNanos(t.Int64), true, nil
}
