package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// A publish is set-based, like a fire: however many events one Publish
// call takes (a group commit), it runs a fixed handful of statements per
// chunk of rows (insert the events, look up the duplicates, check which
// targets are still active, insert the inbox rows and the buffer rows), so
// that what arrives together costs one transaction and a few statements.

// Rows written by one prepared INSERT.
const (
	maxEventRows = 32
	maxInboxRows = 64
)

// Deactivations implements subscriptions.Store.
func (s *Store) Deactivations(ctx context.Context) (n int64, err error) {
	err = conn{s: s}.one(ctx, `SELECT deactivations FROM changes WHERE id = 1`, nil, &n)
	return n, err
}

// Publish implements subscriptions.Store. It writes each event, one inbox
// row per principal and one buffer row per cron or scheduled target with
// plain INSERTs through prepared statements; nothing else is written per
// delivery, because the counts are derived from the inbox.
func (s *Store) Publish(ctx context.Context, pb subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	pubs := pb.Publications
	if len(pubs) == 0 {
		return nil, nil
	}
	b := &batch{s: s, ctx: ctx, now: pb.Now.UTC(), pubs: pubs, routed: pb.Deactivations, res: make([]subscriptions.PublishResult, len(pubs))}
	if err := b.prepare(); err != nil {
		return nil, err
	}
	if err := s.tx(ctx, b.write); err != nil {
		return nil, err
	}
	storecore.FinishPublish(b.res, b.pubs, b.fresh, b.entries, b.now)
	return b.res, nil
}

// batch is one Publish in progress.
type batch struct {
	s    *Store
	ctx  context.Context
	db   conn // in the transaction
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
	// head is the highest inbox number given out before this batch: its
	// entries are numbered from the next one.
	head int64
}

// Statements of a publish besides the multi-row INSERTs.
const (
	findDuplicateQuery = `SELECT id FROM events WHERE id = ? OR (source = ? AND type = ? AND source_event_id = ?) LIMIT 1`
	activeQuery        = `SELECT id FROM subscriptions WHERE id IN (SELECT value FROM json_each(?)) AND status = 'active'`
	publishStateQuery  = `SELECT deactivations, ` + inboxHead + ` FROM changes WHERE id = 1`
	bufferSeqQuery     = `UPDATE changes SET buffer_seq = buffer_seq + ? WHERE id = 1 RETURNING buffer_seq`
	insertBufferQuery  = `INSERT INTO buffer (subscription_id, seq, event_id, created_at)
		SELECT value ->> 0, value ->> 1, value ->> 2, ? FROM json_each(?)`
)

// prepare fetches the statements the transaction will use: they are
// prepared before it takes the only write connection.
func (b *batch) prepare() error {
	queries := []string{findDuplicateQuery, publishStateQuery, activeQuery, insertBufferQuery, bufferSeqQuery, storecore.FoldQuery}
	// The events go maxEventRows to a chunk, and what is left in the last.
	if len(b.pubs) >= maxEventRows {
		queries = append(queries, insertEventsSQL[maxEventRows])
	}
	if rest := len(b.pubs) % maxEventRows; rest > 0 {
		queries = append(queries, insertEventsSQL[rest])
	}
	// An event has an inbox row per principal among its realtime targets,
	// unless it is a duplicate or some of them stopped since the routing:
	// any chunk length up to that may come up.
	rows := 0
	principals := make(map[string]bool)
	for _, p := range b.pubs {
		clear(principals)
		for _, t := range p.Targets {
			if t.Channel == mcpe.ChannelRealtime && !principals[t.Principal] {
				principals[t.Principal] = true
				rows++
			}
		}
	}
	for n := 1; n <= min(rows, maxInboxRows); n++ {
		queries = append(queries, insertInboxSQL[n])
	}
	return b.s.prepare(b.ctx, queries...)
}

