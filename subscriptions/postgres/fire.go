package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// A fire (storecore.Fire) first takes the owners' rows: that keeps
// publishes to the same buffers out until it commits, so what it reads of a
// buffer is what it deletes.

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
	// Draws inbox numbers for the principals $1 (one for each time a
	// principal is listed) from their rows' counters (migration 0009), and
	// returns the last drawn for each.
	seqsQuery = `UPDATE principals p SET inbox_seq = p.inbox_seq + c.n
		FROM (SELECT principal, count(*) AS n FROM unnest($1::text[]) AS u(principal) GROUP BY principal) AS c
		WHERE p.principal = c.principal RETURNING p.principal, p.inbox_seq`
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
func (s *Store) Fire(ctx context.Context, reqs []subscriptions.FireRequest, now time.Time) (out []subscriptions.FireResult, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) (err error) {
		out, err = fire(ctx, tx, reqs, now, true)
		return err
	})
	return out, err
}

// fire takes the rows of reqs' principals in tx, then delivers reqs (see
// storecore.Fire): every publish to these buffers takes those rows, so what
// a fire reads of a buffer is exactly what it deletes.
func fire(ctx context.Context, tx pgx.Tx, reqs []subscriptions.FireRequest, now time.Time, claim bool) ([]subscriptions.FireResult, error) {
	principals := make([]string, len(reqs))
	for i, r := range reqs {
		principals[i] = r.Principal
	}
	if err := lockPrincipals(ctx, tx, principals); err != nil {
		return nil, err
	}
	return storecore.Fire(fireDriver{ctx, tx}, reqs, now, claim)
}

// fireDriver is a fire's statements in one transaction.
type fireDriver struct {
	ctx context.Context
	tx  pgx.Tx
}

// Claim serves a request with a Due only while the subscription's next fire
// is still that (another process that read the same due fire may have
// fired it: its UPDATE holds the row, and this one, once that commits, sees
// the next fire it recorded).
func (d fireDriver) Claim(reqs []subscriptions.FireRequest, now time.Time) ([]string, error) {
	n := len(reqs)
	ids, principals, next, due := make([]string, n), make([]string, n), make([]*time.Time, n), make([]*time.Time, n)
	for i, r := range reqs {
		ids[i], principals[i], next[i] = r.SubscriptionID, r.Principal, r.Next
		if !r.Due.IsZero() {
			// Read from the store, it has the store's microseconds, and
			// compares equal.
			due[i] = &r.Due
		}
	}
	return storecore.Column[string](d.ctx, conn{d.tx}, claimQuery, now, ids, principals, next, due)
}

func (d fireDriver) Count(ids []string, set func(string, int)) error {
	rows, err := d.tx.Query(d.ctx, countQuery, ids)
	if err != nil {
		return err
	}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { set(id, n); return nil })
	return err
}

// Take reads all the buffers in one batch.
func (d fireDriver) Take(whole []string, some []subscriptions.FireRequest, read func(string, int64, string)) error {
	var sub, eventID string
	var seq int64
	scan := func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&sub, &seq, &eventID}, func() error { read(sub, seq, eventID); return nil })
		return err
	}
	q := &pgx.Batch{}
	if len(whole) > 0 {
		q.Queue(takeAllQuery, whole).Query(scan)
	}
	for _, r := range some {
		q.Queue(takeSomeQuery, r.SubscriptionID, r.Max).Query(scan)
	}
	return d.tx.SendBatch(d.ctx, q).Close()
}

func (d fireDriver) Bodies(bodies map[string]json.RawMessage) error {
	return storecore.ReadBodies(d.ctx, conn{d.tx}, queries.Bodies, bodies)
}

func (d fireDriver) Drop(whole []string, some []storecore.Cut) error {
	q := &pgx.Batch{}
	if len(whole) > 0 {
		q.Queue(dropAllQuery, whole)
	}
	for _, c := range some {
		q.Queue(dropSomeQuery, c.SubscriptionID, c.Seq)
	}
	return d.tx.SendBatch(d.ctx, q).Close()
}

// DrawSeqs draws the numbers now that the owners' rows are held. Each
// counter's row stays locked until tx ends: a principal's numbers commit in
// the order drawn, whichever process draws.
func (d fireDriver) DrawSeqs(principals []string) ([]int64, error) {
	rows, err := d.tx.Query(d.ctx, seqsQuery, principals)
	if err != nil {
		return nil, err
	}
	last := make(map[string]int64, len(principals))
	var p string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&p, &n}, func() error { last[p] = n; return nil }); err != nil {
		return nil, err
	}
	return storecore.Number(principals, last)
}

func (d fireDriver) Insert(list []storecore.Delivery, now time.Time) error {
	n := len(list)
	var (
		seqs                    = make([]int64, n)
		principals, subs, kinds = make([]string, n), make([]string, n), make([]string, n)
		eventIDs, eventLists    = make([]*string, n), make([]*string, n)
		remaining               = make([]int32, n)
		pending                 = make([]bool, n)
	)
	for k, e := range list {
		seqs[k], principals[k], subs[k], kinds[k] = e.Seq, e.Principal, e.SubscriptionIDs[0], string(e.Kind)
		eventIDs[k], eventLists[k] = e.EventID, e.EventIDs
		remaining[k], pending[k] = int32(e.Remaining), e.Pending
	}
	_, err := d.tx.Exec(d.ctx, insertEntries, seqs, principals, subs, kinds, eventIDs, eventLists, remaining, pending, now)
	return err
}

func (d fireDriver) Expire(ids []string, now time.Time) error {
	_, err := d.tx.Exec(d.ctx, expireQuery, now, ids)
	return err
}
