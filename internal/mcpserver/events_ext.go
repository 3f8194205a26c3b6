package mcpserver

// This file and the other events_ext*.go files serve the SEP-3415 events
// extension (io.modelcontextprotocol/events): events/list, events/poll and
// events/stream, beside the MCPE tools and on the same state. A poll or
// push subscription, keyed on (principal, name, arguments), is an MCPE
// subscription with an ID derived from that key: it collects matching
// events into the principal's inbox between polls and across restarts, as
// events_subscribe's do, and a cursor is a position in that inbox.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// EventsExtension is the identifier of the SEP-3415 events extension.
const EventsExtension = "io.modelcontextprotocol/events"

// metaSubscriptionID is the _meta key that carries a push stream's
// subscription ID (its events/stream request's JSON-RPC id).
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// FilterEventType is the one event type of events/list whose arguments are
// an MCPE filter (eventTypes patterns, tags, priority): every event that
// matches it, of any source.
const FilterEventType = "mcpe.filter"

// Defaults of the events extension.
const (
	// DefaultEventsHeartbeat is how often a push stream sends a heartbeat;
	// the SEP asks for at least every 30 seconds.
	DefaultEventsHeartbeat = 30 * time.Second
	// DefaultNextPoll is the nextPollMs of a poll that drained everything.
	DefaultNextPoll = 5 * time.Second
	// eventsListPage is the most event types of one events/list page.
	eventsListPage = 100
	// defaultMaxEvents and maxMaxEvents bound the events of one poll.
	defaultMaxEvents, maxMaxEvents = 100, 1000
	// inboxPage is how many inbox entries one read takes, and
	// inboxPagesPerCall how many reads one poll or drain makes at most.
	inboxPage, inboxPagesPerCall = 200, 10
)

// EventsBackend is what the events extension needs of the subscriptions
// domain; *subscriptions.Service implements it. A Service that does not
// leaves the extension out.
type EventsBackend interface {
	Keyed(ctx context.Context, principal, id string, f mcpe.Filter) (*subscriptions.Subscription, bool, error)
	ReadInbox(ctx context.Context, principal string, after int64, limit int) ([]subscriptions.InboxEntry, bool, error)
	PrunedThrough(ctx context.Context, principal string) (int64, error)
	InboxHead(ctx context.Context, principal string) (int64, error)
}

