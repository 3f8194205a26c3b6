package postgres

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// expireFlush is the size of the batches in which an expiring subscription's
// buffer is delivered.
const expireFlush = 1000

// ExpireSubscriptions implements subscriptions.Store. It takes the rows of
// the owners of the subscriptions due to expire before it expires them, so
// that their entries commit in sequence order.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) ([]subscriptions.InboxEntry, error) {
	var out []subscriptions.InboxEntry
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT DISTINCT principal FROM subscriptions
			WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL AND expires_at <= $1`, now)
		if err != nil {
			return err
		}
		owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(owners) == 0 {
			return nil
		}
		if err := lockPrincipals(ctx, tx, owners); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `UPDATE subscriptions
			SET status = 'expired', expired_at = $1, updated_at = $1, next_fire_at = NULL
			WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL AND expires_at <= $1
			RETURNING id, principal`, now)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (subscriptions.FireRequest, error) {
			// What still waits for a digest goes out with the expiry.
			r := subscriptions.FireRequest{Max: expireFlush, Aggregate: true, Drain: true, Expire: true, Pending: true}
			err := row.Scan(&r.SubscriptionID, &r.Principal)
			return r, err
		})
		if err != nil {
			return err
		}
		// A subscription that came due since the owners were read: its
		// owner's row too (rare; a wait in a circle that this causes is
		// broken by PostgreSQL and the transaction runs again).
		principals := make([]string, len(reqs))
		for i, r := range reqs {
			principals[i] = r.Principal
		}
		if err := lockPrincipals(ctx, tx, principals); err != nil {
			return err
		}
		slices.SortFunc(reqs, func(a, b subscriptions.FireRequest) int { return cmp.Compare(a.SubscriptionID, b.SubscriptionID) })
		results, err := fire(ctx, tx, reqs, now, false)
		for _, r := range results {
			out = append(out, r.Entries...)
		}
		return err
	})
	return out, err
}

// NextExpiry implements subscriptions.Store.
func (s *Store) NextExpiry(ctx context.Context) (time.Time, bool, error) {
	var t *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(expires_at) FROM subscriptions
		WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL`).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, false, err
	}
	return t.UTC(), true, nil
}
