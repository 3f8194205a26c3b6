package storecore

import (
	"context"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// KeepType implements subscriptions.TypeStore: it forgets the types last
// seen before the window, then keeps t while there is room (limit types, a
// quarter of them of one source). Two processes adding types at once may
// pass the limits by one each.
func (c *Core) KeepType(ctx context.Context, t string, now time.Time, window time.Duration, limit int) (kept bool, err error) {
	source, _, _ := strings.Cut(t, ".")
	err = c.Tx(ctx, nil, func(tx DB) error {
		if _, err := tx.Exec(ctx, `DELETE FROM kept_types WHERE last_seen < $1`, now.Add(-window)); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `INSERT INTO kept_types (type, source, last_seen) SELECT $1, $2, $3
		  WHERE EXISTS (SELECT 1 FROM kept_types WHERE type = $1)
		    OR (SELECT COUNT(*) FROM kept_types) < $4 AND (SELECT COUNT(*) FROM kept_types WHERE source = $2) < $5
		  ON CONFLICT (type) DO UPDATE SET last_seen = `+c.Q.Greatest+`(kept_types.last_seen, excluded.last_seen)`,
			t, source, now, limit, max(1, limit/4))
		kept = n > 0
		return err
	})
	return kept, err
}

// KeptTypes implements subscriptions.TypeStore.
func (c *Core) KeptTypes(ctx context.Context, now time.Time, window time.Duration) ([]mcpe.SeenType, error) {
	return scanAll(ctx, c.DB, func(r Row, t *mcpe.SeenType) error { return r.Scan(&t.Type, &t.LastSeenAt) },
		`SELECT type, last_seen FROM kept_types WHERE last_seen >= $1 ORDER BY last_seen DESC, type`, now.Add(-window))
}
