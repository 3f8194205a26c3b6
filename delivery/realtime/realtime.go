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

// Deliver sends one events/event per entry, in inbox order. It does not block:
// the Notifier queues per session.
func (c *Channel) Deliver(entries []subscriptions.InboxEntry) {
	for _, e := range entries {
		if e.Kind != subscriptions.InboxEvent {
			continue
		}
		c.notifier.Notify(e.Principal, subscriptions.Notification{
			Method: subscriptions.MethodEvent,
			Params: subscriptions.EventParams{
				SubscriptionID: e.SubscriptionID,
				Cursor:         subscriptions.FormatCursor(e.Seq),
				Event:          e.Event,
			},
		})
	}
}
