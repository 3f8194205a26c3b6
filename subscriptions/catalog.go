package subscriptions

import "encoding/json"

// EventType describes one event type, or a family of them, that a source
// emits: what the events catalog shows a model so it knows what it may
// subscribe to.
type EventType struct {
	// Type is an event type such as "github.issues.opened", or a pattern
	// such as "mcp.<name>.log" written with a placeholder segment for a
	// family whose types depend on configuration.
	Type string `json:"type"`
	// Description is one line saying when the event happens.
	Description string `json:"description"`
	// DataSchema is the JSON Schema of the event's data.
	DataSchema json.RawMessage `json:"dataSchema,omitempty"`
	// Example is an example of the event's data.
	Example json.RawMessage `json:"example,omitempty"`
	// Priority says how the source sets the event's priority, when it does.
	Priority string `json:"priority,omitempty"`
	// Tags says which tags the source adds.
	Tags string `json:"tags,omitempty"`
}

// SourceState is how a source that connects out (an upstream MCP server)
// is doing.
type SourceState struct {
	Name string `json:"name"`
	// Status is "connected", "connecting" or "retrying".
	Status string `json:"status"`
	// LastError is why the last connection failed or ended.
	LastError string `json:"lastError,omitempty"`
	// Since is when Status last changed (RFC 3339).
	Since string `json:"since,omitempty"`
	// NextAttempt is when a retrying source tries again (RFC 3339).
	NextAttempt string `json:"nextAttempt,omitempty"`
}
