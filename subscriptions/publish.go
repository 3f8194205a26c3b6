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
	if d := mcpe.JSONDepth(ev.Data); d > s.opts.MaxDataDepth {
		return PublishResult{}, invalid("data", "nests objects and arrays %d levels deep; this server accepts at most %d", d, s.opts.MaxDataDepth)
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

// Poll returns what was delivered to principal after a cursor: at most
// the limit of items, and at most mcpe.MaxPollBytes of events (but always
// one item, so that a poll makes progress). An event that cannot be served
// (nested deeper than the server allows now) is left out with a note
// rather than failing every poll that reaches it.
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
	next, size := after, 0
	for i, e := range entries {
		item := s.pollItem(e)
		n := pollItemSize(item)
		if i > 0 && size+n > mcpe.MaxPollBytes {
			res.HasMore = true
			break
		}
		size += n
		res.Items = append(res.Items, item)
		next = e.Seq
	}
	res.NextCursor = mcpe.FormatCursor(next)
	// Remembering the cursor is a convenience: a store that cannot be
	// written (a full disk) still serves the page.
	if err := s.store.SetPollCursor(ctx, principal, next); err != nil {
		s.log.Warn("could not remember the events_poll cursor", "principal", principal, "error", err)
	}
	return res, nil
}

// pollItem turns an inbox entry into an events_poll item, leaving out the
// events it cannot serve.
func (s *Service) pollItem(e InboxEntry) mcpe.PollItem {
	item := mcpe.PollItem{
		Cursor:          mcpe.FormatCursor(e.Seq),
		Kind:            e.Kind,
		SubscriptionIDs: e.SubscriptionIDs,
		Event:           e.Event,
		Remaining:       e.Remaining,
		DeliveredAt:     e.CreatedAt,
	}
	left := 0
	if e.Event != nil && s.tooDeep(e.Event) {
		item.Event, left = nil, 1
	}
	for _, ev := range e.Events {
		if s.tooDeep(ev) {
			left++
			continue
		}
		item.Events = append(item.Events, ev)
	}
	if left > 0 {
		item.Note = fmt.Sprintf("%d event(s) of this delivery left out: their data nests deeper than the %d levels this server serves", left, s.opts.MaxDataDepth)
	}
	return item
}

// tooDeep reports whether a stored event nests deeper than the server
// serves (it was accepted before the bound, or under a higher one).
func (s *Service) tooDeep(event json.RawMessage) bool {
	// The event object and its data field add a level each.
	return mcpe.JSONDepth(event) > s.opts.MaxDataDepth+1
}

// pollItemSize estimates the encoded size of an item: its events and a
// bound on the rest.
func pollItemSize(item mcpe.PollItem) int {
	n := 256 + len(item.Event) + len(item.Note)
	for _, ev := range item.Events {
		n += len(ev) + 1
	}
	for _, id := range item.SubscriptionIDs {
		n += len(id) + 3
	}
	return n
}
