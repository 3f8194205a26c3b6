package mcpserver

// This file serves what the go-sdk v1.8 does not on subscriptions/listen
// (protocol 2026-07-28), the stream on which a client hears notifications
// it opted in to: SEP-3415's eventsListChanged, and, on stateless
// Streamable HTTP, where a session lasts one request, the deliveries of
// MCPE subscriptions (this server's mcpeEvents field) and of event://
// resources. The SDK handles subscriptions/listen itself and drops filter
// fields it does not know: the server reads them first (the stamp of
// events_ext_http.go), writes the acknowledgement itself with them echoed,
// and keeps the stream open until the client cancels it, the session ends
// or the server shuts down (then with the empty result that closes a
// stream gracefully).
//
// notifications/events/list_changed (SEP-3415, "Dynamic event types")
// goes out when what events/list answers changes while the server runs: a
// type posted to POST /v1/events for the first time in the catalog's
// window, or one that left it (the sources' own types are fixed by the
// configuration). Under 2026-07-28 it goes only on a listen stream that
// asked for it, as the text says; under 2025-11-25, which has no
// subscriptions/listen, on the session's channel, as the core list_changed
// notifications do there, to the sessions that declared the extension in
// initialize or called events/list.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
)

const (
	notifyEventsListChanged = "notifications/events/list_changed"
	methodListen            = "subscriptions/listen"
	methodListenAck         = "notifications/subscriptions/acknowledged"
	// metaListen is the private _meta key the server writes into every
	// subscriptions/listen request it reads (overwriting what a client put
	// there): which of the filter fields the SDK drops it set.
	metaListen = "mcpe-server/listen"
	// protocolListen is the first protocol version with
	// subscriptions/listen.
	protocolListen = "2026-07-28"
)

// ListChangedDelay is how long the server waits after a change of
// the event types before it tells the listeners, so that a burst of new
// types makes one notification.
const ListChangedDelay = time.Second

// listChangedSendTimeout bounds one list_changed write to a 2025-11-25
// session.
const listChangedSendTimeout = 5 * time.Second

// typeWatch is who hears of changes to the event types, and what they
// were last told.
type typeWatch struct {
	clk  clock.Clock
	stop func() // ends the catalog's watch

	mu      sync.Mutex
	timer   clock.Timer // the pending announcement
	closed  bool
	last    [sha256.Size]byte
	streams map[*listenState]struct{}
	legacy  map[*mcp.ServerSession]struct{}
	listens map[string]int // by principal, see holdListen
}

// listenState is a subscriptions/listen request that asked for something
// the SDK does not serve (listenFields, or event:// resources on stateless
// HTTP); set in its context before the SDK handles it, filled in when its
// acknowledgement is written.
type listenState struct {
	// asked is what the request's filter asked for of what the SDK does
	// not serve; delivers says the listen's session is to receive the
	// principal's deliveries while it is open (stateless Streamable HTTP,
	// where a session lives as long as its request).
	asked     listenFields
	delivers  bool
	principal string

	id   any
	ctx  context.Context
	sink *Sink
	// mu is held while the acknowledgement is written, so that no
	// notification goes before it; acked says it went.
	mu     sync.Mutex
	acked  bool
	detach func() // ends the delivery of the principal's events, if any
}

// notifyTypes sends st a list_changed.
func (st *listenState) notifyTypes() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.acked {
		return nil
	}
	raw, _ := json.Marshal(map[string]any{"_meta": map[string]any{metaSubscriptionID: st.id}})
	return st.sink.Notify(st.ctx, notifyEventsListChanged, raw)
}

type listenStateKey struct{}

// watchTypes starts watching the catalog, when it can say that it changed.
func (s *Server) watchTypes() {
	w := &typeWatch{clk: s.opts.Clock,
		streams: make(map[*listenState]struct{}), legacy: make(map[*mcp.ServerSession]struct{}), listens: make(map[string]int)}
	s.types = w
	watcher, ok := s.opts.Catalog.(interface{ Watch(func()) func() })
	if s.events == nil || !ok {
		return
	}
	w.last, _ = s.typesFingerprint()
	w.stop = watcher.Watch(s.typesChanged)
}

