package client

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	sjson "github.com/segmentio/encoding/json"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// EventHandler handles one event delivered to subscription subscriptionID.
type EventHandler func(ctx context.Context, subscriptionID string, ev mcpe.Event)

// BatchHandler handles one digest of a cron or scheduled subscription.
// batch.Events are the events' JSON, oldest first; decode each into a
// mcpe.Event.
type BatchHandler func(ctx context.Context, batch mcpe.BatchParams)

// ExpiredHandler learns that subscription subscriptionID expired.
type ExpiredHandler func(ctx context.Context, subscriptionID string)

// OnEvent calls h for every event whose type matches pattern, a pattern of
// the subscription filter language ("github.issues.*", "*"). It returns a
// function that removes the handler. The error is an
// *mcpe.InvalidError for a pattern that does not compile.
func (c *Client) OnEvent(pattern string, h EventHandler) (remove func(), err error) {
	p, err := mcpe.ParsePattern("eventTypes", pattern)
	if err != nil {
		return nil, err
	}
	return c.handlers.add(&registration{pattern: p, event: h}), nil
}

// OnBatch calls h for every events/batch. It returns a function that
// removes the handler.
func (c *Client) OnBatch(h BatchHandler) (remove func()) {
	return c.handlers.add(&registration{batch: h})
}

// OnExpired calls h for every events/subscription_expired. It returns a
// function that removes the handler.
func (c *Client) OnExpired(h ExpiredHandler) (remove func()) {
	return c.handlers.add(&registration{expired: h})
}

// registration is one handler; exactly one of event, batch and expired is
// set.
type registration struct {
	pattern mcpe.Pattern
	event   EventHandler
	batch   BatchHandler
	expired ExpiredHandler
}

// handlers holds the registrations in order. The slice is replaced, never
// changed in place, so the dispatcher iterates a snapshot without the lock
// and a handler may add or remove handlers.
type handlers struct {
	mu  sync.Mutex
	all []*registration
}

func (hs *handlers) add(r *registration) (remove func()) {
	hs.mu.Lock()
	hs.all = append(slices.Clip(hs.all), r)
	hs.mu.Unlock()
	return func() {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if i := slices.Index(hs.all, r); i >= 0 {
			hs.all = slices.Delete(slices.Clone(hs.all), i, i+1)
		}
	}
}

func (hs *handlers) snapshot() []*registration {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.all
}

// item is one entry of the dispatch queue: a notification, or a request to
// catch up with events_poll, whose outcome done receives when set.
type item struct {
	method  string
	params  json.RawMessage
	catchUp bool
	done    chan error
}

// fifo is an unbounded queue with one consumer, so that the transport's
// reading goroutine never blocks on it.
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{} // holds a token while items may be waiting
}

func (q *fifo[T]) init() { q.ready = make(chan struct{}, 1) }

func (q *fifo[T]) push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take empties the queue and returns what it held, oldest first.
func (q *fifo[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// dispatch runs the handlers, one delivery at a time, until Close.
func (c *Client) dispatch() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.queue.ready:
		}
		for _, it := range c.queue.take() {
			switch {
			case c.ctx.Err() != nil:
				return // what is left stays in the server's inbox
			case it.catchUp:
				err := c.catchUp()
				if it.done != nil {
					it.done <- err
				}
			default:
				c.notification(it.method, it.params)
			}
		}
	}
}

