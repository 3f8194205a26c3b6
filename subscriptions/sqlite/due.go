package sqlite

import (
	"strings"

	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// The statements of the handler runner's reads (storecore.DueJobs).

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
var dueTurnsQuery = storecore.OwnersCTE + `,
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
	LEFT JOIN inbox i ON i.principal = h.principal AND i.seq = h.inbox_seq
	WHERE h.due_at <= ?2 AND s.handler IS NOT NULL AND s.handler_disabled IS NULL
	ORDER BY k.key`

// nextJobQuery finds when the earliest job not in ?1 of a principal with
// fewer than ?3 jobs in flight (counted in the object ?2) is due; any
// principal's when ?3 is not positive.
const nextJobQuery = storecore.OwnersCTE + `
	SELECT min((SELECT h.due_at FROM handler_jobs h
			WHERE h.principal = o.name AND h.id NOT IN (SELECT value FROM json_each(?1))
			ORDER BY h.due_at, h.id LIMIT 1))
	FROM owners o LEFT JOIN json_each(?2) b ON b.key = o.name
	WHERE o.name IS NOT NULL AND (?3 <= 0 OR coalesce(b.value, 0) < ?3)`
