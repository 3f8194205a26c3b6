package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// A publish is set-based, as in the SQLite store: however many events one
// Publish call takes (a group commit), it runs a fixed handful of
// statements. Almost always it is one round trip: BEGIN, the targets'
// principals taken, publishQuery (the events and, for those not refused as
// duplicates, their inbox and buffer rows), COMMIT; between taking the
// principals and committing, the transaction waits on nothing the server
// does. After a publish that waited for its principals (another server's
// publish held them), the next takes them in a round trip of their own,
// then adds what its server accepted meanwhile (PublishBatch.More): the
// servers taking turns at a principal commit more events a turn. When a
// subscription stopped since the routing, or a target is
// throttled, the first round trip takes the principals, inserts the events
// and reads which targets are active; the throttle windows are then
// folded (and duplicates looked up), and the last writes the rows and
// commits.

// Deactivations implements subscriptions.Store.
func (s *Store) Deactivations(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT deactivations FROM changes WHERE id = 1`).Scan(&n)
	return n, err
}

// Statements of a publish.
const (
	// A duplicate's first ID (its own should retention have removed the
	// first since).
	findDuplicateQuery = `SELECT coalesce((SELECT id FROM events WHERE id = $1 OR (source = $4 AND type = $2 AND source_event_id = $3)
		ORDER BY id = $1 DESC LIMIT 1), $1)`
	activeQuery = `SELECT id FROM subscriptions WHERE id = ANY($1) AND status = 'active'`
	// publishQuery runs with the principals taken. Unless $7 (the count of
	// deactivations the routing reflects) is neither 0 nor the count now,
	// or a principal of $8 has no row (the one round trip takes existing
	// rows only: making them would wait on every holder), it inserts the
	// events $1-$5 and, for those the table did not refuse as duplicates
	// (the same ID, or source, type and sourceEventId, as one stored before
	// or earlier in the list) and the events $13 stored earlier in the
	// transaction, the inbox rows $8-$10 and buffer rows $11-$12; else it
	// writes nothing. A stop of a target takes its principal, so it
	// committed before, and is counted, or waits for this. It returns the
	// events stored, the inbox rows with their numbers, and 'ok' unless it
	// wrote nothing.
	//
	// A principal's inbox rows are numbered by the counter on its row
	// (migration 0009), which the transaction holds: they commit in the
	// order they are drawn, whichever process draws, and publishes to other
	// principals do not wait. A subscription's buffer is ordered by a
	// sequence: every publish to it holds its principal's row, so its
	// events commit in that order.
	publishQuery = `WITH ok AS (SELECT ($7 = 0 OR deactivations = $7) AND NOT EXISTS (SELECT FROM unnest($8::text[]) AS t(p)
			WHERE NOT EXISTS (SELECT FROM principals WHERE principal = t.p)) AS ok FROM changes WHERE id = 1),
		ins AS (INSERT INTO events (id, source, type, source_event_id, body, received_at)
			SELECT u.id, u.source, u.type, u.source_event_id, u.body, $6
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[])
				WITH ORDINALITY AS u(id, source, type, source_event_id, body, ord)
			WHERE (SELECT ok FROM ok)
			ORDER BY u.ord
			ON CONFLICT DO NOTHING RETURNING id),
		fresh AS (SELECT id FROM ins UNION ALL SELECT unnest($13::text[])),
		entries AS (SELECT u.principal, u.ids, u.event_id, row_number() OVER (PARTITION BY u.principal ORDER BY u.ord) AS n
			FROM unnest($8::text[], $9::text[], $10::text[]) WITH ORDINALITY AS u(principal, ids, event_id, ord)
			WHERE u.event_id IN (SELECT id FROM fresh) AND (SELECT ok FROM ok)),
		drawn AS (UPDATE principals p SET inbox_seq = p.inbox_seq + c.n
			FROM (SELECT principal, count(*) AS n FROM entries GROUP BY principal) AS c
			WHERE p.principal = c.principal RETURNING p.principal, p.inbox_seq - c.n AS base),
		inb AS (INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, created_at)
			SELECT d.base + e.n, e.principal, ARRAY(SELECT jsonb_array_elements_text(e.ids::jsonb)), 'event', e.event_id, $6
			FROM drawn d JOIN entries e ON e.principal = d.principal RETURNING seq, principal, event_id),
		buf AS (INSERT INTO buffer (subscription_id, seq, event_id, created_at)
			SELECT r.subscription_id, nextval('buffer_seq'), r.event_id, $6
			FROM (SELECT * FROM unnest($11::text[], $12::text[]) WITH ORDINALITY AS r(subscription_id, event_id, ord)
				WHERE r.event_id IN (SELECT id FROM fresh) AND (SELECT ok FROM ok) ORDER BY ord) AS r)
		SELECT 'event', id, '', 0::bigint FROM ins
		UNION ALL SELECT 'entry', event_id, principal, seq FROM inb
		UNION ALL SELECT 'ok', '', '', ` + waitedMicros + ` FROM ok WHERE ok`
	// waitedMicros is, in the statement after the principals are taken,
	// how long that took.
	waitedMicros = `(extract(epoch FROM statement_timestamp() - transaction_timestamp()) * 1e6)::bigint`
)

// gatherAfter is how long a publish waits for its principals' rows
// before the next gathers (above); one that gathered nothing ends it.
const gatherAfter = 200 * time.Microsecond

// Publish implements subscriptions.Store. It returns once the transaction
// has committed.
func (s *Store) Publish(ctx context.Context, pb subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	if len(pb.Publications) == 0 {
		return nil, nil
	}
	b := &batch{ctx: ctx, now: pb.Now.UTC(), pubs: pb.Publications, routed: pb.Deactivations}
	if s.gather.Load() {
		b.more = pb.More
	}
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
	s.gather.Store(b.waited > gatherAfter.Microseconds())
	storecore.FinishPublish(b.res, b.pubs, b.fresh, b.entries, b.now)
	return b.res, nil
}

// batch is one Publish in progress.
type batch struct {
	ctx  context.Context
	tx   *pgxpool.Conn
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
	// more is PublishBatch.More when the last publish waited for its
	// rows; waited is how long this one did, in µs.
	more   func(locked []string) []subscriptions.Publication
	waited int64
}

// write runs the batch in a transaction on c; it starts over when run
// again.
func (b *batch) write(c *pgxpool.Conn) error {
	b.tx = c
	b.isActive = make(map[string]bool)
	principals, ids, throttled := b.targets()
	// At once, every target taken as active.
	if b.routed != 0 && !throttled {
		q := &pgx.Batch{}
		q.Queue("BEGIN")
		queueLock(q, principals, false)
		gathered := b.more != nil && len(principals) > 0
		if gathered {
			// Once the rows are held, what arrived while waiting for them
			// joins.
			q.Queue(`SELECT ` + waitedMicros).QueryRow(func(row pgx.Row) error { return row.Scan(&b.waited) })
			if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
				return fmt.Errorf("lock principals: %w", err)
			}
			extra := b.more(sortedSet(principals))
			if len(extra) == 0 {
				b.waited = 0 // nothing came: the next does not gather
			}
			b.pubs = append(b.pubs, extra...)
			principals, ids, _ = b.targets()
			q = &pgx.Batch{}
		}
		b.sized()
		ok := b.queuePublish(q, true, b.routed, nil)
		q.Queue("COMMIT")
		if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
			return fmt.Errorf("write the events and their deliveries: %w", err)
		} else if *ok >= 0 {
			if !gathered {
				b.waited = *ok
			}
			// Committed: should the first IDs of duplicates not be read
			// now, they keep their own.
			b.findDuplicates(nil)
			return nil
		}
		// A subscription stopped since the routing, or a principal has no
		// row yet: nothing was written.
	}
	b.sized()
	q := &pgx.Batch{}
	q.Queue("BEGIN")
	queueLock(q, principals, true)
	b.queuePublish(q, true, 0, [][]subscriptions.Target{})
	var active []string
	q.Queue(activeQuery, sortedSet(ids)).Query(func(rows pgx.Rows) (err error) {
		active, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
		return fmt.Errorf("lock principals and insert events: %w", err)
	}
	if err := b.findDuplicates(active); err != nil {
		return err
	}
	targets, err := storecore.Fold(b.ctx, conn{b.tx}, b.pubs, b.fresh, b.isActive, b.now)
	if err != nil {
		return err
	}
	q = &pgx.Batch{}
	b.queuePublish(q, false, 0, targets)
	q.Queue("COMMIT")
	if err := b.tx.SendBatch(b.ctx, q).Close(); err != nil {
		return fmt.Errorf("write deliveries: %w", err)
	}
	return nil
}

// targets lists the principals and subscriptions of the publications'
// targets, and tells whether one is throttled.
func (b *batch) targets() (principals, ids []string, throttled bool) {
	for _, p := range b.pubs {
		for _, t := range p.Targets {
			principals, ids = append(principals, t.Principal), append(ids, t.SubscriptionID)
			throttled = throttled || t.Window > 0
		}
	}
	return principals, ids, throttled
}

// sized makes the results as long as the publications.
func (b *batch) sized() {
	b.res = make([]subscriptions.PublishResult, len(b.pubs))
	b.fresh = make([]bool, len(b.pubs))
	b.entries = make([][]subscriptions.InboxEntry, len(b.pubs))
}

// queuePublish queues publishQuery: with insert, the events are inserted
// (else those marked fresh were before); the inbox and buffer rows are
// those of targets (of every target, taken as active, when nil; none when
// empty). It returns what tells, once the query ran, whether it wrote: -1
// if not, else how long the principals took (µs).
func (b *batch) queuePublish(q *pgx.Batch, insert bool, routed int64, targets [][]subscriptions.Target) *int64 {
	var evIDs, origins, types, stored, inPrincipals, inIDs, inEvents, bufSubs, bufEvents []string
	var sources []*string
	var bodies [][]byte
	first := make(map[string]int, len(b.pubs))
	index := make(map[[2]string]*subscriptions.InboxEntry)
	for i, p := range b.pubs {
		if insert {
			evIDs, origins, types, bodies = append(evIDs, p.Event.ID), append(origins, p.Source), append(types, p.Event.Type), append(bodies, p.Raw)
			sources = append(sources, nil)
			if src := p.Event.Metadata.SourceEventID; src != "" {
				sources[i] = &src
			}
		} else if b.fresh[i] {
			stored = append(stored, p.Event.ID)
		}
		if _, ok := first[p.Event.ID]; ok {
			continue // the first publication with an ID is the one stored
		}
		first[p.Event.ID] = i
		if !insert && !b.fresh[i] || targets != nil && len(targets) == 0 {
			continue
		}
		active, t := map[string]bool(nil), p.Targets // every target, taken as active
		if targets != nil {
			active, t = b.isActive, targets[i]
		}
		b.entries[i] = storecore.GroupByPrincipal(t, active)
		for j := range b.entries[i] {
			e := &b.entries[i][j]
			inPrincipals, inIDs, inEvents = append(inPrincipals, e.Principal), append(inIDs, storecore.MustJSON(e.SubscriptionIDs)), append(inEvents, p.Event.ID)
			index[[2]string{e.Principal, p.Event.ID}] = e
		}
		for _, sub := range storecore.BufferedTargets(p.Targets, active) {
			bufSubs, bufEvents = append(bufSubs, sub), append(bufEvents, p.Event.ID)
		}
	}
	ok := new(int64)
	*ok = -1
	q.Queue(publishQuery, evIDs, origins, types, sources, bodies, b.now, routed,
		inPrincipals, inIDs, inEvents, bufSubs, bufEvents, stored).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var kind, id, principal string
			var seq int64
			if err := rows.Scan(&kind, &id, &principal, &seq); err != nil {
				return err
			}
			switch kind {
			case "ok":
				*ok = seq
			case "event":
				b.fresh[first[id]] = true
			case "entry":
				if e := index[[2]string{principal, id}]; e != nil {
					e.Seq = seq
				}
			}
		}
		return rows.Err()
	})
	return ok
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
