package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// A fire is set-based, as in the SQLite store: whatever the number of
// subscriptions in one Fire call, it runs a fixed handful of statements
// (take the owners' rows, claim the active subscriptions, take their oldest
// waiting events, drop them from the buffers, write the inbox entries,
// expire). Holding the owners' rows keeps publishes to the same buffers
// out until it commits, so what it reads of a buffer is what it deletes.

// Statements of a fire.
const (
	// Records the fire of each active subscription and names them.
	claimQuery = `UPDATE subscriptions SET last_fire_at = $1, next_fire_at = r.next
		FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) AS r(id, principal, next, due)
		WHERE subscriptions.id = r.id AND subscriptions.principal = r.principal AND subscriptions.status = 'active'
			AND (r.due IS NULL OR subscriptions.next_fire_at = r.due)
		RETURNING subscriptions.id`
	countQuery = `SELECT subscription_id, count(*) FROM buffer
		WHERE subscription_id = ANY($1) GROUP BY subscription_id`
	takeAllQuery = `SELECT subscription_id, seq, event_id FROM buffer
		WHERE subscription_id = ANY($1) ORDER BY subscription_id, seq`
	takeSomeQuery = `SELECT subscription_id, seq, event_id FROM buffer
		WHERE subscription_id = $1 ORDER BY seq LIMIT $2`
	dropAllQuery  = `DELETE FROM buffer WHERE subscription_id = ANY($1)`
	dropSomeQuery = `DELETE FROM buffer WHERE subscription_id = $1 AND seq <= $2`
	// Draws $1 inbox sequence numbers, the last of which it returns, from
	// the counter that numbers them in commit order (migration 0002).
	seqsQuery     = `UPDATE changes SET inbox_seq = inbox_seq + $1 WHERE id = 1 RETURNING inbox_seq`
	insertEntries = `INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, event_ids, remaining, pending, created_at)
		SELECT u.seq, u.principal, ARRAY[u.subscription_id], u.kind, u.event_id,
			CASE WHEN u.event_ids IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(u.event_ids::jsonb)) END,
			u.remaining, u.pending, $9
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::boolean[])
			AS u(seq, principal, subscription_id, kind, event_id, event_ids, remaining, pending)`
	expireQuery = `UPDATE subscriptions SET status = 'expired', expired_at = $1, updated_at = $1, next_fire_at = NULL
		WHERE id = ANY($2)`
)

// Fire implements subscriptions.Store.
func (s *Store) Fire(ctx context.Context, reqs []subscriptions.FireRequest, now time.Time) ([]subscriptions.FireResult, error) {
	var out []subscriptions.FireResult
	err := s.tx(ctx, func(tx pgx.Tx) error {
		principals := make([]string, len(reqs))
		for i, r := range reqs {
			principals[i] = r.Principal
		}
		if err := lockPrincipals(ctx, tx, principals); err != nil {
			return err
		}
		var err error
		out, err = fire(ctx, tx, reqs, now, true)
		return err
	})
	return out, err
}

