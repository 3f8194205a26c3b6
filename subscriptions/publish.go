package subscriptions

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Publish validates ev, stores it and delivers it to every matching active
// subscription: at once to realtime ones, into the buffer of cron and
// scheduled ones. It implements the ingest path shared by POST /v1/events and
// the adapters. An event accepted before (same ID, or same type and
// sourceEventId from the same source, see FromSource) is reported as a
// duplicate and not routed again. It returns once the event is committed;
// events published at the same time are committed together, in one store
// transaction, in no promised order.
func (s *Service) Publish(ctx context.Context, ev mcpe.Event) (PublishResult, error) {
	return s.publish(ctx, ev, "")
}

// FromSource returns p publishing as source (an adapter's name, "ingest"
// for POST /v1/events), whatever wraps the Service under it: a
// sourceEventId is deduplicated among the events of its source only, so
// that no source can make another's events duplicates by posting their IDs
// first.
func FromSource(source string, p Publisher) Publisher { return sourced{source, p} }

type sourced struct {
	source string
	p      Publisher
}

// sourceKey marks a context with the source of the events published in it.
type sourceKey struct{}

func (s sourced) Publish(ctx context.Context, ev mcpe.Event) (PublishResult, error) {
	return s.p.Publish(context.WithValue(ctx, sourceKey{}, s.source), ev)
}

// publish publishes ev to the subscriptions of principal, or of every
// principal when it is empty.
func (s *Service) publish(ctx context.Context, ev mcpe.Event, principal string) (PublishResult, error) {
	now := s.clock.Now()
	if err := NormalizeEvent(&ev, now); err != nil {
		return PublishResult{}, err
	}
	if d := mcpe.JSONDepth(ev.Data); d > mcpe.DefaultMaxDataDepth {
		return PublishResult{}, invalid("data", "nests objects and arrays %d levels deep; this server accepts at most %d", d, mcpe.DefaultMaxDataDepth)
	}
	raw, err := json.Marshal(&ev)
	if err != nil {
		return PublishResult{}, fmt.Errorf("encode event: %w", err)
	}
	// Match without any lock that changes of subscriptions take: a new type
	// can take a while to match, and must not hold them up. The batch that
	// commits the event brings a result a change made stale since up to
	// date, so that an event is never stored for a subscription paused or
	// changed before it is.
	p := &publication{ev: ev, raw: raw, gen: s.index.Generation(), done: make(chan struct{}), lead: make(chan struct{})}
	p.source, _ = ctx.Value(sourceKey{}).(string)
	p.matches = s.index.Match(&p.ev)
	if principal != "" {
		p.matches = ownedBy(p.matches, principal)
	}
	if s.behind(p.matches) {
		return PublishResult{}, ErrBusy
	}
	s.enqueue(p)
	if p.err != nil {
		return PublishResult{}, fmt.Errorf("store event: %w", p.err)
	}
	return p.res, nil
}

// behind reports whether the owner of a realtime subscription among
// matches has a live session owed as much as it may be.
func (s *Service) behind(matches []*Entry) bool {
	if s.opts.Backlog == nil {
		return false
	}
	var seen string
	for _, e := range matches {
		if e.Principal == seen || !e.Delivery.Immediate() {
			continue
		}
		seen = e.Principal
		if s.opts.Backlog.Full(e.Principal) {
			return true
		}
	}
	return false
}

// maxBatch bounds the events of one group commit.
const maxBatch = 256

// publication is one event waiting for its group commit.
type publication struct {
	ev      mcpe.Event
	raw     json.RawMessage
	source  string
	matches []*Entry
	// gen is the index generation matches were computed at.
	gen uint64
	res PublishResult
	err error
	// done is closed once committed (or failed); lead when this one is to
	// commit the next batch.
	done, lead chan struct{}
}

// batcher gathers concurrent publications. The first to arrive while no
// batch is being committed commits every one waiting, in one transaction;
// those that arrive meanwhile wait, and the first of them commits the next
// batch, unless the store adds them to the one under way (More). No
// goroutine of its own: the publishers take turns.
//
// A leader that finds itself alone in the queue while publications have
// lately been arriving during others' commits first yields the processor
// once (runtime.Gosched): the other publishers' requests are then often a
// few microseconds from the queue, and a batch that waits for them costs
// one transaction instead of several. A lone publisher (one poster, or
// events that arrive apart) finds no commit under way and, after
// aloneAfter such arrivals in a row, no longer yields: no one is coming.
type batcher struct {
	mu      sync.Mutex
	queue   []*publication
	leading bool
	// alone counts the publications in a row that arrived while no batch
	// was being committed or waiting, up to aloneAfter.
	alone int
	// yield is runtime.Gosched, or a test's stand-in.
	yield func()
}

