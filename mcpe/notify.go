package mcpe

import (
	"encoding/json"
	"strconv"
)

// The notification methods of MCPE.
const (
	MethodEvent               = "events/event"
	MethodBatch               = "events/batch"
	MethodSubscriptionExpired = "events/subscription_expired"
	// MethodMissed is sent, once, to a live session that was not sent
	// deliveries it was owed because retention removed them. Its params
	// say where events_poll finds them.
	MethodMissed = "events/missed"
)

// InboxKind says what an inbox entry records: what events_poll items and
// notifications carry.
type InboxKind string

// The kinds of inbox entries.
const (
	// InboxEvent records an event delivered to a subscription.
	InboxEvent InboxKind = "event"
	// InboxBatch records a digest delivered by a cron or scheduled
	// subscription.
	InboxBatch InboxKind = "batch"
	// InboxExpired records that a subscription expired.
	InboxExpired InboxKind = "subscription_expired"
)

// EventParams are the params of events/event.
type EventParams struct {
	SubscriptionID string `json:"subscriptionId"`
	// Label is the subscription's, when it has one.
	Label string `json:"label,omitempty"`
	// Cursor is the inbox position of this delivery: events_poll with this
	// cursor returns what came after it.
	Cursor string `json:"cursor,omitempty"`
	// Event is the event's JSON; see Event for its shape.
	Event json.RawMessage `json:"event"`
	// Folded is how many events of a throttled subscription (Throttle) it
	// stands for; the event is the latest of them.
	Folded int `json:"folded,omitempty"`
}

// BatchParams are the params of events/batch.
type BatchParams struct {
	SubscriptionID string `json:"subscriptionId"`
	Label          string `json:"label,omitempty"`
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

// MissedParams are the params of events/missed.
type MissedParams struct {
	// FromCursor is the cursor of the last delivery the session was sent:
	// events_poll from it returns what the session missed, as far as the
	// inbox still holds it.
	FromCursor string `json:"fromCursor"`
	// ToCursor is where live delivery resumes: the session gets what comes
	// after it.
	ToCursor string `json:"toCursor"`
	// Reason is "backlog" (the session fell too far behind) or
	// "retention" (the inbox no longer holds what it was owed).
	Reason string `json:"reason"`
}

// FormatCursor turns an inbox sequence number into a cursor.
func FormatCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

// ParseCursor turns a cursor back into an inbox sequence number.
func ParseCursor(s string) (int64, error) {
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil || seq < 0 {
		return 0, Invalid("cursor", "%q is not a cursor this server gave out; pass the nextCursor of an earlier events_poll, or leave cursor out to continue after the last page you were given", s)
	}
	return seq, nil
}
