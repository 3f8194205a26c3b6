package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultStreamHeartbeat is the heartbeat interval a stream expects when
// StreamLoop.Heartbeat is zero: the SEP asks servers for one at least
// every 30 seconds.
const DefaultStreamHeartbeat = 30 * time.Second

// silenceFactor is how many heartbeat intervals of silence make a stream
// dead by default.
const silenceFactor = 3

// EventsStreamRequest are the params of events/stream.
type EventsStreamRequest struct {
	// Name is an event type of events/list; required.
	Name string `json:"name"`
	// Arguments narrow the type, as its inputSchema says; nil for none.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Cursor is where to resume from, such as one OnCursor saved; nil
	// starts at the current position.
	Cursor *string `json:"cursor,omitempty"`
	// MaxAgeMs leaves out events older than that on replay; nil for all.
	MaxAgeMs *int64 `json:"maxAgeMs,omitempty"`
}

// StreamLoop describes an events/stream kept open; see Client.RunStream.
type StreamLoop struct {
	// Request names the subscription and where it starts.
	Request EventsStreamRequest
	// OnEvent handles one occurrence; required. An error stops the
	// stream with that error.
	OnEvent func(ctx context.Context, o Occurrence) error
	// OnCursor is called when the position before which every event was
	// handled moves, to persist it; truncated says that events were lost
	// before it. Resuming a later run from it may hand again the events of
	// the one inbox entry that was being delivered (the events that share
	// one cursor). An error stops the stream. Nil keeps it in memory.
	OnCursor func(ctx context.Context, cursor string, truncated bool) error
	// OnError receives the notifications/events/error of the stream: a
	// problem the server reports while the stream stays open. Nil logs it.
	OnError func(ctx context.Context, err *jsonrpc.Error)
	// Heartbeat is the interval of the server's heartbeats; zero means
	// DefaultStreamHeartbeat. Silence is how long the stream may go
	// without a notification before it is taken for dead and reopened from
	// the last cursor; zero means three Heartbeats.
	Heartbeat, Silence time.Duration
}

func (l *StreamLoop) validate() error {
	switch {
	case l.OnEvent == nil:
		return errors.New("client: StreamLoop.OnEvent is required")
	case l.Request.Name == "":
		return errors.New("client: events/stream: Request.Name is required; pass an event type from ListEventTypes")
	case l.Request.MaxAgeMs != nil && *l.Request.MaxAgeMs < 0:
		return fmt.Errorf("client: events/stream: Request.MaxAgeMs is %d; give 0 or more milliseconds, or nil", *l.Request.MaxAgeMs)
	case l.Heartbeat < 0:
		return fmt.Errorf("client: StreamLoop.Heartbeat is %v; give a positive duration, or zero for %v", l.Heartbeat, DefaultStreamHeartbeat)
	case l.Silence < 0:
		return fmt.Errorf("client: StreamLoop.Silence is %v; give a positive duration, or zero for three heartbeats", l.Silence)
	}
	return validArguments(l.Request.Arguments)
}

// StreamTerminatedError is a stream the server ended for good with
// notifications/events/terminated.
type StreamTerminatedError struct {
	Name string
	Err  *jsonrpc.Error // nil when the server gave no reason
}

func (e *StreamTerminatedError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("client: events/stream %q terminated by the server", e.Name)
	}
	return fmt.Sprintf("client: events/stream %q terminated by the server: %v", e.Name, e.Err)
}

