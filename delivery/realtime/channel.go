package realtime

import (
	"encoding/json"
	"strconv"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Notification is a message for a principal's live sessions.
type Notification struct {
	Method string
	// Params are encoded as JSON; a json.RawMessage is sent as it is.
	Params any
}

// Notifier sends notifications to every live session of a principal. Notify
// must not block: an implementation queues, and drops what a slow session
// cannot take (the inbox keeps it for events_poll). Registry implements it.
type Notifier interface {
	Notify(principal string, n Notification)
}

// Channel delivers inbox entries through a Notifier.
type Channel struct {
	notifier Notifier
}

var _ subscriptions.Deliverer = (*Channel)(nil)

// NewChannel returns a channel that notifies through n.
func NewChannel(n Notifier) *Channel { return &Channel{notifier: n} }

// Deliver sends, in inbox order, one notification per subscription of each
// entry: MCPE notifies each subscription of its own events, so an event that
// matched two subscriptions of one principal arrives twice, each time with its
// subscriptionId and the same cursor. It does not block: the Notifier queues
// per session.
func (c *Channel) Deliver(entries []subscriptions.InboxEntry) {
	for _, e := range entries {
		cursor := mcpe.FormatCursor(e.Seq)
		for _, id := range e.SubscriptionIDs {
			n := Notification{}
			switch e.Kind {
			case mcpe.InboxEvent:
				n.Method = mcpe.MethodEvent
				n.Params = eventParams(id, cursor, e.Event)
			case mcpe.InboxBatch:
				n.Method = mcpe.MethodBatch
				n.Params = batchParams(id, cursor, e.Events, e.Remaining)
			case mcpe.InboxExpired:
				n.Method = mcpe.MethodSubscriptionExpired
				n.Params = mcpe.ExpiredParams{SubscriptionID: id, Cursor: cursor}
			default:
				continue
			}
			c.notifier.Notify(e.Principal, n)
		}
	}
}

// eventParams and batchParams write the JSON of mcpe.EventParams and
// mcpe.BatchParams directly. The events are the compact JSON the
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
