// Package client is a Go client for MCPE servers (MCP Events): it wraps a
// go-sdk client session, calls the events_* tools with the typed requests of
// package mcpe, and hands the events/event, events/batch and
// events/subscription_expired notifications, which the go-sdk drops, to Go
// handlers. It is the Go counterpart of the EventsClient of the MCPE
// proposal: SupportsEvents (and Capability, the capability as a typed
// value), Subscribe, Unsubscribe, List, Pause, Resume, Update and Poll, and
// the handlers OnEvent(pattern, callback), OnBatch and OnExpired. The
// request and result types are those the server itself decodes and encodes.
//
// # Connecting
//
// Client.Connect connects over any mcp.Transport: mcp.CommandTransport for
// "mcpe-server --stdio", mcp.StreamableClientTransport for
// http://127.0.0.1:8765/mcp, or an in-memory transport in tests. Command and
// StreamableHTTP return a Dialer, which makes a fresh transport each time it
// is called: pass it as Options.Reconnect and call Connect with a nil
// transport. Register handlers between New and Connect, so that none of the
// first notifications is missed. Both protocol versions of the go-sdk work
// on stdio and in memory (2026-07-28 and 2025-11-25, see
// Options.ProtocolVersion); over Streamable HTTP the Client asks for
// 2025-11-25 unless told otherwise, since 2026-07-28 makes HTTP stateless.
//
// # Handlers
//
// OnEvent registers a callback for the events whose type matches a pattern,
// in the language of subscription filters, read by the same parser the
// server uses (mcpe.ParsePattern: "github.*", "alert.{disk,cpu}.*", "*"). Every handler is called from one goroutine, in delivery order,
// never concurrently with another: a handler that takes long holds up the
// ones after it, and may call the Client's methods (Subscribe, List, ...)
// but must not call Close or CatchUp. An event that matches several handlers
// is passed to each, in registration order. Deliveries wait in an unbounded
// queue while a handler runs, so the connection is never blocked by a slow
// handler.
//
// # Reconnection and catch-up
//
// Every delivery is also written to the caller's inbox on the server, and
// its notifications carry its position there (cursor). A session's
// notifications come in cursor order (those of one entry one after the
// other, one per subscription), led by the digests and expiry notices kept
// while no session was live; events/missed says which entries a session
// skipped, and events_poll reads entries after a cursor in order. So the
// Client's whole memory of what it delivered is a high-water mark: the
// highest cursor delivered, and the subscriptions delivered at it. A
// notification or inbox entry below the mark, or at it for a subscription
// delivered there, is a repeat and is dropped; one without a cursor (an
// operator's replay) is delivered as it comes. On events/missed, when the
// go-sdk reopens a broken Streamable HTTP event stream, and, with
// Options.Reconnect, when a new session replaces one that ended (see
// BackoffMin), the Client reads the inbox with events_poll after the mark
// and hands what was missed to the handlers first. So they see each event
// of each subscription once, short of what the server no longer keeps (its
// inbox retention). A Client started without Options.Cursor has no mark: it
// delivers what its first session is sent, kept digests too, and its
// catch-ups read after the end of the inbox at Connect (the base) when the
// mark is lower. Save Client.Cursor, the higher of the two, to start again
// from it with Options.Cursor.
//
// # The SEP-3415 events extension
//
// The Client also speaks the draft SEP-3415 events extension
// (io.modelcontextprotocol/events) at the protocol level, for poll and
// push: ListEventTypes reads every page of events/list, PollEvents makes
// one events/poll, RunPoll polls in a loop (hasMore, nextPollMs,
// truncated, the cursor handed to the caller to persist), and RunStream
// keeps an events/stream open, with a watchdog that reopens a stream
// silent for longer than StreamLoop.Silence and a resume from the last
// cursor after a break, so that OnEvent sees each event once. The
// notifications/events/* of a stream, which the go-sdk drops, reach it
// through Tap. For webhook delivery, SubscribeWebhook makes (or
// refreshes) an events/subscribe subscription signed with the caller's
// whsec_ secret, RunWebhook renews it before each refreshBefore, and
// UnsubscribeWebhook ends it.
//
// Reconnection needs a principal that outlives a session: stdio, an
// in-memory transport bound to a principal, or Streamable HTTP with a bearer
// token. Without tokens, each HTTP session is its own principal and its
// subscriptions end with it.
package client
