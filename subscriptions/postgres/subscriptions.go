package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// CreateSubscription implements subscriptions.Store. It holds the
// principal's row while it counts, so that two creations cannot both pass
// the limit.
func (s *Store) CreateSubscription(ctx context.Context, sub *subscriptions.Subscription, max int) error {
	filter, delivery, err := storecore.EncodeSettings(sub)
	if err != nil {
		return err
	}
	handler, secrets, err := encodeHandler(sub.Handler, sub.Secrets)
	if err != nil {
		return err
	}
	// Prune dates expired subscriptions by expired_at.
	var expiredAt *time.Time
	if sub.Status == mcpe.StatusExpired {
		expiredAt = &sub.UpdatedAt
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPrincipals(ctx, tx, []string{sub.Principal}); err != nil {
			return err
		}
		var live, expired int
		if err := tx.QueryRow(ctx, `SELECT live_subscriptions,
				(SELECT count(*) FROM subscriptions WHERE principal = $1 AND status = 'expired')
			FROM principals WHERE principal = $1`, sub.Principal).Scan(&live, &expired); err != nil {
			return err
		}
		if live >= max {
			return &subscriptions.LimitError{Max: max}
		}
		if over := live + expired + 1 - max; over > 0 {
			if err := dropOldestExpired(ctx, tx, sub.Principal, over); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO subscriptions
			(id, principal, status, filter, delivery, created_at, updated_at, expires_at, expired_at,
			 delivered_base, last_delivered_base, next_fire_at, last_fire_at, handler, handler_secrets, timed)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			sub.ID, sub.Principal, string(sub.Status), filter, delivery,
			sub.CreatedAt, sub.UpdatedAt, sub.ExpiresAt, expiredAt,
			sub.DeliveredCount, sub.LastDeliveredAt, sub.NextFireAt, sub.LastFireAt,
			handler, secrets, timed(sub.Delivery))
		return err
	})
}

