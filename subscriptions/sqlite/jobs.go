package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/internal/storecore"
)

// storedHandler holds a subscription's handler columns as read.
type storedHandler struct {
	spec, secrets, disabled sql.NullString
	lastRun                 sql.NullInt64
	lastError, lastOutput   sql.NullString
	lastTools               sql.NullString
	status                  mcpe.HandlerStatus
}

// decode sets sub's handler, secrets and status from h.
func (h *storedHandler) decode(sub *subscriptions.Subscription) error {
	if !h.spec.Valid {
		return nil
	}
	var spec mcpe.HandlerSpec
	if err := json.Unmarshal([]byte(h.spec.String), &spec); err != nil {
		return fmt.Errorf("subscription %s: decode handler: %w", sub.ID, err)
	}
	if h.secrets.Valid {
		sub.Secrets = new(subscriptions.WebhookSecrets)
		if err := json.Unmarshal([]byte(h.secrets.String), sub.Secrets); err != nil {
			return fmt.Errorf("subscription %s: decode handler secrets: %w", sub.ID, err)
		}
	}
	st := h.status
	st.LastRunAt = timePtr(h.lastRun)
	st.LastError, st.LastOutput, st.Disabled = h.lastError.String, h.lastOutput.String, h.disabled.String
	if h.lastTools.Valid {
		if err := json.Unmarshal([]byte(h.lastTools.String), &st.LastToolCalls); err != nil {
			return fmt.Errorf("subscription %s: decode handler tool calls: %w", sub.ID, err)
		}
	}
	sub.Handler, sub.HandlerStatus = &spec, &st
	return nil
}

// encodeHandler returns the handler and secrets columns of h and its
// signing secrets.
func encodeHandler(h *mcpe.HandlerSpec, ws *subscriptions.WebhookSecrets) (spec, secrets sql.NullString, err error) {
	if h == nil {
		return spec, secrets, nil
	}
	c := *h
	c.Secret = "" // shown once, never stored
	b, err := json.Marshal(&c)
	if err != nil {
		return spec, secrets, err
	}
	spec = sql.NullString{String: string(b), Valid: true}
	if ws != nil {
		b, err := json.Marshal(ws)
		if err != nil {
			return spec, secrets, err
		}
		secrets = sql.NullString{String: string(b), Valid: true}
	}
	return spec, secrets, nil
}

// SetHandler implements subscriptions.Store.
func (s *Store) SetHandler(ctx context.Context, principal, id string, h *mcpe.HandlerSpec, ws *subscriptions.WebhookSecrets) error {
	spec, secrets, err := encodeHandler(h, ws)
	if err != nil {
		return err
	}
	st, err := s.prepared(ctx,
		`UPDATE subscriptions SET handler = ?, handler_secrets = ?, handler_disabled = NULL WHERE id = ? AND principal = ?`,
		`DELETE FROM handler_jobs WHERE subscription_id = ?`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := expectRow(tx.StmtContext(ctx, st[0]).ExecContext(ctx, spec, secrets, id, principal)); err != nil {
			return err
		}
		if h != nil {
			return nil
		}
		_, err := tx.StmtContext(ctx, st[1]).ExecContext(ctx, id)
		return err
	})
}

// jobIDs turns job IDs into the JSON array of integers the queries take.
func jobIDs(ids []string) string {
	n := make([]int64, 0, len(ids))
	for _, id := range ids {
		if v, err := strconv.ParseInt(id, 10, 64); err == nil {
			n = append(n, v)
		}
	}
	return mustJSON(n)
}

// FinishJobs implements subscriptions.Store.
func (s *Store) FinishJobs(ctx context.Context, done []subscriptions.JobDone) error {
	if len(done) == 0 {
		return nil
	}
	st, err := s.prepared(ctx,
		`DELETE FROM handler_jobs WHERE id = ? RETURNING subscription_id`,
		`UPDATE handler_jobs SET attempts = attempts + 1, due_at = ? WHERE id = ? RETURNING subscription_id`,
		`UPDATE subscriptions SET handler_succeeded = handler_succeeded + ?2, handler_failed = handler_failed + ?3,
			handler_last_run_at = ?4, handler_last_error = coalesce(?5, handler_last_error),
			handler_last_output = ?6, handler_last_tools = ?7
			WHERE id = ?1`,
		`UPDATE subscriptions SET handler_disabled = ?2 WHERE id = ?1 AND handler IS NOT NULL`,
		`DELETE FROM handler_jobs WHERE subscription_id = ?`)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		return storecore.FinishJobs(&finish{ctx: ctx, tx: tx, end: st[0], retry: st[1], record: st[2], disable: st[3], dropAll: st[4]}, done)
	})
}

// finish is the statements of FinishJobs in one transaction.
type finish struct {
	ctx                                  context.Context
	tx                                   *sql.Tx
	end, retry, record, disable, dropAll *sql.Stmt
}

func (f *finish) stmt(st *sql.Stmt) *sql.Stmt { return f.tx.StmtContext(f.ctx, st) }

func (f *finish) EndJob(id int64, retryAt *time.Time) (sub string, err error) {
	if retryAt != nil {
		err = f.stmt(f.retry).QueryRowContext(f.ctx, nanos(*retryAt), id).Scan(&sub)
	} else {
		err = f.stmt(f.end).QueryRowContext(f.ctx, id).Scan(&sub)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return sub, err
}

func (f *finish) DisableHandler(sub, reason string) error {
	if _, err := f.stmt(f.disable).ExecContext(f.ctx, sub, reason); err != nil {
		return err
	}
	_, err := f.stmt(f.dropAll).ExecContext(f.ctx, sub)
	return err
}

func (f *finish) RecordTally(sub string, t *storecore.Tally) error {
	_, err := f.stmt(f.record).ExecContext(f.ctx, sub, t.OK, t.Failed, nanos(t.At), t.LastErr, t.Output, t.Tools)
	return err
}
