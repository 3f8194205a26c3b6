// Package realtime turns inbox entries into MCPE notifications on the owner's
// live sessions: events/event for each matching event as it is published (the
// realtime channel), events/batch for a cron or scheduled digest, and
// events/subscription_expired. Every entry has already been written to the
// owner's inbox when it arrives here, so an owner with no live session (or a
// session too slow to keep up) reads it later with events_poll.
package realtime

import (
	"encoding/json"
	"strconv"

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
				n.Params = eventParams(id, cursor, e.Event)
			case subscriptions.InboxBatch:
				n.Method = subscriptions.MethodBatch
				n.Params = batchParams(id, cursor, e.Events, e.Remaining)
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

// eventParams and batchParams write the JSON of subscriptions.EventParams and
// subscriptions.BatchParams directly. The events are the compact JSON the
// store keeps; json.Marshal would validate and compact every one again for
// each subscription and session, the most of a digest's delivery time.
func eventParams(id, cursor string, event json.RawMessage) json.RawMessage {
	b := make([]byte, 0, len(event)+96)
	b = head(b, id, cursor)
	b = append(b, `,"event":`...)
	b = append(b, event...)
	return append(b, '}')
}

func batchParams(id, cursor string, events []json.RawMessage, remaining int) json.RawMessage {
	n := 128
	for _, ev := range events {
		n += len(ev) + 1
	}
	b := make([]byte, 0, n)
	b = head(b, id, cursor)
	b = append(b, `,"events":[`...)
	for i, ev := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, ev...)
	}
	b = append(b, ']')
	if remaining > 0 {
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, int64(remaining), 10)
	}
	return append(b, '}')
}

// head writes {"subscriptionId":...,"cursor":... with JSON-quoted strings.
func head(b []byte, id, cursor string) []byte {
	q, _ := json.Marshal(id) // a string always encodes
	b = append(b, `{"subscriptionId":`...)
	b = append(b, q...)
	if cursor != "" {
		q, _ = json.Marshal(cursor)
		b = append(b, `,"cursor":`...)
		b = append(b, q...)
	}
	return b
}
