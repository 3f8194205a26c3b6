package subscriptions

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// prepareDelivery checks d against the channels offered and lets its
// buffered channel, if any, check and complete its options.
func (s *Service) prepareDelivery(d *mcpe.Delivery, now time.Time) error {
	if err := d.Validate(s.channels); err != nil {
		return err
	}
	if c := d.Timed(); c != "" {
		return s.timings[c].Prepare(d, now)
	}
	return nil
}

// Subscribe creates a subscription for principal.
func (s *Service) Subscribe(ctx context.Context, principal string, req mcpe.SubscribeRequest) (*Subscription, error) {
	if err := mcpe.ValidateLabel(req.Label); err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC().Truncate(time.Millisecond)
	sub := &Subscription{Principal: principal, Subscription: mcpe.Subscription{
		ID:        NewID(),
		Label:     req.Label,
		Status:    mcpe.StatusActive,
		Filter:    req.Filter,
		Delivery:  *cmp.Or(req.Delivery, new(mcpe.DefaultDelivery())),
		CreatedAt: now,
		UpdatedAt: now,
	}}
	if err := s.prepareDelivery(&sub.Delivery, now); err != nil {
		return nil, err
	}
	if req.ExpiresAt != "" {
		t, err := parseFutureTime("expiresAt", req.ExpiresAt, now)
		if err != nil {
			return nil, err
		}
		sub.ExpiresAt = &t
	}
	e, err := NewEntry(sub)
	if err != nil {
		return nil, err
	}
	var secret string
	if req.Handler != nil {
		h := req.Handler.Clone()
		if secret, sub.Secrets, err = s.prepareHandler(ctx, principal, h, nil, nil, false, now); err != nil {
			return nil, err
		}
		sub.Handler, sub.HandlerStatus = h, &mcpe.HandlerStatus{}
	}
	sub.NextFireAt = s.nextFire(sub.Delivery, now, nil)

	s.manage.Lock()
	defer s.manage.Unlock()
	if err := s.checkRoom(principal, nil, e); err != nil {
		return nil, err
	}
	if err := s.store.CreateSubscription(ctx, sub, s.opts.MaxSubscriptions); err != nil {
		return nil, err
	}
	s.putEntry(e)
	if sub.NextFireAt != nil {
		s.watchers.changed(sub.Delivery.Timed())
	}
	if sub.ExpiresAt != nil {
		s.armExpiry()
	}
	return showSecret(s.view(sub), secret), nil
}

// checkRoom refuses to put entry into the index, in place of old (nil for
// none), when principal's patterns would then cost more to match than the
// server allows, or when principal is a session without a token
// (EphemeralPrefix) and those have as many active subscriptions together
// as one principal may have: that bounds how many of them one event
// reaches. The caller holds s.manage.
func (s *Service) checkRoom(principal string, old, entry *Entry) error {
	if p := s.opts.EphemeralPrefix; old == nil && p != "" && strings.HasPrefix(principal, p) && s.index.Owned(p) >= s.opts.MaxSubscriptions {
		return &LimitError{Max: s.opts.MaxSubscriptions, Sessions: true}
	}
	cost := s.index.CostWith(principal, old, entry)
	if cost <= s.opts.MaxPatternCost || entry.cost == 0 {
		return nil
	}
	return invalid("filter.eventTypes", "your active subscriptions' patterns would cost %d to match against each new event type, "+
		"over this server's limit of %d per principal. An exact type costs nothing; a pattern costs (1 + its wildcards) "+
		"times its alternatives, so \"github.*\" costs 2 and \"{a,b}.*.x\" costs 4, counted once however many of your "+
		"subscriptions use it; a where condition adds its estimated cost. Use exact types, fewer patterns or simpler conditions, "+
		"or remove or pause subscriptions you no longer need", cost, s.opts.MaxPatternCost)
}

// showSecret puts a webhook secret that was just made into the answer that
// shows it, the only time it is shown.
func showSecret(sub *Subscription, secret string) *Subscription {
	if secret != "" && sub.Handler != nil {
		sub.Handler.Secret = secret
	}
	return sub
}

// prepareHandler checks h for principal and returns the signing secrets of
// a webhook handler: prevSecrets when the previous handler prev is a
// webhook too, or a new one. With rotate, a new secret replaces the
// previous one, which keeps signing for the grace period. It also returns a
// new secret, to show once.
func (s *Service) prepareHandler(ctx context.Context, principal string, h, prev *mcpe.HandlerSpec, prevSecrets *WebhookSecrets, rotate bool, now time.Time) (string, *WebhookSecrets, error) {
	if err := h.Validate(s.handlerTypes); err != nil {
		return "", nil, err
	}
	if err := s.opts.Handlers[h.Type].Check(ctx, principal, h); err != nil {
		return "", nil, err
	}
	h.Secret = ""
	if h.Type != mcpe.HandlerWebhook {
		if rotate {
			return "", nil, invalid("rotateSecret", "applies to webhook handlers only; this handler is %q", h.Type)
		}
		return "", nil, nil
	}
	secret := NewWebhookSecret()
	switch {
	case prev == nil || prev.Type != mcpe.HandlerWebhook || prevSecrets == nil:
		return secret, &WebhookSecrets{Current: secret}, nil
	case rotate:
		until := now.Add(SecretGrace)
		return secret, &WebhookSecrets{Current: secret, Previous: prevSecrets.Current, PreviousUntil: &until}, nil
	}
	return "", prevSecrets.Clone(), nil
}

