// The schedule of cron and scheduled subscriptions: which fires are due, and
// when the next one is.

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// DueFires implements subscriptions.Store. Like the SQLite store's, it only
// reads: each fire's Due is the subscription's next fire as read (in the
// store's microseconds), and Fire claims, recording the fire only while
// the next fire is still that, so that of two servers firing the same due
// fire one does.
func (s *Store) DueFires(ctx context.Context, c mcpe.Channel, now time.Time, limit int) ([]subscriptions.DueFire, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("postgres: DueFires limit is %d; it must be positive", limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, principal, delivery, next_fire_at FROM subscriptions
		WHERE timed = $1 AND status = 'active' AND next_fire_at IS NOT NULL AND next_fire_at <= $2
		ORDER BY next_fire_at, id LIMIT $3`, string(c), now, limit)
	if err != nil {
		return nil, fmt.Errorf("read due fires: %w", err)
	}
	defer rows.Close()
	var out []subscriptions.DueFire
	for rows.Next() {
		var d subscriptions.DueFire
		var delivery string
		if err := rows.Scan(&d.SubscriptionID, &d.Principal, &delivery, &d.Due); err != nil {
			return nil, err
		}
		d.Due = d.Due.UTC()
		if err := json.Unmarshal([]byte(delivery), &d.Delivery); err != nil {
			return nil, fmt.Errorf("subscription %s: decode delivery: %w", d.SubscriptionID, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// NextFire implements subscriptions.Store.
func (s *Store) NextFire(ctx context.Context, c mcpe.Channel) (time.Time, bool, error) {
	var next *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(next_fire_at) FROM subscriptions
		WHERE timed = $1 AND status = 'active' AND next_fire_at IS NOT NULL`, string(c)).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("read next fire: %w", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.UTC(), true, nil
}
