package storecore

import (
	"context"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// FoldQuery opens the throttle window of a group (the new row has folded 0)
// or folds the event into the open one; past $5 open groups of the
// subscription, a new group is $6 (migrations *_throttle.sql).
const FoldQuery = `INSERT INTO throttle (subscription_id, group_key, event_id, window_end, window_length)
	VALUES ($1, CASE WHEN EXISTS (SELECT 1 FROM throttle WHERE subscription_id = $1 AND group_key = $2)
		OR (SELECT count(*) FROM throttle WHERE subscription_id = $1) < $5 THEN $2 ELSE $6 END, $3, $4, $7)
	ON CONFLICT (subscription_id, group_key) DO UPDATE SET folded = throttle.folded + 1, event_id = excluded.event_id
	RETURNING folded`

// Fold opens or folds into, in db, the windows of the active throttled
// targets (subscriptions.Target.Window) of the new events among pubs, and
// returns the targets of each publication without those it folded.
func Fold(ctx context.Context, db DB, pubs []subscriptions.Publication, fresh []bool, active map[string]bool, now time.Time) ([][]subscriptions.Target, error) {
	out := make([][]subscriptions.Target, len(pubs))
	for i, p := range pubs {
		out[i] = p.Targets
		for _, t := range p.Targets {
			var n int
			if !fresh[i] || t.Window == 0 || !active[t.SubscriptionID] {
				continue
			} else if err := one(ctx, db, FoldQuery, []any{t.SubscriptionID, t.Group, p.Event.ID, now.Add(t.Window),
				mcpe.MaxThrottleGroups, mcpe.OverflowGroup, t.Window.Milliseconds()}, &n); err != nil {
				return nil, err
			} else if n > 0 {
				out[i] = slices.DeleteFunc(slices.Clone(out[i]), func(o subscriptions.Target) bool { return o == t })
			}
		}
	}
	return out, nil
}

// window is a throttle window whose end came, as Q.DueWindows reads it:
// principal is "" when its subscription is not active, body nil when
// retention removed its event.
type window struct {
	sub, group, event, principal string
	folded                       int
	length                       int64 // milliseconds
	body                         []byte
}

// EndWindows implements subscriptions.Store: each due window that folded
// events of an active subscription becomes an inbox entry, numbered by
// Q.DeliverWindow, and opens the next; any other closes.
func (c *Core) EndWindows(ctx context.Context, now time.Time, limit int) (out []subscriptions.InboxEntry, more bool, err error) {
	now = now.UTC()
	// A window's entry is numbered from its principal's counter: the
	// principals are taken first, in order, as a publish takes them.
	principals, err := Column[string](ctx, c.DB, `SELECT DISTINCT s.principal FROM (SELECT subscription_id FROM throttle WHERE window_end <= $1 ORDER BY window_end LIMIT $2) AS t
		JOIN subscriptions s ON s.id = t.subscription_id`, now, limit)
	if err != nil {
		return nil, false, err
	}
	taken := make(map[string]bool, len(principals))
	for _, p := range principals {
		taken[p] = true
	}
	err = c.Tx(ctx, principals, func(db DB) error {
		due, err := scanAll(ctx, db, func(r Row, w *window) error {
			return r.Scan(&w.sub, &w.group, &w.event, &w.folded, &w.length, &w.principal, &w.body)
		}, c.Q.DueWindows, now, limit)
		if err != nil {
			return err
		}
		out, more = nil, len(due) == limit
		for _, w := range due {
			e := subscriptions.InboxEntry{Principal: w.principal, SubscriptionIDs: []string{w.sub}, Kind: mcpe.InboxEvent,
				Event: w.body, Remaining: w.folded, CreatedAt: now}
			var err error
			if w.folded > 0 && w.principal != "" && !taken[w.principal] {
				more = true // came due since: the next call ends it
				continue
			}
			if w.folded == 0 || w.principal == "" || w.body == nil {
				_, err = db.Exec(ctx, `DELETE FROM throttle WHERE subscription_id = $1 AND group_key = $2`, w.sub, w.group)
			} else if err = one(ctx, db, c.Q.DeliverWindow, []any{w.principal, e.SubscriptionIDs, w.event, w.folded, now}, &e.Seq); err == nil {
				out = append(out, e)
				_, err = db.Exec(ctx, `UPDATE throttle SET folded = 0, window_end = $3 WHERE subscription_id = $1 AND group_key = $2`,
					w.sub, w.group, now.Add(time.Duration(w.length)*time.Millisecond))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return out, more, err
}

// NextWindowEnd implements subscriptions.Store.
func (c *Core) NextWindowEnd(ctx context.Context) (time.Time, bool, error) {
	return c.earliest(ctx, `SELECT min(window_end) FROM throttle`)
}
