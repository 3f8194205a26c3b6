package subscriptions

import (
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Subscription is a subscription as the server keeps it: what its owner
// sees (mcpe.Subscription) and what only the server knows.
type Subscription struct {
	mcpe.Subscription
	// Principal owns the subscription; it is never shown to anyone.
	Principal string `json:"-"`
	// NextFireAt and LastFireAt are the timed channel's next and last fire.
	NextFireAt *time.Time `json:"-"`
	LastFireAt *time.Time `json:"-"`
	// Secrets are a webhook handler's signing secrets; never shown.
	Secrets *WebhookSecrets `json:"-"`
}

// View returns what the owner sees of s.
func (s *Subscription) View() *mcpe.Subscription { return &s.Subscription }

// Clone returns a deep copy of s.
func (s *Subscription) Clone() *Subscription {
	c := *s
	c.Subscription = *s.Subscription.Clone()
	c.NextFireAt = clonePtr(s.NextFireAt)
	c.LastFireAt = clonePtr(s.LastFireAt)
	c.Secrets = s.Secrets.Clone()
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
