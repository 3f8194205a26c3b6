package subscriptions

import (
	"encoding/json"
	"strconv"
)

// The notification methods of MCPE.
const (
	MethodEvent               = "events/event"
	MethodBatch               = "events/batch"
	MethodSubscriptionExpired = "events/subscription_expired"
)

// Presence tells whether a principal has a live session.
type Presence interface {
	Connected(principal string) bool
}

// Deliverer sends inbox entries to their owners' live sessions as MCPE
// notifications (delivery/realtime). Deliver must not block.
type Deliverer interface {
	Deliver(entries []InboxEntry)
}

// EventParams are the params of events/event.
type EventParams struct {
	SubscriptionID string `json:"subscriptionId"`
	// Cursor is the inbox position of this delivery: events_poll with this
	// cursor returns what came after it.
	Cursor string `json:"cursor,omitempty"`
	// Event is the event's JSON; see Event for its shape.
	Event json.RawMessage `json:"event"`
}

// BatchParams are the params of events/batch.
type BatchParams struct {
	SubscriptionID string `json:"subscriptionId"`
	Cursor         string `json:"cursor,omitempty"`
	// Events are the events' JSON, oldest first.
	Events []json.RawMessage `json:"events"`
	// Remaining counts the events still waiting, which lead the next
	// delivery; left out when none.
	Remaining int `json:"remaining,omitempty"`
}

// ExpiredParams are the params of events/subscription_expired.
type ExpiredParams struct {
	SubscriptionID string `json:"subscriptionId"`
	Cursor         string `json:"cursor,omitempty"`
}

// FormatCursor turns an inbox sequence number into a cursor.
func FormatCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

// ParseCursor turns a cursor back into an inbox sequence number.
func ParseCursor(s string) (int64, error) {
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil || seq < 0 {
		return 0, invalid("cursor", "%q is not a cursor this server gave out; pass the nextCursor of an earlier events_poll, or leave cursor out to continue after the last page you were given", s)
	}
	return seq, nil
}
