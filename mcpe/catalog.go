package mcpe

import (
	"encoding/json"
	"time"
)

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

// CatalogRequest are the arguments of events_catalog.
type CatalogRequest struct {
	// Pattern keeps the types it matches, in the filter pattern language;
	// empty keeps all.
	Pattern string `json:"pattern,omitempty"`
}

// Catalog is what events_catalog and the events://catalog resource return:
// the sources of events, the types they emit, and the types recently
// posted to POST /v1/events.
type Catalog struct {
	Sources []CatalogSource `json:"sources"`
	Types   []CatalogType   `json:"types"`
	// SeenRecently are the types posted to /v1/events lately, most recent
	// first.
	SeenRecently []SeenType `json:"seenRecently"`
	// Note says what an overview leaves out.
	Note string `json:"note,omitempty"`
}

// OverviewNote is the Note of a catalog made by Overview.
const OverviewNote = "This overview leaves out each type's dataSchema and example; call events_catalog with a " +
	"pattern, such as \"github.issues.*\", to see them for the types it matches."

// Overview returns a copy of c without the data schemas and examples of its
// types, which make up most of its size: what a model reads first, before
// it asks for the types it is interested in.
func (c *Catalog) Overview() *Catalog {
	out := *c
	out.Types = make([]CatalogType, len(c.Types))
	for i, t := range c.Types {
		t.DataSchema, t.Example = nil, nil
		out.Types[i] = t
	}
	out.Note = OverviewNote
	return &out
}

// CatalogSource is one source of events and whether it is set up.
type CatalogSource struct {
	Name string `json:"name"`
	// Configured is false for an adapter the operator has not set up: its
	// events cannot arrive.
	Configured bool `json:"configured"`
	// Endpoint is where the source posts, for webhook receivers.
	Endpoint string `json:"endpoint,omitempty"`
	// Description says what the source is.
	Description string `json:"description"`
	// Upstreams are the states of an MCP source's upstream servers.
	Upstreams []SourceState `json:"upstreams,omitempty"`
}

// CatalogType is an event type with the source that emits it.
type CatalogType struct {
	Source string `json:"source"`
	EventType
}

// SeenType is an event type seen on POST /v1/events.
type SeenType struct {
	Type       string    `json:"type"`
	Count      int64     `json:"count"`
	LastSeenAt time.Time `json:"lastSeenAt"`
}
