package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// entryColumns and entryFrom read inbox entries (aliased i) with the body
// of the event they reference.
const (
	entryColumns = `i.seq, i.principal, i.subscription_ids, i.kind, e.body, i.event_ids, i.remaining, i.created_at, i.pending`
	entryFrom    = ` FROM inbox i LEFT JOIN events e ON e.id = i.event_id `
)

// querier is what reads run on: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readEntries reads rows of entryColumns, then the bodies of the events of
// the batches among them.
func readEntries(ctx context.Context, q querier, rows pgx.Rows, capacity int) ([]subscriptions.InboxEntry, error) {
	out := make([]subscriptions.InboxEntry, 0, capacity)
	batchIDs := make(map[int][]string)
	bodies := make(map[string]json.RawMessage)
	err := func() error {
		defer rows.Close()
		for rows.Next() {
			var (
				e       subscriptions.InboxEntry
				kind    string
				event   []byte
				members []string
			)
			if err := rows.Scan(&e.Seq, &e.Principal, &e.SubscriptionIDs, &kind, &event, &members, &e.Remaining, &e.CreatedAt, &e.Pending); err != nil {
				return err
			}
			e.Kind = mcpe.InboxKind(kind)
			if event != nil {
				e.Event = json.RawMessage(event)
			}
			if members != nil {
				batchIDs[len(out)] = members
				for _, id := range members {
					bodies[id] = nil
				}
			}
			e.CreatedAt = utc(e.CreatedAt)
			out = append(out, e)
		}
		return rows.Err()
	}()
	if err != nil || len(bodies) == 0 {
		return out, err
	}
	if err := eventBodies(ctx, q, bodies); err != nil {
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

// eventBodies fills in the bodies of the event IDs that are the keys of
// bodies; those retention removed stay nil.
func eventBodies(ctx context.Context, q querier, bodies map[string]json.RawMessage) error {
	ids := make([]string, 0, len(bodies))
	for id := range bodies {
		ids = append(ids, id)
	}
	rows, err := q.Query(ctx, `SELECT id, body FROM events WHERE id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var body []byte
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
		return nil, false, fmt.Errorf("postgres: ReadInbox limit is %d; it must be positive", limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = $1 AND i.seq > $2 ORDER BY i.seq LIMIT $3`, principal, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	out, err := readEntries(ctx, s.pool, rows, limit+1)
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
		return nil, fmt.Errorf("postgres: LatestInbox limit is %d; it must be positive", limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT * FROM (SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = $1 ORDER BY i.seq DESC LIMIT $2) AS latest ORDER BY seq`, principal, limit)
	if err != nil {
		return nil, err
	}
	return readEntries(ctx, s.pool, rows, min(limit, 1024))
}

// PendingEntries implements subscriptions.Store.
func (s *Store) PendingEntries(ctx context.Context, principal string, limit int) ([]subscriptions.InboxEntry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("postgres: PendingEntries limit is %d; it must be positive", limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT * FROM (SELECT `+entryColumns+entryFrom+`
		WHERE i.principal = $1 AND i.pending ORDER BY i.seq DESC LIMIT $2) AS latest ORDER BY seq`, principal, limit)
	if err != nil {
		return nil, err
	}
	return readEntries(ctx, s.pool, rows, limit)
}

// ClearPending implements subscriptions.Store.
func (s *Store) ClearPending(ctx context.Context, principal string, seq int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE inbox SET pending = false WHERE principal = $1 AND pending AND seq <= $2`, principal, seq)
	return err
}

// PollCursor implements subscriptions.Store.
func (s *Store) PollCursor(ctx context.Context, principal string) (int64, error) {
	return s.principalColumn(ctx, "poll_cursor", principal)
}

// PrunedThrough implements subscriptions.Store.
func (s *Store) PrunedThrough(ctx context.Context, principal string) (int64, error) {
	return s.principalColumn(ctx, "pruned_through", principal)
}

// principalColumn reads a number of principals, 0 when it has no row.
func (s *Store) principalColumn(ctx context.Context, column, principal string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT `+column+` FROM principals WHERE principal = $1`, principal).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// SetPollCursor implements subscriptions.Store.
func (s *Store) SetPollCursor(ctx context.Context, principal string, seq int64) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO principals (principal, poll_cursor) VALUES ($1, $2)
		ON CONFLICT (principal) DO UPDATE SET poll_cursor = excluded.poll_cursor`, principal, seq)
	return err
}