// typesFingerprint is a digest of what events/list answers.
func (s *Server) typesFingerprint() ([sha256.Size]byte, error) {
	types, err := s.eventTypes(context.Background())
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	b, err := json.Marshal(types)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// typesChanged is called by the catalog, on the path that accepted an
// event: it only arms the announcement.
func (s *Server) typesChanged() {
	w := s.types
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil || w.closed {
		return
	}
	w.timer = w.clk.AfterFunc(ListChangedDelay, s.announceTypes)
}

// announceTypes tells the listeners that the event types changed, when
// what events/list answers is not what it was at the last announcement.
func (s *Server) announceTypes() {
	w := s.types
	w.mu.Lock()
	w.timer = nil
	w.mu.Unlock()
	fp, err := s.typesFingerprint()
	if err != nil {
		s.log.Warn("events/list_changed: listing the event types failed", "error", err)
		return
	}
	w.mu.Lock()
	if w.closed || fp == w.last {
		w.mu.Unlock()
		return
	}
	w.last = fp
	streams := slices.Collect(maps.Keys(w.streams))
	legacy := maps.Clone(w.legacy)
	w.mu.Unlock()
	for _, ss := range s.sessionsWhere(func(ss *mcp.ServerSession, _ string) bool { return declaresEvents(ss) }) {
		legacy[ss] = struct{}{}
	}

	for _, st := range streams {
		if err := st.notifyTypes(); err != nil && st.ctx.Err() == nil {
			s.log.Debug("events/list_changed: a listen stream did not take it", "error", err)
		}
	}
	for ss := range legacy {
		sink, err := SessionSink(ss)
		if err != nil {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), listChangedSendTimeout)
			defer cancel()
			if err := sink.Notify(ctx, notifyEventsListChanged, json.RawMessage(`{}`)); err != nil {
				s.log.Debug("events/list_changed: a session did not take it", "error", err)
			}
		}()
	}
}

// closeTypeWatch stops the announcements.
func (s *Server) closeTypeWatch() {
	w := s.types
	w.mu.Lock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
}

// legacySession reports whether ss speaks a protocol older than
// 2026-07-28, where notifications go on the session's own channel.
func legacySession(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion < protocolListen
}

// declaresEvents reports whether ss is a 2025-11-25 session whose client
// declared the events extension in initialize.
func declaresEvents(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.ProtocolVersion >= protocolListen || p.Capabilities == nil {
		return false
	}
	_, ok := p.Capabilities.Extensions[EventsExtension]
	return ok
}

// listsTypes records that ss, a 2025-11-25 session, called events/list:
// it hears of changes from then on, until it ends.
func (s *Server) listsTypes(ss *mcp.ServerSession) {
	if ss == nil || !legacySession(ss) || s.types.stop == nil {
		return
	}
	w := s.types
	w.mu.Lock()
	_, known := w.legacy[ss]
	if !known && !w.closed {
		w.legacy[ss] = struct{}{}
	}
	w.mu.Unlock()
	if known {
		return
	}
	s.afterSession(ss, func() {
		w.mu.Lock()
		delete(w.legacy, ss)
		w.mu.Unlock()
	})
}

// listenFields are the fields of a subscriptions/listen filter that the
// go-sdk does not know.
type listenFields struct {
	// EventsListChanged is SEP-3415's: notifications/events/list_changed.
	EventsListChanged bool `json:"eventsListChanged,omitempty"`
	// MCPEEvents is this server's: the deliveries of the caller's MCPE
	// subscriptions (events/event, events/batch,
	// events/subscription_expired) on this stream. Only Streamable HTTP
	// under 2026-07-28 needs it: there a session lasts one request, and a
	// listen stream is the only way notifications reach the client. On
	// stdio they come on the connection, as under 2025-11-25.
	MCPEEvents bool `json:"mcpeEvents,omitempty"`
}

