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
// for Options.LogLevel with logging/setLevel, and subscribes to every
// resource a server that supports resources/subscribe lists (at most
// Options.MaxSubscribedResources; resource templates are not expanded). On
// resources/list_changed it lists again, subscribes to the new resources and
// unsubscribes from the ones gone.
//
// Events an upstream sends itself (MCPE's events/event and events/batch) are
// re-published with their data, timestamp, priority and tags, the tag
// "upstream:<name>" added, and sourceEventId "<name>:<original id>", so that
// an event the upstream sends again is accepted once. The go-sdk client drops
// such custom notifications; mcpbridge.ClientTransport hands them over. An
// event whose prefixed type is not a valid type (too long, too many segments)
// or is one of the types above is logged and skipped.
//
// Sessions speak protocol version 2025-11-25: its long-lived session (the
// standalone SSE stream on HTTP) is what carries log messages, resource
// updates and custom notifications that no request asked for.
//
// A dropped session or a failed connection is retried after an exponential
// backoff with jitter, between Options.MinBackoff and Options.MaxBackoff,
// timed with the injected clock; the backoff starts over after a session
// that stayed up for a minute. States reports each upstream's state for the
// events catalog.
package mcp
