package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// fireStmts are the prepared statements of a fire.
type fireStmts struct {
	s                                                                   *Store
	claim, count, takeAll, takeSome, dropAll, dropSome, lastSeq, expire *sql.Stmt
}

func (s *Store) fireStatements(ctx context.Context) (*fireStmts, error) {
	st, err := s.prepared(ctx,
		// Records the fire of each active subscription and names them.
		`UPDATE subscriptions SET last_fire_at = ?1, next_fire_at = r.next
			FROM (SELECT value ->> '$.id' AS id, value ->> '$.principal' AS principal, value ->> '$.next' AS next,
					value ->> '$.due' AS due
				FROM json_each(?2)) AS r
			WHERE subscriptions.id = r.id AND subscriptions.principal = r.principal AND subscriptions.status = 'active'
				AND (r.due IS NULL OR subscriptions.next_fire_at = r.due)
			RETURNING subscriptions.id`,
		// How many events wait for each subscription (an index-only count).
		`SELECT subscription_id, count(*) FROM buffer
			WHERE subscription_id IN (SELECT value FROM json_each(?)) GROUP BY subscription_id`,
		// Everything waiting for the subscriptions whose whole buffer goes.
		`SELECT subscription_id, seq, event_id FROM buffer
			WHERE subscription_id IN (SELECT value FROM json_each(?)) ORDER BY subscription_id, seq`,
		// The oldest waiting events of one subscription with more waiting
		// than its limit.
		`SELECT subscription_id, seq, event_id FROM buffer WHERE subscription_id = ? ORDER BY seq LIMIT ?`,
		// Drops the buffers read whole, and the oldest events of one
		// other: nothing else writes while the transaction holds the write
		// lock, so what was read is exactly what these ranges hold.
		`DELETE FROM buffer WHERE subscription_id IN (SELECT value FROM json_each(?))`,
		`DELETE FROM buffer WHERE subscription_id = ? AND seq <= ?`,
		`SELECT `+inboxHead,
		`UPDATE subscriptions SET status = 'expired', expired_at = ?1, updated_at = ?1, next_fire_at = NULL
			WHERE id IN (SELECT value FROM json_each(?2))`)
	if err != nil {
		return nil, err
	}
	// The inbox INSERTs and the body query too: statements are prepared
	// before a transaction takes the only write connection.
	if _, err := s.wstmts.get(ctx, numbered(bodiesQuery)); err != nil {
		return nil, err
	}
	for n := 1; n <= maxFireRows; n++ {
		if _, err := s.wstmts.get(ctx, insertEntries(n)); err != nil {
			return nil, err
		}
	}
	return &fireStmts{s, st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]}, nil
}

// Fire implements subscriptions.Store.
func (s *Store) Fire(ctx context.Context, reqs []subscriptions.FireRequest, now time.Time) ([]subscriptions.FireResult, error) {
	f, err := s.fireStatements(ctx)
	if err != nil {
		return nil, err
	}
	var out []subscriptions.FireResult
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = f.fire(ctx, tx, reqs, now, true)
		return err
	})
	return out, err
}

// fire delivers reqs in tx (see storecore.Fire). Nothing else writes while
// the transaction holds the write lock, so what a fire reads of a buffer is
// exactly what it deletes, and the inbox numbers cannot move under it.
func (f *fireStmts) fire(ctx context.Context, tx *sql.Tx, reqs []subscriptions.FireRequest, now time.Time, claim bool) ([]subscriptions.FireResult, error) {
	return storecore.Fire(fireDriver{f, ctx, tx}, reqs, now, claim)
}

// fireDriver is a fire's statements in one transaction.
type fireDriver struct {
	*fireStmts
	ctx context.Context
	tx  *sql.Tx
}

func (d fireDriver) stmt(st *sql.Stmt) *sql.Stmt { return d.tx.StmtContext(d.ctx, st) }