// eventTypeInfo is one event type of events/list.
type eventTypeInfo struct {
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Delivery      []string        `json:"delivery"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	PayloadSchema json.RawMessage `json:"payloadSchema"`
	Meta          map[string]any  `json:"_meta,omitempty"`
}

// deliveryModes are the delivery modes this server offers for every type.
func (s *Server) deliveryModes() []string {
	if s.webhooks != nil {
		return []string{"poll", "push", "webhook"}
	}
	return []string{"poll", "push"}
}

// whereArg is the schema of an MCPE filter's where, in the arguments.
const whereArg = `"where":{"type":"string","description":"Keep the events this CEL condition on type, priority, tags and data holds for, such as data.pull_request.merged == true."},`

// typeArgsSchema is the inputSchema of a catalog type: optional tags,
// priorities and condition that narrow it, as in an MCPE filter.
var typeArgsSchema = json.RawMessage(`{"type":"object","properties":{` + whereArg +
	`"tags":{"type":"array","items":{"type":"string"},"description":"Keep the events that carry at least one of these tags, such as \"repo:acme/web\"."},` +
	`"priority":{"type":"array","items":{"type":"string","enum":["low","normal","high","critical"]},"description":"Keep the events with one of these priorities."}},` +
	`"additionalProperties":false}`)

// filterArgsSchema is the inputSchema of FilterEventType: an MCPE filter.
var filterArgsSchema = func() json.RawMessage {
	help, _ := json.Marshal(mcpe.PatternHelp)
	return json.RawMessage(`{"type":"object","properties":{` +
		`"eventTypes":{"type":"array","items":{"type":"string"},"maxItems":64,"description":` + string(help) + `},` +
		`"tags":{"type":"array","items":{"type":"string"},"description":"Keep the events that carry at least one of these tags."},` + whereArg +
		`"priority":{"type":"array","items":{"type":"string","enum":["low","normal","high","critical"]},"description":"Keep the events with one of these priorities."}},` +
		`"minProperties":1,"additionalProperties":false}`)
}()

// filterPayloadSchema is the payloadSchema of FilterEventType: the whole
// MCPE event, whose type tells which one it is.
var filterPayloadSchema = json.RawMessage(`{"type":"object","required":["id","type","data","metadata"],"properties":{` +
	`"id":{"type":"string"},"type":{"type":"string","description":"The event's type, such as github.push."},` +
	`"data":{"description":"The event's data, as the type's own payloadSchema says."},` +
	`"metadata":{"type":"object","properties":{"sourceEventId":{"type":"string"},"timestamp":{"type":"string","format":"date-time"},` +
	`"priority":{"type":"string","enum":["low","normal","high","critical"]},"tags":{"type":"array","items":{"type":"string"}}}}}}`)

// anyObject is the payloadSchema of a type whose source gives none.
var anyObject = json.RawMessage(`{"type":"object"}`)

// seenSource and seenDescription describe, in events/list, a type that no
// source declares but that was posted to POST /v1/events lately (the
// catalog's seenRecently). The description does not change with each
// post, so that posting it again does not change the list.
const (
	seenSource      = "ingest"
	seenDescription = "Posted to POST /v1/events lately (the catalog's seenRecently); no schema is declared for it, " +
		"so its data is whatever the sender posted: treat it as untrusted input."
)

// eventTypes lists what events/list shows, FilterEventType first, then the
// catalog's types (a family's when it knows them) and the types posted
// lately, in name order. Other families (a placeholder such as <name> in
// the type) are reached through FilterEventType.
func (s *Server) eventTypes(ctx context.Context) ([]eventTypeInfo, error) {
	out := []eventTypeInfo{{
		Name: FilterEventType,
		Description: "Every event that matches an MCPE filter, from any source (the same filter as events_subscribe): " +
			"eventTypes patterns, tags, priorities and a where condition. Each occurrence's data is the whole event; its type field tells which.",
		Delivery:      s.deliveryModes(),
		InputSchema:   filterArgsSchema,
		PayloadSchema: filterPayloadSchema,
	}}
	if s.opts.Catalog == nil {
		return out, nil
	}
	cat, err := s.opts.Catalog.Get(ctx, mcpe.CatalogRequest{})
	if err != nil {
		return nil, err
	}
	var types []mcpe.CatalogType
	for _, t := range cat.Types {
		types = append(types, t)
		for _, typ := range t.Types { // the types of a family, when known
			types = append(types, mcpe.CatalogType{Source: t.Source, EventType: mcpe.EventType{Type: typ, Description: t.Description, DataSchema: t.DataSchema}})
		}
	}
	for _, t := range cat.SeenRecently {
		types = append(types, mcpe.CatalogType{Source: seenSource, EventType: mcpe.EventType{Type: t.Type, Description: seenDescription}})
	}
	// A type a source declares comes before the same type seen posted,
	// which then adds nothing.
	slices.SortStableFunc(types, func(a, b mcpe.CatalogType) int { return strings.Compare(a.Type, b.Type) })
	for _, t := range types {
		if mcpe.ValidateType(t.Type) != nil || (len(out) > 1 && out[len(out)-1].Name == t.Type) {
			continue
		}
		payload := t.DataSchema
		if len(payload) == 0 {
			payload = anyObject
		}
		out = append(out, eventTypeInfo{
			Name:          t.Type,
			Description:   t.Description,
			Delivery:      s.deliveryModes(),
			InputSchema:   typeArgsSchema,
			PayloadSchema: payload,
			Meta:          map[string]any{"source": t.Source},
		})
	}
	return out, nil
}

// eventsListParams are the params of events/list.
type eventsListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type eventsListResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType"`
	Events     []eventTypeInfo `json:"events"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

func (s *Server) eventsList(ctx context.Context, ss *mcp.ServerSession, p *eventsListParams) (*eventsListResult, error) {
	s.listsTypes(ss)
	start := 0
	if p != nil && p.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "page:"))
		if err != nil || err2 != nil || !bytes.HasPrefix(b, []byte("page:")) || n <= 0 {
			return nil, invalidParams("cursor %q is not one this server gave; pass the nextCursor of a previous events/list, or none for the first page", p.Cursor)
		}
		start = n
	}
	all, err := s.eventTypes(ctx)
	if err != nil {
		return nil, err
	}
	res := &eventsListResult{ResultType: "complete", Events: []eventTypeInfo{}}
	if start < len(all) {
		end := min(start+eventsListPage, len(all))
		res.Events = all[start:end]
		if end < len(all) {
			res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("page:" + strconv.Itoa(end)))
		}
	}
	return res, nil
}

// subscriptionKey is what a poll or push subscription is for.
type subscriptionKey struct {
	name   string
	filter mcpe.Filter
}

// resolve checks name and arguments and returns the MCPE filter they stand
// for, in a canonical form (sorted, without repeats) so that arguments
// that mean the same name the same subscription.
func (s *Server) resolve(ctx context.Context, name string, args json.RawMessage) (subscriptionKey, error) {
	if name == "" {
		return subscriptionKey{}, invalidParams("name is required: an event type from events/list")
	}
	var f mcpe.Filter
	accepted := "tags and priority (arrays of strings) and where (a CEL condition)"
	if name == FilterEventType {
		accepted = "eventTypes, " + accepted
	} else {
		types, err := s.eventTypes(ctx)
		if err != nil {
			return subscriptionKey{}, err
		}
		if !slices.ContainsFunc(types, func(t eventTypeInfo) bool { return t.Name == name }) {
			return subscriptionKey{}, eventsError(CodeNotFound, map[string]any{"kind": "event", "name": name,
				"reason": fmt.Sprintf("no event type %q; events/list shows the types this server delivers", name)})
		}
		f.EventTypes = []string{name}
	}
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		var a struct {
			EventTypes []string        `json:"eventTypes"`
			Tags       []string        `json:"tags"`
			Priority   []mcpe.Priority `json:"priority"`
			Where      string          `json:"where"`
		}
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return subscriptionKey{}, invalidParams("arguments of %q: %v; an object with %s is accepted", name, err, accepted)
		}
		if name != FilterEventType && a.EventTypes != nil {
			return subscriptionKey{}, invalidParams("arguments of %q take no eventTypes; use the type %q to match patterns", name, FilterEventType)
		}
		if name == FilterEventType {
			f.EventTypes = a.EventTypes
		}
		f.Tags, f.Priority, f.Where = a.Tags, a.Priority, a.Where
	}
	if name == FilterEventType && len(f.EventTypes)+len(f.Tags)+len(f.Priority)+len(f.Where) == 0 {
		return subscriptionKey{}, invalidParams("arguments of %q need at least one of eventTypes, tags, priority and where, such as {\"eventTypes\":[\"github.*\"]}", FilterEventType)
	}
	slices.Sort(f.EventTypes)
	f.EventTypes = slices.Compact(f.EventTypes)
	slices.Sort(f.Tags)
	f.Tags = slices.Compact(f.Tags)
	slices.Sort(f.Priority)
	f.Priority = slices.Compact(f.Priority)
	if err := f.Validate(); err != nil {
		return subscriptionKey{}, domainError(err)
	}
	return subscriptionKey{name: name, filter: f}, nil
}

// pollIDPrefix starts the ID of a poll or push subscription.
const pollIDPrefix = "sep-"

// id derives the MCPE subscription ID of (principal, k).
func (k subscriptionKey) id(principal string) string {
	f, _ := json.Marshal(k.filter)
	return pollIDPrefix + shortHash(principal+"\x00"+k.name+"\x00"+string(f), 16)
}

// ManagedPrefixes are the ID prefixes of the subscriptions the events
// extension makes, keyed on what they are for, and whose webhook endpoint
// it verified: events_update does not change them (subscriptions.Options
// Managed).
func ManagedPrefixes() []subscriptions.ManagedPrefix {
	return []subscriptions.ManagedPrefix{
		{Prefix: webhookFilterIDPrefix, Owner: "SEP-3415 events/subscribe (webhook delivery)"},
		{Prefix: webhookIDPrefix, Owner: "SEP-3415 events/subscribe (webhook delivery)"},
		{Prefix: pollIDPrefix, Owner: "SEP-3415 events/poll and events/stream"},
	}
}

// cursorCheck ties cursors to one life of one subscription: one that was
// deleted and made again has another.
func cursorCheck(sub *subscriptions.Subscription) string {
	return shortHash(sub.ID+"\x00"+strconv.FormatInt(sub.CreatedAt.UnixNano(), 10), 6)
}

// shortHash is the first n bytes of the SHA-256 of s, in hex.
func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:n])
}

// formatEventsCursor makes the opaque cursor of seq for sub.
func formatEventsCursor(sub *subscriptions.Subscription, seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("1." + strconv.FormatInt(seq, 10) + "." + cursorCheck(sub)))
}

// parseEventsCursor reads a cursor of sub; ok is false when it is not one.
func parseEventsCursor(sub *subscriptions.Subscription, c string) (seq int64, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 3 || parts[0] != "1" || parts[2] != cursorCheck(sub) {
		return 0, false
	}
	seq, err = strconv.ParseInt(parts[1], 10, 64)
	return seq, err == nil && seq >= 0
}

// start finds where a subscription begins: at the inbox head for a null
// cursor, else at the cursor. A cursor that is not one of this
// subscription's, or that retention passed, starts at a position the server
// can serve from, with truncated.
func (s *Server) start(ctx context.Context, principal string, sub *subscriptions.Subscription, cursor *string) (seq int64, truncated bool, err error) {
	if cursor == nil || *cursor == "" {
		seq, err = s.events.InboxHead(ctx, principal)
		return seq, false, err
	}
	seq, ok := parseEventsCursor(sub, *cursor)
	if !ok {
		seq, err = s.events.InboxHead(ctx, principal)
		return seq, true, err
	}
	pruned, err := s.events.PrunedThrough(ctx, principal)
	if err != nil {
		return 0, false, err
	}
	if pruned > seq {
		return pruned, true, nil
	}
	return seq, false, nil
}

// occurrence is one EventOccurrence.
type occurrence struct {
	EventID   string          `json:"eventId"`
	Name      string          `json:"name"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// occurrences turns an inbox entry into the occurrences of subscription k,
// leaving out those older than floor (when set); skipped counts those.
func occurrences(k subscriptionKey, e subscriptions.InboxEntry, floor time.Time) (out []occurrence, skipped int) {
	raws := e.Events
	if e.Kind == mcpe.InboxEvent {
		raws = []json.RawMessage{e.Event}
	}
	for _, raw := range raws {
		var ev mcpe.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			continue
		}
		if !floor.IsZero() && ev.Metadata.Timestamp.Before(floor) {
			skipped++
			continue
		}
		data := ev.Data
		if k.name == FilterEventType {
			data = raw
		} else if len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
			// The SEP's data is an object; a source that sent another
			// JSON value has it wrapped.
			wrapped, _ := json.Marshal(map[string]json.RawMessage{"value": orNull(data)})
			data = wrapped
		}
		out = append(out, occurrence{EventID: ev.ID, Name: k.name, Timestamp: ev.Metadata.Timestamp.UTC().Format(time.RFC3339Nano), Data: data})
	}
	return out, skipped
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// eventsPollParams are the params of events/poll: those of events/stream
// and maxEvents.
type eventsPollParams struct {
	eventsStreamParams
	MaxEvents *int `json:"maxEvents,omitempty"`
}

