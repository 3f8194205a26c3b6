package storecore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// EncodeSettings returns the filter and delivery columns of sub.
func EncodeSettings(sub *subscriptions.Subscription) (filter, delivery string, err error) {
	f, err := json.Marshal(sub.Filter)
	if err != nil {
		return "", "", err
	}
	d, err := json.Marshal(Settings{sub.Delivery, sub.Label})
	if err != nil {
		return "", "", err
	}
	return string(f), string(d), nil
}

// Settings is what the delivery column holds: the delivery, and beside its
// fields the subscription's label (which needs no column of its own).
type Settings struct {
	mcpe.Delivery
	Label string `json:"label,omitempty"`
}

// EncodeHandler returns the handler and secrets columns of h and its
// signing secrets.
func EncodeHandler(h *mcpe.HandlerSpec, ws *subscriptions.WebhookSecrets) (spec, secrets *string, err error) {
	if h == nil {
		return nil, nil, nil
	}
	c := *h
	c.Secret = "" // shown once, never stored
	b, err := json.Marshal(&c)
	if err != nil || ws == nil {
		return new(string(b)), nil, err
	}
	w, err := json.Marshal(ws)
	return new(string(b)), new(string(w)), err
}

// Timed is the timed column of a subscription with delivery d: its
// buffered channel, or NULL.
func Timed(d mcpe.Delivery) *string {
	if c := d.Timed(); c != "" {
		return new(string(c))
	}
	return nil
}

// InsertSubscription is the INSERT of a subscription's Columns, $1 to $16,
// up to the VALUES or SELECT that gives them.
const InsertSubscription = `INSERT INTO subscriptions
	(id, principal, status, filter, delivery, created_at, updated_at, expires_at, expired_at,
	 delivered_base, last_delivered_base, next_fire_at, last_fire_at, handler, handler_secrets, timed)`

// Columns returns the columns of sub that InsertSubscription takes.
func Columns(sub *subscriptions.Subscription) ([]any, error) {
	filter, delivery, err := EncodeSettings(sub)
	if err != nil {
		return nil, err
	}
	handler, secrets, err := EncodeHandler(sub.Handler, sub.Secrets)
	if err != nil {
		return nil, err
	}
	// Prune dates expired subscriptions by expired_at.
	var expiredAt *time.Time
	if sub.Status == mcpe.StatusExpired {
		expiredAt = &sub.UpdatedAt
	}
	return []any{sub.ID, sub.Principal, string(sub.Status), filter, delivery,
		sub.CreatedAt, sub.UpdatedAt, sub.ExpiresAt, expiredAt,
		sub.DeliveredCount, sub.LastDeliveredAt, sub.NextFireAt, sub.LastFireAt,
		handler, secrets, Timed(sub.Delivery)}, nil
}