const (
	fieldEventsListChanged = "eventsListChanged"
	fieldMCPEEvents        = "mcpeEvents"
)

// listenStamp reads the stamp of a subscriptions/listen request.
func listenStamp(meta mcp.Meta) listenFields {
	v, _ := meta[metaListen].(map[string]any)
	types, _ := v[fieldEventsListChanged].(bool)
	events, _ := v[fieldMCPEEvents].(bool)
	return listenFields{EventsListChanged: types, MCPEEvents: events}
}

// statelessHTTP reports whether ss serves one Streamable HTTP request of
// protocol 2026-07-28: no session ID, and HTTP headers.
func statelessHTTP(ss *mcp.ServerSession, extra *mcp.RequestExtra) bool {
	return ss != nil && ss.ID() == "" && extra != nil && extra.Header != nil
}

// listenMiddleware serves what the SDK does not on subscriptions/listen:
// eventsListChanged, and on stateless Streamable HTTP the deliveries of
// MCPE subscriptions (mcpeEvents) and of event:// resources. It marks the
// request's context before the SDK handles it (ackListen then does the
// rest when the acknowledgement goes out) and, once the SDK answered,
// keeps the stream open while the client listens.
func (s *Server) listenMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodListen {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.SubscriptionsListenParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if p == nil || ss == nil {
			return next(ctx, method, req)
		}
		st := &listenState{asked: listenStamp(p.Meta)}
		if s.types.stop == nil {
			st.asked.EventsListChanged = false
		}
		stateless := statelessHTTP(ss, req.GetExtra())
		if !stateless {
			st.asked.MCPEEvents = false
		}
		// On stateless HTTP the listen's session is one that deliveries
		// go to while it is open, when it asked for them or for event://
		// resources.
		st.delivers = st.asked.MCPEEvents || stateless && p.Notifications != nil &&
			slices.ContainsFunc(p.Notifications.ResourceSubscriptions, func(uri string) bool { return strings.HasPrefix(uri, EventScheme) })
		if !st.asked.EventsListChanged && !st.delivers {
			return next(ctx, method, req)
		}
		st.principal = s.requestPrincipal(ctx, ss, req.GetExtra())
		release, err := s.holdListen(st.principal)
		if err != nil {
			return nil, err
		}
		defer release()
		ctx = context.WithValue(ctx, listenStateKey{}, st)
		res, err := next(ctx, method, req)
		st.mu.Lock()
		acked := st.acked
		st.mu.Unlock()
		if !acked {
			return res, err
		}
		defer s.endListen(st)
		if err != nil {
			return res, err
		}
		select {
		case <-ctx.Done():
		case <-s.streamsCtx.Done():
		}
		return res, nil
	}
}

// ackMiddleware learns the ID of each subscriptions/listen request from
// its acknowledgement, so that the events of its resource subscriptions
// carry it in _meta as protocol 2026-07-28 asks, and writes the
// acknowledgement itself when the request asked for eventsListChanged.
func (s *Server) ackMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListenAck {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p != nil {
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
					s.res.acknowledged(ss, p.Meta[metaListenID], p.Notifications.ResourceSubscriptions)
				}
			}
			if done, err := s.ackListen(ctx, req); done {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// holdListen counts a listen of principal that this server serves (held
// open, and on stateless HTTP a session deliveries go to), refusing one
// past maxSessions; release ends it.
func (s *Server) holdListen(principal string) (release func(), err error) {
	max := s.maxSessions
	w := s.types
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.listens[principal] >= max {
		return nil, eventsError(CodeResourceExhausted, map[string]any{"limit": "listens",
			"reason": fmt.Sprintf("this principal has %d subscriptions/listen streams open that ask for eventsListChanged, mcpeEvents or event:// resources, the most it may; end one first", max)})
	}
	w.listens[principal]++
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.listens[principal]--; w.listens[principal] <= 0 {
			delete(w.listens, principal)
		}
	}, nil
}

