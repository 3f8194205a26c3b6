package mcpserver

// This file sends MCPE's custom notifications (events/event, events/batch,
// events/subscription_expired) over the go-sdk, which has no public API for
// them in v1.8: sending a method outside its own table fails with
// ErrNotHandled. See https://github.com/modelcontextprotocol/go-sdk/issues/745
// (and the open PRs that add SendNotification); when that lands, this file
// shrinks to a call of the upstream API.
//
// SessionSink reaches the session's mcp.Connection, the only step that uses
// an unexported field, and writes JSON-RPC notifications to it with the
// public Connection.Write. This works for every transport, Streamable HTTP
// included, where a detached context routes the write to the standalone GET
// stream. TestSessionSinkLayout fails loudly if an SDK upgrade moves the
// field. This is the only use of unsafe in the module.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/delivery/realtime"
)

// connField is the unexported field of mcp.ServerSession that holds the
// session's transport connection.
const connField = "mcpConn"

// layoutErr is non-nil when mcp.ServerSession no longer has the field this
// package relies on.
var layoutErr = checkLayout()

func checkLayout() error {
	f, ok := reflect.TypeFor[mcp.ServerSession]().FieldByName(connField)
	if !ok {
		return fmt.Errorf("mcpserver: mcp.ServerSession has no field %q; this go-sdk version is not supported", connField)
	}
	if f.Type != reflect.TypeFor[mcp.Connection]() {
		return fmt.Errorf("mcpserver: mcp.ServerSession.%s is a %v, not an mcp.Connection; this go-sdk version is not supported", connField, f.Type)
	}
	return nil
}

// CheckBridge reports whether the go-sdk in use has the layout SessionSink needs.
// A server calls it at start-up to fail early and clearly.
func CheckBridge() error { return layoutErr }

// Sink writes custom notifications to one server session.
type Sink struct {
	conn mcp.Connection
}

// SessionSink returns a Sink for ss.
func SessionSink(ss *mcp.ServerSession) (*Sink, error) {
	if layoutErr != nil {
		return nil, layoutErr
	}
	if ss == nil {
		return nil, errors.New("mcpserver: nil session")
	}
	f := reflect.ValueOf(ss).Elem().FieldByName(connField)
	conn := *(*mcp.Connection)(unsafe.Pointer(f.UnsafeAddr()))
	if conn == nil {
		return nil, errors.New("mcpserver: session has no connection")
	}
	return &Sink{conn: conn}, nil
}

// Notify writes a JSON-RPC notification. ctx must not derive from a request
// handler's context: on Streamable HTTP that would tie the notification to
// that request's response stream instead of the session's standalone stream.
func (s *Sink) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return s.conn.Write(ctx, &jsonrpc.Request{Method: method, Params: params})
}

// Write writes msgs in order, for the realtime registry: one notification
// each, with the one deadline of ctx for them all.
func (s *Sink) Write(ctx context.Context, msgs []realtime.Message) error {
	for _, m := range msgs {
		if err := s.Notify(ctx, m.Method, m.Params); err != nil {
			return err
		}
	}
	return nil
}
