// Package realtime turns inbox entries into MCPE notifications on the owner's
// live sessions: events/event for each matching event as it is published (the
// realtime channel), events/batch for a cron or scheduled digest, and
// events/subscription_expired. Every entry has already been written to the
// owner's inbox when it arrives here, so an owner with no live session (or a
// session too slow to keep up) reads it later with events_poll.
package realtime

import (
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Channel delivers inbox entries through a Notifier.
type Channel struct {
	notifier subscriptions.Notifier
}

var _ subscriptions.Deliverer = (*Channel)(nil)

// New returns a channel that notifies through n.
func New(n subscriptions.Notifier) *Channel { return &Channel{notifier: n} }

// Deliver sends, in inbox order, one notification per subscription of each
// entry: MCPE notifies each subscription of its own events, so an event that
// matched two subscriptions of one principal arrives twice, each time with its
// subscriptionId and the same cursor. It does not block: the Notifier queues
// per session.
func (c *Channel) Deliver(entries []subscriptions.InboxEntry) {
	for _, e := range entries {
		cursor := subscriptions.FormatCursor(e.Seq)
		for _, id := range e.SubscriptionIDs {
			n := subscriptions.Notification{}
			switch e.Kind {
			case subscriptions.InboxEvent:
				n.Method = subscriptions.MethodEvent
				n.Params = subscriptions.EventParams{SubscriptionID: id, Cursor: cursor, Event: e.Event}
			case subscriptions.InboxBatch:
				n.Method = subscriptions.MethodBatch
				n.Params = subscriptions.BatchParams{SubscriptionID: id, Cursor: cursor, Events: e.Events, Remaining: e.Remaining}
			case subscriptions.InboxExpired:
				n.Method = subscriptions.MethodSubscriptionExpired
				n.Params = subscriptions.ExpiredParams{SubscriptionID: id, Cursor: cursor}
			default:
				continue
			}
			c.notifier.Notify(e.Principal, n)
		}
	}
}