// aloneAfter is how many publications in a row arriving to an idle
// batcher end the yielding (see batcher).
const aloneAfter = 64

// enqueue returns once p is committed.
func (s *Service) enqueue(p *publication) {
	b := &s.batch
	b.mu.Lock()
	if b.leading || len(b.queue) > 0 {
		b.alone = 0
	} else if b.alone < aloneAfter {
		b.alone++
	}
	b.queue = append(b.queue, p)
	if b.leading {
		b.mu.Unlock()
		select {
		case <-p.done:
			return
		case <-p.lead:
		}
		b.mu.Lock()
	}
	b.leading = true
	if len(b.queue) == 1 && b.alone < aloneAfter {
		b.mu.Unlock()
		b.yield()
		b.mu.Lock()
	}
	n := min(len(b.queue), maxBatch)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	b.mu.Unlock()

	s.commitBatch(batch)

	b.mu.Lock()
	if len(b.queue) > 0 {
		close(b.queue[0].lead) // it leads the next batch
	} else {
		b.leading = false
	}
	b.mu.Unlock()
}

// commitBatch stores and delivers a batch of publications, then releases
// their publishers.
func (s *Service) commitBatch(batch []*publication) {
	s.route.RLock()
	gen := s.index.Generation()
	pubs := make([]Publication, len(batch))
	throttled := false
	for i, p := range batch {
		pubs[i] = s.routeAt(p, gen)
		throttled = throttled || slices.ContainsFunc(pubs[i].Targets, func(t Target) bool { return t.Window > 0 })
	}
	// Those queued while the store waits for its rows join when not
	// throttled and writing to those rows only.
	more := func(locked []string) (out []Publication) {
		b := &s.batch
		b.mu.Lock()
		defer b.mu.Unlock()
		kept := b.queue[:0]
		for i, p := range b.queue {
			if len(batch) == maxBatch {
				kept = append(kept, b.queue[i:]...)
				break
			}
			pub := s.routeAt(p, gen)
			if slices.ContainsFunc(pub.Targets, func(t Target) bool {
				_, found := slices.BinarySearch(locked, t.Principal)
				return t.Window > 0 || !found
			}) {
				kept = append(kept, p)
				continue
			}
			batch, out = append(batch, p), append(out, pub)
		}
		clear(b.queue[len(kept):])
		b.queue = kept
		return out
	}
	// Once queued an event is committed or refused with its batch, whatever
	// becomes of the request that brought it.
	s.commit.Lock()
	began := time.Now()
	results, err := s.store.Publish(context.WithoutCancel(s.bg()), PublishBatch{Publications: pubs, Now: s.clock.Now(), Deactivations: s.routed.Load(), More: more})
	if o := s.opts.Observer; o != nil {
		o.StoreOp("publish", time.Since(began), err)
	}
	var delivered []InboxEntry
	for i, p := range batch {
		if p.err = err; err == nil {
			p.res = results[i]
			delivered = append(delivered, p.res.Delivered...)
		}
	}
	s.handOver(s.bg(), delivered, delivered)
	s.commit.Unlock()
	s.route.RUnlock()
	if throttled {
		s.watchers.changed(Windows) // a window may have opened
	}
	if len(delivered) > 0 {
		s.jobsWritten()
	}
	for _, p := range batch {
		close(p.done)
	}
}

// routeAt brings p's matches up to the index generation gen, and returns
// it for the store.
func (s *Service) routeAt(p *publication, gen uint64) Publication {
	if p.gen != gen {
		p.matches, p.gen = s.index.Recheck(p.matches, &p.ev), gen
	}
	return Publication{Event: &p.ev, Raw: p.raw, Targets: targetsOf(p.matches, &p.ev), Source: p.source}
}

// targetsOf lists the deliveries of ev to matched entries: one per channel.
func targetsOf(matches []*Entry, ev *mcpe.Event) []Target {
	targets := make([]Target, 0, len(matches))
	for _, e := range matches {
		for _, c := range e.Delivery.Channels {
			t := Target{SubscriptionID: e.ID, Principal: e.Principal, Channel: c}
			if th := e.Delivery.Throttle; th != nil && c == mcpe.ChannelRealtime {
				t.Group, t.Window = th.Group(ev), th.Length()
			}
			targets = append(targets, t)
		}
	}
	return targets
}

