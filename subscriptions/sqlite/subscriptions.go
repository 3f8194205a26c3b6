package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// CreateSubscription implements subscriptions.Store.
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
	var expiredAt sql.NullInt64
	if sub.Status == mcpe.StatusExpired {
		expiredAt = nullNanos(&sub.UpdatedAt)
	}
	args := []any{
		sub.ID, sub.Principal, string(sub.Status), filter, delivery,
		nanos(sub.CreatedAt), nanos(sub.UpdatedAt), nullNanos(sub.ExpiresAt), expiredAt,
		sub.DeliveredCount, nullNanos(sub.LastDeliveredAt), nullNanos(sub.NextFireAt), nullNanos(sub.LastFireAt),
		handler, secrets, timed(sub.Delivery), max,
	}
	// Most creations neither reach the limit nor have expired
	// subscriptions to drop: one statement, its own transaction, inserts
	// when the principal's subscriptions, expired ones included, leave
	// room. A statement that writes takes the write lock before it reads,
	// as BEGIN IMMEDIATE does, so the count it checks is the one it
	// commits with.
	st, err := s.prepared(ctx, `INSERT INTO subscriptions
		(id, principal, status, filter, delivery, created_at, updated_at, expires_at, expired_at,
		 delivered_base, last_delivered_base, next_fire_at, last_fire_at, handler, handler_secrets, timed)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16
		WHERE coalesce((SELECT live_subscriptions FROM principals WHERE principal = ?2), 0)
			+ (SELECT count(*) FROM subscriptions WHERE principal = ?2 AND status = 'expired') < ?17`)
	if err != nil {
		return err
	}
	inserted, err := s.exec(ctx, st[0], args...)
	if err != nil || inserted > 0 {
		return err
	}
	st, err = s.prepared(ctx,
		`SELECT coalesce((SELECT live_subscriptions FROM principals WHERE principal = ?1), 0),
			(SELECT count(*) FROM subscriptions WHERE principal = ?1 AND status = 'expired')`,
		`INSERT INTO subscriptions
			(id, principal, status, filter, delivery, created_at, updated_at, expires_at, expired_at,
			 delivered_base, last_delivered_base, next_fire_at, last_fire_at, handler, handler_secrets, timed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	// At the limit, or room to make: count, drop and insert in one
	// transaction.
	return s.tx(ctx, func(tx *sql.Tx) error {
		var live, expired int
		if err := tx.StmtContext(ctx, st[0]).QueryRowContext(ctx, sub.Principal).Scan(&live, &expired); err != nil {
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
		_, err := tx.StmtContext(ctx, st[1]).ExecContext(ctx, args[:16]...)
		return err
	})
}

// dropOldestExpired deletes the n expired subscriptions of principal that
// expired first, with what waits in their buffers, to make room for a new
// one: a principal keeps at most as many subscriptions, expired ones
// included, as it may have live.
func dropOldestExpired(ctx context.Context, tx *sql.Tx, principal string, n int) error {
	const oldest = `SELECT id FROM subscriptions WHERE principal = ?1 AND status = 'expired'
		ORDER BY expired_at, created_at, id LIMIT ?2`
	if _, err := tx.ExecContext(ctx, `DELETE FROM buffer WHERE subscription_id IN (`+oldest+`)`, principal, n); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM subscriptions WHERE id IN (`+oldest+`)`, principal, n)
	return err
}

// selectSubscriptions reads subscriptions with their delivery counts: the
// base columns plus the 'event' and 'batch' entries still in the inbox that
// list them (a batch counts its events), and how many events wait in their
// buffers. The counts are grouped over the inbox entries of the same
// principals, through the inbox's principal index. where filters s.
func selectSubscriptions(where string) string {
	return `SELECT s.id, s.principal, s.status, s.filter, s.delivery, s.created_at, s.updated_at, s.expires_at,
		s.delivered_base + coalesce(c.n, 0),
		CASE WHEN c.last IS NULL THEN s.last_delivered_base
			WHEN s.last_delivered_base IS NULL THEN c.last
			ELSE max(c.last, s.last_delivered_base) END,
		s.next_fire_at, s.last_fire_at,
		(SELECT count(*) FROM buffer b WHERE b.subscription_id = s.id),
		s.handler, s.handler_secrets, s.handler_disabled, s.handler_succeeded, s.handler_failed,
		s.handler_last_run_at, s.handler_last_error, s.handler_last_output, s.handler_last_tools,
		CASE WHEN s.handler IS NULL THEN 0 ELSE (SELECT count(*) FROM handler_jobs h WHERE h.subscription_id = s.id) END
	FROM subscriptions s
	LEFT JOIN (
		SELECT j.value AS subscription_id, sum(` + deliveredEvents + `) AS n, max(i.created_at) AS last
		FROM inbox i, json_each(i.subscription_ids) j
		WHERE i.kind IN ('event', 'batch') AND i.principal IN (SELECT principal FROM subscriptions s WHERE ` + where + `)
		GROUP BY j.value
	) c ON c.subscription_id = s.id
	WHERE ` + where
}

