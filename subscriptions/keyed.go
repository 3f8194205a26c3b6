package subscriptions

import (
	"context"
	"errors"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Keyed returns principal's subscription id, creating it (active, realtime,
// with filter f) when it does not exist. Callers that derive id from what a
// subscription is for (the SEP-3415 events extension keys poll and push
// subscriptions on principal, name and arguments) get the same
// subscription back on every call and after a restart, so that it keeps
// collecting events between calls. created tells whether it was made now.
// A subscription with id that exists is returned as it is, whatever its
// filter, when active or paused (its owner may have paused it with
// events_pause); an expired one (an expiresAt set with events_update) is
// replaced by a new one.
func (s *Service) Keyed(ctx context.Context, principal, id string, f mcpe.Filter) (sub *Subscription, created bool, err error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	if sub, err := s.store.GetSubscription(ctx, principal, id); err == nil && sub.Status != mcpe.StatusExpired {
		return s.view(sub), false, nil
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	// Microseconds: what every store keeps of a time, so that the
	// subscription read back is the one made (cursors hash its creation).
	now := s.clock.Now().UTC().Truncate(time.Millisecond)
	sub = &Subscription{Principal: principal, Subscription: mcpe.Subscription{
		ID:        id,
		Status:    mcpe.StatusActive,
		Filter:    f,
		Delivery:  mcpe.DefaultDelivery(),
		CreatedAt: now,
		UpdatedAt: now,
	}}
	if err := s.prepareDelivery(&sub.Delivery, now); err != nil {
		return nil, false, err
	}
	e, err := NewEntry(sub)
	if err != nil {
		return nil, false, err
	}
	s.manage.Lock()
	defer s.manage.Unlock()
	// Another call may have made it while this one prepared.
	if got, err := s.store.GetSubscription(ctx, principal, id); err == nil {
		if got.Status != mcpe.StatusExpired {
			return s.view(got), false, nil
		}
		if err := s.store.DeleteSubscription(ctx, principal, id); err != nil {
			return nil, false, err
		}
		s.removeEntry(id)
	}
	if err := s.checkRoom(principal, nil, e); err != nil {
		return nil, false, err
	}
	if err := s.store.CreateSubscription(ctx, sub, s.opts.MaxSubscriptions); err != nil {
		return nil, false, err
	}
	s.putEntry(e)
	return s.view(sub), true, nil
}

// ReadInbox returns up to limit entries of principal's inbox numbered above
// after, oldest first, and whether more follow.
func (s *Service) ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]InboxEntry, bool, error) {
	return s.store.ReadInbox(ctx, principal, after, limit)
}

// PrunedThrough returns the highest sequence number of principal's inbox
// that retention removed, or 0: a position at or below it may have lost
// entries.
func (s *Service) PrunedThrough(ctx context.Context, principal string) (int64, error) {
	return s.store.PrunedThrough(ctx, principal)
}

// InboxHead returns a position at or after the last entry of principal's
// inbox committed so far: reading after it returns only what is delivered
// later.
func (s *Service) InboxHead(ctx context.Context, principal string) (int64, error) {
	if sh, ok := s.store.(Shared); ok {
		heads, _, err := sh.Heads(ctx, []string{principal})
		if head, ok := heads[principal]; ok {
			return head, err
		}
		return heads[""], err
	}
	latest, err := s.store.LatestInbox(ctx, principal, 1)
	if err != nil {
		return 0, err
	}
	if len(latest) > 0 {
		return latest[0].Seq, nil
	}
	return s.store.PrunedThrough(ctx, principal)
}

// LatestInbox returns the newest limit (> 0) entries of principal's inbox,
// oldest first.
func (s *Service) LatestInbox(ctx context.Context, principal string, limit int) ([]InboxEntry, error) {
	return s.store.LatestInbox(ctx, principal, limit)
}