// write runs the batch in tx.
func (b *batch) write(tx *sql.Tx) error {
	b.db = conn{s: b.s, tx: tx}
	for _, step := range []func() error{b.insertEvents, b.findDuplicates, b.active, b.route, b.buffer} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// insertEvents stores the events; those the table refuses (the same ID, or
// the same source, type and sourceEventId, as one stored before or earlier
// in the batch) are duplicates.
func (b *batch) insertEvents() error {
	b.fresh = make([]bool, len(b.pubs))
	byID := make(map[string][]int, len(b.pubs))
	for start := 0; start < len(b.pubs); start += maxEventRows {
		chunk := b.pubs[start:min(start+maxEventRows, len(b.pubs))]
		args := make([]any, 0, 6*len(chunk))
		for i, p := range chunk {
			args = append(args, p.Event.ID, p.Source, p.Event.Type, sourceID(p.Event), string(p.Raw), b.now)
			byID[p.Event.ID] = append(byID[p.Event.ID], start+i)
		}
		inserted, err := storecore.Column[string](b.ctx, b.db, insertEventsSQL[len(chunk)], args...)
		if err != nil {
			return err
		}
		for _, id := range inserted {
			// The first publication with that ID is the one stored.
			b.fresh[byID[id][0]] = true
		}
	}
	return nil
}

// findDuplicates gives each duplicate the ID of the event accepted first.
func (b *batch) findDuplicates() error {
	for i, p := range b.pubs {
		b.res[i].EventID = p.Event.ID
		if b.fresh[i] {
			continue
		}
		b.res[i].Duplicate = true
		args := []any{p.Event.ID, p.Source, p.Event.Type, sourceID(p.Event)}
		if err := b.db.one(b.ctx, findDuplicateQuery, args, &b.res[i].EventID); err != nil {
			return err
		}
	}
	return nil
}

// route writes the inbox rows of the new events, for the targets whose
// subscriptions are still active (one matched before a pause, an expiry
// or a deletion that committed first is left out) and not throttled.
func (b *batch) route() error {
	targets, err := storecore.Fold(b.ctx, b.db, b.pubs, b.fresh, b.isActive, b.now)
	if err != nil {
		return err
	}
	b.entries = make([][]subscriptions.InboxEntry, len(b.pubs))
	type row struct {
		pub   int
		entry int
	}
	var rows []row
	for i := range b.pubs {
		if !b.fresh[i] {
			continue
		}
		b.entries[i] = storecore.GroupByPrincipal(targets[i], b.isActive)
		for j := range b.entries[i] {
			rows = append(rows, row{i, j})
		}
	}
	seq := b.head
	for chunk := range slices.Chunk(rows, maxInboxRows) {
		args := make([]any, 0, 5*len(chunk))
		for _, r := range chunk {
			e := &b.entries[r.pub][r.entry]
			seq++
			e.Seq = seq
			args = append(args, seq, e.Principal, e.SubscriptionIDs, b.pubs[r.pub].Event.ID, b.now)
		}
		if _, err := b.db.Exec(b.ctx, insertInboxSQL[len(chunk)], args...); err != nil {
			return err
		}
	}
	return nil
}

// active finds which of the new events' target subscriptions are active.
func (b *batch) active() error {
	var ids []string
	seen := make(map[string]bool)
	for i, p := range b.pubs {
		if !b.fresh[i] {
			continue
		}
		for _, t := range p.Targets {
			if !seen[t.SubscriptionID] {
				seen[t.SubscriptionID] = true
				ids = append(ids, t.SubscriptionID)
			}
		}
	}
	b.isActive = make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return nil
	}
	// Almost always no subscription stopped since the routing: then every
	// target is active, and one row tells (with the inbox's head, which
	// route numbers the entries from).
	var now int64
	if err := b.db.one(b.ctx, publishStateQuery, nil, &now, &b.head); err != nil {
		return err
	}
	active := ids
	var err error
	if now != b.routed {
		active, err = storecore.Column[string](b.ctx, b.db, activeQuery, ids)
	}
	for _, id := range active {
		b.isActive[id] = true
	}
	return err
}

// buffer adds the new events to the buffers of their active cron and
// scheduled targets, numbered by the store's counter while the transaction
// holds the write lock, so that buffer order is commit order whichever
// process commits.
func (b *batch) buffer() error {
	var rows [][3]any
	events := 0
	for i, p := range b.pubs {
		if !b.fresh[i] {
			continue
		}
		subs := storecore.BufferedTargets(p.Targets, b.isActive)
		if len(subs) == 0 {
			continue
		}
		events++
		for _, sub := range subs {
			rows = append(rows, [3]any{sub, int64(events), p.Event.ID})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	var last int64
	if err := b.db.one(b.ctx, bufferSeqQuery, []any{events}, &last); err != nil {
		return fmt.Errorf("number buffered events: %w", err)
	}
	for i := range rows {
		rows[i][1] = last - int64(events) + rows[i][1].(int64)
	}
	_, err := b.db.Exec(b.ctx, insertBufferQuery, b.now, storecore.MustJSON(rows))
	return err
}

func sourceID(ev *mcpe.Event) sql.NullString {
	if ev.Metadata.SourceEventID == "" {
		return sql.NullString{}
	}
	return sql.NullString{String: ev.Metadata.SourceEventID, Valid: true}
}

// insertEventsSQL[n] and insertInboxSQL[n] are the INSERTs of n events
// (naming those stored) and of n numbered inbox rows, made once: a publish
// looks its statements up by their text.
var (
	insertEventsSQL = bySize(maxEventRows, `INSERT INTO events (id, source, type, source_event_id, body, received_at) VALUES `,
		`(?, ?, ?, ?, ?, ?)`, ` ON CONFLICT DO NOTHING RETURNING id`)
	insertInboxSQL = bySize(maxInboxRows, `INSERT INTO inbox (seq, principal, subscription_ids, kind, event_id, created_at) VALUES `,
		`(?, ?, ?, 'event', ?, ?)`, "")
)

// bySize returns, at index n from 1 to most (0 is empty), the statement of
// head, n comma-separated copies of row, and tail.
func bySize(most int, head, row, tail string) []string {
	out := make([]string, most+1)
	for n := 1; n <= most; n++ {
		out[n] = head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + tail
	}
	return out
}
