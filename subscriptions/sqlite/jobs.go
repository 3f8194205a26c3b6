package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
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
		f := &finish{ctx: ctx, tx: tx, end: st[0], retry: st[1], record: st[2], disable: st[3], dropAll: st[4],
			tallies: make(map[string]*tally)}
		for _, d := range done {
			if err := f.one(d); err != nil {
				return err
			}
		}
		return f.recordTallies()
	})
}

// finish records the outcomes of handler runs in one transaction.
type finish struct {
	ctx                                  context.Context
	tx                                   *sql.Tx
	end, retry, record, disable, dropAll *sql.Stmt
	// Each subscription's counts and latest run are written once per
	// batch, in the order first seen.
	tallies map[string]*tally
	order   []string
}

// tally is what the runs of one subscription in a batch did.
type tally struct {
	ok, failed    int
	at            int64
	lastErr       sql.NullString
	output, tools sql.NullString
}

// one ends or reschedules the job of d and counts its outcome.
func (f *finish) one(d subscriptions.JobDone) error {
	id, err := strconv.ParseInt(d.JobID, 10, 64)
	if err != nil {
		return nil
	}
	o := d.Outcome
	retrying := o.Err != nil && o.RetryIn > 0 && !o.Disable
	var sub string
	if retrying {
		err = f.tx.StmtContext(f.ctx, f.retry).QueryRowContext(f.ctx, nanos(d.At.Add(o.RetryIn)), id).Scan(&sub)
	} else {
		err = f.tx.StmtContext(f.ctx, f.end).QueryRowContext(f.ctx, id).Scan(&sub)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil // its subscription or handler went meanwhile
	}
	if err != nil {
		return err
	}
	f.count(sub, d, retrying)
	if !o.Disable {
		return nil
	}
	reason := "turned off"
	if o.Err != nil {
		reason = o.Err.Error()
	}
	if _, err := f.tx.StmtContext(f.ctx, f.disable).ExecContext(f.ctx, sub, reason); err != nil {
		return err
	}
	_, err = f.tx.StmtContext(f.ctx, f.dropAll).ExecContext(f.ctx, sub)
	return err
}

// count adds the outcome of d to the tally of subscription sub.
func (f *finish) count(sub string, d subscriptions.JobDone, retrying bool) {
	t := f.tallies[sub]
	if t == nil {
		t = &tally{}
		f.tallies[sub] = t
		f.order = append(f.order, sub)
	}
	o := d.Outcome
	switch {
	case o.Err == nil:
		t.ok++
	case !retrying:
		t.failed++
	}
	if o.Err != nil {
		t.lastErr = sql.NullString{String: o.Err.Error(), Valid: true}
	}
	t.at = max(t.at, nanos(d.At))
	t.output = sql.NullString{String: truncate(o.Output, maxStoredOutput), Valid: true}
	t.tools = sql.NullString{}
	if len(o.ToolCalls) > 0 {
		t.tools = sql.NullString{String: mustJSON(o.ToolCalls), Valid: true}
	}
}

// recordTallies writes each subscription's counts and latest run.
func (f *finish) recordTallies() error {
	for _, sub := range f.order {
		t := f.tallies[sub]
		if _, err := f.tx.StmtContext(f.ctx, f.record).ExecContext(f.ctx, sub, t.ok, t.failed, t.at,
			t.lastErr, t.output.String, t.tools); err != nil {
			return err
		}
	}
	return nil
}

// maxStoredOutput bounds the output kept of a handler's latest run.
const maxStoredOutput = mcpe.MaxStatusOutput

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…[truncated]"
}