type eventsPollResult struct {
	mcp.ResultBase
	ResultType string       `json:"resultType"`
	Events     []occurrence `json:"events"`
	Cursor     string       `json:"cursor"`
	Truncated  bool         `json:"truncated"`
	HasMore    bool         `json:"hasMore"`
	NextPollMs int64        `json:"nextPollMs"`
}

// floorOf returns the time before which events are not replayed, or zero.
func (s *Server) floorOf(maxAgeMs *int64, cursor *string) (time.Time, error) {
	if maxAgeMs == nil {
		return time.Time{}, nil
	}
	if *maxAgeMs < 0 {
		return time.Time{}, invalidParams("maxAgeMs is %d; give a number of milliseconds of 0 or more, or leave it out", *maxAgeMs)
	}
	if cursor == nil || *cursor == "" {
		return time.Time{}, nil
	}
	if *maxAgeMs > math.MaxInt64/int64(time.Millisecond) {
		return time.Time{}, nil // longer than any history: no floor
	}
	return s.opts.Clock.Now().Add(-time.Duration(*maxAgeMs) * time.Millisecond), nil
}

// subscribeKeyed resolves name and arguments for the principal of ss and
// returns its subscription, made now if it is new.
func (s *Server) subscribeKeyed(ctx context.Context, ss *mcp.ServerSession, name string, args json.RawMessage) (string, subscriptionKey, *subscriptions.Subscription, error) {
	// The principal requestMiddleware read from the request, token included:
	// the session may not be attached yet.
	principal := s.requestPrincipal(ctx, ss, nil)
	k, err := s.resolve(ctx, name, args)
	if err != nil {
		return "", k, nil, err
	}
	sub, _, err := s.events.Keyed(ctx, principal, k.id(principal), k.filter)
	if err != nil {
		return "", k, nil, domainError(err)
	}
	return principal, k, sub, nil
}