// deliveredEvents is how many events the inbox entry i delivered.
const deliveredEvents = `CASE i.kind WHEN 'batch' THEN json_array_length(i.event_ids) ELSE 1 END`

type scanner interface{ Scan(...any) error }

func scanSubscription(row scanner) (*subscriptions.Subscription, error) {
	var (
		sub                subscriptions.Subscription
		status             string
		filter, delivery   string
		created, updated   int64
		expires, lastDeliv sql.NullInt64
	)
	var nextFire, lastFire sql.NullInt64
	var h storedHandler
	err := row.Scan(&sub.ID, &sub.Principal, &status, &filter, &delivery, &created, &updated,
		&expires, &sub.DeliveredCount, &lastDeliv, &nextFire, &lastFire, &sub.BufferedEvents,
		&h.spec, &h.secrets, &h.disabled, &h.status.Succeeded, &h.status.Failed,
		&h.lastRun, &h.lastError, &h.lastOutput, &h.lastTools, &h.status.Pending)
	if err != nil {
		return nil, err
	}
	if err := h.decode(&sub); err != nil {
		return nil, err
	}
	sub.NextFireAt, sub.LastFireAt = timePtr(nextFire), timePtr(lastFire)
	sub.Status = mcpe.Status(status)
	if err := json.Unmarshal([]byte(filter), &sub.Filter); err != nil {
		return nil, fmt.Errorf("subscription %s: decode filter: %w", sub.ID, err)
	}
	var st storecore.Settings
	if err := json.Unmarshal([]byte(delivery), &st); err != nil {
		return nil, fmt.Errorf("subscription %s: decode delivery: %w", sub.ID, err)
	}
	sub.Delivery, sub.Label = st.Delivery, st.Label
	sub.CreatedAt = fromNanos(created)
	sub.UpdatedAt = fromNanos(updated)
	sub.ExpiresAt = timePtr(expires)
	sub.LastDeliveredAt = timePtr(lastDeliv)
	return &sub, nil
}

// GetSubscription implements subscriptions.Store.
func (s *Store) GetSubscription(ctx context.Context, principal, id string) (*subscriptions.Subscription, error) {
	st, err := s.rstmts.get(ctx, selectSubscriptions(`s.id = ?1 AND s.principal = ?2`))
	if err != nil {
		return nil, err
	}
	sub, err := scanSubscription(st.QueryRowContext(ctx, id, principal))
	if errors.Is(err, sql.ErrNoRows) {
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
	// expired_at, which Prune dates expired subscriptions by, is set when
	// the status becomes expired and cleared when it stops being.
	st, err := s.prepared(ctx, `UPDATE subscriptions
		SET status = ?1, filter = ?2, delivery = ?3, updated_at = ?4, expires_at = ?5,
			expired_at = CASE WHEN ?1 <> 'expired' THEN NULL
				WHEN status = 'expired' THEN coalesce(expired_at, ?4) ELSE ?4 END,
			next_fire_at = ?8, timed = ?9
		WHERE id = ?6 AND principal = ?7`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, st[0]).ExecContext(ctx,
			string(sub.Status), filter, delivery, nanos(sub.UpdatedAt), nullNanos(sub.ExpiresAt),
			sub.ID, sub.Principal, nullNanos(sub.NextFireAt), timed(sub.Delivery))
		return expectRow(res, err)
	})
}

// DeleteSubscription implements subscriptions.Store.
func (s *Store) DeleteSubscription(ctx context.Context, principal, id string) error {
	st, err := s.prepared(ctx,
		`DELETE FROM subscriptions WHERE id = ? AND principal = ?`,
		`DELETE FROM buffer WHERE subscription_id = ?`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := expectRow(tx.StmtContext(ctx, st[0]).ExecContext(ctx, id, principal)); err != nil {
			return err
		}
		_, err := tx.StmtContext(ctx, st[1]).ExecContext(ctx, id)
		return err
	})
}

// ListSubscriptions implements subscriptions.Store.
func (s *Store) ListSubscriptions(ctx context.Context, q subscriptions.ListQuery) ([]*subscriptions.Subscription, error) {
	cond, args := storecore.ListCondition(q, "?")
	query := selectSubscriptions(cond) + " ORDER BY s.created_at, s.id"
	st, err := s.rstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
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