func (e *StreamTerminatedError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// RunStream keeps one events/stream open until ctx ends (it then returns
// ctx.Err()), OnEvent or OnCursor fails, the server refuses the stream (a
// JSON-RPC error) or terminates it (a *StreamTerminatedError), or the
// session ends without Options.Reconnect (ErrSessionEnded). When the
// stream breaks (the session ends, the server restarts, or no heartbeat
// or event comes within StreamLoop.Silence) it is opened again from the
// last cursor, with the Client's backoff, over a new session when
// Options.Reconnect replaces it: OnEvent sees each event once, in order,
// and none is skipped that the server still keeps. It returns the last
// cursor passed to OnCursor, which a later run may resume from (see
// StreamLoop.OnCursor).
func (c *Client) RunStream(ctx context.Context, loop StreamLoop) (cursor string, err error) {
	if err := loop.validate(); err != nil {
		return "", err
	}
	loop.Heartbeat = cmp.Or(loop.Heartbeat, DefaultStreamHeartbeat)
	loop.Silence = cmp.Or(loop.Silence, silenceFactor*loop.Heartbeat)
	r := &streamRun{c: c, loop: loop}
	if loop.Request.Cursor != nil {
		r.resume = *loop.Request.Cursor
	}
	failures := 0
	for {
		cs, err := c.current(ctx)
		if err != nil {
			return r.resume, err
		}
		bound, err := r.once(ctx, cs)
		var stop *stopError
		switch {
		case ctx.Err() != nil:
			return r.resume, ctx.Err()
		case errors.As(err, &stop):
			return r.resume, stop.err
		case err != nil && isRefusal(err):
			return r.resume, err
		}
		if bound {
			failures = 0
		}
		c.log.Warn("events/stream ended; reopening from the last cursor", "name", loop.Request.Name, "cursor", r.resume, "error", err)
		if err := c.sleep(ctx, c.backoff(failures)); err != nil {
			return r.resume, err
		}
		failures++
	}
}

// stopError ends RunStream with err, without reopening.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

// streamRun is the state of one RunStream across the streams it opens.
type streamRun struct {
	c    *Client
	loop StreamLoop
	// resume is the cursor before which every event was handled: where a
	// new stream starts.
	resume string
	// group is the cursor of the last event handled, and groupSeen the IDs
	// of the events handled with it: the entry being delivered, which a
	// resumed stream sends again from its start.
	group     string
	groupSeen map[string]bool
}

// once opens one stream and handles it until it ends; bound reports
// whether the server accepted it (its active notification came).
func (r *streamRun) once(ctx context.Context, cs *mcp.ClientSession) (bound bool, err error) {
	st, err := r.c.streams.open(ctx)
	if err != nil {
		return false, err
	}
	defer r.c.streams.forget(st)
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	params := &streamParams{EventsStreamRequest: r.loop.Request}
	params.Cursor = nil
	if r.resume != "" {
		cur := r.resume
		params.Cursor = &cur
	}
	done := make(chan error, 1)
	go func() {
		_, err := mcp.CallCustomMethod[*streamParams, *emptyResult](callCtx, cs, MethodEventsStream, params)
		if err == nil {
			err = errors.New("the server ended the stream")
		}
		done <- err
	}()
	// The watchdog runs on the Client's clock; it is armed again at every
	// notification.
	var silent chan struct{}
	stopWatchdog := func() bool { return false }
	arm := func() {
		stopWatchdog()
		fired := make(chan struct{})
		silent = fired
		stopWatchdog = r.c.opts.Clock.AfterFunc(r.loop.Silence, func() { close(fired) }).Stop
	}
	arm()
	defer func() { stopWatchdog() }()
	var callErr error
	for callErr == nil {
		// A session that ends need not end the calls in flight on it (the
		// go-sdk's in-memory transport leaves them waiting).
		c := r.c
		c.mu.Lock()
		changed, gone := c.changed, c.session != cs
		c.mu.Unlock()
		if gone {
			cancel() // the call returns when it can; done is buffered
			callErr = errors.New("the session ended")
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return bound, ctx.Err()
		case callErr = <-done:
		case <-silent:
			cancel()
			callErr = fmt.Errorf("no heartbeat or event for %v", r.loop.Silence)
		case <-st.notes.ready:
			if !bound && st.isBound() {
				bound = true
				r.c.streams.release(st)
			}
			for _, n := range st.notes.take() {
				if err := r.handle(ctx, n); err != nil {
					return bound, &stopError{err}
				}
			}
			arm()
		}
	}
	r.c.streams.release(st)
	// What came before the stream ended is handled before reopening.
	for _, n := range st.notes.take() {
		if err := r.handle(ctx, n); err != nil {
			return bound, &stopError{err}
		}
	}
	return bound || st.isBound(), fmt.Errorf("%s: %w", MethodEventsStream, callErr)
}

// handle acts on one notification of the stream.
func (r *streamRun) handle(ctx context.Context, n note) error {
	switch n.method {
	case NotifyEventsActive:
		var p struct {
			Cursor    string `json:"cursor"`
			Truncated bool   `json:"truncated"`
		}
		if err := json.Unmarshal(n.params, &p); err != nil || p.Cursor == "" {
			r.c.log.Warn("dropping an events/stream active notification that does not decode", "error", err)
			return nil
		}
		if p.Truncated || p.Cursor != r.resume {
			r.group, r.groupSeen = "", nil
			r.resume = p.Cursor
			return r.saved(ctx, p.Truncated)
		}
	case NotifyEventsHeartbeat:
		var p struct {
			Cursor string `json:"cursor"`
		}
		if err := json.Unmarshal(n.params, &p); err != nil || p.Cursor == "" {
			r.c.log.Warn("dropping an events/stream heartbeat that does not decode", "error", err)
			return nil
		}
		// A heartbeat follows what the server had to send: the entry
		// being delivered is complete.
		r.group, r.groupSeen = "", nil
		if p.Cursor != r.resume {
			r.resume = p.Cursor
			return r.saved(ctx, false)
		}
	case NotifyEventsEvent:
		var o Occurrence
		if err := json.Unmarshal(n.params, &o); err != nil || o.EventID == "" || o.Cursor == "" {
			r.c.log.Warn("dropping an events/stream event that does not decode", "error", err)
			return nil
		}
		if o.Cursor == r.group && r.groupSeen[o.EventID] {
			return nil // sent again by a resumed stream
		}
		if o.Cursor != r.group {
			// The entry before is complete.
			if r.group != "" && r.group != r.resume {
				r.resume = r.group
				if err := r.saved(ctx, false); err != nil {
					return err
				}
			}
			r.group, r.groupSeen = o.Cursor, map[string]bool{}
		}
		if err := r.loop.OnEvent(ctx, o); err != nil {
			return err
		}
		r.groupSeen[o.EventID] = true
	case NotifyEventsError:
		var p struct {
			Error *jsonrpc.Error `json:"error"`
		}
		if err := json.Unmarshal(n.params, &p); err != nil || p.Error == nil {
			p.Error = &jsonrpc.Error{Message: string(n.params)}
		}
		if r.loop.OnError != nil {
			r.loop.OnError(ctx, p.Error)
		} else {
			r.c.log.Warn("events/stream error", "name", r.loop.Request.Name, "error", p.Error)
		}
	case NotifyEventsTerminated:
		var p struct {
			Error *jsonrpc.Error `json:"error"`
		}
		_ = json.Unmarshal(n.params, &p)
		return &StreamTerminatedError{Name: r.loop.Request.Name, Err: p.Error}
	default:
		r.c.log.Debug("ignoring an unknown events/stream notification", "method", n.method)
	}
	return nil
}

func (r *streamRun) saved(ctx context.Context, truncated bool) error {
	if r.loop.OnCursor == nil {
		return nil
	}
	return r.loop.OnCursor(ctx, r.resume, truncated)
}

// note is one push-stream notification.
type note struct {
	method string
	params json.RawMessage
}

// streamState is one open events/stream: the notifications routed to it
// wait in an unbounded queue, so the transport's reader never blocks.
type streamState struct {
	mu    sync.Mutex
	id    string // the request's JSON-RPC id, as JSON; "" until bound
	notes fifo[note]
}

func (s *streamState) isBound() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id != ""
}

