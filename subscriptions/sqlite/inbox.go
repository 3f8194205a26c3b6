package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// entryColumns and entryFrom read inbox entries (aliased i) with the body
// of the event they reference.
const (
	entryColumns = `i.seq, i.principal, i.subscription_ids, i.kind, e.body, i.event_ids, i.remaining, i.created_at, i.pending`
	entryFrom    = ` FROM inbox i LEFT JOIN events e ON e.id = i.event_id `
)

// inboxHead is the highest inbox number given out: the newest entry's, or
// that of one deleted since if higher (migration 0009). Only a transaction
// that holds the write lock may number entries from it.
const inboxHead = `max(coalesce((SELECT max(seq) FROM inbox), 0), (SELECT inbox_deleted_through FROM changes WHERE id = 1))`

// readEntries reads rows of entryColumns, then the bodies of the events of
// the batches among them.
func (s *Store) readEntries(ctx context.Context, rows *sql.Rows, capacity int) ([]subscriptions.InboxEntry, error) {
	out := make([]subscriptions.InboxEntry, 0, capacity)
	batchIDs := make(map[int][]string)
	bodies := make(map[string]json.RawMessage)
	err := func() error {
		defer rows.Close()
		for rows.Next() {
			var (
				e              subscriptions.InboxEntry
				ids, kind      string
				event, members sql.NullString
				created        int64
			)
			if err := rows.Scan(&e.Seq, &e.Principal, &ids, &kind, &event, &members, &e.Remaining, &created, &e.Pending); err != nil {
				return err
			}
			if err := decodeInto(ids, &e.SubscriptionIDs); err != nil {
				return fmt.Errorf("inbox entry %d: decode subscription IDs: %w", e.Seq, err)
			}
			e.Kind = mcpe.InboxKind(kind)
			if event.Valid {
				e.Event = json.RawMessage(event.String)
			}
			if members.Valid {
				var list []string
				if err := decodeInto(members.String, &list); err != nil {
					return fmt.Errorf("inbox entry %d: decode batch: %w", e.Seq, err)
				}
				batchIDs[len(out)] = list
				for _, id := range list {
					bodies[id] = nil
				}
			}
			e.CreatedAt = fromNanos(created)
			out = append(out, e)
		}
		return rows.Err()
	}()
	if err != nil || len(bodies) == 0 {
		return out, err
	}
	if err := s.eventBodies(ctx, &s.rstmts, nil, bodies); err != nil {
		return nil, err
	}
	for i, ids := range batchIDs {
		for _, id := range ids {
			if b := bodies[id]; b != nil {
				out[i].Events = append(out[i].Events, b)
			}
		}
	}
	return out, nil
}

// bodiesQuery reads the bodies of a JSON array of event IDs.
const bodiesQuery = `SELECT id, body FROM events WHERE id IN (SELECT value FROM json_each(?))`

// eventBodies fills in the bodies of the event IDs that are the keys of
// bodies, through the statement cache c (in tx when not nil; the statement
// must then be prepared already).
func (s *Store) eventBodies(ctx context.Context, c *stmtCache, tx *sql.Tx, bodies map[string]json.RawMessage) error {
	st, err := c.get(ctx, bodiesQuery)
	if err != nil {
		return err
	}
	if tx != nil {
		st = tx.StmtContext(ctx, st)
	}
	ids := make([]string, 0, len(bodies))
	for id := range bodies {
		ids = append(ids, id)
	}
	rows, err := st.QueryContext(ctx, mustJSON(ids))
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return err
		}
		bodies[id] = json.RawMessage(body)
	}
	return rows.Err()
}

// ReadInbox implements subscriptions.Store.
func (s *Store) ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	if limit <= 0 {
		return nil, false, fmt.Errorf("sqlite: ReadInbox limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = ? AND i.seq > ? ORDER BY i.seq LIMIT ?`)
	if err != nil {
		return nil, false, err
	}
	rows, err := st.QueryContext(ctx, principal, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	out, err := s.readEntries(ctx, rows, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// LatestInbox implements subscriptions.Store.
func (s *Store) LatestInbox(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("sqlite: LatestInbox limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT * FROM (SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = ? ORDER BY i.seq DESC LIMIT ?) ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, principal, limit)
	if err != nil {
		return nil, err
	}
	return s.readEntries(ctx, rows, min(limit, 1024))
}

// PendingEntries implements subscriptions.Store.
func (s *Store) PendingEntries(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("sqlite: PendingEntries limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT * FROM (SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = ? AND i.pending = 1 ORDER BY i.seq DESC LIMIT ?) ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, principal, limit)
	if err != nil {
		return nil, err
	}
	return s.readEntries(ctx, rows, limit)
}

// ClearPending implements subscriptions.Store.
func (s *Store) ClearPending(ctx context.Context, principal string, seq int64) error {
	st, err := s.prepared(ctx, `UPDATE inbox SET pending = 0 WHERE principal = ? AND pending = 1 AND seq <= ?`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, principal, seq)
		return err
	})
}

// PollCursor implements subscriptions.Store.
func (s *Store) PollCursor(ctx context.Context, principal string) (int64, error) {
	var seq int64
	st, err := s.rstmts.get(ctx, `SELECT poll_cursor FROM principals WHERE principal = ?`)
	if err != nil {
		return 0, err
	}
	err = st.QueryRowContext(ctx, principal).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// PrunedThrough implements subscriptions.Store.
func (s *Store) PrunedThrough(ctx context.Context, principal string) (int64, error) {
	var seq int64
	st, err := s.rstmts.get(ctx, `SELECT pruned_through FROM principals WHERE principal = ?`)
	if err != nil {
		return 0, err
	}
	err = st.QueryRowContext(ctx, principal).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// SetPollCursor implements subscriptions.Store.
func (s *Store) SetPollCursor(ctx context.Context, principal string, seq int64) error {
	st, err := s.prepared(ctx, `INSERT INTO principals (principal, poll_cursor) VALUES (?1, ?2)
		ON CONFLICT (principal) DO UPDATE SET poll_cursor = ?2`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx, principal, seq)
		return err
	})
}