// CreateSubscription implements subscriptions.Store: in one transaction,
// which holds the principal's row, it counts the principal's
// subscriptions, drops the oldest expired ones to make room, and inserts.
func (c *Core) CreateSubscription(ctx context.Context, sub *subscriptions.Subscription, max int) error {
	row, err := Columns(sub)
	if err != nil {
		return err
	}
	return c.Tx(ctx, []string{sub.Principal}, func(tx DB) error {
		var live, expired int
		if err := one(ctx, tx, `SELECT coalesce((SELECT live_subscriptions FROM principals WHERE principal = $1), 0),
			(SELECT count(*) FROM subscriptions WHERE principal = $1 AND status = 'expired')`, []any{sub.Principal}, &live, &expired); err != nil {
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
		_, err := tx.Exec(ctx, InsertSubscription+`
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`, row...)
		return err
	})
}

// storedHandler holds a subscription's handler columns as read.
type storedHandler struct {
	spec, secrets, disabled *string
	lastRun                 *time.Time
	lastError, lastOutput   *string
	lastTools               *string
	status                  mcpe.HandlerStatus
}

// decode sets sub's handler, secrets and status from h.
func (h *storedHandler) decode(sub *subscriptions.Subscription) error {
	if h.spec == nil {
		return nil
	}
	var spec mcpe.HandlerSpec
	if err := json.Unmarshal([]byte(*h.spec), &spec); err != nil {
		return fmt.Errorf("subscription %s: decode handler: %w", sub.ID, err)
	}
	if h.secrets != nil {
		sub.Secrets = new(subscriptions.WebhookSecrets)
		if err := json.Unmarshal([]byte(*h.secrets), sub.Secrets); err != nil {
			return fmt.Errorf("subscription %s: decode handler secrets: %w", sub.ID, err)
		}
	}
	st := h.status
	st.LastRunAt = h.lastRun
	st.LastError, st.LastOutput, st.Disabled = deref(h.lastError), deref(h.lastOutput), deref(h.disabled)
	if h.lastTools != nil {
		if err := json.Unmarshal([]byte(*h.lastTools), &st.LastToolCalls); err != nil {
			return fmt.Errorf("subscription %s: decode handler tool calls: %w", sub.ID, err)
		}
	}
	sub.Handler, sub.HandlerStatus = &spec, &st
	return nil
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// selectSubscriptions reads subscriptions with their delivery counts: the
// base columns plus the 'event' and 'batch' entries still in the inbox that
// list them (a batch counts its events), how many events wait in their
// buffers, and how many handler runs are pending. The counts are grouped
// over the inbox entries of the same principals, through the inbox's
// principal index. where filters s.
func (c *Core) selectSubscriptions(where string) string {
	return `SELECT s.id, s.principal, s.status, s.filter, s.delivery, s.created_at, s.updated_at, s.expires_at,
		s.delivered_base + coalesce(c.n, 0),
		CASE WHEN c.last IS NULL THEN s.last_delivered_base
			WHEN s.last_delivered_base IS NULL THEN c.last
			ELSE ` + c.Q.Greatest + `(c.last, s.last_delivered_base) END,
		s.next_fire_at, s.last_fire_at,
		(SELECT count(*) FROM buffer b WHERE b.subscription_id = s.id),
		s.handler, s.handler_secrets, s.handler_disabled, s.handler_succeeded, s.handler_failed,
		s.handler_last_run_at, s.handler_last_error, s.handler_last_output, s.handler_last_tools,
		CASE WHEN s.handler IS NULL THEN 0 ELSE (SELECT count(*) FROM handler_jobs h WHERE h.subscription_id = s.id) END
	FROM subscriptions s
	LEFT JOIN (` + c.delivered(`i.principal IN (SELECT principal FROM subscriptions s WHERE `+where+`)`) + `) c
		ON c.subscription_id = s.id
	WHERE ` + where
}

// delivered sums, by subscription, the events the 'event' and 'batch'
// inbox entries (aliased i) that match cond delivered, and when the last
// was.
func (c *Core) delivered(cond string) string {
	return `SELECT j.value AS subscription_id, sum(CASE i.kind WHEN 'batch' THEN ` + c.Q.Events + ` ELSE 1 END) AS n,
			max(i.created_at) AS last
		FROM inbox i, ` + c.Q.Members + `
		WHERE i.kind IN ('event', 'batch') AND ` + cond + `
		GROUP BY j.value`
}

// scanSubscription reads a row of selectSubscriptions: the base columns,
// the delivery counts, how many events wait in the buffer, the handler's
// columns and how many of its runs are pending.
func scanSubscription(row Row) (*subscriptions.Subscription, error) {
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
	if err := decodeSettings(&sub, filter, delivery); err != nil {
		return nil, err
	}
	return &sub, nil
}

// decodeSettings sets sub's filter and delivery from their columns.
func decodeSettings(sub *subscriptions.Subscription, filter, delivery string) error {
	if err := json.Unmarshal([]byte(filter), &sub.Filter); err != nil {
		return fmt.Errorf("subscription %s: decode filter: %w", sub.ID, err)
	}
	var st Settings
	if err := json.Unmarshal([]byte(delivery), &st); err != nil {
		return fmt.Errorf("subscription %s: decode delivery: %w", sub.ID, err)
	}
	sub.Delivery, sub.Label = st.Delivery, st.Label
	return nil
}

// GetSubscription implements subscriptions.Store.
func (c *Core) GetSubscription(ctx context.Context, principal, id string) (*subscriptions.Subscription, error) {
	var sub *subscriptions.Subscription
	err := c.DB.Query(ctx, func(r Row) (err error) {
		sub, err = scanSubscription(r)
		return err
	}, c.selectSubscriptions(`s.id = $1 AND s.principal = $2`), id, principal)
	if err == nil && sub == nil {
		return nil, subscriptions.ErrNotFound
	}
	return sub, err
}

// ListSubscriptions implements subscriptions.Store.
func (c *Core) ListSubscriptions(ctx context.Context, q subscriptions.ListQuery) ([]*subscriptions.Subscription, error) {
	var where []string
	var args []any
	if q.Principal != "" {
		args = append(args, q.Principal)
		where = append(where, fmt.Sprintf("s.principal = $%d", len(args)))
	}
	if q.Status != "" {
		args = append(args, string(q.Status))
		where = append(where, fmt.Sprintf("s.status = $%d", len(args)))
	}
	cond := "true"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	var out []*subscriptions.Subscription
	err := c.DB.Query(ctx, func(r Row) error {
		sub, err := scanSubscription(r)
		out = append(out, sub)
		return err
	}, c.selectSubscriptions(cond)+" ORDER BY s.created_at, s.id", args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateSubscription implements subscriptions.Store.
func (c *Core) UpdateSubscription(ctx context.Context, sub *subscriptions.Subscription) error {
	filter, delivery, err := EncodeSettings(sub)
	if err != nil {
		return err
	}
	// expired_at, which Prune dates expired subscriptions by, is set when
	// the status becomes expired and cleared when it stops being.
	return c.Tx(ctx, []string{sub.Principal}, func(tx DB) error {
		return expectRow(tx.Exec(ctx, `UPDATE subscriptions
			SET status = $1, filter = $2, delivery = $3, updated_at = $4, expires_at = $5,
				expired_at = CASE WHEN $1 <> 'expired' THEN NULL
					WHEN status = 'expired' THEN coalesce(expired_at, $4) ELSE $4 END,
				next_fire_at = $8, timed = $9
			WHERE id = $6 AND principal = $7`,
			string(sub.Status), filter, delivery, sub.UpdatedAt, sub.ExpiresAt,
			sub.ID, sub.Principal, sub.NextFireAt, Timed(sub.Delivery)))
	})
}

// DeleteSubscription implements subscriptions.Store.
func (c *Core) DeleteSubscription(ctx context.Context, principal, id string) error {
	return c.Tx(ctx, []string{principal}, func(tx DB) error {
		if err := expectRow(tx.Exec(ctx, `DELETE FROM subscriptions WHERE id = $1 AND principal = $2`, id, principal)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM buffer WHERE subscription_id = $1`, id)
		return err
	})
}

// dropOldestExpired deletes, in tx, the n expired subscriptions of
// principal that expired first, with what waits in their buffers, to make
// room for a new one: a principal keeps at most as many subscriptions,
// expired ones included, as it may have live.
func dropOldestExpired(ctx context.Context, tx DB, principal string, n int) error {
	const oldest = `SELECT id FROM subscriptions WHERE principal = $1 AND status = 'expired'
		ORDER BY expired_at, created_at, id LIMIT $2`
	if _, err := tx.Exec(ctx, `DELETE FROM buffer WHERE subscription_id IN (`+oldest+`)`, principal, n); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM subscriptions WHERE id IN (`+oldest+`)`, principal, n)
	return err
}

// SetHandler implements subscriptions.Store.
func (c *Core) SetHandler(ctx context.Context, principal, id string, h *mcpe.HandlerSpec, ws *subscriptions.WebhookSecrets) error {
	spec, secrets, err := EncodeHandler(h, ws)
	if err != nil {
		return err
	}
	return c.Tx(ctx, []string{principal}, func(tx DB) error {
		if err := expectRow(tx.Exec(ctx, `UPDATE subscriptions SET handler = $1, handler_secrets = $2, handler_disabled = NULL
			WHERE id = $3 AND principal = $4`, spec, secrets, id, principal)); err != nil || h != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM handler_jobs WHERE subscription_id = $1`, id)
		return err
	})
}

// SubscriptionCounts implements subscriptions.Counts: one scan of the
// subscriptions table.
func (c *Core) SubscriptionCounts(ctx context.Context) ([]subscriptions.SubscriptionCount, error) {
	return scanAll(ctx, c.DB, func(r Row, n *subscriptions.SubscriptionCount) error {
		var mode, status string
		err := r.Scan(&mode, &status, &n.N)
		n.Mode, n.Status = mcpe.Channel(mode), mcpe.Status(status)
		return err
	}, `SELECT COALESCE(timed, 'realtime'), status, COUNT(*) FROM subscriptions GROUP BY 1, 2`)
}

// InboxSizes implements subscriptions.Counts: one pass over the inbox's
// principal index, and one probe of it per principal for the oldest entry
// after its poll cursor.
func (c *Core) InboxSizes(ctx context.Context) ([]subscriptions.InboxSize, error) {
	return scanAll(ctx, c.DB, func(r Row, in *subscriptions.InboxSize) error {
		var oldest *time.Time
		err := r.Scan(&in.Principal, &in.Entries, &oldest)
		in.OldestUnpolled = deref(oldest)
		return err
	}, `SELECT i.principal, COUNT(*),
		(SELECT j.created_at FROM inbox j
		  WHERE j.principal = i.principal
		    AND j.seq > COALESCE((SELECT p.poll_cursor FROM principals p WHERE p.principal = i.principal), 0)
		  ORDER BY j.seq LIMIT 1)
		FROM inbox i GROUP BY i.principal`)
}
