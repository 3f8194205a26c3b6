package subscriptions

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// WebhookSecrets are a webhook handler's signing secrets. After a rotation
// the previous secret also signs until PreviousUntil.
type WebhookSecrets struct {
	Current       string     `json:"current"`
	Previous      string     `json:"previous,omitempty"`
	PreviousUntil *time.Time `json:"previousUntil,omitempty"`
}

// Signing returns the secrets that sign a delivery at now, current first.
func (w *WebhookSecrets) Signing(now time.Time) []string {
	if w == nil {
		return nil
	}
	out := []string{w.Current}
	if w.Previous != "" && w.PreviousUntil != nil && now.Before(*w.PreviousUntil) {
		out = append(out, w.Previous)
	}
	return out
}

// NewWebhookSecret returns a random secret in Standard Webhooks' whsec_ form.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Clone returns a deep copy of w.
func (w *WebhookSecrets) Clone() *WebhookSecrets {
	if w == nil {
		return nil
	}
	c := *w
	c.PreviousUntil = clonePtr(w.PreviousUntil)
	return &c
}

// Handler runs one type of handler. Implementations live in handlers/*.
type Handler interface {
	// Check tells whether spec may run for principal, at subscribe and
	// update time: an *mcpe.InvalidError names the field and says what the
	// operator allows.
	Check(ctx context.Context, principal string, spec *mcpe.HandlerSpec) error
	// Handle runs spec once for inv. It returns when the run is over or ctx
	// is done, and never panics on bad input.
	Handle(ctx context.Context, inv *Invocation) Outcome
}

// Invocation is one run of a handler: one delivery of its subscription.
type Invocation struct {
	// JobID identifies the delivery; it is the same for every attempt.
	JobID          string
	SubscriptionID string
	// Label is the subscription's, when it has one.
	Label     string
	Principal string
	Spec      *mcpe.HandlerSpec
	// Secrets sign a webhook handler's deliveries.
	Secrets *WebhookSecrets
	// Attempt counts the attempts, from 1.
	Attempt int
	// Kind is InboxEvent (Event is set) or InboxBatch (Events and
	// Remaining are set).
	Kind      mcpe.InboxKind
	Event     json.RawMessage
	Events    []json.RawMessage
	Remaining int
	// CreatedAt is when the delivery was recorded.
	CreatedAt time.Time
}

// Payload is the JSON a handler hands on: the event for an event delivery,
// or {"subscriptionId", "label", "events", "remaining"} for a digest.
func (inv *Invocation) Payload() json.RawMessage {
	if inv.Kind != mcpe.InboxBatch {
		return inv.Event
	}
	events := append([]json.RawMessage{}, inv.Events...) // [], not null, for a digest of nothing
	b, _ := json.Marshal(mcpe.BatchParams{SubscriptionID: inv.SubscriptionID, Label: inv.Label, Events: events, Remaining: inv.Remaining})
	return b
}

// Outcome is what one run of a handler did.
type Outcome struct {
	// Output is what the run produced: the program's output, the
	// receiver's status, the LLM's answer. It is shown in events_list,
	// truncated.
	Output string
	// ToolCalls lists the tools an agent handler called, in order.
	ToolCalls []string
	// Err is why the run failed; nil means it succeeded.
	Err error
	// RetryIn asks for another attempt after this long; zero means the
	// delivery is over (done, or failed for good).
	RetryIn time.Duration
	// Disable turns the handler off (a webhook receiver answered 410
	// Gone) until events_update sets a handler again.
	Disable bool
}
