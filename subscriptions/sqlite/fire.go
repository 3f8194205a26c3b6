package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// Statements of a fire.
const (
	// Records the fire of each active subscription and names them.
	claimQuery = `UPDATE subscriptions SET last_fire_at = ?1, next_fire_at = r.next
		FROM (SELECT value ->> '$.id' AS id, value ->> '$.principal' AS principal, value ->> '$.next' AS next,
				value ->> '$.due' AS due
			FROM json_each(?2)) AS r
		WHERE subscriptions.id = r.id AND subscriptions.principal = r.principal AND subscriptions.status = 'active'
			AND (r.due IS NULL OR subscriptions.next_fire_at = r.due)
		RETURNING subscriptions.id`
	// How many events wait for each subscription (an index-only count).
	countQuery = `SELECT subscription_id, count(*) FROM buffer
		WHERE subscription_id IN (SELECT value FROM json_each(?)) GROUP BY subscription_id`
	// Everything waiting for the subscriptions whose whole buffer goes.
	takeAllQuery = `SELECT subscription_id, seq, event_id FROM buffer
		WHERE subscription_id IN (SELECT value FROM json_each(?)) ORDER BY subscription_id, seq`
	// The oldest waiting events of one subscription with more waiting than
	// its limit.
	takeSomeQuery = `SELECT subscription_id, seq, event_id FROM buffer WHERE subscription_id = ? ORDER BY seq LIMIT ?`
	// Drop the buffers read whole, and the oldest events of one other:
	// nothing else writes while the transaction holds the write lock, so
	// what was read is exactly what these ranges hold.
	dropAllQuery  = `DELETE FROM buffer WHERE subscription_id IN (SELECT value FROM json_each(?))`
	dropSomeQuery = `DELETE FROM buffer WHERE subscription_id = ? AND seq <= ?`
	lastSeqQuery  = `SELECT ` + inboxHead
	expireQuery   = `UPDATE subscriptions SET status = 'expired', expired_at = ?1, updated_at = ?1, next_fire_at = NULL
		WHERE id IN (SELECT value FROM json_each(?2))`
)

// maxFireRows is the most inbox entries one INSERT of a fire writes.
const maxFireRows = 32

// insertEntriesSQL[n] is the INSERT of n inbox entries with their sequence
// numbers.
var insertEntriesSQL = bySize(maxFireRows, `INSERT INTO inbox
	(seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at) VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?)`, "")

// prepareFire prepares the statements of a fire, the inbox INSERTs and the
// body query too, before its transaction takes the only write connection.
func (s *Store) prepareFire(ctx context.Context) error {
	return s.prepare(ctx, append([]string{claimQuery, countQuery, takeAllQuery, takeSomeQuery,
		dropAllQuery, dropSomeQuery, lastSeqQuery, expireQuery, bodiesQuery}, insertEntriesSQL[1:]...)...)
}

// Fire implements subscriptions.Store.
func (s *Store) Fire(ctx context.Context, reqs []subscriptions.FireRequest, now time.Time) (out []subscriptions.FireResult, err error) {
	if err := s.prepareFire(ctx); err != nil {
		return nil, err
	}
	err = s.tx(ctx, func(tx *sql.Tx) (err error) {
		out, err = storecore.Fire(fireDriver{ctx, conn{s: s, tx: tx}}, reqs, now, true)
		return err
	})
	return out, err
}

// ExpireSubscriptions implements subscriptions.Store.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) (out []subscriptions.InboxEntry, err error) {
	if err := s.prepareFire(ctx); err != nil {
		return nil, err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		c := conn{s: s, tx: tx}
		reqs, err := storecore.Expire(ctx, c, now)
		if err != nil {
			return err
		}
		results, err := storecore.Fire(fireDriver{ctx, c}, reqs, now, false)
		out = storecore.Entries(results)
		return err
	})
	return out, err
}

// fireDriver runs a fire's statements in its transaction (see
// storecore.Fire). Nothing else writes while the transaction holds the
// write lock, so what a fire reads of a buffer is exactly what it deletes,
// and the inbox numbers cannot move under it.
type fireDriver struct {
	ctx context.Context
	conn
}

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
			list[i].Next = new(r.Next.UnixNano())
		}
		if !r.Due.IsZero() {
			list[i].Due = new(r.Due.UnixNano())
		}
	}
	return storecore.Column[string](d.ctx, d.conn, claimQuery, now, storecore.MustJSON(list))
}

func (d fireDriver) Count(ids []string, set func(string, int)) error {
	return d.Query(d.ctx, func(r storecore.Row) error {
		var id string
		var n int
		if err := r.Scan(&id, &n); err != nil {
			return err
		}
		set(id, n)
		return nil
	}, countQuery, ids)
}

// Take reads the whole buffers in one query and the others one by one.
func (d fireDriver) Take(whole []string, some []subscriptions.FireRequest, read func(string, int64, string)) error {
	scan := func(r storecore.Row) error {
		var sub, eventID string
		var seq int64
		if err := r.Scan(&sub, &seq, &eventID); err != nil {
			return err
		}
		read(sub, seq, eventID)
		return nil
	}
	if len(whole) > 0 {
		if err := d.Query(d.ctx, scan, takeAllQuery, whole); err != nil {
			return err
		}
	}
	for _, r := range some {
		if err := d.Query(d.ctx, scan, takeSomeQuery, r.SubscriptionID, r.Max); err != nil {
			return err
		}
	}
	return nil
}

func (d fireDriver) Bodies(bodies map[string]json.RawMessage) error {
	return storecore.ReadBodies(d.ctx, d.conn, bodiesQuery, bodies)
}

func (d fireDriver) Drop(whole []string, some []storecore.Cut) error {
	if len(whole) > 0 {
		if _, err := d.Exec(d.ctx, dropAllQuery, whole); err != nil {
			return err
		}
	}
	for _, c := range some {
		if _, err := d.Exec(d.ctx, dropSomeQuery, c.SubscriptionID, c.Seq); err != nil {
			return err
		}
	}
	return nil
}

// DrawSeqs numbers the entries after the newest, in one sequence.
func (d fireDriver) DrawSeqs(principals []string) ([]int64, error) {
	var last int64
	if err := d.one(d.ctx, lastSeqQuery, nil, &last); err != nil {
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
	for chunk := range slices.Chunk(list, maxFireRows) {
		args := make([]any, 0, len(chunk)*9)
		for _, e := range chunk {
			args = append(args, e.Seq, e.Principal, e.SubscriptionIDs, string(e.Kind), e.EventID,
				e.EventIDs, e.Remaining, e.Pending, now)
		}
		if _, err := d.Exec(d.ctx, insertEntriesSQL[len(chunk)], args...); err != nil {
			return err
		}
	}
	return nil
}

func (d fireDriver) Expire(ids []string, now time.Time) error {
	_, err := d.Exec(d.ctx, expireQuery, now, ids)
	return err
}
