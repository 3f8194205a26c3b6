package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// A fire is set-based: whatever the number of subscriptions in one Fire call,
// it runs a fixed handful of statements (claim the active subscriptions, take
// their oldest waiting events, drop them from the buffers, write the inbox
// entries, expire), so that thousands of digests falling in the same minute
// cost milliseconds each, not a round of statements each.

// fireStmts are the prepared statements of a fire.
type fireStmts struct {
	s                                                                   *Store
	claim, count, takeAll, takeSome, dropAll, dropSome, lastSeq, expire *sql.Stmt
}

func (s *Store) fireStatements(ctx context.Context) (*fireStmts, error) {
	st, err := s.prepared(ctx,
		// Records the fire of each active subscription and names them.
		`UPDATE subscriptions SET last_fire_at = ?1, next_fire_at = r.next
			FROM (SELECT value ->> '$.id' AS id, value ->> '$.principal' AS principal, value ->> '$.next' AS next
				FROM json_each(?2)) AS r
			WHERE subscriptions.id = r.id AND subscriptions.principal = r.principal AND subscriptions.status = 'active'
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
		`SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'inbox'), 0)`,
		`UPDATE subscriptions SET status = 'expired', expired_at = ?1, updated_at = ?1, next_fire_at = NULL
			WHERE id IN (SELECT value FROM json_each(?2))`)
	if err != nil {
		return nil, err
	}
	// The inbox INSERTs and the body query too: statements are prepared
	// before a transaction takes the only write connection.
	if _, err := s.wstmts.get(ctx, bodiesQuery); err != nil {
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

// fire delivers reqs in tx. With claim, only active subscriptions are served
// and their last and next fire are recorded; without, every request is (the
// caller has just expired them).
func (f *fireStmts) fire(ctx context.Context, tx *sql.Tx, reqs []subscriptions.FireRequest, now time.Time, claim bool) ([]subscriptions.FireResult, error) {
	now = now.UTC()
	results := make([]subscriptions.FireResult, len(reqs))
	served := make(map[string]bool, len(reqs))
	for i, r := range reqs {
		results[i].SubscriptionID = r.SubscriptionID
		served[r.SubscriptionID] = !claim
	}
	if len(reqs) == 0 {
		return results, nil
	}
	if claim {
		type next struct {
			ID        string `json:"id"`
			Principal string `json:"principal"`
			Next      *int64 `json:"next"`
		}
		list := make([]next, len(reqs))
		for i, r := range reqs {
			list[i] = next{ID: r.SubscriptionID, Principal: r.Principal}
			if r.Next != nil {
				n := nanos(*r.Next)
				list[i].Next = &n
			}
		}
		ids, err := queryStrings(ctx, tx.StmtContext(ctx, f.claim), nanos(now), mustJSON(list))
		if err != nil {
			return nil, fmt.Errorf("claim subscriptions: %w", err)
		}
		for _, id := range ids {
			served[id] = true
		}
	}

	// Take what waits: count each buffer, read whole the buffers that go
	// whole (one query for all), and the oldest of the others one by one.
	type waiting struct {
		ids    []string
		events []json.RawMessage
		taken  int
		total  int
		last   int64 // the seq of the last event taken
	}
	took := make(map[string]*waiting, len(reqs))
	var servedIDs []string
	for _, r := range reqs {
		if served[r.SubscriptionID] {
			servedIDs = append(servedIDs, r.SubscriptionID)
			took[r.SubscriptionID] = &waiting{}
		}
	}
	if len(servedIDs) > 0 {
		rows, err := tx.StmtContext(ctx, f.count).QueryContext(ctx, mustJSON(servedIDs))
		if err != nil {
			return nil, fmt.Errorf("count buffers: %w", err)
		}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return nil, err
			}
			took[id].total = n
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	var whole []string
	var some []subscriptions.FireRequest
	for _, r := range reqs {
		w := took[r.SubscriptionID]
		switch {
		case w == nil || w.total == 0:
		case r.Drain || r.Max <= 0 || w.total <= r.Max:
			whole = append(whole, r.SubscriptionID)
		default:
			some = append(some, r)
		}
	}
	bodies := make(map[string]json.RawMessage)
	read := func(rows *sql.Rows, err error) error {
		if err != nil {
			return fmt.Errorf("read buffers: %w", err)
		}
		for rows.Next() {
			var sub, eventID string
			var seq int64
			if err := rows.Scan(&sub, &seq, &eventID); err != nil {
				rows.Close()
				return err
			}
			w := took[sub]
			w.taken++
			w.ids = append(w.ids, eventID)
			w.last = seq
			bodies[eventID] = nil
		}
		return errors.Join(rows.Err(), rows.Close())
	}
	if len(whole) > 0 {
		if err := read(tx.StmtContext(ctx, f.takeAll).QueryContext(ctx, mustJSON(whole))); err != nil {
			return nil, err
		}
	}
	for _, r := range some {
		if err := read(tx.StmtContext(ctx, f.takeSome).QueryContext(ctx, r.SubscriptionID, r.Max)); err != nil {
			return nil, err
		}
	}
	if len(bodies) > 0 {
		// Each body is read once, however many buffers held the event.
		if err := f.s.eventBodies(ctx, &f.s.wstmts, tx, bodies); err != nil {
			return nil, err
		}
		// An event retention removed is skipped.
		for _, w := range took {
			kept := w.ids[:0]
			for _, id := range w.ids {
				if b := bodies[id]; b != nil {
					kept = append(kept, id)
					w.events = append(w.events, b)
				}
			}
			w.ids = kept
		}
	}
	if len(whole) > 0 {
		if _, err := tx.StmtContext(ctx, f.dropAll).ExecContext(ctx, mustJSON(whole)); err != nil {
			return nil, fmt.Errorf("drop taken events: %w", err)
		}
	}
	for _, r := range some {
		if w := took[r.SubscriptionID]; w.taken > 0 {
			if _, err := tx.StmtContext(ctx, f.dropSome).ExecContext(ctx, r.SubscriptionID, w.last); err != nil {
				return nil, fmt.Errorf("drop taken events: %w", err)
			}
		}
	}

	// Write the entries, numbering them here: the transaction holds the
	// write lock, so the sequence cannot move under it.
	var seq int64
	if err := tx.StmtContext(ctx, f.lastSeq).QueryRowContext(ctx).Scan(&seq); err != nil {
		return nil, err
	}
	var rows [][]any
	var expire []string
	add := func(res *subscriptions.FireResult, e subscriptions.InboxEntry, eventID, body any, pending bool) {
		seq++
		e.Seq = seq
		res.Entries = append(res.Entries, e)
		rows = append(rows, []any{seq, e.Principal, mustJSON(e.SubscriptionIDs), string(e.Kind), eventID, body, e.Remaining, pending, nanos(now)})
	}
	for i, r := range reqs {
		res := &results[i]
		if !served[r.SubscriptionID] {
			res.Skipped = true
			continue
		}
		w := took[r.SubscriptionID]
		if w == nil {
			w = &waiting{}
		}
		res.Remaining = w.total - w.taken
		ids := []string{r.SubscriptionID}
		size := r.Max
		if size <= 0 {
			size = max(len(w.events), 1)
		}
		if r.Aggregate {
			for start := 0; start < len(w.events); start += size {
				end := min(start+size, len(w.events))
				batch := w.events[start:end:end]
				e := subscriptions.InboxEntry{Principal: r.Principal, SubscriptionIDs: ids, Kind: mcpe.InboxBatch,
					Events: batch, Remaining: res.Remaining + len(w.events) - end, CreatedAt: now}
				add(res, e, nil, mustJSON(w.ids[start:end]), r.Pending)
			}
		} else {
			for j, ev := range w.events {
				e := subscriptions.InboxEntry{Principal: r.Principal, SubscriptionIDs: ids, Kind: mcpe.InboxEvent, Event: ev, CreatedAt: now}
				add(res, e, w.ids[j], nil, r.Pending)
			}
		}
		if r.Expire {
			add(res, subscriptions.InboxEntry{Principal: r.Principal, SubscriptionIDs: ids, Kind: mcpe.InboxExpired, CreatedAt: now}, nil, nil, r.Pending)
			expire = append(expire, r.SubscriptionID)
		}
	}
	for start := 0; start < len(rows); start += maxFireRows {
		chunk := rows[start:min(start+maxFireRows, len(rows))]
		st, err := f.s.wstmts.get(ctx, insertEntries(len(chunk)))
		if err != nil {
			return nil, err
		}
		args := make([]any, 0, len(chunk)*9)
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
			return nil, fmt.Errorf("write inbox entries: %w", err)
		}
	}
	if len(expire) > 0 {
		if _, err := tx.StmtContext(ctx, f.expire).ExecContext(ctx, nanos(now), mustJSON(expire)); err != nil {
			return nil, fmt.Errorf("expire subscriptions: %w", err)
		}
	}
	return results, nil
}

// maxFireRows is the most inbox entries one INSERT of a fire writes.
const maxFireRows = 32

// insertEntries is the INSERT of n inbox entries with their sequence numbers.
func insertEntries(n int) string {
	values := strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ")
	return `INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at) VALUES ` + values
}

func queryStrings(ctx context.Context, st *sql.Stmt, args ...any) ([]string, error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// mustJSON encodes values this package builds itself, which always encode.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sqlite: encode %T: %v", v, err))
	}
	return string(b)
}

// timed is the timed column of a subscription with delivery d: its
// buffered channel, or NULL.
func timed(d mcpe.Delivery) sql.NullString {
	c := d.Timed()
	return sql.NullString{String: string(c), Valid: c != ""}
}

// DueFires implements subscriptions.Store.
func (s *Store) DueFires(ctx context.Context, c mcpe.Channel, now time.Time, limit int) ([]subscriptions.DueFire, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("sqlite: DueFires limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT id, principal, delivery FROM subscriptions
		WHERE timed = ? AND status = 'active' AND next_fire_at IS NOT NULL AND next_fire_at <= ?
		ORDER BY next_fire_at, id LIMIT ?`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, string(c), nanos(now), limit)
	if err != nil {
		return nil, fmt.Errorf("read due fires: %w", err)
	}
	defer rows.Close()
	var out []subscriptions.DueFire
	for rows.Next() {
		var d subscriptions.DueFire
		var delivery string
		if err := rows.Scan(&d.SubscriptionID, &d.Principal, &delivery); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(delivery), &d.Delivery); err != nil {
			return nil, fmt.Errorf("subscription %s: decode delivery: %w", d.SubscriptionID, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// NextFire implements subscriptions.Store.
func (s *Store) NextFire(ctx context.Context, c mcpe.Channel) (time.Time, bool, error) {
	st, err := s.rstmts.get(ctx, `SELECT min(next_fire_at) FROM subscriptions
		WHERE timed = ? AND status = 'active' AND next_fire_at IS NOT NULL`)
	if err != nil {
		return time.Time{}, false, err
	}
	var next sql.NullInt64
	if err := st.QueryRowContext(ctx, string(c)).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("read next fire: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return fromNanos(next.Int64), true, nil
}
