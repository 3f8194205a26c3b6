package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// ExpireSubscriptions implements subscriptions.Store.
func (s *Store) ExpireSubscriptions(ctx context.Context, now time.Time) (out []subscriptions.InboxEntry, err error) {
	f, err := s.fireStatements(ctx)
	if err != nil {
		return nil, err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		reqs, err := storecore.Expire(ctx, conn{s: s, tx: tx}, now)
		if err != nil {
			return err
		}
		results, err := f.fire(ctx, tx, reqs, now, false)
		out = storecore.Entries(results)
		return err
	})
	return out, err
}
