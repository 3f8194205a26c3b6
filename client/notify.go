package client

import (
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is the one place where the client receives MCPE notifications.
// The go-sdk (v1.8) drops notifications whose method it does not know before
// any middleware sees them, so the transport is wrapped by Tap (tap.go), which
// takes events/* out of the stream and hands them over here; see
// https://github.com/modelcontextprotocol/go-sdk/issues/745. When the SDK
// gains a public API for custom notifications, wrap shrinks to a handler
// registration. TestBridgeDeliversNotifications fails if an SDK upgrade
// breaks this path.

// wrap returns t with the MCPE notifications diverted to the Client's queue
// and, for Streamable HTTP, the reopening of its event stream watched.
func (c *Client) wrap(t mcp.Transport) mcp.Transport {
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		t = c.watchStream(st)
	}
	return Tap(t, c.received)
}

// received queues one notification for the dispatcher. It runs on the
// transport's reading goroutine, so it only queues: the queue is unbounded,
// and a slow handler never holds up the connection (or a tool call that
// handler makes).
func (c *Client) received(method string, params json.RawMessage) {
	if strings.HasPrefix(method, notifyEventsPrefix) {
		c.streams.route(c.log, method, params)
		return
	}
	c.queue.push(item{method: method, params: params})
}
