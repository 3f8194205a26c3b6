// The schedule of cron and scheduled subscriptions: which fires are due, and
// when the next one is.

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// timed is the timed column of a subscription with delivery d: its
// buffered channel, or NULL.
func timed(d mcpe.Delivery) sql.NullString {
	c := d.Timed()
	return sql.NullString{String: string(c), Valid: c != ""}
}

// DueFires implements subscriptions.Store.
func (s *Store) DueFires(ctx context.Context, c mcpe.Channel, now time.Time, limit int) ([]subscriptions.DueFire, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("sqlite: DueFires limit is %d; it must be positive", limit)
	}
	st, err := s.rstmts.get(ctx, `SELECT id, principal, delivery, next_fire_at FROM subscriptions
		WHERE timed = ? AND status = 'active' AND next_fire_at IS NOT NULL AND next_fire_at <= ?
		ORDER BY next_fire_at, id LIMIT ?`)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, string(c), nanos(now), limit)
	if err != nil {
		return nil, fmt.Errorf("read due fires: %w", err)
	}
	defer rows.Close()
	var out []subscriptions.DueFire
	for rows.Next() {
		var d subscriptions.DueFire
		var delivery string
		var due int64
		if err := rows.Scan(&d.SubscriptionID, &d.Principal, &delivery, &due); err != nil {
			return nil, err
		}
		d.Due = fromNanos(due)
		if err := json.Unmarshal([]byte(delivery), &d.Delivery); err != nil {
			return nil, fmt.Errorf("subscription %s: decode delivery: %w", d.SubscriptionID, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// NextFire implements subscriptions.Store.
func (s *Store) NextFire(ctx context.Context, c mcpe.Channel) (time.Time, bool, error) {
	st, err := s.rstmts.get(ctx, `SELECT min(next_fire_at) FROM subscriptions
		WHERE timed = ? AND status = 'active' AND next_fire_at IS NOT NULL`)
	if err != nil {
		return time.Time{}, false, err
	}
	var next sql.NullInt64
	if err := st.QueryRowContext(ctx, string(c)).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("read next fire: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return fromNanos(next.Int64), true, nil
}
