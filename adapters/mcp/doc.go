// Package mcp is the event source that listens to upstream MCP servers. It
// connects to each server the operator lists, as an MCP client over stdio (a
// command it runs) or Streamable HTTP (a URL), and turns what the server
// announces into events published through the same subscriptions.Publisher
// as POST /v1/events. It is the "persistent broker connection" of a gateway:
// one long-lived session per upstream, reconnected with backoff when it
// drops, that hears state changes no tool call asked for.
//
// For an upstream named <name>, the events are:
//
//	mcp.<name>.connected               the session is up (and set up, below)
//	mcp.<name>.disconnected            a session that was up has ended
//	mcp.<name>.tools.list_changed      notifications/tools/list_changed
//	mcp.<name>.resources.list_changed  notifications/resources/list_changed
//	mcp.<name>.prompts.list_changed    notifications/prompts/list_changed
//	mcp.<name>.resources.updated       notifications/resources/updated
//	mcp.<name>.log                     notifications/message
//	mcp.<name>.<type>                  an events/event (or each event of an
//	                                   events/batch) the upstream sent
//
// Once connected, the adapter asks a server that has the logging capability
// for info with logging/setLevel, and subscribes to every resource a server
// that supports resources/subscribe lists (at most 100; resource templates
// are not expanded). On resources/list_changed it lists again, subscribes to
// the new resources and unsubscribes from the ones gone.
//
// Events an upstream sends itself (MCPE's events/event and events/batch) are
// re-published with their data, timestamp, priority and tags, the tag
// "upstream:<name>" added, and sourceEventId "<name>:<original id>", so that
// an event the upstream sends again is accepted once. The go-sdk client drops
// such custom notifications; client.Tap hands them over. An
// event whose prefixed type is not a valid type (too long, too many segments)
// or is one of the types above, or whose data is not an object or is larger
// than MaxEventDataBytes, is logged and skipped. A log message's data is cut
// to MaxLogDataBytes.
//
// # Protocol versions
//
// Where notifications travel depends on the protocol version, and the
// adapter hears them under both versions in use:
//
//   - 2025-11-25 (and older): the initialize handshake opens one long-lived
//     session that carries everything: list changes, resource updates
//     (after resources/subscribe), log messages (after logging/setLevel)
//     and custom notifications; over HTTP they come on the standalone GET
//     stream. Idle sessions are pinged, so an upstream that hangs is
//     noticed.
//   - 2026-07-28: there is no session; list changes and resource updates
//     flow only over subscriptions/listen requests, which the SDK client
//     opens, and keeps open, for each list the server declared listChanged
//     for when the session began and for each resource subscribed to. The
//     adapter watches those streams: when one ends without having been
//     cancelled (the server stopped or dropped it), the session is started
//     over, since the SDK would go on without it and hear nothing. Custom
//     notifications arrive on whatever stream the server writes them to.
//     Logging is deprecated in this version: over stdio the adapter still
//     asks for a level and hears log messages; a stateless HTTP server
//     keeps no level and sends none outside a request. There is no ping.
//
// A command is asked for 2025-11-25 (its one pipe carries everything, with
// pings, and no older server is sent a server/discover it does not know),
// and a URL is offered 2026-07-28, which a stateless Streamable HTTP server
// takes while a stateful one (and every server that does not speak it)
// answers with 2025-11-25 and gets the standalone stream. A server that neither speaks
// 2026-07-28 nor keeps a standalone stream (it answers the GET with 405, as a
// stateless server of the older protocol does) cannot send anything outside
// a request: the adapter logs a warning, and the upstream shows as connected
// with nothing to hear. The connected event carries the version agreed on.
//
// A dropped session or a failed connection is retried after an exponential
// backoff with jitter, between 1s and 5m,
// timed with the injected clock; the backoff starts over after a session
// that stayed up for a minute. States reports each upstream's state for the
// events catalog.
package mcp