// streamRouter hands push-stream notifications to their streams. A
// notification names its stream by the events/stream request's JSON-RPC
// id, which the go-sdk does not tell the caller; the stream learns it from
// its first notification (active, which the server sends before anything
// else). Streams open one at a time, until that notification or the end of
// the request, so an active notification of an unknown id belongs to the
// stream being opened.
type streamRouter struct {
	sem     chan struct{} // held while a stream is being opened
	mu      sync.Mutex
	pending *streamState
	byID    map[string]*streamState
}

func (r *streamRouter) init() {
	r.sem = make(chan struct{}, 1)
	r.byID = make(map[string]*streamState)
}

// open waits for its turn to open a stream.
func (r *streamRouter) open(ctx context.Context) (*streamState, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	st := &streamState{}
	st.notes.init()
	r.mu.Lock()
	r.pending = st
	r.mu.Unlock()
	return st, nil
}

// release ends the opening of st; it is safe to call more than once.
func (r *streamRouter) release(st *streamState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == st {
		r.pending = nil
		<-r.sem
	}
}

// forget stops routing to st.
func (r *streamRouter) forget(st *streamState) {
	r.release(st)
	r.mu.Lock()
	defer r.mu.Unlock()
	st.mu.Lock()
	id := st.id
	st.mu.Unlock()
	if id != "" && r.byID[id] == st {
		delete(r.byID, id)
	}
}

// route hands one notification to its stream; it runs on the transport's
// reading goroutine and never blocks.
func (r *streamRouter) route(log *slog.Logger, method string, params json.RawMessage) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.Meta[metaSubscriptionID]) == 0 {
		log.Warn("dropping an events/stream notification without a subscription id", "method", method)
		return
	}
	id := string(p.Meta[metaSubscriptionID])
	r.mu.Lock()
	st := r.byID[id]
	if st == nil && method == NotifyEventsActive && r.pending != nil && !r.pending.isBound() {
		st = r.pending
		st.mu.Lock()
		st.id = id
		st.mu.Unlock()
		r.byID[id] = st
	}
	r.mu.Unlock()
	if st == nil {
		log.Debug("dropping a notification of an events/stream no longer open", "method", method, "subscription_id", id)
		return
	}
	st.notes.push(note{method: method, params: params})
}