// Poll returns what was delivered to principal after a cursor: at most
// the limit of items, and at most mcpe.MaxPollBytes of events (but always
// one item, so that a poll makes progress). An event that cannot be served
// (nested deeper than the server allows now) is left out with a note
// rather than failing every poll that reaches it. Without a cursor it
// goes on from the Position in ctx (WithPosition), else from the cursor
// last handed to principal; a cursor past the end of the inbox is refused.
func (s *Service) Poll(ctx context.Context, principal string, req mcpe.PollRequest) (mcpe.PollResult, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = mcpe.DefaultPollLimit
	case limit < 0 || limit > mcpe.MaxPollLimit:
		return mcpe.PollResult{}, invalid("limit", "is %d; give a number from 1 to %d, or leave it out for %d", limit, mcpe.MaxPollLimit, mcpe.DefaultPollLimit)
	}
	pos, _ := ctx.Value(positionKey{}).(*Position)
	var after int64
	var err error
	switch {
	case req.Cursor != "":
		after, err = mcpe.ParseCursor(req.Cursor)
	case pos != nil:
		after = pos.seq.Load()
	default:
		after, err = s.store.PollCursor(ctx, principal)
	}
	if err != nil {
		return mcpe.PollResult{}, err
	}
	entries, more, err := s.store.ReadInbox(ctx, principal, after, limit)
	if err != nil {
		return mcpe.PollResult{}, err
	}
	if len(entries) == 0 && after > 0 {
		// Past the end of the inbox (its newest entry, or the newest
		// retention removed), a cursor would hide every entry to come.
		last, err := s.store.LatestInbox(ctx, principal, 1)
		end, err2 := s.store.PrunedThrough(ctx, principal)
		if err = cmp.Or(err, err2); err != nil {
			return mcpe.PollResult{}, err
		}
		if len(last) > 0 {
			end = max(end, last[0].Seq)
		}
		if after > end && req.Cursor != "" {
			return mcpe.PollResult{}, invalid("cursor", "%q is past the end of your inbox, whose newest cursor is %q; pass that, or leave cursor out to continue after the last page you were given", req.Cursor, mcpe.FormatCursor(end))
		}
		after = min(after, end) // one remembered before cursors were checked
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
	if pos != nil {
		pos.seq.Store(next)
	}
	return res, nil
}

// Event returns whole the event req.EventID (events_poll without cursor or
// limit) if it was delivered to principal and retention kept it. Any other
// id, another principal's event's too, gets the same answer.
func (s *Service) Event(ctx context.Context, principal string, req mcpe.PollRequest) (json.RawMessage, error) {
	if req.Cursor != "" || req.Limit != 0 {
		return nil, invalid("eventId", "reads one event on its own; leave out cursor and limit, or leave out eventId to read your inbox page by page")
	}
	var ev json.RawMessage
	var err error
	if uuid.Validate(req.EventID) == nil {
		ev, err = s.store.InboxEvent(ctx, principal, req.EventID)
	}
	switch {
	case err != nil:
		return nil, err
	case ev == nil:
		return nil, invalid("eventId", "no event %.80q in your inbox; give the id of an event delivered to you (event.id in events_poll items and notifications) that retention has kept", req.EventID)
	case s.tooDeep(ev):
		return nil, invalid("eventId", "event %q nests deeper than the %d levels this server serves, so it cannot be read", req.EventID, mcpe.DefaultMaxDataDepth)
	}
	return ev, nil
}

// Position is one connection's place in its principal's inbox, where Poll
// without a cursor goes on from: each host sharing a principal (stdio's
// "local") has its own, so that none takes entries from another. A new one
// starts at the cursor last handed to the principal.
type Position struct{ seq atomic.Int64 }

// positionKey marks a context with the Position of its connection.
type positionKey struct{}

// NewPosition returns a Position for a connection of principal that starts.
func (s *Service) NewPosition(ctx context.Context, principal string) (*Position, error) {
	seq, err := s.store.PollCursor(ctx, principal)
	p := new(Position)
	p.seq.Store(seq)
	return p, err
}

// WithPosition returns ctx carrying the Position of its connection.
func WithPosition(ctx context.Context, p *Position) context.Context {
	return context.WithValue(ctx, positionKey{}, p)
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
		DeliveredAt:     e.CreatedAt.Truncate(time.Millisecond),
	}
	if e.Kind == mcpe.InboxBatch {
		item.Events = []json.RawMessage{} // [], not left out, for a digest of nothing
	} else {
		item.Folded, item.Remaining = e.Remaining, 0
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
		item.Note = fmt.Sprintf("%d event(s) of this delivery left out: their data nests deeper than the %d levels this server serves", left, mcpe.DefaultMaxDataDepth)
	}
	if len(e.SubscriptionIDs) == 1 { // else the whole events, all that any of them asked for
		_, d := s.Rendering(e.SubscriptionIDs[0])
		item.Event, item.Events = d.Shape(item.Event), d.ShapeAll(item.Events)
	}
	return item
}

// tooDeep reports whether a stored event nests deeper than the server
// serves (it was accepted before the bound, or under a higher one).
func (s *Service) tooDeep(event json.RawMessage) bool {
	// The event object and its data field add a level each.
	return mcpe.JSONDepth(event) > mcpe.DefaultMaxDataDepth+1
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
