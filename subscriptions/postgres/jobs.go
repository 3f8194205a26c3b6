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
	st.LastRunAt = utcPtr(h.lastRun)
	st.LastError, st.LastOutput, st.Disabled = deref(h.lastError), deref(h.lastOutput), deref(h.disabled)
	if h.lastTools != nil {
		if err := json.Unmarshal([]byte(*h.lastTools), &st.LastToolCalls); err != nil {
			return fmt.Errorf("subscription %s: decode handler tool calls: %w", sub.ID, err)
		}
	}
	sub.Handler, sub.HandlerStatus = &spec, &st
	return nil
}

// encodeHandler returns the handler and secrets columns of h and its
// signing secrets.
func encodeHandler(h *mcpe.HandlerSpec, ws *subscriptions.WebhookSecrets) (spec, secrets *string, err error) {
	if h == nil {
		return spec, secrets, nil
	}
	c := *h
	c.Secret = "" // shown once, never stored
	b, err := json.Marshal(&c)
	if err != nil {
		return spec, secrets, err
	}
	spec = new(string(b))
	if ws != nil {
		b, err := json.Marshal(ws)
		if err != nil {
			return spec, secrets, err
		}
		secrets = new(string(b))
	}
	return spec, secrets, nil
}

// SetHandler implements subscriptions.Store.
func (s *Store) SetHandler(ctx context.Context, principal, id string, h *mcpe.HandlerSpec, ws *subscriptions.WebhookSecrets) error {
	spec, secrets, err := encodeHandler(h, ws)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := expectRow(tx.Exec(ctx, `UPDATE subscriptions SET handler = $1, handler_secrets = $2, handler_disabled = NULL
			WHERE id = $3 AND principal = $4`, spec, secrets, id, principal)); err != nil {
			return err
		}
		if h != nil {
			return nil
		}
		_, err := tx.Exec(ctx, `DELETE FROM handler_jobs WHERE subscription_id = $1`, id)
		return err
	})
}

// FinishJobs implements subscriptions.Store.
func (s *Store) FinishJobs(ctx context.Context, done []subscriptions.JobDone) error {
	if len(done) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx pgx.Tx) error { return storecore.FinishJobs(finish{ctx, tx}, done) })
}

// finish is the statements of FinishJobs in one transaction.
type finish struct {
	ctx context.Context
	tx  pgx.Tx
}

func (f finish) EndJob(id int64, retryAt *time.Time) (sub string, err error) {
	if retryAt != nil {
		err = f.tx.QueryRow(f.ctx, `UPDATE handler_jobs SET attempts = attempts + 1, due_at = $1 WHERE id = $2 RETURNING subscription_id`,
			*retryAt, id).Scan(&sub)
	} else {
		err = f.tx.QueryRow(f.ctx, `DELETE FROM handler_jobs WHERE id = $1 RETURNING subscription_id`, id).Scan(&sub)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return sub, err
}

func (f finish) DisableHandler(sub, reason string) error {
	if _, err := f.tx.Exec(f.ctx, `UPDATE subscriptions SET handler_disabled = $2 WHERE id = $1 AND handler IS NOT NULL`, sub, reason); err != nil {
		return err
	}
	_, err := f.tx.Exec(f.ctx, `DELETE FROM handler_jobs WHERE subscription_id = $1`, sub)
	return err
}

func (f finish) RecordTally(sub string, t *storecore.Tally) error {
	_, err := f.tx.Exec(f.ctx, `UPDATE subscriptions
		SET handler_succeeded = handler_succeeded + $2, handler_failed = handler_failed + $3,
			handler_last_run_at = $4, handler_last_error = coalesce($5, handler_last_error),
			handler_last_output = $6, handler_last_tools = $7
		WHERE id = $1`, sub, t.OK, t.Failed, t.At, t.LastErr, t.Output, t.Tools)
	return err
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// mustJSON encodes values this package builds itself, which always encode.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("postgres: encode %T: %v", v, err))
	}
	return string(b)
}
