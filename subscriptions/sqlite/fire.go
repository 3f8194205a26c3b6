package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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
	ft := &fireTx{fireStmts: f, ctx: ctx, tx: tx, now: now.UTC(), reqs: reqs, took: make(map[string]*waiting, len(reqs))}
	if len(reqs) == 0 {
		return ft.results(), nil
	}
	steps := []func() error{ft.take, ft.drop, ft.write}
	if claim {
		steps = append([]func() error{ft.claim}, steps...)
	} else {
		for _, r := range reqs {
			ft.took[r.SubscriptionID] = &waiting{}
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return ft.results(), nil
}

// fireTx is one fire in progress.
type fireTx struct {
	*fireStmts
	ctx  context.Context
	tx   *sql.Tx
	now  time.Time
	reqs []subscriptions.FireRequest
	// took is what each served subscription takes from its buffer; a
	// request whose subscription is not served has none.
	took map[string]*waiting
	// whole and some are the served requests that take their whole buffer,
	// and those that take only its oldest Max events.
	whole []string
	some  []subscriptions.FireRequest
	// bodies are the taken events' bodies, by ID.
	bodies map[string]json.RawMessage
	// entries are the inbox entries written, by request.
	entries [][]subscriptions.InboxEntry
}

// waiting is what one subscription takes from its buffer.
type waiting struct {
	ids    []string
	events []json.RawMessage
	taken  int
	total  int
	last   int64 // the seq of the last event taken
}

// claim records the fire of the active subscriptions among the requests,
// with their next fire, and serves those.
func (ft *fireTx) claim() error {
	type next struct {
		ID        string `json:"id"`
		Principal string `json:"principal"`
		Next      *int64 `json:"next"`
		Due       *int64 `json:"due,omitempty"`
	}
	list := make([]next, len(ft.reqs))
	for i, r := range ft.reqs {
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
	ids, err := queryStrings(ft.ctx, ft.tx.StmtContext(ft.ctx, ft.fireStmts.claim), nanos(ft.now), mustJSON(list))
	if err != nil {
		return fmt.Errorf("claim subscriptions: %w", err)
	}
	for _, id := range ids {
		ft.took[id] = &waiting{}
	}
	return nil
}

// take counts each served buffer, reads whole the buffers that go whole
// (one query for all) and the oldest events of the others one by one, and
// reads the body of each event once.
func (ft *fireTx) take() error {
	if err := ft.count(); err != nil {
		return err
	}
	for _, r := range ft.reqs {
		w := ft.took[r.SubscriptionID]
		switch {
		case w == nil || w.total == 0:
		case r.Drain || r.Max <= 0 || w.total <= r.Max:
			ft.whole = append(ft.whole, r.SubscriptionID)
		default:
			ft.some = append(ft.some, r)
		}
	}
	ft.bodies = make(map[string]json.RawMessage)
	if len(ft.whole) > 0 {
		if err := ft.read(ft.tx.StmtContext(ft.ctx, ft.takeAll).QueryContext(ft.ctx, mustJSON(ft.whole))); err != nil {
			return err
		}
	}
	for _, r := range ft.some {
		if err := ft.read(ft.tx.StmtContext(ft.ctx, ft.takeSome).QueryContext(ft.ctx, r.SubscriptionID, r.Max)); err != nil {
			return err
		}
	}
	if len(ft.bodies) == 0 {
		return nil
	}
	if err := ft.s.eventBodies(ft.ctx, &ft.s.wstmts, ft.tx, ft.bodies); err != nil {
		return err
	}
	// An event retention removed is skipped.
	for _, w := range ft.took {
		kept := w.ids[:0]
		for _, id := range w.ids {
			if b := ft.bodies[id]; b != nil {
				kept = append(kept, id)
				w.events = append(w.events, b)
			}
		}
		w.ids = kept
	}
	return nil
}

// count reads how many events wait for each served subscription.
func (ft *fireTx) count() error {
	var served []string
	for _, r := range ft.reqs {
		if ft.took[r.SubscriptionID] != nil {
			served = append(served, r.SubscriptionID)
		}
	}
	if len(served) == 0 {
		return nil
	}
	rows, err := ft.tx.StmtContext(ft.ctx, ft.fireStmts.count).QueryContext(ft.ctx, mustJSON(served))
	if err != nil {
		return fmt.Errorf("count buffers: %w", err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		ft.took[id].total = n
	}
	return errors.Join(rows.Err(), rows.Close())
}

// read records buffer rows (subscription, seq, event) as taken, and their
// events in bodies.
func (ft *fireTx) read(rows *sql.Rows, err error) error {
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
		w := ft.took[sub]
		w.taken++
		w.ids = append(w.ids, eventID)
		w.last = seq
		ft.bodies[eventID] = nil
	}
	return errors.Join(rows.Err(), rows.Close())
}

// drop deletes what was taken from the buffers: nothing else writes while
// the transaction holds the write lock, so what was read is exactly what
// these ranges hold.
func (ft *fireTx) drop() error {
	if len(ft.whole) > 0 {
		if _, err := ft.tx.StmtContext(ft.ctx, ft.dropAll).ExecContext(ft.ctx, mustJSON(ft.whole)); err != nil {
			return fmt.Errorf("drop taken events: %w", err)
		}
	}
	for _, r := range ft.some {
		if w := ft.took[r.SubscriptionID]; w.taken > 0 {
			if _, err := ft.tx.StmtContext(ft.ctx, ft.dropSome).ExecContext(ft.ctx, r.SubscriptionID, w.last); err != nil {
				return fmt.Errorf("drop taken events: %w", err)
			}
		}
	}
	return nil
}

// write records the deliveries in the inbox, numbering the entries here
// (the transaction holds the write lock, so the sequence cannot move under
// it), and expires the subscriptions whose last fire this is.
func (ft *fireTx) write() error {
	var seq int64
	if err := ft.tx.StmtContext(ft.ctx, ft.lastSeq).QueryRowContext(ft.ctx).Scan(&seq); err != nil {
		return err
	}
	var rows [][]any
	var expire []string
	ft.entries = make([][]subscriptions.InboxEntry, len(ft.reqs))
	for i, r := range ft.reqs {
		w := ft.took[r.SubscriptionID]
		if w == nil {
			continue
		}
		for _, e := range ft.deliveries(r, w) {
			seq++
			e.Seq, e.Pending = seq, r.Pending
			ft.entries[i] = append(ft.entries[i], e.InboxEntry)
			rows = append(rows, []any{seq, e.Principal, mustJSON(e.SubscriptionIDs), string(e.Kind), e.eventID, e.eventIDs, e.Remaining, r.Pending, nanos(ft.now)})
		}
		if r.Expire {
			expire = append(expire, r.SubscriptionID)
		}
	}
	if err := ft.insert(rows); err != nil {
		return err
	}
	if len(expire) > 0 {
		if _, err := ft.tx.StmtContext(ft.ctx, ft.expire).ExecContext(ft.ctx, nanos(ft.now), mustJSON(expire)); err != nil {
			return fmt.Errorf("expire subscriptions: %w", err)
		}
	}
	return nil
}

// insert writes inbox rows, maxFireRows per statement.
func (ft *fireTx) insert(rows [][]any) error {
	for start := 0; start < len(rows); start += maxFireRows {
		chunk := rows[start:min(start+maxFireRows, len(rows))]
		st, err := ft.s.wstmts.get(ft.ctx, insertEntries(len(chunk)))
		if err != nil {
			return err
		}
		args := make([]any, 0, len(chunk)*9)
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := ft.tx.StmtContext(ft.ctx, st).ExecContext(ft.ctx, args...); err != nil {
			return fmt.Errorf("write inbox entries: %w", err)
		}
	}
	return nil
}

// results are the results of the requests, in order.
func (ft *fireTx) results() []subscriptions.FireResult {
	out := make([]subscriptions.FireResult, len(ft.reqs))
	for i, r := range ft.reqs {
		out[i].SubscriptionID = r.SubscriptionID
		w := ft.took[r.SubscriptionID]
		if w == nil {
			out[i].Skipped = true
			continue
		}
		out[i].Remaining = w.total - w.taken
		if ft.entries != nil {
			out[i].Entries = ft.entries[i]
		}
	}
	return out
}

// maxFireRows is the most inbox entries one INSERT of a fire writes.
const maxFireRows = 32

// insertEntries is the INSERT of n inbox entries with their sequence numbers.
func insertEntries(n int) string {
	values := strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ")
	return `INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at) VALUES ` + values
}