func (s *Server) eventsPoll(ctx context.Context, ss *mcp.ServerSession, p *eventsPollParams) (*eventsPollResult, error) {
	if p == nil {
		return nil, invalidParams("params are required: name, and arguments and cursor when needed")
	}
	max := defaultMaxEvents
	if p.MaxEvents != nil {
		if *p.MaxEvents < 1 || *p.MaxEvents > maxMaxEvents {
			return nil, invalidParams("maxEvents is %d; give a number from 1 to %d, or leave it out for %d", *p.MaxEvents, maxMaxEvents, defaultMaxEvents)
		}
		max = *p.MaxEvents
	}
	floor, err := s.floorOf(p.MaxAgeMs, p.Cursor)
	if err != nil {
		return nil, err
	}
	principal, k, sub, err := s.subscribeKeyed(ctx, ss, p.Name, p.Arguments)
	if err != nil {
		return nil, err
	}
	seq, truncated, err := s.start(ctx, principal, sub, p.Cursor)
	if err != nil {
		return nil, err
	}
	res := &eventsPollResult{ResultType: "complete", Events: []occurrence{}, NextPollMs: DefaultNextPoll.Milliseconds()}
	if p.Cursor != nil && *p.Cursor != "" {
		r, err := s.readSub(ctx, principal, k, sub.ID, seq, floor, max, func(o occurrence, _ int64) error {
			res.Events = append(res.Events, o)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if r.expired {
			return nil, eventsError(CodeNotFound, map[string]any{"kind": "subscription",
				"reason": "the subscription expired (an expiresAt set with events_update); poll with a null cursor to subscribe again"})
		}
		seq, truncated, res.HasMore = r.seq, truncated || r.skipped > 0, r.more
	}
	res.Cursor, res.Truncated = formatEventsCursor(sub, seq), truncated
	if res.HasMore {
		res.NextPollMs = 0
	}
	return res, nil
}

// readResult is what readSub read.
type readResult struct {
	seq     int64 // the position read up to
	more    bool  // entries follow
	skipped int   // the occurrences the floor left out
	expired bool  // the subscription expired
}

// readSub reads principal's inbox after seq for subscription id and hands
// its occurrences to emit, with the entry's position, at most max (0: no
// bound) in whole entries, and at most inboxPagesPerCall reads. It stops
// after an entry that says the subscription expired.
func (s *Server) readSub(ctx context.Context, principal string, k subscriptionKey, id string, seq int64, floor time.Time, max int, emit func(o occurrence, seq int64) error) (readResult, error) {
	r := readResult{seq: seq}
	n := 0
	for range inboxPagesPerCall {
		entries, more, err := s.events.ReadInbox(ctx, principal, r.seq, inboxPage)
		if err != nil {
			return r, err
		}
		for i, e := range entries {
			if slices.Contains(e.SubscriptionIDs, id) { // delivered to it
				if e.Kind == mcpe.InboxExpired {
					r.seq, r.expired = e.Seq, true
					return r, nil
				}
				occ, sk := occurrences(k, e, floor)
				r.skipped += sk
				if max > 0 && n > 0 && n+len(occ) > max {
					r.more = true
					return r, nil
				}
				for _, o := range occ {
					if err := emit(o, e.Seq); err != nil {
						return r, err
					}
				}
				n += len(occ)
			}
			r.seq = e.Seq
			if max > 0 && n >= max && (i < len(entries)-1 || more) {
				r.more = true
				return r, nil
			}
		}
		if !more {
			return r, nil
		}
	}
	r.more = true
	return r, nil
}

// addEventsExtension registers the extension's methods when the Service
// can serve them.
func (s *Server) addEventsExtension(heartbeat time.Duration) error {
	if s.events == nil {
		return nil
	}
	if heartbeat <= 0 {
		heartbeat = DefaultEventsHeartbeat
	}
	s.eventsHeartbeat = heartbeat
	errs := []error{
		mcp.AddReceivingCustomMethod(s.mcp, "events/list", s.eventsList),
		mcp.AddReceivingCustomMethod(s.mcp, "events/poll", s.eventsPoll),
		mcp.AddReceivingCustomMethod(s.mcp, methodEventsStream, s.eventsStream),
	}
	if s.webhooks != nil {
		errs = append(errs,
			mcp.AddReceivingCustomMethod(s.mcp, "events/subscribe", s.eventsSubscribe),
			mcp.AddReceivingCustomMethod(s.mcp, "events/unsubscribe", s.eventsUnsubscribe))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register the events extension: %w", err)
	}
	return nil
}
