package subscriptions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// KeyedWebhook returns principal's subscription id with a webhook handler
// that POSTs to spec.URL signed with secret, a whsec_ secret the caller
// chose, until expiresAt (nil: no expiry). It is the upsert of SEP-3415's
// events/subscribe, whose caller derives id from what the subscription is
// for and where it delivers:
//
//   - a subscription id that does not exist, or expired, is made (active,
//     realtime, with filter f); created tells so;
//   - one that exists keeps its filter, handler URL and deliveries in
//     progress; its expiry becomes expiresAt, a handler that a receiver
//     turned off (410 Gone) runs again, and a secret other than the
//     current one replaces it, the previous one signing beside it for
//     SecretGrace.
//
// The deliveries are durable handler jobs, as for any webhook handler.
func (s *Service) KeyedWebhook(ctx context.Context, principal, id string, f mcpe.Filter, spec *mcpe.HandlerSpec, secret string, expiresAt *time.Time) (sub *Subscription, created bool, err error) {
	for range 2 {
		sub, created, err = s.keyedWebhook(ctx, principal, id, f, spec, secret, expiresAt)
		if !errors.Is(err, errMadeMeanwhile) {
			break
		}
		// Another call made it between the refresh and the creation:
		// refresh that one.
	}
	return sub, created, err
}

// errMadeMeanwhile is keyedWebhook's when another call created the
// subscription after it found none.
var errMadeMeanwhile = errors.New("the subscription was made meanwhile; subscribe again")

func (s *Service) keyedWebhook(ctx context.Context, principal, id string, f mcpe.Filter, spec *mcpe.HandlerSpec, secret string, expiresAt *time.Time) (sub *Subscription, created bool, err error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	if spec == nil || spec.Type != mcpe.HandlerWebhook {
		return nil, false, errors.New("subscriptions: KeyedWebhook needs a webhook handler")
	}
	h := s.opts.Handlers[mcpe.HandlerWebhook]
	if h == nil {
		return nil, false, invalid("handler", "webhook handlers are not enabled on this server")
	}
	spec = spec.Clone()
	spec.Secret = ""
	if err := h.Check(ctx, principal, spec); err != nil {
		return nil, false, err
	}
	if expiresAt != nil {
		t := expiresAt.UTC()
		expiresAt = &t
	}
	refreshed, err := s.change(ctx, principal, id, func(sub *Subscription) error {
		now := s.clock.Now().UTC()
		sub.ExpiresAt = expiresAt
		if sub.Handler == nil || sub.Handler.Type != mcpe.HandlerWebhook {
			// Its owner changed the handler with events_update: the
			// subscription is the webhook's again.
			sub.Handler, sub.HandlerStatus = spec, &mcpe.HandlerStatus{}
		}
		if sub.HandlerStatus != nil && sub.HandlerStatus.Disabled != "" {
			st := *sub.HandlerStatus
			st.Disabled = ""
			sub.HandlerStatus = &st
		}
		switch {
		case sub.Secrets == nil:
			sub.Secrets = &WebhookSecrets{Current: secret}
		case sub.Secrets.Current != secret:
			until := now.Add(SecretGrace)
			sub.Secrets = &WebhookSecrets{Current: secret, Previous: sub.Secrets.Current, PreviousUntil: &until}
		}
		return nil
	})
	switch {
	case err == nil:
		return refreshed, false, nil
	case !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrExpired):
		return nil, false, err
	}

	now := s.clock.Now().UTC().Truncate(time.Millisecond)
	if expiresAt != nil && !expiresAt.After(now) {
		return nil, false, invalid("expiresAt", "%s is not in the future", expiresAt.Format(time.RFC3339))
	}
	sub = &Subscription{Principal: principal, Subscription: mcpe.Subscription{
		ID:            id,
		Status:        mcpe.StatusActive,
		Filter:        f,
		Delivery:      mcpe.DefaultDelivery(),
		Handler:       spec,
		HandlerStatus: &mcpe.HandlerStatus{},
		ExpiresAt:     expiresAt,
		CreatedAt:     now,
		UpdatedAt:     now,
	}, Secrets: &WebhookSecrets{Current: secret}}
	if err := s.prepareDelivery(&sub.Delivery, now); err != nil {
		return nil, false, err
	}
	e, err := NewEntry(sub)
	if err != nil {
		return nil, false, err
	}
	s.manage.Lock()
	defer s.manage.Unlock()
	if got, err := s.store.GetSubscription(ctx, principal, id); err == nil {
		if got.Status != mcpe.StatusExpired && (got.ExpiresAt == nil || got.ExpiresAt.After(now)) {
			return nil, false, errMadeMeanwhile
		}
		if err := s.store.DeleteSubscription(ctx, principal, id); err != nil {
			return nil, false, err
		}
		s.removeEntry(id)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	if err := s.checkRoom(principal, nil, e); err != nil {
		return nil, false, err
	}
	if err := s.store.CreateSubscription(ctx, sub, s.opts.MaxSubscriptions); err != nil {
		return nil, false, err
	}
	s.putEntry(e)
	if sub.ExpiresAt != nil {
		s.armExpiry()
	}
	return s.view(sub), true, nil
}

// Expiring returns the subscriptions of every principal whose ID starts
// with one of prefixes and that have an expiry, expired ones included: a
// caller that watches the expiry of the subscriptions it made (SEP-3415
// webhook subscriptions end with a body POSTed to their endpoint) finds
// them again after a restart.
func (s *Service) Expiring(ctx context.Context, prefixes ...string) ([]*Subscription, error) {
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{})
	if err != nil {
		return nil, err
	}
	var out []*Subscription
	for _, sub := range subs {
		if sub.ExpiresAt != nil && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(sub.ID, p) }) {
			out = append(out, sub)
		}
	}
	return out, nil
}
