package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// A publish is set-based, as in the SQLite store: however many events one
// Publish call takes (a group commit), it runs a fixed handful of
// statements. Almost always it is one round trip (writeAtOnce): BEGIN, the
// targets' principals taken, one statement that inserts the events and,
// for those not refused as duplicates, the inbox and buffer rows, and
// COMMIT. Between taking the principals and committing, the transaction
// waits on nothing the server does. When a subscription stopped since the
// routing, or a target is throttled, it takes the principals and inserts
// the events, then looks up the duplicates, the targets still active and
// the throttle windows, then writes the rows: two or three round trips.

// Deactivations implements subscriptions.Store.
func (s *Store) Deactivations(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, deactivationsQuery).Scan(&n)
	return n, err
}

// Statements of a publish.
const (
	deactivationsQuery = `SELECT deactivations FROM changes WHERE id = 1`
	insertEventsQuery  = `INSERT INTO events (id, source, type, source_event_id, body, received_at)
		SELECT u.id, u.source, u.type, u.source_event_id, u.body, $6
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[])
			WITH ORDINALITY AS u(id, source, type, source_event_id, body, ord)
		ORDER BY u.ord
		ON CONFLICT DO NOTHING RETURNING id`
	// A duplicate's first ID (its own should retention have removed the
	// first since).
	findDuplicateQuery = `SELECT coalesce((SELECT id FROM events WHERE id = $1 OR (source = $4 AND type = $2 AND source_event_id = $3)
		ORDER BY id = $1 DESC LIMIT 1), $1)`
	activeQuery = `SELECT id FROM subscriptions WHERE id = ANY($1) AND status = 'active'`
	// The inbox rows of a publish, numbered in the order of the rows by
	// the counter in changes (see migration 0002): the UPDATE holds its row
	// until the transaction ends, so numbers are committed in the order
	// they are drawn, across every process.
	insertPublishedQuery = `WITH drawn AS (
			UPDATE changes SET inbox_seq = inbox_seq + cardinality($1::text[]) WHERE id = 1 RETURNING inbox_seq)
		INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, created_at)
		SELECT d.inbox_seq - cardinality($1::text[]) + u.ord, u.principal,
			ARRAY(SELECT jsonb_array_elements_text(u.ids::jsonb)), 'event', u.event_id, $4
		FROM drawn d, unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(principal, ids, event_id, ord)
		RETURNING seq, principal, event_id`
	// A subscription's buffer is ordered by a sequence: every publish to
	// it holds its principal's row, so its events commit in that order
	// (which process draws does not matter: a sequence never hands out a
	// number twice).
	insertBufferQuery = `INSERT INTO buffer (subscription_id, seq, event_id, created_at)
		SELECT u.subscription_id, nextval('buffer_seq'), u.event_id, $3
		FROM (SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(subscription_id, event_id, ord)
			ORDER BY ord) AS u`
	// The whole publish in one statement, run with the principals taken:
	// when no subscription stopped since the routing (the count of
	// deactivations is the one the routing reflects; a stop of a target
	// takes its principal, so it committed before and is counted, or waits
	// for this), the events, and the inbox and buffer rows of those the
	// table did not refuse as duplicates. It returns the events stored,
	// the inbox rows with their numbers, and 'ok' when the count matched;
	// without 'ok' it wrote nothing.
	publishAtOnceQuery = `WITH ok AS (SELECT deactivations = $7 AS ok FROM changes WHERE id = 1),
		ins AS (INSERT INTO events (id, source, type, source_event_id, body, received_at)
			SELECT u.id, u.source, u.type, u.source_event_id, u.body, $6
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[])
				WITH ORDINALITY AS u(id, source, type, source_event_id, body, ord)
			WHERE (SELECT ok FROM ok)
			ORDER BY u.ord
			ON CONFLICT DO NOTHING RETURNING id),
		entries AS (SELECT u.principal, u.ids, u.event_id, row_number() OVER (ORDER BY u.ord) AS n
			FROM unnest($8::text[], $9::text[], $10::text[]) WITH ORDINALITY AS u(principal, ids, event_id, ord)
			WHERE u.event_id IN (SELECT id FROM ins)),
		drawn AS (UPDATE changes SET inbox_seq = inbox_seq + (SELECT count(*) FROM entries)
			WHERE id = 1 AND EXISTS (SELECT FROM entries) RETURNING inbox_seq - (SELECT count(*) FROM entries) AS base),
		inb AS (INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, created_at)
			SELECT d.base + e.n, e.principal, ARRAY(SELECT jsonb_array_elements_text(e.ids::jsonb)), 'event', e.event_id, $6
			FROM drawn d, entries e RETURNING seq, principal, event_id),
		buf AS (INSERT INTO buffer (subscription_id, seq, event_id, created_at)
			SELECT r.subscription_id, nextval('buffer_seq'), r.event_id, $6
			FROM (SELECT * FROM unnest($11::text[], $12::text[]) WITH ORDINALITY AS r(subscription_id, event_id, ord)
				WHERE r.event_id IN (SELECT id FROM ins) ORDER BY ord) AS r)
		SELECT 'event', id, '', 0::bigint FROM ins
		UNION ALL SELECT 'entry', event_id, principal, seq FROM inb
		UNION ALL SELECT 'ok', '', '', 0 FROM ok WHERE ok`
)

