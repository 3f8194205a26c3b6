package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// expireFlush is the size of the batches in which an expiring subscription's
// buffer is delivered.
const expireFlush = 1000

// ExpireSubscriptions implements subscriptions.Store.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) ([]subscriptions.InboxEntry, error) {
	f, err := s.fireStatements(ctx)
	if err != nil {
		return nil, err
	}
	var out []subscriptions.InboxEntry
	err = s.tx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE subscriptions
			SET status = 'expired', expired_at = ?1, updated_at = ?1, next_fire_at = NULL
			WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL AND expires_at <= ?1
			RETURNING id, principal`, nanos(now))
		if err != nil {
			return err
		}
		var reqs []subscriptions.FireRequest
		for rows.Next() {
			// What still waits for a digest goes out with the expiry.
			r := subscriptions.FireRequest{Max: expireFlush, Aggregate: true, Drain: true, Expire: true, Pending: true}
			if err := rows.Scan(&r.SubscriptionID, &r.Principal); err != nil {
				rows.Close()
				return err
			}
			reqs = append(reqs, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		slices.SortFunc(reqs, func(a, b subscriptions.FireRequest) int { return cmp.Compare(a.SubscriptionID, b.SubscriptionID) })
		results, err := f.fire(ctx, tx, reqs, now, false)
		for _, r := range results {
			out = append(out, r.Entries...)
		}
		return err
	})
	return out, err
}

// NextExpiry implements subscriptions.Store.
func (s *Store) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	var n sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT min(expires_at) FROM subscriptions
		WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL`).Scan(&n)
	if err != nil || !n.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(n.Int64), true, nil
}
