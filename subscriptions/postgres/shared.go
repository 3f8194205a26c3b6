package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// This file is what replicas sharing the database read of each other's
// writes (subscriptions.Shared): the inbox and subscription_changes, both
// numbered in commit order across processes by the counters in the one
// row of changes (migration 0002 tells why a sequence would not do).
//
// Heads reads those counters as committed. A transaction draws numbers by
// adding to a counter, which locks the row until it commits or rolls back;
// the next transaction to draw waits for that, then adds to the committed
// value. So the committed value n was drawn by a transaction that has
// committed, after every transaction that drew a number below n had
// committed (or rolled back, its numbers then drawn again by a later one),
// and any later draw gets numbers above n: once Heads returned n, nothing
// numbered n or less commits later. A reader never waits: it reads the
// last committed version of the row.

var _ subscriptions.Shared = (*Store)(nil)

// StoreID implements subscriptions.Shared.
func (s *Store) StoreID(ctx context.Context) (string, error) {
	var id string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'store_id'`).Scan(&id); err != nil {
		return "", fmt.Errorf("read the store's ID: %w", err)
	}
	return id, nil
}

// Heads implements subscriptions.Shared.
func (s *Store) Heads(ctx context.Context) (inbox, changes int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT inbox_seq, change_seq FROM changes WHERE id = 1`).Scan(&inbox, &changes)
	if err != nil {
		return 0, 0, fmt.Errorf("read the heads of the inbox and of the subscription changes: %w", err)
	}
	return inbox, changes, nil
}

// InboxRange implements subscriptions.Shared.
func (s *Store) InboxRange(ctx context.Context, principals []string, after, through int64, limit int) ([]subscriptions.InboxEntry, bool, error) {
	if limit <= 0 {
		return nil, false, fmt.Errorf("postgres: InboxRange limit is %d; it must be positive", limit)
	}
	if len(principals) == 0 || through <= after {
		return nil, false, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+entryColumns+entryFrom+`
		WHERE i.seq > $1 AND i.seq <= $2 AND i.principal = ANY($3)
		ORDER BY i.seq LIMIT $4`, after, through, principals, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("read the inbox: %w", err)
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

// changedQuery reads the subscriptions changed by the changes numbered
// above $1 and at most $2, each once, in the order of its last change, with
// its state now (NULLs when it was deleted).
const changedQuery = `WITH changed AS (
		SELECT subscription_id AS id, max(seq) AS seq FROM subscription_changes
		WHERE seq > $1 AND seq <= $2 GROUP BY subscription_id)
	SELECT c.id, s.principal, s.status, s.filter, s.delivery, s.updated_at
	FROM changed c LEFT JOIN subscriptions s ON s.id = c.id ORDER BY c.seq`

// ChangedSubscriptions implements subscriptions.Shared. It reads what
// retention removed and the changes in one snapshot, so that a Prune
// committing meanwhile cannot remove changes it then reports complete.
func (s *Store) ChangedSubscriptions(ctx context.Context, after, through int64) ([]subscriptions.Change, bool, error) {
	if through <= after {
		return nil, true, nil
	}
	var out []subscriptions.Change
	complete := false
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out, complete = nil, false
		var pruned int64
		if err := tx.QueryRow(ctx, `SELECT changes_pruned_through FROM changes WHERE id = 1`).Scan(&pruned); err != nil {
			return err
		}
		if pruned > after {
			return nil
		}
		rows, err := tx.Query(ctx, changedQuery, after, through)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanChange(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		complete = true
		return rows.Err()
	})
	if err != nil {
		return nil, false, fmt.Errorf("read subscription changes: %w", err)
	}
	return out, complete, nil
}

// scanChange reads one row of changedQuery.
func scanChange(rows pgx.Rows) (subscriptions.Change, error) {
	var (
		c                                   subscriptions.Change
		principal, status, filter, delivery *string
		updated                             *time.Time
	)
	if err := rows.Scan(&c.SubscriptionID, &principal, &status, &filter, &delivery, &updated); err != nil {
		return c, err
	}
	if principal == nil {
		return c, nil
	}
	sub := &subscriptions.Subscription{Principal: *principal}
	sub.ID, sub.Status = c.SubscriptionID, mcpe.Status(*status)
	if updated != nil {
		sub.UpdatedAt = updated.UTC()
	}
	if err := json.Unmarshal([]byte(*filter), &sub.Filter); err != nil {
		return c, fmt.Errorf("subscription %s: decode filter: %w", sub.ID, err)
	}
	if err := json.Unmarshal([]byte(*delivery), &sub.Delivery); err != nil {
		return c, fmt.Errorf("subscription %s: decode delivery: %w", sub.ID, err)
	}
	c.Subscription = sub
	return c, nil
}