// Publish implements subscriptions.Store. It returns once the transaction
// has committed. Its BEGIN rides in its first round trip and its COMMIT in
// its last: a publish is two round trips (three with duplicates).
func (s *Store) Publish(ctx context.Context, pb subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	if len(pb.Publications) == 0 {
		return nil, nil
	}
	b := &batch{ctx: ctx, now: pb.Now.UTC(), pubs: pb.Publications, routed: pb.Deactivations}
	err := s.retry(ctx, func() error {
		return s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
			err := b.write(c)
			if err != nil && c.Conn().PgConn().TxStatus() != 'I' {
				c.Exec(ctx, "ROLLBACK") // else the pool closes the connection
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	storecore.FinishPublish(b.res, b.pubs, b.fresh, b.entries, b.now)
	return b.res, nil
}

// batch is one Publish in progress.
type batch struct {
	ctx context.Context
	tx  interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
		Query(context.Context, string, ...any) (pgx.Rows, error)
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}
	now  time.Time
	pubs []subscriptions.Publication
	res  []subscriptions.PublishResult
	// fresh marks the events stored by this call (not duplicates).
	fresh []bool
	// entries are, per publication, its inbox entries (one per
	// principal).
	entries [][]subscriptions.InboxEntry
	// routed is the deactivation count the routing reflects; isActive
	// tells which target subscriptions are active.
	routed   int64
	isActive map[string]bool
}

// write runs the batch in a transaction on c; it starts over when run
// again.
func (b *batch) write(c *pgxpool.Conn) error {
	b.tx = c
	b.res = make([]subscriptions.PublishResult, len(b.pubs))
	b.fresh = make([]bool, len(b.pubs))
	b.entries = make([][]subscriptions.InboxEntry, len(b.pubs))
	b.isActive = make(map[string]bool)
	var principals, ids []string
	seen := make(map[string]bool)
	throttled := false
	for _, p := range b.pubs {
		for _, t := range p.Targets {
			principals = append(principals, t.Principal)
			throttled = throttled || t.Window > 0
			if !seen[t.SubscriptionID] {
				seen[t.SubscriptionID] = true
				ids = append(ids, t.SubscriptionID)
			}
		}
	}
	if b.routed != 0 && !throttled {
		if done, err := b.writeAtOnce(principals); done || err != nil {
			return err
		}
	}
	active, err := b.insertEvents(principals, ids)
	if err != nil {
		return err
	}
	if err := b.findDuplicates(active); err != nil {
		return err
	}
	return b.route()
}

// writeAtOnce writes the batch in one round trip, every target taken as
// active, unless a subscription stopped since the routing: it then wrote
// nothing and reports done false.
func (b *batch) writeAtOnce(principals []string) (done bool, err error) {
	n := len(b.pubs)
	evIDs, origins, types, sources, bodies := make([]string, n), make([]string, n), make([]string, n), make([]*string, n), make([][]byte, n)
	byID := make(map[string]int, n)
	var inPrincipals, inIDs, inEvents, bufSubs, bufEvents []string
	index := make(map[[2]string]*subscriptions.InboxEntry)
	for i, p := range b.pubs {
		evIDs[i], origins[i], types[i], bodies[i] = p.Event.ID, p.Source, p.Event.Type, p.Raw
		if src := p.Event.Metadata.SourceEventID; src != "" {
			sources[i] = &src
		}
		if _, ok := byID[p.Event.ID]; ok {
			continue // the first publication with that ID is the one stored
		}
		byID[p.Event.ID] = i
		b.entries[i] = storecore.GroupByPrincipal(p.Targets, nil)
		for j := range b.entries[i] {
			e := &b.entries[i][j]
			inPrincipals, inIDs, inEvents = append(inPrincipals, e.Principal), append(inIDs, mustJSON(e.SubscriptionIDs)), append(inEvents, p.Event.ID)
			index[[2]string{e.Principal, p.Event.ID}] = e
		}
		for _, sub := range storecore.BufferedTargets(p.Targets, nil) {
			bufSubs, bufEvents = append(bufSubs, sub), append(bufEvents, p.Event.ID)
		}
	}
	q := &pgx.Batch{}
	q.Queue("BEGIN")
	queueLock(q, principals)
	q.Queue(publishAtOnceQuery, evIDs, origins, types, sources, bodies, b.now, b.routed,
		inPrincipals, inIDs, inEvents, bufSubs, bufEvents).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var kind, id, principal string
			var seq int64
			if err := rows.Scan(&kind, &id, &principal, &seq); err != nil {
				return err
			}
			switch kind {
			case "ok":
				done = true
			case "event":
				b.fresh[byID[id]] = true
			case "entry":
				if e := index[[2]string{principal, id}]; e != nil {
					e.Seq = seq
				}
			}
		}
		return rows.Err()
	})
	q.Queue("COMMIT")
	if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
		return false, fmt.Errorf("write the events and their deliveries: %w", err)
	}
	if !done {
		// A subscription stopped since the routing: nothing was written.
		clear(b.entries)
		return false, nil
	}
	return true, b.findDuplicates(nil)
}

