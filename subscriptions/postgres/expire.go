package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// ExpireSubscriptions implements subscriptions.Store. It takes the rows of
// the owners of the subscriptions due to expire before it expires them, so
// that their entries commit in sequence order.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) (out []subscriptions.InboxEntry, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		owners, err := storecore.Column[string](ctx, conn{tx}, `SELECT DISTINCT principal FROM subscriptions
			WHERE status IN ('active', 'paused') AND expires_at IS NOT NULL AND expires_at <= $1`, now)
		if err != nil || len(owners) == 0 {
			return err
		}
		if err := lockPrincipals(ctx, tx, owners); err != nil {
			return err
		}
		reqs, err := storecore.Expire(ctx, conn{tx}, now)
		if err != nil {
			return err
		}
		// fire also takes the owner's row of a subscription that came due
		// since the owners were read (rare; a wait in a circle that this
		// causes is broken by PostgreSQL and the transaction runs again).
		results, err := fire(ctx, tx, reqs, now, false)
		out = storecore.Entries(results)
		return err
	})
	return out, err
}