// fire delivers reqs in tx, which holds their principals' rows. With claim,
// only active subscriptions are served and their last and next fire are
// recorded; without, every request is (the caller has just expired them).
func fire(ctx context.Context, tx pgx.Tx, reqs []subscriptions.FireRequest, now time.Time, claim bool) ([]subscriptions.FireResult, error) {
	ft := &fireTx{ctx: ctx, tx: tx, now: now.UTC(), reqs: reqs, took: make(map[string]*waiting, len(reqs))}
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
	ctx  context.Context
	tx   pgx.Tx
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
// with their next fire, and serves those; a request with a Due is served
// only while the subscription's next fire is still that (another process
// that read the same due fire may have fired it: its UPDATE holds the row,
// and this one, once that commits, sees the next fire it recorded).
func (ft *fireTx) claim() error {
	n := len(ft.reqs)
	ids, principals, next, due := make([]string, n), make([]string, n), make([]*time.Time, n), make([]*time.Time, n)
	for i, r := range ft.reqs {
		ids[i], principals[i], next[i] = r.SubscriptionID, r.Principal, r.Next
		if !r.Due.IsZero() {
			// Read from the store, it has the store's microseconds, and
			// compares equal.
			due[i] = &r.Due
		}
	}
	rows, err := ft.tx.Query(ft.ctx, claimQuery, ft.now, ids, principals, next, due)
	if err != nil {
		return fmt.Errorf("claim subscriptions: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("claim subscriptions: %w", err)
	}
	for _, id := range claimed {
		ft.took[id] = &waiting{}
	}
	return nil
}

// take counts each served buffer, reads whole the buffers that go whole
// (one query for all) and the oldest events of the others, and reads the
// body of each event once.
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
	q := &pgx.Batch{}
	if len(ft.whole) > 0 {
		q.Queue(takeAllQuery, ft.whole).Query(ft.read)
	}
	for _, r := range ft.some {
		q.Queue(takeSomeQuery, r.SubscriptionID, r.Max).Query(ft.read)
	}
	if q.Len() == 0 {
		return nil
	}
	if err := ft.tx.SendBatch(ft.ctx, q).Close(); err != nil {
		return fmt.Errorf("read buffers: %w", err)
	}
	if err := eventBodies(ft.ctx, ft.tx, ft.bodies); err != nil {
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
	rows, err := ft.tx.Query(ft.ctx, countQuery, served)
	if err != nil {
		return fmt.Errorf("count buffers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		ft.took[id].total = n
	}
	return rows.Err()
}

// read records buffer rows (subscription, seq, event) as taken, and their
// events in bodies.
func (ft *fireTx) read(rows pgx.Rows) error {
	for rows.Next() {
		var sub, eventID string
		var seq int64
		if err := rows.Scan(&sub, &seq, &eventID); err != nil {
			return err
		}
		w := ft.took[sub]
		w.taken++
		w.ids = append(w.ids, eventID)
		w.last = seq
		ft.bodies[eventID] = nil
	}
	return rows.Err()
}

// drop deletes what was taken from the buffers: the transaction holds the
// owners' rows, which every publish to these buffers takes, so what was
// read is exactly what these ranges hold.
func (ft *fireTx) drop() error {
	q := &pgx.Batch{}
	if len(ft.whole) > 0 {
		q.Queue(dropAllQuery, ft.whole)
	}
	for _, r := range ft.some {
		if w := ft.took[r.SubscriptionID]; w.taken > 0 {
			q.Queue(dropSomeQuery, r.SubscriptionID, w.last)
		}
	}
	if q.Len() == 0 {
		return nil
	}
	if err := ft.tx.SendBatch(ft.ctx, q).Close(); err != nil {
		return fmt.Errorf("drop taken events: %w", err)
	}
	return nil
}

// write records the deliveries in the inbox, with sequence numbers drawn
// now that the owners' rows are held, and expires the subscriptions whose
// last fire this is.
func (ft *fireTx) write() error {
	var list []delivery
	var expire []string
	ft.entries = make([][]subscriptions.InboxEntry, len(ft.reqs))
	owner := make([]int, 0)
	for i, r := range ft.reqs {
		w := ft.took[r.SubscriptionID]
		if w == nil {
			continue
		}
		for _, d := range ft.deliveries(r, w) {
			list = append(list, d)
			owner = append(owner, i)
		}
		if r.Expire {
			expire = append(expire, r.SubscriptionID)
		}
	}
	if len(list) > 0 {
		seqs, err := drawSeqs(ft.ctx, ft.tx, len(list))
		if err != nil {
			return err
		}
		n := len(list)
		var (
			principals, subs, kinds = make([]string, n), make([]string, n), make([]string, n)
			eventIDs, eventLists    = make([]*string, n), make([]*string, n)
			remaining               = make([]int32, n)
			pending                 = make([]bool, n)
		)
		for k, d := range list {
			i := owner[k]
			d.Seq, d.Pending = seqs[k], ft.reqs[i].Pending
			ft.entries[i] = append(ft.entries[i], d.InboxEntry)
			principals[k], subs[k], kinds[k] = d.Principal, d.SubscriptionIDs[0], string(d.Kind)
			eventIDs[k], eventLists[k] = d.eventID, d.eventIDs
			remaining[k], pending[k] = int32(d.Remaining), ft.reqs[i].Pending
		}
		if _, err := ft.tx.Exec(ft.ctx, insertEntries, seqs, principals, subs, kinds, eventIDs, eventLists,
			remaining, pending, ft.now); err != nil {
			return fmt.Errorf("write inbox entries: %w", err)
		}
	}
	if len(expire) > 0 {
		if _, err := ft.tx.Exec(ft.ctx, expireQuery, ft.now, expire); err != nil {
			return fmt.Errorf("expire subscriptions: %w", err)
		}
	}
	return nil
}

// drawSeqs draws n inbox sequence numbers, in increasing order. The
// counter's row stays locked until tx ends: the numbers commit in the
// order drawn, whichever process draws.
func drawSeqs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	var last int64
	if err := tx.QueryRow(ctx, seqsQuery, n).Scan(&last); err != nil {
		return nil, fmt.Errorf("draw sequence numbers: %w", err)
	}
	seqs := make([]int64, n)
	for i := range seqs {
		seqs[i] = last - int64(n) + 1 + int64(i)
	}
	return seqs, nil
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
