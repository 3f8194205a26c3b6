package storecore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// FinishDriver runs the statements of FinishJobs in one transaction.
type FinishDriver interface {
	// EndJob deletes job id or, with a retryAt, moves it there with one
	// more attempt; it returns the job's subscription, "" if the job is gone.
	EndJob(id int64, retryAt *time.Time) (sub string, err error)
	// DisableHandler turns off the handler of sub for reason and drops its jobs.
	DisableHandler(sub, reason string) error
	// RecordTally adds t to the handler counts of sub and records its latest run.
	RecordTally(sub string, t *Tally) error
}

// Tally is what the runs of one subscription in a batch did.
type Tally struct {
	OK, Failed int
	At         time.Time
	LastErr    *string // nil keeps the last error recorded
	Output     string
	Tools      *string // the tool calls as JSON, or nil
}

// FinishJobs ends or reschedules the jobs of done and records their
// outcomes through d: each subscription's counts and latest run are
// written once per batch, in the order first seen.
func FinishJobs(d FinishDriver, done []subscriptions.JobDone) error {
	tallies := make(map[string]*Tally)
	var order []string
	for _, j := range done {
		id, err := strconv.ParseInt(j.JobID, 10, 64)
		if err != nil {
			continue
		}
		o := j.Outcome
		retrying := o.Err != nil && o.RetryIn > 0 && !o.Disable
		var retryAt *time.Time
		if retrying {
			retryAt = new(j.At.Add(o.RetryIn))
		}
		sub, err := d.EndJob(id, retryAt)
		if err != nil {
			return err
		}
		if sub == "" {
			continue // its subscription or handler went meanwhile
		}
		t := tallies[sub]
		if t == nil {
			t = &Tally{}
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
			t.Tools = new(mustJSON(o.ToolCalls))
		}
		if !o.Disable {
			continue
		}
		reason := "turned off"
		if o.Err != nil {
			reason = o.Err.Error()
		}
		if err := d.DisableHandler(sub, reason); err != nil {
			return err
		}
	}
	for _, sub := range order {
		if err := d.RecordTally(sub, tallies[sub]); err != nil {
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

// mustJSON encodes values the stores build themselves, which always encode.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("storecore: encode %T: %v", v, err))
	}
	return string(b)
}