func (d fireDriver) Claim(reqs []subscriptions.FireRequest, now time.Time) ([]string, error) {
	type next struct {
		ID        string `json:"id"`
		Principal string `json:"principal"`
		Next      *int64 `json:"next"`
		Due       *int64 `json:"due,omitempty"`
	}
	list := make([]next, len(reqs))
	for i, r := range reqs {
		list[i] = next{ID: r.SubscriptionID, Principal: r.Principal}
		if r.Next != nil {
			n := nanos(*r.Next)
			list[i].Next = &n
		}
		if !r.Due.IsZero() {
			d := nanos(r.Due)
			list[i].Due = &d
		}
	}
	return queryStrings(d.ctx, d.stmt(d.claim), nanos(now), mustJSON(list))
}

func (d fireDriver) Count(ids []string, set func(string, int)) error {
	return d.each(d.stmt(d.count), []any{mustJSON(ids)}, func(rows *sql.Rows) error {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		set(id, n)
		return nil
	})
}

// Take reads the whole buffers in one query and the others one by one.
func (d fireDriver) Take(whole []string, some []subscriptions.FireRequest, read func(string, int64, string)) error {
	scan := func(rows *sql.Rows) error {
		var sub, eventID string
		var seq int64
		if err := rows.Scan(&sub, &seq, &eventID); err != nil {
			return err
		}
		read(sub, seq, eventID)
		return nil
	}
	if len(whole) > 0 {
		if err := d.each(d.stmt(d.takeAll), []any{mustJSON(whole)}, scan); err != nil {
			return err
		}
	}
	for _, r := range some {
		if err := d.each(d.stmt(d.takeSome), []any{r.SubscriptionID, r.Max}, scan); err != nil {
			return err
		}
	}
	return nil
}

// each calls f on each row st returns for args.
func (d fireDriver) each(st *sql.Stmt, args []any, f func(*sql.Rows) error) error {
	rows, err := st.QueryContext(d.ctx, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := f(rows); err != nil {
			rows.Close()
			return err
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

func (d fireDriver) Bodies(bodies map[string]json.RawMessage) error {
	return storecore.ReadBodies(d.ctx, conn{s: d.s, tx: d.tx}, bodiesQuery, bodies)
}

func (d fireDriver) Drop(whole []string, some []storecore.Cut) error {
	if len(whole) > 0 {
		if _, err := d.stmt(d.dropAll).ExecContext(d.ctx, mustJSON(whole)); err != nil {
			return err
		}
	}
	for _, c := range some {
		if _, err := d.stmt(d.dropSome).ExecContext(d.ctx, c.SubscriptionID, c.Seq); err != nil {
			return err
		}
	}
	return nil
}

// DrawSeqs numbers the entries after the newest, in one sequence.
func (d fireDriver) DrawSeqs(principals []string) ([]int64, error) {
	var last int64
	if err := d.stmt(d.lastSeq).QueryRowContext(d.ctx).Scan(&last); err != nil {
		return nil, err
	}
	seqs := make([]int64, len(principals))
	for i := range seqs {
		seqs[i] = last + int64(i) + 1
	}
	return seqs, nil
}

// Insert writes the entries maxFireRows per statement.
func (d fireDriver) Insert(list []storecore.Delivery, now time.Time) error {
	for start := 0; start < len(list); start += maxFireRows {
		chunk := list[start:min(start+maxFireRows, len(list))]
		st, err := d.s.wstmts.get(d.ctx, insertEntries(len(chunk)))
		if err != nil {
			return err
		}
		args := make([]any, 0, len(chunk)*9)
		for _, e := range chunk {
			args = append(args, e.Seq, e.Principal, mustJSON(e.SubscriptionIDs), string(e.Kind), e.EventID,
				e.EventIDs, e.Remaining, e.Pending, nanos(now))
		}
		if _, err := d.stmt(st).ExecContext(d.ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

func (d fireDriver) Expire(ids []string, now time.Time) error {
	_, err := d.stmt(d.expire).ExecContext(d.ctx, nanos(now), mustJSON(ids))
	return err
}

// maxFireRows is the most inbox entries one INSERT of a fire writes.
const maxFireRows = 32

// insertEntries is the INSERT of n inbox entries with their sequence numbers.
func insertEntries(n int) string {
	values := strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ")
	return `INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at) VALUES ` + values
}
