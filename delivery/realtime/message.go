package realtime

import (
	"encoding/json"
	"strconv"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Message is one notification ready to write: its method and its params,
// already encoded.
type Message struct {
	Method string
	Params json.RawMessage
	// Subscription is the subscription the message is for, when it is for
	// one, and Seq the inbox entry it delivers: a sink that serves some
	// subscriptions only (SEP-3415 streams) reads them instead of the
	// params.
	Subscription string
	Seq          int64
}

// messages turns an inbox entry into its notifications: MCPE notifies each
// subscription of its own deliveries, so an event that matched two
// subscriptions of one principal is sent twice, each time with its
// subscriptionId and the same cursor. The events are the compact JSON the
// store keeps, copied as they are: encoding them again for each
// subscription and session would cost the most of a delivery. Those of a
// subscription with a label, fields or maxEventBytes are made to its
// Rendering.
func messages(e subscriptions.InboxEntry, rendering Rendering) []Message {
	cursor := "" // an entry sent again (Replay) stands outside the order
	if e.Seq > 0 {
		cursor = mcpe.FormatCursor(e.Seq)
	}
	out := make([]Message, 0, len(e.SubscriptionIDs))
	for _, id := range e.SubscriptionIDs {
		label, d := "", mcpe.Delivery{}
		if rendering != nil {
			label, d = rendering(id)
		}
		m := Message{Subscription: id, Seq: e.Seq}
		switch e.Kind {
		case mcpe.InboxEvent:
			m.Method, m.Params = mcpe.MethodEvent, eventParams(id, label, cursor, d.Shape(e.Event), e.Remaining)
		case mcpe.InboxBatch:
			m.Method, m.Params = mcpe.MethodBatch, batchParams(id, label, cursor, d.ShapeAll(e.Events), e.Remaining)
		case mcpe.InboxExpired:
			m.Method, m.Params = mcpe.MethodSubscriptionExpired, expiredParams(id, cursor)
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// size is what a message weighs, for the bounds on windows and batches.
func (m Message) size() int { return len(m.Method) + len(m.Params) + 40 }

// eventParams are those of events/event; folded counts the events a
// throttled delivery stands for (subscriptions.InboxEntry.Remaining).
func eventParams(id, label, cursor string, event json.RawMessage, folded int) json.RawMessage {
	b := make([]byte, 0, len(event)+96+len(label))
	b = head(b, id, label, cursor)
	b = append(b, `,"event":`...)
	b = append(b, event...)
	if folded > 0 {
		b = strconv.AppendInt(append(b, `,"folded":`...), int64(folded), 10)
	}
	return append(b, '}')
}

func batchParams(id, label, cursor string, events []json.RawMessage, remaining int) json.RawMessage {
	n := 128 + len(label)
	for _, ev := range events {
		n += len(ev) + 1
	}
	b := make([]byte, 0, n)
	b = head(b, id, label, cursor)
	b = append(b, `,"events":[`...)
	for i, ev := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, ev...)
	}
	b = append(b, ']')
	if remaining > 0 {
		b = strconv.AppendInt(append(b, `,"remaining":`...), int64(remaining), 10)
	}
	return append(b, '}')
}

func expiredParams(id, cursor string) json.RawMessage {
	return append(head(make([]byte, 0, 96), id, "", cursor), '}')
}

// head writes {"subscriptionId":...,"label":...,"cursor":... with
// JSON-quoted strings, leaving out those that are empty.
func head(b []byte, id, label, cursor string) []byte {
	b = append(b, `{"subscriptionId":`...)
	b = appendString(b, id)
	if label != "" {
		b = appendString(append(b, `,"label":`...), label)
	}
	if cursor != "" {
		b = appendString(append(b, `,"cursor":`...), cursor)
	}
	return b
}

// appendString appends s as a JSON string: directly when it is plain
// printable ASCII (IDs, cursors and method names are), through
// encoding/json otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendNotification appends m as one line of newline-delimited JSON-RPC,
// as a notification: what a stdio transport writes.
func AppendNotification(b []byte, m Message) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendString(b, m.Method)
	b = append(b, `,"params":`...)
	b = append(b, m.Params...)
	return append(b, '}', '\n')
}
