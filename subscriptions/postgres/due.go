package postgres

import "github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"

// The statements of the handler runner's reads (storecore.DueJobs).

// dueTurnsQuery lists the IDs of the jobs DueJobs hands out, in order. For
// each principal with room ($4 less its jobs in flight, counted in the
// object $5, when $4 is positive; at most the limit $3) it reads that
// many of its oldest due jobs not in $2 through the index, and orders all
// by turn (the principal's jobs in flight plus its jobs due before this
// one), then due time.
var dueTurnsQuery = storecore.OwnersCTE + `,
	share AS (
		SELECT o.name, coalesce(b.busy::integer, 0) AS busy,
			CASE WHEN $4::integer > 0 THEN least($3::integer, $4::integer - coalesce(b.busy::integer, 0)) ELSE $3::integer END AS room
		FROM owners o LEFT JOIN jsonb_each_text($5::jsonb) AS b(name, busy) ON b.name = o.name
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
	LEFT JOIN inbox i ON i.principal = h.principal AND i.seq = h.inbox_seq
	WHERE h.due_at <= $2 AND s.handler IS NOT NULL AND s.handler_disabled IS NULL
	ORDER BY k.ord`

// nextJobQuery finds when the earliest job not in $1 of a principal with
// fewer than $3 jobs in flight (counted in the object $2) is due; any
// principal's when $3 is not positive.
const nextJobQuery = storecore.OwnersCTE + `
	SELECT min((SELECT h.due_at FROM handler_jobs h
			WHERE h.principal = o.name AND h.id <> ALL($1::bigint[])
			ORDER BY h.due_at, h.id LIMIT 1))
	FROM owners o LEFT JOIN jsonb_each_text($2::jsonb) AS b(name, busy) ON b.name = o.name
	WHERE o.name IS NOT NULL AND ($3::integer <= 0 OR coalesce(b.busy::integer, 0) < $3::integer)`