// dropOldestExpired deletes the n expired subscriptions of principal that
// expired first, with what waits in their buffers, to make room for a new
// one.
func dropOldestExpired(ctx context.Context, tx pgx.Tx, principal string, n int) error {
	const oldest = `SELECT id FROM subscriptions WHERE principal = $1 AND status = 'expired'
		ORDER BY expired_at, created_at, id LIMIT $2`
	if _, err := tx.Exec(ctx, `DELETE FROM buffer WHERE subscription_id IN (`+oldest+`)`, principal, n); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM subscriptions WHERE id IN (`+oldest+`)`, principal, n)
	return err
}

// timed is the timed column of a subscription with delivery d: its
// buffered channel, or NULL.
func timed(d mcpe.Delivery) *string {
	c := d.Timed()
	if c == "" {
		return nil
	}
	v := string(c)
	return &v
}

// selectSubscriptions reads subscriptions with their delivery counts: the
// base columns plus the 'event' and 'batch' entries still in the inbox that
// list them (a batch counts its events), how many events wait in their
// buffers, and how many handler runs are pending. where filters s.
func selectSubscriptions(where string) string {
	return `SELECT s.id, s.principal, s.status, s.filter, s.delivery, s.created_at, s.updated_at, s.expires_at,
		s.delivered_base + coalesce(c.n, 0),
		CASE WHEN c.last IS NULL THEN s.last_delivered_base
			WHEN s.last_delivered_base IS NULL THEN c.last
			ELSE greatest(c.last, s.last_delivered_base) END,
		s.next_fire_at, s.last_fire_at,
		(SELECT count(*) FROM buffer b WHERE b.subscription_id = s.id),
		s.handler, s.handler_secrets, s.handler_disabled, s.handler_succeeded, s.handler_failed,
		s.handler_last_run_at, s.handler_last_error, s.handler_last_output, s.handler_last_tools,
		CASE WHEN s.handler IS NULL THEN 0 ELSE (SELECT count(*) FROM handler_jobs h WHERE h.subscription_id = s.id) END
	FROM subscriptions s
	LEFT JOIN (
		SELECT j.id AS subscription_id, sum(` + deliveredEvents + `) AS n, max(i.created_at) AS last
		FROM inbox i CROSS JOIN LATERAL unnest(i.subscription_ids) AS j(id)
		WHERE i.kind IN ('event', 'batch') AND i.principal IN (SELECT principal FROM subscriptions s WHERE ` + where + `)
		GROUP BY j.id
	) c ON c.subscription_id = s.id
	WHERE ` + where
}

// deliveredEvents is how many events the inbox entry i delivered.
const deliveredEvents = `CASE i.kind WHEN 'batch' THEN cardinality(i.event_ids) ELSE 1 END`

func scanSubscription(row pgx.Row) (*subscriptions.Subscription, error) {
	var (
		sub              subscriptions.Subscription
		status           string
		filter, delivery string
		h                storedHandler
	)
	err := row.Scan(&sub.ID, &sub.Principal, &status, &filter, &delivery, &sub.CreatedAt, &sub.UpdatedAt,
		&sub.ExpiresAt, &sub.DeliveredCount, &sub.LastDeliveredAt, &sub.NextFireAt, &sub.LastFireAt, &sub.BufferedEvents,
		&h.spec, &h.secrets, &h.disabled, &h.status.Succeeded, &h.status.Failed,
		&h.lastRun, &h.lastError, &h.lastOutput, &h.lastTools, &h.status.Pending)
	if err != nil {
		return nil, err
	}
	if err := h.decode(&sub); err != nil {
		return nil, err
	}
	sub.Status = mcpe.Status(status)
	if err := json.Unmarshal([]byte(filter), &sub.Filter); err != nil {
		return nil, fmt.Errorf("subscription %s: decode filter: %w", sub.ID, err)
	}
	var st storecore.Settings
	if err := json.Unmarshal([]byte(delivery), &st); err != nil {
		return nil, fmt.Errorf("subscription %s: decode delivery: %w", sub.ID, err)
	}
	sub.Delivery, sub.Label = st.Delivery, st.Label
	sub.CreatedAt, sub.UpdatedAt = utc(sub.CreatedAt), utc(sub.UpdatedAt)
	sub.ExpiresAt, sub.LastDeliveredAt = utcPtr(sub.ExpiresAt), utcPtr(sub.LastDeliveredAt)
	sub.NextFireAt, sub.LastFireAt = utcPtr(sub.NextFireAt), utcPtr(sub.LastFireAt)
	return &sub, nil
}

// GetSubscription implements subscriptions.Store.
func (s *Store) GetSubscription(ctx context.Context, principal, id string) (*subscriptions.Subscription, error) {
	sub, err := scanSubscription(s.pool.QueryRow(ctx, selectSubscriptions(`s.id = $1 AND s.principal = $2`), id, principal))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, subscriptions.ErrNotFound
	}
	return sub, err
}

// UpdateSubscription implements subscriptions.Store.
func (s *Store) UpdateSubscription(ctx context.Context, sub *subscriptions.Subscription) error {
	filter, delivery, err := storecore.EncodeSettings(sub)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		// The principal's row first, as every writer takes it, before the
		// subscription's.
		if err := lockPrincipals(ctx, tx, []string{sub.Principal}); err != nil {
			return err
		}
		// expired_at, which Prune dates expired subscriptions by, is set
		// when the status becomes expired and cleared when it stops being.
		return expectRow(tx.Exec(ctx, `UPDATE subscriptions
			SET status = $1, filter = $2, delivery = $3, updated_at = $4, expires_at = $5,
				expired_at = CASE WHEN $1 <> 'expired' THEN NULL
					WHEN status = 'expired' THEN coalesce(expired_at, $4) ELSE $4 END,
				next_fire_at = $8, timed = $9
			WHERE id = $6 AND principal = $7`,
			string(sub.Status), filter, delivery, sub.UpdatedAt, sub.ExpiresAt,
			sub.ID, sub.Principal, sub.NextFireAt, timed(sub.Delivery)))
	})
}

// DeleteSubscription implements subscriptions.Store.
func (s *Store) DeleteSubscription(ctx context.Context, principal, id string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockPrincipals(ctx, tx, []string{principal}); err != nil {
			return err
		}
		if err := expectRow(tx.Exec(ctx, `DELETE FROM subscriptions WHERE id = $1 AND principal = $2`, id, principal)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM buffer WHERE subscription_id = $1`, id)
		return err
	})
}

// ListSubscriptions implements subscriptions.Store.
func (s *Store) ListSubscriptions(ctx context.Context, q subscriptions.ListQuery) ([]*subscriptions.Subscription, error) {
	cond, args := storecore.ListCondition(q, "$")
	rows, err := s.pool.Query(ctx, selectSubscriptions(cond)+" ORDER BY s.created_at, s.id", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*subscriptions.Subscription
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, rows.Err()
}
