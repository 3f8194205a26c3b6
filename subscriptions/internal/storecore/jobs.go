package storecore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// JobsDriver is what a store supplies to DueJobs.
type JobsDriver interface {
	// DueTurns returns the IDs of the jobs DueJobs hands out, in order.
	DueTurns(ctx context.Context, now time.Time, limit int, q subscriptions.JobQuery) ([]int64, error)
	// ClaimJobs moves those of ids still due at now to until and returns
	// them: another process sharing the store may have claimed some since
	// they were read.
	ClaimJobs(ctx context.Context, ids []int64, now, until time.Time) ([]int64, error)
	// ReadJobs passes to add the run of each of ids still due by dueBy, in
	// the order of ids, with the IDs of its events; a run whose delivery is
	// gone has only its JobID.
	ReadJobs(ctx context.Context, ids []int64, dueBy time.Time, add func(run *subscriptions.Invocation, events []string)) error
	// Bodies sets the body of each event named in bodies that is still kept.
	Bodies(ctx context.Context, bodies map[string]json.RawMessage) error
	FinishJobs(ctx context.Context, done []subscriptions.JobDone) error
	ReleaseJobs(ctx context.Context, ids []string, now time.Time) error
}

// DueJobs implements subscriptions.Store's DueJobs through d.
func DueJobs(ctx context.Context, d JobsDriver, now time.Time, limit int, q subscriptions.JobQuery) ([]*subscriptions.Invocation, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := d.DueTurns(ctx, now, limit, q)
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	dueBy := now
	if q.Lease > 0 {
		dueBy = now.Add(q.Lease)
		got, err := d.ClaimJobs(ctx, ids, now, dueBy)
		if err != nil {
			return nil, fmt.Errorf("claim handler jobs: %w", err)
		}
		claimed := make(map[int64]bool, len(got))
		for _, id := range got {
			claimed[id] = true
		}
		ids = slices.DeleteFunc(ids, func(id int64) bool { return !claimed[id] })
		if len(ids) == 0 {
			return nil, nil
		}
	}
	out, err := readJobs(ctx, d, ids, now, dueBy)
	if err != nil && q.Lease > 0 {
		// Claimed and not handed out: give them back, whatever ended ctx.
		back := make([]string, len(ids))
		for i, id := range ids {
			back[i] = strconv.FormatInt(id, 10)
		}
		if rerr := d.ReleaseJobs(context.WithoutCancel(ctx), back, now); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return out, err
}

// readJobs reads the runs of the jobs ids, due by dueBy, in that order,
// with the bodies of their events (leaving out those retention removed);
// the jobs whose delivery is gone are finished as failed at now.
func readJobs(ctx context.Context, d JobsDriver, ids []int64, now, dueBy time.Time) ([]*subscriptions.Invocation, error) {
	var out []*subscriptions.Invocation
	var lost []subscriptions.JobDone
	events := make(map[*subscriptions.Invocation][]string)
	bodies := make(map[string]json.RawMessage)
	err := d.ReadJobs(ctx, ids, dueBy, func(run *subscriptions.Invocation, want []string) {
		if run.Kind == "" {
			lost = append(lost, subscriptions.JobDone{JobID: run.JobID, At: now,
				Outcome: subscriptions.Outcome{Err: errors.New("the delivery was removed before the handler ran")}})
			return
		}
		for _, e := range want {
			bodies[e] = nil
		}
		events[run] = want
		out = append(out, run)
	})
	if err != nil {
		return nil, fmt.Errorf("read due handler jobs: %w", err)
	}
	if len(bodies) > 0 {
		if err := d.Bodies(ctx, bodies); err != nil {
			return nil, err
		}
	}
	for _, run := range out {
		for _, e := range events[run] {
			if b := bodies[e]; b == nil {
				continue
			} else if run.Kind == mcpe.InboxBatch {
				run.Events = append(run.Events, b)
			} else {
				run.Event = b
			}
		}
	}
	if len(lost) > 0 {
		if err := d.FinishJobs(ctx, lost); err != nil {
			return nil, err
		}
	}
	return out, nil
}
