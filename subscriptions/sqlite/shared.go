package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file is what processes sharing the database read of each other's
// writes (subscriptions.Shared): the inbox, numbered in commit order across
// processes (SQLite lets one transaction write at a time, and AUTOINCREMENT
// numbers in that order), and subscription_changes, which triggers append to
// with every change that routes events differently.

var (
	_ subscriptions.Shared   = (*Store)(nil)
	_ subscriptions.Notifier = (*Store)(nil)
)

// OwnWritesTold implements subscriptions.Notifier: the log does not say
// who wrote.
func (s *Store) OwnWritesTold() bool { return true }

// Written implements subscriptions.Notifier: on Linux, a write to the
// database's write-ahead log by any process (this one's too) is reported.
// Elsewhere, and for an in-memory database, the channel never receives.
func (s *Store) Written() <-chan struct{} {
	s.writtenOnce.Do(func() {
		s.written = make(chan struct{}, 1)
		if s.path == "" || s.stop == nil {
			return
		}
		if err := watchWrites(s.path, s.written, s.stop); err != nil {
			s.writtenErr = err
		}
	})
	return s.written
}

// StoreID implements subscriptions.Shared.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'store_id'`).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("read the store's ID: %w", err)
	}
	return id, nil
}

// headsQuery reads the highest inbox number given out and the newest
// subscription change's number (a row of sqlite_sequence, which
// AUTOINCREMENT keeps).
const headsQuery = `SELECT ` + inboxHead + `,
	coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'subscription_changes'), 0)`

// Heads implements subscriptions.Shared.
func (s *Store) Heads(ctx context.Context) (inbox, changes int64, err error) {
	st, err := s.rstmts.get(ctx, headsQuery)
	if err != nil {
		return 0, 0, err
	}
	err = st.QueryRowContext(ctx).Scan(&inbox, &changes)
	return inbox, changes, err
}

// InboxRange implements subscriptions.Shared.
func (s *Store) InboxRange(ctx context.Context, principals []string, after, through int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	if limit <= 0 {
		return nil, false, fmt.Errorf("sqlite: InboxRange limit is %d; it must be positive", limit)
	}
	if len(principals) == 0 || through <= after {
		return nil, false, nil
	}
	st, err := s.rstmts.get(ctx, `SELECT `+entryColumns+entryFrom+`
		WHERE i.seq > ?1 AND i.seq <= ?2 AND i.principal IN (SELECT value FROM json_each(?3))
		ORDER BY i.seq LIMIT ?4`)
	if err != nil {
		return nil, false, err
	}
	rows, err := st.QueryContext(ctx, after, through, mustJSON(principals), limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("read the inbox: %w", err)
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

// ChangedSubscriptions implements subscriptions.Shared.
func (s *Store) ChangedSubscriptions(ctx context.Context, after, through int64) ([]subscriptions.Change, bool, error) {
	if through <= after {
		return nil, true, nil
	}
	var pruned int64
	if err := s.r.QueryRowContext(ctx, `SELECT changes_pruned_through FROM changes WHERE id = 1`).Scan(&pruned); err != nil {
		return nil, false, fmt.Errorf("read subscription changes: %w", err)
	}
	if pruned > after {
		return nil, false, nil
	}
	st, err := s.rstmts.get(ctx, `WITH changed AS (
			SELECT subscription_id AS id, max(seq) AS seq FROM subscription_changes
			WHERE seq > ?1 AND seq <= ?2 GROUP BY subscription_id)
		SELECT c.id, s.principal, s.status, s.filter, s.delivery, s.updated_at
		FROM changed c LEFT JOIN subscriptions s ON s.id = c.id ORDER BY c.seq`)
	if err != nil {
		return nil, false, err
	}
	rows, err := st.QueryContext(ctx, after, through)
	if err != nil {
		return nil, false, fmt.Errorf("read subscription changes: %w", err)
	}
	defer rows.Close()
	var out []subscriptions.Change
	for rows.Next() {
		c, err := scanChange(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, c)
	}
	return out, true, rows.Err()
}

// scanChange reads one row of ChangedSubscriptions: the changed ID, then
// what routing needs of the subscription, all NULL when it was deleted.
func scanChange(rows *sql.Rows) (subscriptions.Change, error) {
	var (
		c                                   subscriptions.Change
		principal, status, filter, delivery sql.NullString
		updated                             sql.NullInt64
	)
	if err := rows.Scan(&c.SubscriptionID, &principal, &status, &filter, &delivery, &updated); err != nil {
		return c, err
	}
	if !principal.Valid {
		return c, nil
	}
	sub := &subscriptions.Subscription{Principal: principal.String}
	sub.ID, sub.Status, sub.UpdatedAt = c.SubscriptionID, mcpe.Status(status.String), fromNanos(updated.Int64)
	if err := json.Unmarshal([]byte(filter.String), &sub.Filter); err != nil {
		return c, fmt.Errorf("subscription %s: decode filter: %w", sub.ID, err)
	}
	if err := json.Unmarshal([]byte(delivery.String), &sub.Delivery); err != nil {
		return c, fmt.Errorf("subscription %s: decode delivery: %w", sub.ID, err)
	}
	c.Subscription = sub
	return c, nil
}
