package mcpe

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	// Types are the types of a family whose placeholder takes a known set
	// of values (github.issues.opened of github.issues.<action>); in an
	// answer to a pattern, those it matches.
	Types []string `json:"types,omitempty"`
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
	Sources []CatalogSource `json:"sources,omitempty"`
	Types   []CatalogType   `json:"types,omitempty"`
	// SeenRecently are the types posted to /v1/events lately, most recent
	// first.
	SeenRecently []SeenType `json:"seenRecently,omitempty"`
	// Note says what an answer to a model leaves out.
	Note string `json:"note,omitempty"`
}

// Brief describes types in at most briefBytes, and lists briefSeen posted.
const briefBytes, briefSeen = 5000, 20

// Brief returns c as a model reads it, in a few kilobytes however many
// types there are. Without a pattern, an overview: the sources, each with
// the names of its types. With one, the types c holds (those it matched):
// a single one in full, with its data's schema, an example and how
// priority and tags are set; several with their descriptions, as many as
// fit in a few kilobytes, the others named in the note.
func (c *Catalog) Brief(pattern string) *Catalog {
	out := &Catalog{SeenRecently: c.SeenRecently[:min(len(c.SeenRecently), briefSeen)],
		Note: "Call events_catalog with one type (github.issues.opened) for its data's schema and an example."}
	switch {
	case pattern == "":
		out.Sources = slices.Clone(c.Sources)
		for i, s := range out.Sources {
			for _, t := range c.Types {
				if t.Source == s.Name {
					out.Sources[i].Types = append(out.Sources[i].Types, t.Type)
				}
			}
		}
		out.Note = "Call events_catalog with a pattern (\"github.issues.*\", \"*deploy*\") for the types it matches, described. " + out.Note
	case len(c.Types) == 1:
		out.Types, out.Note = c.Types, ""
	case len(c.Types)+len(c.SeenRecently) == 0:
		out.Note = "Nothing matches " + pattern + "; call events_catalog without a pattern for an overview."
	default:
		size, more := 0, []string(nil)
		for _, t := range c.Types {
			t.DataSchema, t.Example, t.Priority, t.Tags = nil, nil, "", ""
			if b, _ := json.Marshal(t); size+len(b) > briefBytes {
				more = append(more, t.Type)
			} else {
				size += len(b)
				out.Types = append(out.Types, t)
			}
		}
		if len(more) > 0 {
			out.Note = "Also matched: " + strings.Join(more, ", ") + ". Narrow the pattern to see them described. " + out.Note
		}
	}
	if n := len(c.SeenRecently) - briefSeen; n > 0 {
		out.Note += fmt.Sprintf(" %d more types were posted lately; a pattern finds them.", n)
	}
	return out
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
	// Types are the names of its types, in an overview (Brief).
	Types []string `json:"types,omitempty"`
}

// CatalogType is an event type with the source that emits it.
type CatalogType struct {
	Source string `json:"source"`
	EventType
}

// SeenType is an event type seen on POST /v1/events, and when, to the
// minute.
type SeenType struct {
	Type       string    `json:"type"`
	LastSeenAt time.Time `json:"lastSeenAt"`
}
