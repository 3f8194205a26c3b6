package storecore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// tally is what the runs of one subscription in a batch did.
type tally struct {
	OK, Failed int
	At         time.Time
	LastErr    *string // nil keeps the last error recorded
	Output     string
	Tools      *string // the tool calls as JSON, or nil
}

// FinishJobs implements subscriptions.Store: it ends or reschedules the
// jobs of done and records their outcomes, each subscription's counts and
// latest run written once per batch, in the order first seen.
func (c *Core) FinishJobs(ctx context.Context, done []subscriptions.JobDone) error {
	if len(done) == 0 {
		return nil
	}
	return c.Tx(ctx, nil, func(tx DB) error { return finishJobs(ctx, tx, done) })
}

// finishJobs is FinishJobs in tx.
func finishJobs(ctx context.Context, tx DB, done []subscriptions.JobDone) error {
	tallies := make(map[string]*tally)
	var order []string
	for _, j := range done {
		id, err := strconv.ParseInt(j.JobID, 10, 64)
		if err != nil {
			continue
		}
		o := j.Outcome
		retrying := o.Err != nil && o.RetryIn > 0 && !o.Disable
		var sub string
		if retrying {
			err = one(ctx, tx, `UPDATE handler_jobs SET attempts = attempts + 1, due_at = $1 WHERE id = $2 RETURNING subscription_id`,
				[]any{j.At.Add(o.RetryIn), id}, &sub)
		} else {
			err = one(ctx, tx, `DELETE FROM handler_jobs WHERE id = $1 RETURNING subscription_id`, []any{id}, &sub)
		}
		if err != nil {
			return err
		}
		if sub == "" {
			continue // its subscription or handler went meanwhile
		}
		t := tallies[sub]
		if t == nil {
			t = &tally{}
			tallies[sub] = t
			order = append(order, sub)
		}
		switch {
		case o.Err == nil:
			t.OK++
		case !retrying:
			t.Failed++
		}
		if o.Err != nil {
			t.LastErr = new(o.Err.Error())
		}
		if j.At.After(t.At) {
			t.At = j.At
		}
		t.Output, t.Tools = truncate(o.Output, mcpe.MaxStatusOutput), nil
		if len(o.ToolCalls) > 0 {
			t.Tools = new(MustJSON(o.ToolCalls))
		}
		if !o.Disable {
			continue
		}
		reason := "turned off"
		if o.Err != nil {
			reason = o.Err.Error()
		}
		if _, err := tx.Exec(ctx, `UPDATE subscriptions SET handler_disabled = $2 WHERE id = $1 AND handler IS NOT NULL`, sub, reason); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM handler_jobs WHERE subscription_id = $1`, sub); err != nil {
			return err
		}
	}
	for _, sub := range order {
		t := tallies[sub]
		if _, err := tx.Exec(ctx, `UPDATE subscriptions
			SET handler_succeeded = handler_succeeded + $2, handler_failed = handler_failed + $3,
				handler_last_run_at = $4, handler_last_error = coalesce($5, handler_last_error),
				handler_last_output = $6, handler_last_tools = $7
			WHERE id = $1`, sub, t.OK, t.Failed, t.At, t.LastErr, t.Output, t.Tools); err != nil {
			return err
		}
	}
	return nil
}

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

// MustJSON encodes values the stores build themselves, which always encode.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("storecore: encode %T: %v", v, err))
	}
	return string(b)
}
