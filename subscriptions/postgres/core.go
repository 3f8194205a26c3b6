package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// queries are the statements of the core's that PostgreSQL words its own
// way.
var queries = storecore.Queries{
	Greatest: "greatest",
	Members:  "unnest(i.subscription_ids) AS j(value)",
	Events:   "cardinality(i.event_ids)",
	Holds:    "$2 = ANY(i.event_ids)",
	Bodies:   `SELECT id, body FROM events WHERE id = ANY($1)`,
	// LATERAL: each span is one range of the (principal, seq) key; a join
	// would read the whole key for the bounds on seq.
	InboxRange: ` FROM jsonb_to_recordset($1::jsonb) AS s(p text, a bigint, t bigint)
		CROSS JOIN LATERAL (SELECT * FROM inbox WHERE principal = s.p AND seq > s.a AND seq <= s.t
			AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4) AS i
		LEFT JOIN events e ON e.id = i.event_id ORDER BY i.principal, i.seq LIMIT $4`,
	True: "true",
	// starts_with instead of LIKE: the prefix may hold % or _.
	Prefix:     `starts_with(principal, $1)`,
	LockPrefix: `SELECT 1 FROM principals WHERE starts_with(principal, $1) ORDER BY principal FOR NO KEY UPDATE`,
	// NOT IN over the inbox and the buffers is a hashed subplan.
	PruneEvents: `DELETE FROM events WHERE received_at < $1
		AND id NOT IN (SELECT event_id FROM inbox WHERE event_id IS NOT NULL)
		AND id NOT IN (SELECT unnest(event_ids) FROM inbox WHERE event_ids IS NOT NULL)
		AND id NOT IN (SELECT event_id FROM buffer)`,
	PruneChanges: `UPDATE changes SET changes_pruned_through = greatest(changes_pruned_through,
			coalesce((SELECT max(seq) FROM subscription_changes WHERE changed_at < now() - $1::bigint * interval '1 millisecond'), 0))
		WHERE id = 1`,
	DoomedTable: `CREATE TEMP TABLE doomed (principal text, seq bigint, PRIMARY KEY (principal, seq)) ON COMMIT DROP`,
	DoomedKept: `DELETE FROM doomed d USING jsonb_each_text($1::jsonb) AS k(principal, seq)
		WHERE d.principal = k.principal AND d.seq > k.seq::bigint`,
	DueTurns: dueTurnsQuery,
	DueJobs:  dueJobsQuery,
	// The UPDATE takes each row; one that another transaction claimed
	// meanwhile is read again once that one commits (READ COMMITTED
	// re-checks the WHERE clause on the newest version), and is then no
	// longer due, so each job goes to one claimant.
	ClaimJobs:   `UPDATE handler_jobs SET due_at = $1 WHERE id = ANY($2) AND due_at <= $3 RETURNING id`,
	ReleaseJobs: `UPDATE handler_jobs SET due_at = $1 WHERE id = ANY($2) AND due_at > $1`,
	NextJob:     nextJobQuery,
	// The windows' rows are taken: a fold committed meanwhile is read, and
	// another process ending the same windows waits, then finds them not due.
	DueWindows: `SELECT t.subscription_id, t.group_key, t.event_id, t.folded, t.window_length, coalesce(s.principal, ''), e.body
		FROM throttle t LEFT JOIN subscriptions s ON s.id = t.subscription_id AND s.status = 'active'
		LEFT JOIN events e ON e.id = t.event_id WHERE t.window_end <= $1 ORDER BY t.window_end LIMIT $2 FOR UPDATE OF t`,
	DeliverWindow: `WITH d AS (UPDATE principals SET inbox_seq = inbox_seq + 1 WHERE principal = $1 RETURNING inbox_seq)
		INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, remaining, created_at)
		SELECT d.inbox_seq, $1::text, $2::text[], 'event', $3::text, $4::integer, $5::timestamptz FROM d RETURNING seq`,
}

// conn runs the core's statements (storecore.DB) on the pool or in a
// transaction, and returns times in UTC, as the SQLite store does.
type conn struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
}

// coreTx is the core's Tx: it takes the rows of principals first.
func (s *Store) coreTx(ctx context.Context, principals []string, f func(storecore.DB) error) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPrincipals(ctx, tx, principals); err != nil {
			return err
		}
		return f(conn{tx})
	})
}

func (c conn) Query(ctx context.Context, scan func(storecore.Row) error, query string, args ...any) error {
	rows, err := c.q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(utcRow{rows}); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

// utcRow is a row whose times are scanned in UTC.
type utcRow struct{ rows pgx.Rows }

func (r utcRow) Scan(dest ...any) error {
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	for _, d := range dest {
		switch d := d.(type) {
		case *time.Time:
			*d = d.UTC()
		case **time.Time:
			if *d != nil {
				**d = (*d).UTC()
			}
		}
	}
	return nil
}
