package subscriptions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Publish validates ev, stores it and delivers it to every matching active
// subscription: at once to realtime ones, into the buffer of cron and
// scheduled ones. It implements the ingest path shared by POST /v1/events and
// the adapters. An event accepted before (same ID, or same type and
// sourceEventId) is reported as a duplicate and not routed again.
func (s *Service) Publish(ctx context.Context, ev mcpe.Event) (PublishResult, error) {
	now := s.clock.Now()
	if err := NormalizeEvent(&ev, now); err != nil {
		return PublishResult{}, err
	}
	raw, err := json.Marshal(&ev)
	if err != nil {
		return PublishResult{}, fmt.Errorf("encode event: %w", err)
	}
	// Match without the lock changes of subscriptions need: a new type can
	// take a while to match, and must not hold them up. Under the lock,
	// a result a change made stale since is brought up to date, so that an
	// event is never stored for a subscription paused or removed before
	// Publish stores it.
	gen := s.index.Generation()
	matches := s.index.Match(&ev)
	s.mu.RLock()
	if s.index.Generation() != gen {
		matches = s.index.Recheck(matches, &ev)
	}
	targets := make([]Target, 0, len(matches))
	for _, e := range matches {
		for _, c := range e.Delivery.Channels {
			targets = append(targets, Target{SubscriptionID: e.ID, Principal: e.Principal, Channel: c})
		}
	}
	res, err := s.store.Publish(ctx, &ev, raw, targets, now)
	s.mu.RUnlock()
	if err != nil {
		return PublishResult{}, fmt.Errorf("store event: %w", err)
	}
	if !res.Duplicate && len(res.Delivered) > 0 {
		s.deliverer.Deliver(res.Delivered)
		s.jobsWritten()
	}
	return res, nil
}

// Poll returns what was delivered to principal after a cursor.
func (s *Service) Poll(ctx context.Context, principal string, req mcpe.PollRequest) (mcpe.PollResult, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = mcpe.DefaultPollLimit
	case limit < 0 || limit > mcpe.MaxPollLimit:
		return mcpe.PollResult{}, invalid("limit", "is %d; give a number from 1 to %d, or leave it out for %d", limit, mcpe.MaxPollLimit, mcpe.DefaultPollLimit)
	}
	var after int64
	var err error
	if req.Cursor != "" {
		if after, err = mcpe.ParseCursor(req.Cursor); err != nil {
			return mcpe.PollResult{}, err
		}
	} else if after, err = s.store.PollCursor(ctx, principal); err != nil {
		return mcpe.PollResult{}, err
	}
	entries, more, err := s.store.ReadInbox(ctx, principal, after, limit)
	if err != nil {
		return mcpe.PollResult{}, err
	}
	res := mcpe.PollResult{Items: make([]mcpe.PollItem, 0, len(entries)), HasMore: more}
	next := after
	for _, e := range entries {
		res.Items = append(res.Items, mcpe.PollItem{
			Cursor:          mcpe.FormatCursor(e.Seq),
			Kind:            e.Kind,
			SubscriptionIDs: e.SubscriptionIDs,
			Event:           e.Event,
			Events:          e.Events,
			Remaining:       e.Remaining,
			DeliveredAt:     e.CreatedAt,
		})
		next = e.Seq
	}
	res.NextCursor = mcpe.FormatCursor(next)
	if err := s.store.SetPollCursor(ctx, principal, next); err != nil {
		return mcpe.PollResult{}, err
	}
	return res, nil
}
