package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"regexp"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// queries are the statements of the core's that SQLite words its own way.
var queries = storecore.Queries{
	Greatest: "max",
	Members:  "json_each(i.subscription_ids) AS j",
	Events:   "json_array_length(i.event_ids)",
	Holds:    "$2 IN (SELECT value FROM json_each(i.event_ids))",
	Bodies:   bodiesQuery,
	InboxRange: ` FROM json_each($1) s JOIN inbox i ON i.principal = json_extract(s.value, '$.p')
			AND i.seq > json_extract(s.value, '$.a') AND i.seq <= json_extract(s.value, '$.t')
		LEFT JOIN events e ON e.id = i.event_id WHERE i.seq > $2 AND i.seq <= $3 ORDER BY i.seq LIMIT $4`,
	True: "1",
	// substr instead of LIKE: the prefix may hold % or _.
	Prefix: `substr(principal, 1, length($1)) = $1`,
	PruneEvents: `DELETE FROM events WHERE received_at < $1
		AND id NOT IN (SELECT event_id FROM inbox WHERE event_id IS NOT NULL)
		AND id NOT IN (SELECT j.value FROM inbox, json_each(inbox.event_ids) j WHERE inbox.event_ids IS NOT NULL)
		AND id NOT IN (SELECT event_id FROM buffer)`,
	PruneChanges: `UPDATE changes SET changes_pruned_through = max(changes_pruned_through,
			coalesce((SELECT max(seq) FROM subscription_changes
				WHERE changed_at < CAST(unixepoch('subsec') * 1000 AS INTEGER) - $1), 0))
		WHERE id = 1`,
	DoomedTable: `CREATE TEMP TABLE IF NOT EXISTS doomed (principal TEXT, seq INTEGER, PRIMARY KEY (principal, seq))`,
	DoomedKept:  `DELETE FROM doomed WHERE EXISTS (SELECT 1 FROM json_each($1) k WHERE k.key = doomed.principal AND doomed.seq > k.value)`,
	DueTurns:    dueTurnsQuery,
	DueJobs:     dueJobsQuery,
	ClaimJobs:   `UPDATE handler_jobs SET due_at = $1 WHERE id IN (SELECT value FROM json_each($2)) AND due_at <= $3 RETURNING id`,
	ReleaseJobs: `UPDATE handler_jobs SET due_at = $1 WHERE id IN (SELECT value FROM json_each($2)) AND due_at > $1`,
	NextJob:     nextJobQuery,
	DueWindows: `SELECT t.subscription_id, t.group_key, t.event_id, t.folded, t.window_length, coalesce(s.principal, ''), e.body
		FROM throttle t LEFT JOIN subscriptions s ON s.id = t.subscription_id AND s.status = 'active'
		LEFT JOIN events e ON e.id = t.event_id WHERE t.window_end <= $1 ORDER BY t.window_end LIMIT $2`,
	DeliverWindow: `INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, remaining, created_at)
		SELECT ` + inboxHead + ` + 1, $1, $2, 'event', $3, $4, $5 RETURNING seq`,
}

// inboxHead is the highest inbox number given out: the newest entry's, or
// that of one deleted since if higher (migration 0009). Only a transaction
// that holds the write lock may number entries from it.
const inboxHead = `max(coalesce((SELECT max(seq) FROM inbox), 0), (SELECT inbox_deleted_through FROM changes WHERE id = 1))`

// bodiesQuery reads the bodies of a JSON array of event IDs.
const bodiesQuery = `SELECT id, body FROM events WHERE id IN (SELECT value FROM json_each($1))`

// conn runs the core's statements (storecore.DB): on the read connections,
// or in tx. Times are stored as Unix nanoseconds, lists and maps as JSON.
type conn struct {
	s  *Store
	tx *sql.Tx
	// missed, if not nil, lists the statements tx ran that were not
	// prepared: the transaction holds the only write connection, so they
	// are prepared for the next time once it ends (coreTx).
	missed *[]string
}

// coreTx is the core's Tx: SQLite's transactions take the whole database.
func (s *Store) coreTx(ctx context.Context, _ []string, f func(storecore.DB) error) error {
	var missed []string
	err := s.tx(ctx, func(tx *sql.Tx) error { return f(conn{s, tx, &missed}) })
	for _, q := range missed {
		s.wstmts.get(ctx, q) // a failure shows again at the next use
	}
	return err
}

// stmt returns the prepared statement of query: outside a transaction, the
// writer's if write, else the readers'.
func (c conn) stmt(ctx context.Context, query string, write bool) (*sql.Stmt, error) {
	query = numbered(query)
	switch {
	case c.tx == nil && write:
		return c.s.wstmts.get(ctx, query)
	case c.tx == nil:
		return c.s.rstmts.get(ctx, query)
	}
	if st := c.s.wstmts.cached(query); st != nil {
		return c.tx.StmtContext(ctx, st), nil
	}
	if c.missed != nil {
		*c.missed = append(*c.missed, query)
	}
	return c.tx.PrepareContext(ctx, query)
}

func (c conn) Query(ctx context.Context, scan func(storecore.Row) error, query string, args ...any) error {
	st, err := c.stmt(ctx, query, false)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, sqlArgs(args)...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := scan(row{rows}); err != nil {
			rows.Close()
			return err
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// one reads the first row of query into dest, as the driver returns its
// columns; sql.ErrNoRows when there is none.
func (c conn) one(ctx context.Context, query string, args []any, dest ...any) error {
	st, err := c.stmt(ctx, query, false)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, sqlArgs(args)...).Scan(dest...)
}

// Exec outside a transaction runs query on the write connection, as a
// transaction of its own.
func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	st, err := c.stmt(ctx, query, true)
	if err == nil && c.tx == nil {
		err = c.s.Health()
	}
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, sqlArgs(args)...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err == nil && n > 0 && c.tx == nil {
		c.s.committed()
	}
	return n, err
}

// dollar is an argument as the core numbers them.
var (
	dollar  = regexp.MustCompile(`\$(\d)`)
	numbers sync.Map
)

// numbered returns query with its arguments numbered ?1, ?2, ...
func numbered(query string) string {
	if q, ok := numbers.Load(query); ok {
		return q.(string)
	}
	q := dollar.ReplaceAllString(query, "?$1")
	numbers.Store(query, q)
	return q
}

// sqlArgs returns args as SQLite stores them.
func sqlArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			out[i] = v.UnixNano()
		case *time.Time:
			if v != nil {
				out[i] = v.UnixNano()
			}
		case []string, []int64, map[string]int, map[string]int64:
			out[i] = storecore.MustJSON(v)
		default:
			out[i] = a
		}
	}
	return out
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// row scans the columns SQLite stores its own way into what the core reads.
type row struct{ rows *sql.Rows }

func (r row) Scan(dest ...any) error {
	conv := make([]any, len(dest))
	var then []func() error
	for i, d := range dest {
		switch d := d.(type) {
		case *time.Time:
			var n int64
			conv[i] = &n
			then = append(then, func() error { *d = fromNanos(n); return nil })
		case **time.Time:
			var n sql.NullInt64
			conv[i] = &n
			then = append(then, func() error {
				*d = nil
				if n.Valid {
					*d = new(fromNanos(n.Int64))
				}
				return nil
			})
		case *[]string:
			var s sql.NullString
			conv[i] = &s
			then = append(then, func() error {
				if *d = nil; s.Valid {
					return json.Unmarshal([]byte(s.String), d)
				}
				return nil
			})
		default:
			conv[i] = d
		}
	}
	if err := r.rows.Scan(conv...); err != nil {
		return err
	}
	for _, f := range then {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}
