package client

// This file and events_ext_*.go speak the SEP-3415 events extension
// (io.modelcontextprotocol/events) at the protocol level: events/list,
// events/poll and events/stream, beside the MCPE tools. Webhook delivery
// (events/subscribe) is not here.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EventsExtension is the identifier of the SEP-3415 events extension.
const EventsExtension = "io.modelcontextprotocol/events"

// The methods of the events extension this package calls.
const (
	MethodEventsList        = "events/list"
	MethodEventsPoll        = "events/poll"
	MethodEventsStream      = "events/stream"
	MethodEventsSubscribe   = "events/subscribe"
	MethodEventsUnsubscribe = "events/unsubscribe"
)

// The notifications of an events/stream.
const (
	NotifyEventsActive     = "notifications/events/active"
	NotifyEventsEvent      = "notifications/events/event"
	NotifyEventsError      = "notifications/events/error"
	NotifyEventsHeartbeat  = "notifications/events/heartbeat"
	NotifyEventsTerminated = "notifications/events/terminated"
)

// notifyEventsPrefix is the prefix of the push-stream notifications.
const notifyEventsPrefix = "notifications/events/"

// metaSubscriptionID is the _meta key of a push-stream notification that
// names its stream (the events/stream request's JSON-RPC id).
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// maxListPages bounds the pages ListEventTypes reads, against a server
// whose cursors never end.
const maxListPages = 1000

// EventType is one event type of events/list.
type EventType struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Delivery are the modes the server offers: "poll", "push", "webhook".
	Delivery      []string        `json:"delivery,omitempty"`
	InputSchema   json.RawMessage `json:"inputSchema,omitempty"`
	PayloadSchema json.RawMessage `json:"payloadSchema,omitempty"`
	Meta          map[string]any  `json:"_meta,omitempty"`
}

// Occurrence is one EventOccurrence of events/poll or events/stream.
type Occurrence struct {
	EventID   string          `json:"eventId"`
	Name      string          `json:"name"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
	// Cursor is set on a pushed occurrence: the position to resume from
	// once it is handled. Polled occurrences share their result's cursor.
	Cursor string `json:"cursor,omitempty"`
}

// EventsPollRequest are the params of one events/poll.
type EventsPollRequest struct {
	// Name is an event type of events/list; required.
	Name string `json:"name"`
	// Arguments narrow the type, as its inputSchema says; nil for none.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Cursor is where to read from; nil subscribes and returns the current
	// position without events.
	Cursor *string `json:"cursor,omitempty"`
	// MaxAgeMs leaves out events older than that on replay; nil for all.
	MaxAgeMs *int64 `json:"maxAgeMs,omitempty"`
	// MaxEvents bounds the events of the result; nil is the server's
	// default.
	MaxEvents *int `json:"maxEvents,omitempty"`
}

// EventsPollResult is the result of events/poll.
type EventsPollResult struct {
	Events []Occurrence `json:"events"`
	// Cursor is where the next poll reads from.
	Cursor string `json:"cursor"`
	// Truncated says that events between the request's cursor and the
	// result were lost (retention, or an unknown cursor).
	Truncated bool `json:"truncated"`
	// HasMore says that more events wait: poll again at once.
	HasMore bool `json:"hasMore"`
	// NextPollMs is how long the server asks the client to wait.
	NextPollMs int64 `json:"nextPollMs"`
}

// validate checks what the server would refuse, with a clearer error.
func (r *EventsPollRequest) validate() error {
	switch {
	case r.Name == "":
		return errors.New("client: events/poll: Name is required; pass an event type from ListEventTypes")
	case r.MaxAgeMs != nil && *r.MaxAgeMs < 0:
		return fmt.Errorf("client: events/poll: MaxAgeMs is %d; give 0 or more milliseconds, or nil", *r.MaxAgeMs)
	case r.MaxEvents != nil && *r.MaxEvents < 1:
		return fmt.Errorf("client: events/poll: MaxEvents is %d; give 1 or more, or nil for the server's default", *r.MaxEvents)
	}
	return validArguments(r.Arguments)
}

// validArguments checks that arguments, when given, are a JSON object.
func validArguments(args json.RawMessage) error {
	if len(args) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return fmt.Errorf("client: Arguments %.100s is not a JSON object; pass an object as the event type's inputSchema says, or nil", args)
	}
	return nil
}

// The wire types of the go-sdk's custom methods.

type listParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type listResult struct {
	mcp.ResultBase
	Events     []EventType `json:"events"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

type pollParams struct {
	mcp.ParamsBase
	EventsPollRequest
}

type pollResult struct {
	mcp.ResultBase
	EventsPollResult
}

type streamParams struct {
	mcp.ParamsBase
	EventsStreamRequest
}

// emptyResult is the result of events/stream and events/unsubscribe.
type emptyResult struct{ mcp.ResultBase }

// addEventsMethods registers the extension's methods with the go-sdk
// client.
func addEventsMethods(c *mcp.Client) error {
	for _, err := range []error{
		mcp.AddSendingCustomMethod[*listParams, *listResult](c, MethodEventsList),
		mcp.AddSendingCustomMethod[*pollParams, *pollResult](c, MethodEventsPoll),
		mcp.AddSendingCustomMethod[*streamParams, *emptyResult](c, MethodEventsStream),
		mcp.AddSendingCustomMethod[*webhookParams, *subscribeResult](c, MethodEventsSubscribe),
		mcp.AddSendingCustomMethod[*webhookParams, *emptyResult](c, MethodEventsUnsubscribe),
	} {
		if err != nil {
			return fmt.Errorf("client: register the events extension: %w", err)
		}
	}
	return nil
}

// SupportsEventsExtension reports whether the server declares the SEP-3415
// events extension: under capabilities.extensions, or, for servers that
// predate extensions, capabilities.experimental.
func (c *Client) SupportsEventsExtension() bool {
	cs := c.Session()
	if cs == nil {
		return false
	}
	res := cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return false
	}
	_, extension := res.Capabilities.Extensions[EventsExtension]
	_, experimental := res.Capabilities.Experimental[EventsExtension]
	return extension || experimental
}

