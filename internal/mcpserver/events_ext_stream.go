package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The notifications of a push stream.
const (
	notifyEventsActive     = "notifications/events/active"
	notifyEventsEvent      = "notifications/events/event"
	notifyEventsError      = "notifications/events/error"
	notifyEventsHeartbeat  = "notifications/events/heartbeat"
	notifyEventsTerminated = "notifications/events/terminated"
)

// eventsStreamParams are the params of events/stream.
type eventsStreamParams struct {
	mcp.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Cursor    *string         `json:"cursor,omitempty"`
	MaxAgeMs  *int64          `json:"maxAgeMs,omitempty"`
}

// eventsStreamResult is the final frame of a stream the server ends.
type eventsStreamResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// errStreamsFull refuses a stream past maxStreamsPerPrincipal.
var errStreamsFull = eventsError(CodeResourceExhausted, map[string]any{"limit": "streams",
	"reason": fmt.Sprintf("this principal has %d events/streams open, the most it may; end one first", maxStreamsPerPrincipal)})

// pushStream is one events/stream request being served.
type pushStream struct {
	ctx  context.Context
	sink *Sink
	meta map[string]any
}

// notify writes one notifications/events/* message with the stream's
// subscription ID in _meta. The request's context routes it to the
// request's own response stream on Streamable HTTP.
func (p *pushStream) notify(method string, params map[string]any) error {
	params["_meta"] = p.meta
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return p.sink.Notify(p.ctx, method, raw)
}

// end is the StreamEventsResult. On stdio it answers a cancelled stream
// (the SEP allows it; the go-sdk would otherwise answer with an error of
// code 0); on Streamable HTTP an aborted request has no one to read it.
func (p *pushStream) end() *eventsStreamResult {
	return &eventsStreamResult{ResultBase: mcp.ResultBase{Meta: p.meta}, ResultType: "complete"}
}

func (s *Server) eventsStream(ctx context.Context, ss *mcp.ServerSession, p *eventsStreamParams) (*eventsStreamResult, error) {
	if p == nil {
		return nil, invalidParams("params are required: name, and arguments and cursor when needed")
	}
	ticket, ok := streamTicketOf(p.Meta)
	if !ok {
		return nil, eventsError(jsonrpc.CodeInternalError, map[string]any{"reason": "this transport does not tell the server the request's id; events/stream needs it"})
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
	sink, err := SessionSink(ss)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The server's shutdown ends the stream: the SDK waits for it to close
	// the session, and would wait for ever.
	defer context.AfterFunc(s.streamsCtx, cancel)()
	if ticket.abort != nil {
		// Streamable HTTP: the client ends the stream by aborting its POST.
		go func() {
			select {
			case <-ticket.abort:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	ps := &pushStream{ctx: ctx, sink: sink, meta: map[string]any{metaSubscriptionID: ticket.id}}
	wake := newStreamWake()
	remove, ok := s.streams.add(principal, sub.ID, wake)
	if !ok {
		return nil, errStreamsFull
	}
	defer func() { remove() }()
	beat := make(chan struct{}, 1)
	arm := func() func() bool {
		return s.opts.Clock.AfterFunc(s.eventsHeartbeat, func() {
			select {
			case beat <- struct{}{}:
			default:
			}
		}).Stop
	}
	stop := arm()
	defer func() { stop() }()

	if err := ps.notify(notifyEventsActive, map[string]any{"cursor": formatEventsCursor(sub, seq), "truncated": truncated}); err != nil {
		return nil, err
	}
	for {
		// Drain what is there, in pages.
		for {
			pruned, err := s.events.PrunedThrough(ctx, principal)
			if err == nil && pruned > seq {
				seq = pruned
				err = ps.notify(notifyEventsActive, map[string]any{"cursor": formatEventsCursor(sub, seq), "truncated": true})
			}
			var r readResult
			if err == nil {
				r, err = s.readSub(ctx, principal, k, sub.ID, seq, floor, 0, func(o occurrence, at int64) error {
					return ps.notify(notifyEventsEvent, map[string]any{"eventId": o.EventID, "name": o.Name, "timestamp": o.Timestamp, "data": o.Data, "cursor": formatEventsCursor(sub, at)})
				})
				seq = r.seq
				if err == nil && r.skipped > 0 {
					err = ps.notify(notifyEventsActive, map[string]any{"cursor": formatEventsCursor(sub, seq), "truncated": true})
				}
				floor = time.Time{}
			}
			if ctx.Err() != nil {
				return ps.end(), nil
			}
			if r.expired {
				e := eventsError(CodeNotFound, map[string]any{"kind": "subscription", "reason": "the subscription expired (an expiresAt set with events_update); open a new stream to subscribe again"})
				_ = ps.notify(notifyEventsTerminated, map[string]any{"error": errorObject(e, "")})
				return ps.end(), nil
			}
			if err != nil {
				s.log.Warn("events/stream: read failed", "principal", principal, "error", err)
				if ps.notify(notifyEventsError, map[string]any{"error": errorObject(err, "reading the inbox failed; the server retries")}) != nil {
					return nil, err
				}
				break
			}
			if !r.more {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ps.end(), nil
		case <-wake.ch:
			seq = wake.skipTo(seq)
		case <-beat:
			// The subscription may have been deleted (events_unsubscribe):
			// then it is made again, and what came meanwhile was missed.
			again, created, err := s.events.Keyed(ctx, principal, sub.ID, k.filter)
			if err == nil && created {
				sub = again
				remove()
				var added bool
				if remove, added = s.streams.add(principal, sub.ID, wake); !added {
					err = errStreamsFull
				} else if seq, err = s.events.InboxHead(ctx, principal); err == nil {
					err = ps.notify(notifyEventsActive, map[string]any{"cursor": formatEventsCursor(sub, seq), "truncated": true})
				}
			}
			if err == nil {
				err = ps.notify(notifyEventsHeartbeat, map[string]any{"cursor": formatEventsCursor(sub, seq)})
			}
			switch {
			case err != nil && ctx.Err() != nil:
				return ps.end(), nil
			case err != nil:
				// The subscription could not be kept (made again after a
				// deletion past the principal's quota, or the store failed),
				// or the client cannot be written to: the stream ends, and
				// says why when it can.
				s.log.Warn("events/stream: ended at a heartbeat", "principal", principal, "subscription_id", sub.ID, "error", err)
				_ = ps.notify(notifyEventsTerminated, map[string]any{"error": errorObject(domainError(err), "the stream's subscription could not be kept; open a new stream")})
				return ps.end(), nil
			}
			stop = arm()
		}
	}
}
