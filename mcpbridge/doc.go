// Package mcpbridge carries MCPE's custom notifications (events/event,
// events/batch, events/subscription_expired) over the go-sdk, which has no
// public API for them in v1.8: sending a method outside its own table fails
// with ErrNotHandled, and its client drops unknown notifications before any
// middleware sees them. See https://github.com/modelcontextprotocol/go-sdk/issues/745
// (and the open PRs that add SendNotification); when that lands, this package
// shrinks to a call of the upstream API.
//
// Server side, SessionSink reaches the session's mcp.Connection, the only
// step that uses an unexported field, and writes JSON-RPC notifications to it
// with the public Connection.Write. This works for every transport, Streamable
// HTTP included, where a detached context routes the write to the standalone
// GET stream. TestSessionSinkLayout fails loudly if an SDK upgrade moves the
// field.
//
// Client side, ClientTransport hands those notifications to a callback using
// public API only: for Streamable HTTP it taps the SSE bodies at the
// http.RoundTripper (wrapping the connection would disable the SDK's
// standalone stream), for other transports it filters Connection.Read.
package mcpbridge

import "strings"

// MethodPrefix is the prefix of the notifications this package carries.
const MethodPrefix = "events/"

// isEventsMethod reports whether method is one of the MCPE notifications.
func isEventsMethod(method string) bool { return strings.HasPrefix(method, MethodPrefix) }
