package sqlite

import (
	"context"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// CreateSubscription implements subscriptions.Store. Most creations
// neither reach the limit nor have expired subscriptions to drop: one
// statement, its own transaction, inserts when the principal's
// subscriptions, expired ones included, leave room. A statement that
// writes takes the write lock before it reads, as BEGIN IMMEDIATE does, so
// the count it checks is the one it commits with. Else the core's counts,
// makes room and inserts in one transaction.
func (s *Store) CreateSubscription(ctx context.Context, sub *subscriptions.Subscription, max int) error {
	row, err := storecore.Columns(sub)
	if err != nil {
		return err
	}
	inserted, err := s.DB.Exec(ctx, storecore.InsertSubscription+`
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16
		WHERE coalesce((SELECT live_subscriptions FROM principals WHERE principal = ?2), 0)
			+ (SELECT count(*) FROM subscriptions WHERE principal = ?2 AND status = 'expired') < ?17`,
		append(row, max)...)
	if err != nil || inserted > 0 {
		return err
	}
	return s.Core.CreateSubscription(ctx, sub, max)
}
