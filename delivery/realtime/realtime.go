// Package realtime is the realtime delivery channel of MCPE: each event a
// subscription matches goes to the owner at once, as an events/event
// notification on every live session. The event has already been written to
// the owner's inbox when it arrives here, so an owner with no live session
// (or a session too slow to keep up) reads it later with events_poll.
package realtime

import (
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Channel delivers realtime inbox entries through a Notifier.
type Channel struct {
	notifier subscriptions.Notifier
}

var _ subscriptions.Deliverer = (*Channel)(nil)

// New returns a realtime channel that notifies through n.
func New(n subscriptions.Notifier) *Channel { return &Channel{notifier: n} }

// Deliver sends, in inbox order, one events/event per subscription of each
// entry: MCPE notifies each subscription of its own events, so an event that
// matched two subscriptions of one principal arrives twice, each time with
// its subscriptionId and the same cursor. It does not block: the Notifier
// queues per session.
func (c *Channel) Deliver(entries []subscriptions.InboxEntry) {
	for _, e := range entries {
		if e.Kind != subscriptions.InboxEvent {
			continue
		}
		cursor := subscriptions.FormatCursor(e.Seq)
		for _, id := range e.SubscriptionIDs {
			c.notifier.Notify(e.Principal, subscriptions.Notification{
				Method: subscriptions.MethodEvent,
				Params: subscriptions.EventParams{SubscriptionID: id, Cursor: cursor, Event: e.Event},
			})
		}
	}
}