// insertEvents takes the principals' rows and stores the events; those the
// table refuses (the same ID, or the same source, type and sourceEventId,
// as one stored before or earlier in the batch) are duplicates. In the same
// round trip it reads which of ids are active.
func (b *batch) insertEvents(principals, ids []string) (active []string, err error) {
	n := len(b.pubs)
	evIDs, origins, types, sources, bodies := make([]string, n), make([]string, n), make([]string, n), make([]*string, n), make([][]byte, n)
	byID := make(map[string][]int, n)
	for i, p := range b.pubs {
		evIDs[i], origins[i], types[i], bodies[i] = p.Event.ID, p.Source, p.Event.Type, p.Raw
		if src := p.Event.Metadata.SourceEventID; src != "" {
			sources[i] = &src
		}
		byID[p.Event.ID] = append(byID[p.Event.ID], i)
	}
	// The principals first, in the same round trip (a turn on their rows,
	// which every other publish to them waits for, is the shorter): what
	// this transaction appends to their inboxes and buffers then commits
	// in sequence order, and a pause, expiry or deletion of a target
	// (which takes its principal too) either committed before, and is seen
	// below, or waits for this one.
	q := &pgx.Batch{}
	q.Queue("BEGIN")
	queueLock(q, principals)
	q.Queue(insertEventsQuery, evIDs, origins, types, sources, bodies, b.now).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			// The first publication with that ID is the one stored.
			b.fresh[byID[id][0]] = true
		}
		return rows.Err()
	})
	if len(ids) > 0 {
		q.Queue(activeQuery, ids).Query(func(rows pgx.Rows) (err error) {
			active, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
	}
	if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
		return nil, fmt.Errorf("lock principals and insert events: %w", err)
	}
	return active, nil
}

// findDuplicates gives each duplicate the ID of the event accepted first,
// and records which targets are active.
func (b *batch) findDuplicates(active []string) error {
	q := &pgx.Batch{}
	for i, p := range b.pubs {
		b.res[i].EventID = p.Event.ID
		if b.fresh[i] {
			continue
		}
		b.res[i].Duplicate = true
		var src *string
		if v := p.Event.Metadata.SourceEventID; v != "" {
			src = &v
		}
		q.Queue(findDuplicateQuery, p.Event.ID, p.Event.Type, src, p.Source).QueryRow(func(row pgx.Row) error {
			return row.Scan(&b.res[i].EventID)
		})
	}
	if q.Len() > 0 {
		if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
			return fmt.Errorf("find duplicates: %w", err)
		}
	}
	for _, id := range active {
		b.isActive[id] = true
	}
	return nil
}

// route writes the inbox rows of the new events, for the targets whose
// subscriptions are still active and not throttled, and adds the new
// events to the buffers of their active cron and scheduled targets.
func (b *batch) route() error {
	targets, err := storecore.Fold(b.ctx, conn{b.tx}, b.pubs, b.fresh, b.isActive, b.now)
	if err != nil {
		return err
	}
	var principals, ids, events, bufSubs, bufEvents []string
	index := make(map[[2]string]*subscriptions.InboxEntry)
	for i, p := range b.pubs {
		if !b.fresh[i] {
			continue
		}
		b.entries[i] = storecore.GroupByPrincipal(targets[i], b.isActive)
		for j := range b.entries[i] {
			e := &b.entries[i][j]
			principals = append(principals, e.Principal)
			ids = append(ids, mustJSON(e.SubscriptionIDs))
			events = append(events, p.Event.ID)
			index[[2]string{e.Principal, p.Event.ID}] = e
		}
		for _, sub := range storecore.BufferedTargets(p.Targets, b.isActive) {
			bufSubs = append(bufSubs, sub)
			bufEvents = append(bufEvents, p.Event.ID)
		}
	}
	q := &pgx.Batch{}
	// The buffers first: the inbox rows draw their numbers, which holds
	// the counters' row (that every other append waits for) until the
	// commit, so nothing else should follow them.
	if len(bufSubs) > 0 {
		q.Queue(insertBufferQuery, bufSubs, bufEvents, b.now)
	}
	if len(principals) > 0 {
		q.Queue(insertPublishedQuery, principals, ids, events, b.now).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var seq int64
				var principal, eventID string
				if err := rows.Scan(&seq, &principal, &eventID); err != nil {
					return err
				}
				if e := index[[2]string{principal, eventID}]; e != nil {
					e.Seq = seq
				}
			}
			return rows.Err()
		})
	}
	q.Queue("COMMIT")
	if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
		return fmt.Errorf("write deliveries: %w", err)
	}
	return nil
}
