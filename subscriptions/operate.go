package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// This file is what an operator does by hand to a subscription, from the
// web console: fire a digest before its time, and send an event again.

// ErrNoLiveSession is returned by Replay when the owner has no live session
// to send the event to.
var ErrNoLiveSession = errors.New("no live session")

// maxEventIDLen bounds the event IDs Replay looks for.
const maxEventIDLen = 200

// replayScan bounds how many of the newest inbox entries Replay reads
// looking for the event.
const replayScan = 5000

// FireNow fires a cron or scheduled subscription of principal now, as its
// schedule would: what waits in its buffer is delivered (to the live
// sessions, or kept for the owner's return), and the next fire is counted
// from now: a cron subscription fires next at its first time after now; a
// one-time (scheduled) one fired before its deliverAt still fires then, and
// expires. An empty buffer delivers nothing, but at a last fire (one with
// no next) a digest of no events, as the schedule's would.
func (s *Service) FireNow(ctx context.Context, principal, id string) (*Subscription, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.manage.Lock()
	sub, err := s.store.GetSubscription(ctx, principal, id)
	if err != nil {
		s.manage.Unlock()
		return nil, notFound(err, id)
	}
	if sub.Delivery.Timed() == "" {
		s.manage.Unlock()
		return nil, invalid("subscriptionId", "subscription %q delivers in real time: it has no digest to fire", id)
	}
	if sub.Status != mcpe.StatusActive {
		s.manage.Unlock()
		return nil, invalid("subscriptionId", "subscription %q is %s; resume it before firing it", id, sub.Status)
	}
	now := s.clock.Now().UTC()
	fired, err := s.fireLocked(ctx, []DueFire{{SubscriptionID: id, Principal: principal, Delivery: sub.Delivery}}, now)
	s.manage.Unlock()
	if err != nil {
		return nil, err
	}
	s.watchers.changed(sub.Delivery.Timed())
	if fired {
		s.jobsWritten()
	}
	stored, err := s.store.GetSubscription(ctx, principal, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	return s.view(stored), nil
}

// Replay sends an event that principal received earlier, found in its
// inbox by ID, again to principal's live sessions as a notification for
// its subscription subscriptionID, with the event's original cursor. The
// subscription must be active and deliver in real time (a cron or
// scheduled one sends digests, not notifications of one event), and its
// filter must match the event. The event is not written to the inbox
// again, is not counted as a delivery and does not run the subscription's
// handler: it is a notification resent, for an agent that missed or
// mishandled it. A principal can replay only what it was delivered, so no
// other principal's events. The subscription's state is checked and the
// event sent under s.manage, so that a pause, update or delete made
// meanwhile comes before or after the replay, not between the check and
// the send.
func (s *Service) Replay(ctx context.Context, principal, subscriptionID, eventID string) error {
	if err := checkID(subscriptionID); err != nil {
		return err
	}
	if eventID == "" || len(eventID) > maxEventIDLen {
		return invalid("eventId", "give the ID of an event in your inbox (at most %d bytes)", maxEventIDLen)
	}
	// A first look, so that a wrong subscription is reported before the
	// inbox is read (unlocked: the inbox read can take a while).
	sub, err := s.store.GetSubscription(ctx, principal, subscriptionID)
	if err != nil {
		return notFound(err, subscriptionID)
	}
	if err := replayable(sub); err != nil {
		return err
	}
	entry, ev, err := s.findEvent(ctx, principal, eventID)
	if err != nil {
		return err
	}
	s.manage.Lock()
	defer s.manage.Unlock()
	if sub, err = s.store.GetSubscription(ctx, principal, subscriptionID); err != nil {
		return notFound(err, subscriptionID)
	}
	if err := replayable(sub); err != nil {
		return err
	}
	m, err := CompileFilter(sub.Filter)
	if err != nil {
		return err
	}
	if !m.Match(ev) {
		return invalid("subscriptionId", "the filter of subscription %q does not match event %q (type %q)", subscriptionID, eventID, ev.Type)
	}
	if s.opts.Presence != nil && !s.opts.Presence.Connected(principal) {
		return fmt.Errorf("%w: the owner of subscription %q has no live session to replay event %q to", ErrNoLiveSession, subscriptionID, eventID)
	}
	// Without its position: a session's deliveries come in inbox order,
	// and this one is sent again out of it.
	s.deliverer.Replay(principal, []InboxEntry{{
		Principal:       principal,
		SubscriptionIDs: []string{subscriptionID},
		Kind:            mcpe.InboxEvent,
		Event:           entry.Event,
		CreatedAt:       entry.CreatedAt,
	}})
	return nil
}

// replayable returns why an event cannot be replayed to sub, or nil.
func replayable(sub *Subscription) error {
	if timed := sub.Delivery.Timed(); timed != "" {
		return invalid("subscriptionId", "subscription %q delivers %s digests, not notifications of single events; replay to a realtime subscription", sub.ID, timed)
	}
	if sub.Status != mcpe.StatusActive {
		return invalid("subscriptionId", "subscription %q is %s; resume it before replaying events to it", sub.ID, sub.Status)
	}
	return nil
}

// findEvent returns the newest InboxEvent entry of principal's inbox with
// the event eventID, and the event, among the newest replayScan entries.
func (s *Service) findEvent(ctx context.Context, principal, eventID string) (InboxEntry, *mcpe.Event, error) {
	entries, err := s.store.LatestInbox(ctx, principal, replayScan)
	if err != nil {
		return InboxEntry{}, nil, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != mcpe.InboxEvent {
			continue
		}
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(e.Event, &head) != nil || head.ID != eventID {
			continue
		}
		var parsed mcpe.Event
		if err := json.Unmarshal(e.Event, &parsed); err != nil {
			return InboxEntry{}, nil, err
		}
		return e, &parsed, nil
	}
	return InboxEntry{}, nil, invalid("eventId", "no event %q among the newest %d entries of your inbox; replay takes an event delivered to you in real time that retention kept", eventID, replayScan)
}