// endListen stops what ackListen started.
func (s *Server) endListen(st *listenState) {
	w := s.types
	w.mu.Lock()
	delete(w.streams, st)
	w.mu.Unlock()
	st.mu.Lock()
	detach := st.detach
	st.detach = nil
	st.mu.Unlock()
	if detach != nil {
		detach()
	}
}

// ackListen writes the acknowledgement of a subscriptions/listen request
// that listenMiddleware marked, in place of the SDK's, with what it asked
// of this server echoed, and starts what it asked for. It reports false
// for any other acknowledgement, which the SDK sends.
func (s *Server) ackListen(ctx context.Context, req mcp.Request) (bool, error) {
	st, _ := ctx.Value(listenStateKey{}).(*listenState)
	p, _ := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if st == nil || p == nil || ss == nil {
		return false, nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return false, nil
	}
	fields, err := jsonObject(raw)
	notes, err2 := jsonObject(fields["notifications"])
	if err != nil || err2 != nil {
		return false, nil
	}
	if st.asked.EventsListChanged {
		notes[fieldEventsListChanged] = json.RawMessage("true")
	}
	if st.asked.MCPEEvents {
		notes[fieldMCPEEvents] = json.RawMessage("true")
	}
	fields["notifications"], _ = json.Marshal(notes)
	raw, _ = json.Marshal(fields)
	sink, err := SessionSink(ss)
	if err != nil {
		return true, err
	}
	// Started before the acknowledgement is written, so that nothing
	// right after it is missed; held, so that what they send waits for
	// the acknowledgement.
	st.id, st.ctx, st.sink = p.Meta[metaListenID], ctx, sink
	st.mu.Lock()
	defer st.mu.Unlock()
	w := s.types
	if st.asked.EventsListChanged {
		w.mu.Lock()
		if !w.closed {
			w.streams[st] = struct{}{}
		}
		w.mu.Unlock()
	}
	if st.delivers {
		st.detach = s.opts.Sessions.Attach(st.principal, s.wrapSink(ss, listenSink{st}))
	}
	if err := sink.Notify(ctx, methodListenAck, raw); err != nil {
		w.mu.Lock()
		delete(w.streams, st)
		w.mu.Unlock()
		if st.detach != nil {
			st.detach()
			st.detach = nil
		}
		return true, err
	}
	st.acked = true
	return true, nil
}

// listenSink delivers the MCPE notifications of a principal on a
// subscriptions/listen stream of stateless Streamable HTTP, each with the
// listen's id in _meta; when the listen did not ask for them (it is there
// for event:// resources, which wrapSink serves), it passes over them:
// they stay in the inbox, which events_poll reads.
type listenSink struct{ st *listenState }

// Keeps reports whether the listen takes what was kept for its principal.
func (l listenSink) Keeps() bool { return l.st.asked.MCPEEvents }

func (l listenSink) Write(ctx context.Context, msgs []realtime.Message) error {
	st := l.st
	if !st.asked.MCPEEvents {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	wctx, cancel := context.WithCancel(st.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	id, err := json.Marshal(st.id)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := st.sink.Notify(wctx, m.Method, withListenID(m.Params, id)); err != nil {
			return err
		}
	}
	return nil
}

// withListenID puts _meta with the listen's id first in params, a JSON
// object without _meta of its own.
func withListenID(params json.RawMessage, id []byte) json.RawMessage {
	t := bytes.TrimSpace(params)
	if len(t) < 2 || t[0] != '{' {
		return params
	}
	out := make([]byte, 0, len(t)+len(id)+48)
	out = append(out, `{"_meta":{"`+metaSubscriptionID+`":`...)
	out = append(out, id...)
	out = append(out, '}')
	if rest := bytes.TrimSpace(t[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, t[1:]...)
}