// notification decodes one MCPE notification and delivers it.
func (c *Client) notification(method string, params json.RawMessage) {
	var err error
	switch method {
	case mcpe.MethodEvent:
		var p mcpe.EventParams
		if err = sjson.Unmarshal(params, &p); err == nil && c.fresh(p.Cursor, p.SubscriptionID) {
			c.deliverEvent(p.SubscriptionID, p.Cursor, p.Event)
		}
	case mcpe.MethodBatch:
		var p mcpe.BatchParams
		if err = sjson.Unmarshal(params, &p); err == nil && c.fresh(p.Cursor, p.SubscriptionID) {
			c.deliverBatch(p)
		}
	case mcpe.MethodSubscriptionExpired:
		var p mcpe.ExpiredParams
		if err = sjson.Unmarshal(params, &p); err == nil && c.fresh(p.Cursor, p.SubscriptionID) {
			c.deliverExpired(p.SubscriptionID)
		}
	case mcpe.MethodMissed:
		// The server did not send deliveries this session was owed: read
		// them from the inbox, from the last cursor seen, before what
		// follows.
		var p mcpe.MissedParams
		if err = sjson.Unmarshal(params, &p); err == nil {
			c.log.Warn("the server skipped deliveries; catching up from the inbox", "from", p.FromCursor, "to", p.ToCursor, "reason", p.Reason)
			if cerr := c.catchUp(); cerr != nil {
				c.log.Warn("catch up after events/missed", "error", cerr)
			}
		}
	default:
		c.log.Debug("ignoring an unknown MCPE notification", "method", method)
	}
	if err != nil {
		c.log.Warn("dropping a notification that does not decode", "method", method, "error", err)
	}
}

// fresh reports whether the delivery of the inbox entry at cursor to
// subscriptionID is above the mark, and moves the mark to it; a repeat is
// not. One without a cursor is outside the inbox's order: always fresh.
func (c *Client) fresh(cursor, subscriptionID string) bool {
	if cursor == "" {
		return true
	}
	seq, err := mcpe.ParseCursor(cursor)
	switch {
	case err != nil:
		c.log.Warn("delivering as it comes a notification whose cursor is not one", "cursor", cursor)
	case seq > c.mark:
		c.setMark(seq, []string{subscriptionID})
	case seq < c.mark || c.markSubs == nil || slices.Contains(c.markSubs, subscriptionID):
		return false
	default:
		c.markSubs = append(c.markSubs, subscriptionID)
	}
	return true
}

// reach moves the mark to cursor, when that is not below it, as an entry
// delivered whole: to every one of its subscriptions, as events_poll reads
// it.
func (c *Client) reach(cursor string) {
	if seq, err := mcpe.ParseCursor(cursor); err == nil && seq >= c.mark {
		c.setMark(seq, nil)
	}
}

// setMark moves the mark; only the dispatcher (and New) calls it.
func (c *Client) setMark(seq int64, subs []string) {
	c.mu.Lock()
	c.mark, c.markSubs = seq, subs
	c.mu.Unlock()
}

// pollItem delivers one inbox entry read by events_poll, once for each
// subscription it is for, as the notifications of a live session would.
func (c *Client) pollItem(it mcpe.PollItem) {
	for _, id := range it.SubscriptionIDs {
		if !c.fresh(it.Cursor, id) {
			continue
		}
		switch it.Kind {
		case mcpe.InboxEvent:
			c.deliverEvent(id, it.Cursor, it.Event)
		case mcpe.InboxBatch:
			c.deliverBatch(mcpe.BatchParams{SubscriptionID: id, Cursor: it.Cursor, Events: it.Events, Remaining: it.Remaining})
		case mcpe.InboxExpired:
			c.deliverExpired(id)
		}
	}
	c.reach(it.Cursor)
}

// The deliver functions call the handlers.

func (c *Client) deliverEvent(subscriptionID, cursor string, raw json.RawMessage) {
	var ev mcpe.Event
	if err := sjson.Unmarshal(raw, &ev); err != nil {
		c.log.Warn("dropping an event that does not decode", "subscription_id", subscriptionID, "cursor", cursor, "error", err)
		return
	}
	for _, r := range c.handlers.snapshot() {
		if r.event != nil && r.pattern.Match(ev.Type) && c.ctx.Err() == nil {
			r.event(c.ctx, subscriptionID, ev)
		}
	}
}

func (c *Client) deliverBatch(p mcpe.BatchParams) {
	for _, r := range c.handlers.snapshot() {
		if r.batch != nil && c.ctx.Err() == nil {
			r.batch(c.ctx, p)
		}
	}
}

func (c *Client) deliverExpired(subscriptionID string) {
	for _, r := range c.handlers.snapshot() {
		if r.expired != nil && c.ctx.Err() == nil {
			r.expired(c.ctx, subscriptionID)
		}
	}
}