// Unsubscribe deletes a subscription of principal and the events waiting in
// its buffer.
func (s *Service) Unsubscribe(ctx context.Context, principal, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	s.manage.Lock()
	defer s.manage.Unlock()
	if err := s.store.DeleteSubscription(ctx, principal, id); err != nil {
		return notFound(err, id)
	}
	s.removeEntry(id)
	s.routedDeactivations(ctx)
	return nil
}

// Get returns a subscription of principal.
func (s *Service) Get(ctx context.Context, principal, id string) (*Subscription, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	sub, err := s.store.GetSubscription(ctx, principal, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	return s.view(sub), nil
}

// List returns principal's subscriptions, all or those with one status.
func (s *Service) List(ctx context.Context, principal string, status mcpe.Status) ([]*Subscription, error) {
	if status != "" && !status.Valid() {
		return nil, invalid("status", "%q is not a status; use \"active\", \"paused\" or \"expired\", or leave it out to list all", status)
	}
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Principal: principal, Status: status})
	if err != nil {
		return nil, err
	}
	if subs == nil {
		subs = []*Subscription{}
	}
	for _, sub := range subs {
		s.view(sub)
	}
	return subs, nil
}

// Pause stops deliveries to a subscription until it is resumed. Events that
// arrive meanwhile are not delivered to it, now or later; a digest does not
// fire while paused, and keeps what it had collected.
func (s *Service) Pause(ctx context.Context, principal, id string) (*Subscription, error) {
	return s.change(ctx, principal, id, func(sub *Subscription) error {
		sub.Status = mcpe.StatusPaused
		return nil
	})
}

// Resume restarts deliveries to a paused subscription. A digest fires next at
// its first time after now; a one-time delivery whose time passed while
// paused fires at once.
func (s *Service) Resume(ctx context.Context, principal, id string) (*Subscription, error) {
	return s.change(ctx, principal, id, func(sub *Subscription) error {
		sub.Status = mcpe.StatusActive
		return nil
	})
}

