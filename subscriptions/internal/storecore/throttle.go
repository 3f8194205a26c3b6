package storecore

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Window is an open throttle window whose end has come, as a store reads it.
type Window struct {
	SubscriptionID, Group, EventID string
	Folded                         int
	// Principal owns the subscription; "" when it is gone or not active.
	Principal string
}

// WindowsDriver runs the statements of EndWindows in one transaction.
type WindowsDriver interface {
	// DueWindows returns up to limit windows ended at or before now,
	// earliest first.
	DueWindows(now time.Time, limit int) ([]Window, error)
	// EndWindows opens a new window, from now, for each of reopen, with
	// nothing folded, and deletes the windows of shut.
	EndWindows(reopen, shut []Window, now time.Time) error
	// Bodies, DrawSeqs and Insert are FireDriver's.
	Bodies(bodies map[string]json.RawMessage) error
	DrawSeqs(n int) (last int64, err error)
	Insert(entries []Delivery, now time.Time) error
}

// EndWindows implements subscriptions.Store's EndWindows through d.
func EndWindows(d WindowsDriver, now time.Time, limit int) ([]subscriptions.InboxEntry, bool, error) {
	now = now.UTC()
	due, err := d.DueWindows(now, limit)
	if err != nil || len(due) == 0 {
		return nil, false, err
	}
	bodies := make(map[string]json.RawMessage)
	for _, w := range due {
		bodies[w.EventID] = nil
	}
	if err := d.Bodies(bodies); err != nil {
		return nil, false, err
	}
	var reopen, shut []Window
	var list []Delivery
	for _, w := range due {
		// An event retention removed (the window outlived the dedup
		// window while no server ran) cannot be delivered.
		if w.Folded == 0 || w.Principal == "" || bodies[w.EventID] == nil {
			shut = append(shut, w)
			continue
		}
		reopen = append(reopen, w)
		e := subscriptions.InboxEntry{Principal: w.Principal, SubscriptionIDs: []string{w.SubscriptionID},
			Kind: mcpe.InboxEvent, Event: bodies[w.EventID], Remaining: w.Folded, CreatedAt: now}
		list = append(list, Delivery{InboxEntry: e, EventID: &w.EventID})
	}
	entries := make([]subscriptions.InboxEntry, len(list))
	if len(list) > 0 {
		last, err := d.DrawSeqs(len(list))
		if err != nil {
			return nil, false, fmt.Errorf("draw sequence numbers: %w", err)
		}
		for i := range list {
			list[i].Seq = last - int64(len(list)-1-i)
			entries[i] = list[i].InboxEntry
		}
		if err := d.Insert(list, now); err != nil {
			return nil, false, fmt.Errorf("write inbox entries: %w", err)
		}
	}
	if err := d.EndWindows(reopen, shut, now); err != nil {
		return nil, false, fmt.Errorf("end throttle windows: %w", err)
	}
	return entries, len(due) == limit, nil
}

// Unfolded returns the targets of event without the throttled ones
// (subscriptions.Target.Window) that Publish folded into a window, as
// folded names them by event and subscription.
func Unfolded(targets []subscriptions.Target, event string, folded map[[2]string]bool) []subscriptions.Target {
	if len(folded) == 0 {
		return targets
	}
	return slices.DeleteFunc(slices.Clone(targets), func(t subscriptions.Target) bool {
		return t.Window > 0 && folded[[2]string{event, t.SubscriptionID}]
	})
}