// ListEventTypes returns every event type of events/list, reading all its
// pages.
func (c *Client) ListEventTypes(ctx context.Context) ([]EventType, error) {
	cs, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	var all []EventType
	cursor := ""
	seen := map[string]bool{}
	for range maxListPages {
		res, err := mcp.CallCustomMethod[*listParams, *listResult](ctx, cs, MethodEventsList, &listParams{Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", MethodEventsList, err)
		}
		all = append(all, res.Events...)
		if res.NextCursor == "" {
			return all, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("%s: the server gave the cursor %q twice", MethodEventsList, res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("%s: more than %d pages", MethodEventsList, maxListPages)
}

// PollEvents makes one events/poll. A nil req.Cursor subscribes (the
// subscription collects events from then on) and returns the position to
// poll from next.
func (c *Client) PollEvents(ctx context.Context, req EventsPollRequest) (*EventsPollResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	cs, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return pollOnce(ctx, cs, req)
}

func pollOnce(ctx context.Context, cs *mcp.ClientSession, req EventsPollRequest) (*EventsPollResult, error) {
	res, err := mcp.CallCustomMethod[*pollParams, *pollResult](ctx, cs, MethodEventsPoll, &pollParams{EventsPollRequest: req})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MethodEventsPoll, err)
	}
	if res.Cursor == "" {
		return nil, fmt.Errorf("%s: the server answered without a cursor", MethodEventsPoll)
	}
	out := res.EventsPollResult
	if out.Events == nil {
		out.Events = []Occurrence{}
	}
	return &out, nil
}

// Codes the go-sdk's JSON-RPC layer gives calls that a closing or broken
// connection ended (internal/jsonrpc2/wire.go): not the server's answer.
const (
	codeUnknown       = -32001
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// isRefusal reports whether err is the server's JSON-RPC answer, which
// another try over another session would not change.
func isRefusal(err error) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		return false
	}
	switch je.Code {
	case 0, codeUnknown, codeClientClosing, codeServerClosing, codeRejected:
		return false
	}
	return true
}