// Update changes the filter, delivery or expiry of a subscription of
// principal. A paused subscription stays paused. A new schedule keeps the
// events already waiting; leaving the cron or scheduled channel delivers them
// at once.
func (s *Service) Update(ctx context.Context, principal string, req mcpe.UpdateRequest) (*Subscription, error) {
	if err := checkID(req.SubscriptionID); err != nil {
		return nil, err
	}
	for _, m := range s.opts.Managed {
		if strings.HasPrefix(req.SubscriptionID, m.Prefix) {
			return nil, invalid("subscriptionId", "%s is managed by %s, which keys it on what it is for: "+
				"to change it, subscribe there again with the new arguments (and unsubscribe the old one); "+
				"events_pause, events_resume and events_unsubscribe work on it", req.SubscriptionID, m.Owner)
		}
	}
	if req.Label == nil && req.Filter == nil && req.Delivery == nil && !req.ExpiresAt.Set && !req.Handler.Set && !req.RotateSecret {
		return nil, invalid("", "nothing to update: give at least one of label, filter, delivery, expiresAt, handler or rotateSecret")
	} else if req.Label != nil {
		if err := mcpe.ValidateLabel(*req.Label); err != nil {
			return nil, err
		}
	}
	if req.RotateSecret && req.Handler.Set && req.Handler.Value == nil {
		return nil, invalid("rotateSecret", "cannot be combined with handler null, which removes the handler")
	}
	now := s.clock.Now().UTC()
	var expiresAt *time.Time
	if req.ExpiresAt.Set && req.ExpiresAt.Value != "" {
		t, err := parseFutureTime("expiresAt", req.ExpiresAt.Value, now)
		if err != nil {
			return nil, err
		}
		expiresAt = &t
	}
	if req.Filter != nil {
		if _, err := CompileFilter(*req.Filter); err != nil {
			return nil, err
		}
	}
	var delivery mcpe.Delivery
	if req.Delivery != nil {
		delivery = *req.Delivery
		if err := s.prepareDelivery(&delivery, now); err != nil {
			return nil, err
		}
	}
	var secret string
	res, err := s.change(ctx, principal, req.SubscriptionID, func(sub *Subscription) error {
		if req.Filter != nil {
			sub.Filter = *req.Filter
		}
		if req.Label != nil {
			sub.Label = *req.Label
		}
		if req.Delivery != nil {
			sub.Delivery = delivery
		}
		if req.ExpiresAt.Set {
			sub.ExpiresAt = expiresAt
		}
		if !req.Handler.Set && !req.RotateSecret {
			return nil
		}
		next := req.Handler.Value.Clone()
		if !req.Handler.Set {
			if sub.Handler == nil {
				return invalid("rotateSecret", "this subscription has no handler; give a webhook handler to get a secret")
			}
			next = sub.Handler.Clone()
		}
		var secrets *WebhookSecrets
		if next != nil {
			var err error
			if secret, secrets, err = s.prepareHandler(ctx, principal, next, sub.Handler, sub.Secrets, req.RotateSecret, now); err != nil {
				return err
			}
		}
		sub.Handler, sub.Secrets = next, secrets
		// Setting a handler turns it back on.
		if sub.HandlerStatus != nil {
			sub.HandlerStatus.Disabled = ""
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return showSecret(res, secret), nil
}

// change applies edit to a subscription that has not expired, stores it and
// brings the index, the fire schedule and the expiry timer up to date.
func (s *Service) change(ctx context.Context, principal, id string, edit func(*Subscription) error) (*Subscription, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.manage.Lock()
	defer s.manage.Unlock()
	sub, err := s.store.GetSubscription(ctx, principal, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	now := s.clock.Now().UTC().Truncate(time.Millisecond)
	if sub.Status == mcpe.StatusExpired || sub.ExpiresAt != nil && !sub.ExpiresAt.After(now) {
		return nil, fmt.Errorf("%w: subscription %q expired; create a new one with events_subscribe", ErrExpired, id)
	}
	before := sub.Clone()
	if err := edit(sub); err != nil {
		return nil, err
	}
	if sameSettings(before, sub) {
		return s.view(sub), nil
	}
	sub.UpdatedAt = now
	var entry *Entry
	if sub.Status == mcpe.StatusActive {
		if entry, err = NewEntry(sub); err != nil {
			return nil, err
		}
		if err := s.checkRoom(principal, s.index.Get(id), entry); err != nil {
			return nil, err
		}
	}
	if old := before.Delivery.Timed(); old != "" && old != sub.Delivery.Timed() && before.Status == mcpe.StatusActive {
		// Leaving a buffered channel: what waits goes out now.
		flush := DueFire{SubscriptionID: id, Principal: principal, Delivery: before.Delivery}
		if _, err := s.fireLocked(ctx, []DueFire{flush}, now); err != nil {
			return nil, err
		}
		sub.LastFireAt = &now
	}
	if !sameJSON(before.Delivery, sub.Delivery) || before.Status != mcpe.StatusActive && sub.Status == mcpe.StatusActive {
		sub.NextFireAt = s.nextFire(sub.Delivery, now, sub.LastFireAt)
	}
	if err := s.store.UpdateSubscription(ctx, sub); err != nil {
		return nil, notFound(err, id)
	}
	// The index follows the stored subscription at once, whatever comes
	// next.
	if entry != nil {
		s.putEntry(entry)
	} else {
		s.removeEntry(id)
		s.routedDeactivations(ctx)
	}
	if !sameHandler(before, sub) {
		if err := s.store.SetHandler(ctx, principal, id, sub.Handler, sub.Secrets); err != nil {
			return nil, notFound(err, id)
		}
	}
	s.watchers.changed(before.Delivery.Timed(), sub.Delivery.Timed())
	if !timePtrEqual(before.ExpiresAt, sub.ExpiresAt) {
		s.armExpiry()
	}
	// Read it back: a flush above changed its counts.
	stored, err := s.store.GetSubscription(ctx, principal, id)
	if err != nil {
		return nil, err
	}
	return s.view(stored), nil
}

func sameSettings(a, b *Subscription) bool {
	return a.Status == b.Status && a.Label == b.Label && sameJSON(a.Filter, b.Filter) && sameJSON(a.Delivery, b.Delivery) &&
		timePtrEqual(a.ExpiresAt, b.ExpiresAt) && sameHandler(a, b)
}

// sameHandler reports whether a and b have the same handler, secrets and
// on/off state.
func sameHandler(a, b *Subscription) bool {
	disabled := func(s *Subscription) string {
		if s.HandlerStatus == nil {
			return ""
		}
		return s.HandlerStatus.Disabled
	}
	return sameJSON(a.Handler, b.Handler) && sameJSON(a.Secrets, b.Secrets) && disabled(a) == disabled(b)
}

func sameJSON(a, b any) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}

func timePtrEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func notFound(err error, id string) error {
	if errors.Is(err, ErrNotFound) {
		return &NotFoundError{ID: id}
	}
	return err
}

// ForgetPrincipal deletes everything principal owns; it is used when a
// session-scoped principal's session ends.
func (s *Service) ForgetPrincipal(ctx context.Context, principal string) error {
	s.manage.Lock()
	defer s.manage.Unlock()
	subs, err := s.store.ListSubscriptions(ctx, ListQuery{Principal: principal})
	if err != nil {
		return err
	}
	if err := s.store.DeletePrincipal(ctx, principal); err != nil {
		return err
	}
	for _, sub := range subs {
		s.removeEntry(sub.ID)
	}
	s.routedDeactivations(ctx)
	return nil
}
