package mcpe

import (
	"bytes"
	"encoding/json"
	"time"
)

// The names of the MCPE tools, in the order a server registers them.
const (
	ToolSubscribe   = "events_subscribe"
	ToolUnsubscribe = "events_unsubscribe"
	ToolList        = "events_list"
	ToolPause       = "events_pause"
	ToolResume      = "events_resume"
	ToolUpdate      = "events_update"
	ToolPoll        = "events_poll"
	// ToolCatalog is offered by servers that know their event sources.
	ToolCatalog = "events_catalog"
)

// Bounds of events_poll.
const (
	DefaultPollLimit = 50
	MaxPollLimit     = 500
	// MaxPollBytes bounds the events of one page, in bytes: a page that
	// would hold more ends early, with hasMore. MCP clients drop messages
	// much larger (the TypeScript SDK loses a stdio connection over a
	// message of more than 10 MiB).
	MaxPollBytes = 4 << 20
)

// The request and result types below are the arguments and results of the
// events_* tools, shared by the server and by Go clients.

// SubscribeRequest are the arguments of events_subscribe.
type SubscribeRequest struct {
	Label  string `json:"label,omitempty"`
	Filter Filter `json:"filter"`
	// Delivery defaults to realtime.
	Delivery *Delivery `json:"delivery,omitempty"`
	// ExpiresAt is an RFC 3339 time in the future; empty means never.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Handler, when set, runs for each delivery.
	Handler *HandlerSpec `json:"handler,omitempty"`
	// DryRun creates nothing and answers a DryRunResult for Filter.
	DryRun bool `json:"dryRun,omitempty"`
}

// Bounds of a dry run.
const (
	// PreviewWindow is how far back a dry run looks.
	PreviewWindow = 24 * time.Hour
	// PreviewSample is how many matched events a dry run returns.
	PreviewSample = 3
)

// DryRunResult is the result of events_subscribe with dryRun: what the
// filter would have matched among the events delivered to the caller's
// inbox since Since.
type DryRunResult struct {
	Matched int `json:"matched"`
	// Types counts the matched events per type.
	Types map[string]int `json:"types"`
	// Events are the newest PreviewSample matched events, newest first.
	Events []json.RawMessage `json:"events"`
	Since  time.Time         `json:"since"`
	// Warnings name patterns that match no known event type.
	Warnings []string `json:"warnings,omitempty"`
}

// UpdateRequest are the arguments of events_update. Fields left out are kept.
type UpdateRequest struct {
	SubscriptionID string `json:"subscriptionId"`
	// Label set to "" removes it.
	Label    *string   `json:"label,omitempty"`
	Filter   *Filter   `json:"filter,omitempty"`
	Delivery *Delivery `json:"delivery,omitempty"`
	// ExpiresAt set to a time changes the expiry; set to null removes it.
	ExpiresAt OptionalString `json:"expiresAt,omitzero"`
	// Handler set to an object replaces the handler (and turns it back on
	// if it was off); set to null removes it.
	Handler OptionalHandler `json:"handler,omitzero"`
	// RotateSecret gives a webhook handler a new signing secret; the old
	// one keeps signing too for a grace period.
	RotateSecret bool `json:"rotateSecret,omitempty"`
}

// Optional is a JSON value that may be absent, null or set: a field of
// events_update, which keeps what is absent and removes what is null.
type Optional[T comparable] struct {
	// Set is true when the field was present, even as null.
	Set bool
	// Value is the value; the zero value when the field was null.
	Value T
}

// The optional fields of events_update.
type (
	OptionalString  = Optional[string]
	OptionalHandler = Optional[*HandlerSpec]
)

// UnmarshalJSON records presence and reads null or a value, refusing
// fields the value has no place for.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set, o.Value = true, *new(T)
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(&o.Value)
}

// MarshalJSON writes the value, or null for the zero value.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if o.Value == *new(T) {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// IsZero reports whether the field is absent, for omitzero.
func (o Optional[T]) IsZero() bool { return !o.Set }

// SubscriptionRef names one subscription: the arguments of
// events_unsubscribe, events_pause and events_resume.
type SubscriptionRef struct {
	SubscriptionID string `json:"subscriptionId"`
}

// ListRequest are the arguments of events_list.
type ListRequest struct {
	// Status selects one status; empty lists all.
	Status Status `json:"status,omitempty"`
}

// ListResult is the result of events_list.
type ListResult struct {
	Subscriptions []ListItem `json:"subscriptions"`
}

// ListItem is a subscription as events_list shows it: its ID under "id",
// the name MCPE's Subscription gives it, and not again as subscriptionId
// (Subscription.ID is empty).
type ListItem struct {
	ID string `json:"id"`
	*Subscription
}

// UnsubscribeResult is the result of events_unsubscribe.
type UnsubscribeResult struct {
	SubscriptionID string `json:"subscriptionId"`
	Unsubscribed   bool   `json:"unsubscribed"`
	// Success repeats Unsubscribed under the name the MCPE reference
	// client reads.
	Success bool `json:"success"`
}

// PollRequest are the arguments of events_poll.
type PollRequest struct {
	// Cursor is a nextCursor from an earlier poll, or a notification's
	// cursor; empty continues after the last cursor handed out.
	Cursor string `json:"cursor,omitempty"`
	// Limit is how many items to return; zero means the default.
	Limit int `json:"limit,omitempty"`
	// EventID, without Cursor and Limit, asks for that one event of the
	// inbox, whole: the result is {"event": ...}.
	EventID string `json:"eventId,omitempty"`
}

// PollResult is the result of events_poll.
type PollResult struct {
	Items []PollItem `json:"items"`
	// NextCursor continues after the last item; it equals the request's
	// position when there are no items.
	NextCursor string `json:"nextCursor"`
	// HasMore is true when more items are waiting after NextCursor.
	HasMore bool `json:"hasMore"`
}

// PollItem is one inbox entry as events_poll returns it.
type PollItem struct {
	Cursor string    `json:"cursor"`
	Kind   InboxKind `json:"kind"`
	// SubscriptionIDs are the caller's subscriptions this item is for: an
	// event that matched several of them is returned once.
	SubscriptionIDs []string `json:"subscriptionIds"`
	// Event is set for kind "event".
	Event json.RawMessage `json:"event,omitempty"`
	// Events and Remaining are set for kind "batch"; Events is [] when a
	// one-time delivery found nothing.
	Events    []json.RawMessage `json:"events,omitzero"`
	Remaining int               `json:"remaining,omitempty"`
	// Folded is set as in EventParams.
	Folded int `json:"folded,omitempty"`
	// DeliveredAt is when the entry was written.
	DeliveredAt time.Time `json:"deliveredAt"`
	// Note says why the item holds less than was delivered: an event that
	// cannot be served (nested deeper than this server now allows) is
	// left out and named here.
	Note string `json:"note,omitempty"`
}
