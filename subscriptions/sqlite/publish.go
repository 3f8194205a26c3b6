package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// maxInboxRows is the most inbox rows one prepared INSERT writes; a publish
// reaching more principals uses several.
const maxInboxRows = 16

// Publish implements subscriptions.Store. It writes the event, one inbox row
// per principal and one buffer row per cron or scheduled target with plain
// INSERTs through prepared statements; nothing else is written per delivery,
// because the counts are derived from the inbox. Targets are taken as given: the index matched only
// active subscriptions, and a subscription paused a moment after the match
// is treated as paused a moment after the event.
func (s *Store) Publish(ctx context.Context, ev *mcpe.Event, raw json.RawMessage, targets []subscriptions.Target, now time.Time) (subscriptions.PublishResult, error) {
	p := &publishing{ev: ev, raw: raw, now: now.UTC(), entries: groupByPrincipal(targets), buffered: bufferedTargets(targets),
		res: subscriptions.PublishResult{EventID: ev.ID}}
	p.ids = make([]string, len(p.entries))
	for i, e := range p.entries {
		p.ids[i] = mustJSON(e.SubscriptionIDs)
	}
	if ev.Metadata.SourceEventID != "" {
		p.source = sql.NullString{String: ev.Metadata.SourceEventID, Valid: true}
	}
	queries := []string{
		`INSERT INTO events (id, type, source_event_id, body, received_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		`SELECT id FROM events WHERE id = ? OR (type = ? AND source_event_id = ?) LIMIT 1`,
		`INSERT INTO buffer (subscription_id, seq, event_id, created_at) SELECT value, ?4, ?2, ?3 FROM json_each(?1)`,
	}
	for start := 0; start < len(p.entries); start += maxInboxRows {
		queries = append(queries, insertInbox(min(maxInboxRows, len(p.entries)-start)))
	}
	stmts, err := s.prepared(ctx, queries...)
	if err != nil {
		return p.res, err
	}
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.publishTx(ctx, tx, p, stmts) }); err != nil || p.res.Duplicate {
		return p.res, err
	}
	for i := range p.entries {
		p.entries[i].Kind, p.entries[i].Event, p.entries[i].CreatedAt = mcpe.InboxEvent, raw, p.now
	}
	slices.SortFunc(p.entries, func(a, b subscriptions.InboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	p.res.Delivered = p.entries
	return p.res, nil
}

// publishing is one event being published.
type publishing struct {
	ev     *mcpe.Event
	raw    json.RawMessage
	now    time.Time
	source sql.NullString
	// entries are the inbox entries to write, one per principal, and ids
	// the JSON arrays of their subscription IDs.
	entries []subscriptions.InboxEntry
	ids     []string
	// buffered are the cron and scheduled subscriptions the event waits for.
	buffered []string
	res      subscriptions.PublishResult
}

// publishTx writes p in tx with stmts: the event INSERT, the duplicate
// look-up, the buffer INSERT, then the inbox INSERTs.
func (s *Store) publishTx(ctx context.Context, tx *sql.Tx, p *publishing, stmts []*sql.Stmt) error {
	insertEvent, findDuplicate, insertBuffer, inboxStmts := stmts[0], stmts[1], stmts[2], stmts[3:]
	r, err := tx.StmtContext(ctx, insertEvent).ExecContext(ctx, p.ev.ID, p.ev.Type, p.source, string(p.raw), nanos(p.now))
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		p.res.Duplicate = true
		return tx.StmtContext(ctx, findDuplicate).QueryRowContext(ctx, p.ev.ID, p.ev.Type, p.source).Scan(&p.res.EventID)
	}
	for i, st := range inboxStmts {
		start := i * maxInboxRows
		end := min(start+maxInboxRows, len(p.entries))
		if err := writeInbox(ctx, tx, st, p.ev.ID, p.now, p.entries[start:end], p.ids[start:end]); err != nil {
			return err
		}
	}
	if len(p.buffered) == 0 {
		return nil
	}
	// Numbered here, while the transaction holds the only write
	// connection, so that buffer order is commit order.
	seq := s.bufferSeq.Add(1)
	_, err = tx.StmtContext(ctx, insertBuffer).ExecContext(ctx, mustJSON(p.buffered), p.ev.ID, nanos(p.now), seq)
	return err
}

// bufferedTargets lists the cron and scheduled subscriptions among
// targets, each once.
func bufferedTargets(targets []subscriptions.Target) []string {
	var out []string
	seen := make(map[string]bool)
	for _, t := range targets {
		if (t.Channel == mcpe.ChannelCron || t.Channel == mcpe.ChannelScheduled) && !seen[t.SubscriptionID] {
			seen[t.SubscriptionID] = true
			out = append(out, t.SubscriptionID)
		}
	}
	return out
}

// groupByPrincipal turns realtime targets into one inbox entry per principal,
// in the order the principals first appear, each subscription listed once.
func groupByPrincipal(targets []subscriptions.Target) []subscriptions.InboxEntry {
	var out []subscriptions.InboxEntry
	byPrincipal := make(map[string]int)
	listed := make(map[string]bool)
	for _, t := range targets {
		if t.Channel != mcpe.ChannelRealtime || listed[t.SubscriptionID] {
			continue
		}
		listed[t.SubscriptionID] = true
		i, ok := byPrincipal[t.Principal]
		if !ok {
			i = len(out)
			byPrincipal[t.Principal] = i
			out = append(out, subscriptions.InboxEntry{Principal: t.Principal})
		}
		out[i].SubscriptionIDs = append(out[i].SubscriptionIDs, t.SubscriptionID)
	}
	return out
}

// writeInbox inserts entries with stmt, the INSERT of that many rows, and
// sets their Seq.
func writeInbox(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, eventID string, now time.Time, entries []subscriptions.InboxEntry, ids []string) error {
	args := make([]any, 0, 4*len(entries))
	for i, e := range entries {
		args = append(args, e.Principal, ids[i], eventID, nanos(now))
	}
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	// RETURNING promises no order; match rows by principal.
	for rows.Next() {
		var seq int64
		var principal string
		if err := rows.Scan(&seq, &principal); err != nil {
			rows.Close()
			return err
		}
		if i := slices.IndexFunc(entries, func(e subscriptions.InboxEntry) bool { return e.Principal == principal }); i >= 0 {
			entries[i].Seq = seq
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// insertInbox is the INSERT of n inbox rows.
func insertInbox(n int) string {
	values := strings.TrimSuffix(strings.Repeat(`(?, ?, 'event', ?, ?), `, n), ", ")
	return `INSERT INTO inbox (principal, subscription_ids, kind, event_id, created_at)
		VALUES ` + values + ` RETURNING seq, principal`
}
