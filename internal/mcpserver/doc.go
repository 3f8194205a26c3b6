// Package mcpserver is the MCP server of mcpe-server, over stdio and
// Streamable HTTP: one principal per caller, each live session attached to
// the registry of delivery/realtime so that notifications reach it, and
// four protocols, each in files of its own:
//
//   - MCPE: server.go (New, the events_* tools of package tools, each
//     request's principal and session, the events capability of initialize
//     and server/discover, stdio and the HTTP handler).
//   - SEP-3415 events extension, events_ext*.go: events/list and
//     events/poll (events_ext.go), events/stream (_stream, woken by _hub),
//     webhook delivery (_webhook), and what the go-sdk lacks on HTTP (_http).
//   - SEP-1803 event:// resources (resources_events.go) and out-of-band
//     webhook registration (resources_webhooks.go).
//   - Conversation events: conversation.go.
//
// listen.go serves protocol 2026-07-28's subscriptions/listen for all of
// them, and events/list_changed. The plumbing they share: liveness.go (HTTP
// sessions closed when idle, bounded per principal), sinks.go (the stdio
// and event-stream writers), bridge.go (custom notifications through the
// go-sdk; the only unsafe), redact.go (session IDs kept out of logs).
//
// The tests speak raw JSON-RPC through one harness (wire_test.go); golden
// exchanges are txtar sections under testdata/.
package mcpserver
