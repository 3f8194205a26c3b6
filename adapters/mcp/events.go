package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// The last segments of the types this adapter emits itself, after
// "mcp.<name>.".
const (
	kindConnected            = "connected"
	kindDisconnected         = "disconnected"
	kindToolsListChanged     = "tools.list_changed"
	kindResourcesListChanged = "resources.list_changed"
	kindPromptsListChanged   = "prompts.list_changed"
	kindResourcesUpdated     = "resources.updated"
	kindLog                  = "log"
)

// ownKinds are the types the adapter emits itself; an upstream event of one
// of these types is skipped rather than passed off as the adapter's own.
var ownKinds = []string{kindConnected, kindDisconnected, kindToolsListChanged, kindResourcesListChanged, kindPromptsListChanged, kindResourcesUpdated, kindLog}

// The data of the adapter's own events.
type (
	serverData struct {
		Server string `json:"server"`
	}
	connectedData struct {
		Server          string `json:"server"`
		ProtocolVersion string `json:"protocolVersion,omitempty"`
		ServerName      string `json:"serverName,omitempty"`
		ServerVersion   string `json:"serverVersion,omitempty"`
	}
	disconnectedData struct {
		Server      string `json:"server"`
		Error       string `json:"error"`
		NextAttempt string `json:"nextAttempt"`
	}
	resourceData struct {
		Server string `json:"server"`
		URI    string `json:"uri"`
	}
	logData struct {
		Server    string          `json:"server"`
		Level     string          `json:"level"`
		Logger    string          `json:"logger,omitempty"`
		Data      json.RawMessage `json:"data"`
		Truncated bool            `json:"truncated,omitempty"`
	}
)

// logEvent turns a notifications/message into an mcp.<name>.log event.
func logEvent(name string, p *mcp.LoggingMessageParams, now time.Time) (mcpe.Event, error) {
	if p == nil {
		return mcpe.Event{}, errors.New("the log message has no params")
	}
	level := string(p.Level)
	if !slices.Contains(logLevels, level) {
		return mcpe.Event{}, fmt.Errorf("the log level %q is not an MCP logging level (%s)", adapters.Clip(level, 64), strings.Join(logLevels, ", "))
	}
	data, err := json.Marshal(p.Data)
	if err != nil {
		return mcpe.Event{}, fmt.Errorf("the log message's data cannot be encoded: %w", err)
	}
	d := logData{Server: name, Level: level, Logger: adapters.Clip(p.Logger, maxLoggerBytes), Data: data}
	if len(data) > MaxLogDataBytes {
		cut, _ := json.Marshal(adapters.Clip(string(data), MaxLogDataBytes))
		d.Data, d.Truncated = cut, true
	}
	return ownEvent(name, kindLog, d, logPriority(level), now)
}

// resourceEvent turns a notifications/resources/updated into an
// mcp.<name>.resources.updated event.
func resourceEvent(name string, p *mcp.ResourceUpdatedNotificationParams, now time.Time) (mcpe.Event, error) {
	switch {
	case p == nil || p.URI == "":
		return mcpe.Event{}, errors.New("the resource update names no URI")
	case len(p.URI) > MaxURIBytes:
		return mcpe.Event{}, fmt.Errorf("the updated resource's URI is %d bytes long; at most %d are accepted", len(p.URI), MaxURIBytes)
	}
	return ownEvent(name, kindResourcesUpdated, resourceData{Server: name, URI: p.URI}, mcpe.PriorityNormal, now)
}

// notificationEvents turns an MCPE notification an upstream sent
// (events/event, or events/batch with one event per entry) into the events
// to publish. errs says why an event, or the whole notification, was
// skipped; other events/* methods give neither.
func notificationEvents(name, method string, params json.RawMessage) (events []mcpe.Event, errs []error) {
	var raws []json.RawMessage
	switch method {
	case mcpe.MethodEvent:
		var p struct {
			Event json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, []error{fmt.Errorf("%s params are not an object with an event: %w", method, err)}
		}
		if len(p.Event) == 0 || adapters.IsNull(p.Event) {
			return nil, []error{fmt.Errorf("%s params have no event", method)}
		}
		raws = []json.RawMessage{p.Event}
	case mcpe.MethodBatch:
		var p struct {
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, []error{fmt.Errorf("%s params are not an object with an events array: %w", method, err)}
		}
		raws = p.Events
	default:
		return nil, nil
	}
	for i, raw := range raws {
		ev, err := upstreamEvent(name, raw)
		if err != nil {
			if method == mcpe.MethodBatch {
				err = fmt.Errorf("events[%d]: %w", i, err)
			}
			errs = append(errs, err)
			continue
		}
		events = append(events, ev)
	}
	return events, errs
}

// Bounds on what an upstream's notifications become.
const (
	// MaxEventDataBytes bounds the data of an event an upstream sends, as
	// POST /v1/events bounds a body by default; a larger event is skipped.
	MaxEventDataBytes = adapters.DefaultMaxBodyBytes
	// MaxLogDataBytes bounds the data of a log message; a longer one is cut
	// (data becomes the start of its JSON text, and truncated is true).
	MaxLogDataBytes = 16 << 10
	// MaxURIBytes bounds a resource URI; an update of a longer one is
	// skipped.
	MaxURIBytes = 4096
	// maxLoggerBytes bounds the logger name of a log message.
	maxLoggerBytes = 256
)

// upstreamTag is the tag of every event from upstream name.
func upstreamTag(name string) string { return "upstream:" + name }

// ownEvent returns an event of the adapter's own: type mcp.<name>.<kind>.
func ownEvent(name, kind string, data any, p mcpe.Priority, now time.Time) (mcpe.Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return mcpe.Event{}, fmt.Errorf("encode %s data: %w", kind, err)
	}
	return mcpe.Event{
		Type: typePrefix(name) + kind,
		Data: raw,
		Metadata: mcpe.Metadata{
			Timestamp: now,
			Priority:  p,
			Tags:      []string{upstreamTag(name)},
		},
	}, nil
}

// typePrefix is the start of every type from upstream name.
func typePrefix(name string) string { return SourceName + "." + name + "." }

// logPriority maps an MCP logging level to a priority.
func logPriority(level string) mcpe.Priority {
	switch level {
	case "emergency", "alert", "critical":
		return mcpe.PriorityCritical
	case "error":
		return mcpe.PriorityHigh
	case "warning":
		return mcpe.PriorityNormal
	}
	return mcpe.PriorityLow
}

// upstreamEvent turns one event an upstream sent (the JSON of an MCPE
// event) into the event to publish: type mcp.<name>.<type>, the data,
// timestamp, priority and tags kept, the tag upstream:<name> added, and
// sourceEventId <name>:<id>. The error says why the event cannot be
// re-published.
func upstreamEvent(name string, raw json.RawMessage) (mcpe.Event, error) {
	var in mcpe.EventInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return mcpe.Event{}, fmt.Errorf("the event is not an MCPE event object: %w", err)
	}
	if in.Type == "" {
		return mcpe.Event{}, errors.New("the event has no type")
	}
	if slices.Contains(ownKinds, in.Type) {
		return mcpe.Event{}, fmt.Errorf("the event's type %q is one the adapter emits itself (%s%s)", in.Type, typePrefix(name), in.Type)
	}
	ev := mcpe.Event{Type: typePrefix(name) + in.Type, Data: in.Data}
	if err := mcpe.ValidateType(ev.Type); err != nil {
		return mcpe.Event{}, fmt.Errorf("prefixed with %q: %w", typePrefix(name), err)
	}
	switch data := bytes.TrimSpace(in.Data); {
	case len(data) == 0 || adapters.IsNull(data):
		ev.Data = nil // {} once published
	case data[0] != '{':
		return mcpe.Event{}, errors.New("the event's data is not a JSON object")
	case len(data) > MaxEventDataBytes:
		return mcpe.Event{}, fmt.Errorf("the event's data is %d bytes; at most %d are accepted", len(data), MaxEventDataBytes)
	}
	id := in.ID
	var tags []string
	if m := in.Metadata; m != nil {
		// A timestamp that is not RFC 3339, or out of the years it can
		// write, is left for the time of receipt.
		if ts, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil && ts.UTC().Year() >= 0 && ts.UTC().Year() <= 9999 {
			ev.Metadata.Timestamp = ts
		}
		if m.Priority.Valid() {
			ev.Metadata.Priority = m.Priority
		}
		tags = adapters.Tags(m.Tags...)
		if id == "" {
			id = m.SourceEventID
		}
	}
	if len(tags) >= mcpe.MaxTags {
		tags = tags[:mcpe.MaxTags-1]
	}
	ev.Metadata.Tags = adapters.Tags(append(tags, upstreamTag(name))...)
	if id != "" {
		ev.Metadata.SourceEventID = name + ":" + id
		if len(ev.Metadata.SourceEventID) > mcpe.MaxSourceIDLength {
			sum := sha256.Sum256([]byte(id))
			ev.Metadata.SourceEventID = name + ":sha256:" + hex.EncodeToString(sum[:])
		}
	}
	return ev, nil
}

// catalog lists the event types of upstream name.
func catalog(name string) []mcpe.EventType {
	p := typePrefix(name)
	tags := fmt.Sprintf("%q", upstreamTag(name))
	types := []mcpe.EventType{
		{
			Type:        p + kindConnected,
			Description: fmt.Sprintf("The session with upstream MCP server %q is up: at start and after every reconnection. Its notifications flow from here on.", name),
			DataSchema:  json.RawMessage(`{"type":"object","properties":{"server":{"type":"string"},"protocolVersion":{"type":"string"},"serverName":{"type":"string"},"serverVersion":{"type":"string"}},"required":["server"]}`),
			Example:     json.RawMessage(fmt.Sprintf(`{"server":%q,"protocolVersion":"2025-11-25","serverName":"example-server","serverVersion":"1.2.0"}`, name)),
			Priority:    "normal",
			Tags:        tags,
		},
		{
			Type:        p + kindDisconnected,
			Description: fmt.Sprintf("The session with upstream MCP server %q ended; it is retried at nextAttempt, and nothing from it arrives until mcp.%s.connected.", name, name),
			DataSchema:  json.RawMessage(`{"type":"object","properties":{"server":{"type":"string"},"error":{"type":"string","description":"Why the session ended."},"nextAttempt":{"type":"string","format":"date-time"}},"required":["server","error","nextAttempt"]}`),
			Example:     json.RawMessage(fmt.Sprintf(`{"server":%q,"error":"connection closed: EOF","nextAttempt":"2026-01-15T10:30:01Z"}`, name)),
			Priority:    "high",
			Tags:        tags,
		},
	}
	for _, kind := range []string{kindToolsListChanged, kindResourcesListChanged, kindPromptsListChanged} {
		list, _, _ := strings.Cut(kind, ".")
		types = append(types, mcpe.EventType{
			Type:        p + kind,
			Description: fmt.Sprintf("Upstream MCP server %q changed its list of %s (notifications/%s/list_changed).", name, list, list),
			DataSchema:  json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"The upstream's name."}},"required":["server"]}`),
			Example:     json.RawMessage(fmt.Sprintf(`{"server":%q}`, name)),
			Priority:    "normal",
			Tags:        tags,
		})
	}
	return append(types,
		mcpe.EventType{
			Type:        p + kindResourcesUpdated,
			Description: fmt.Sprintf("A resource of upstream MCP server %q changed (notifications/resources/updated); the adapter subscribes to the resources the server lists.", name),
			DataSchema:  json.RawMessage(`{"type":"object","properties":{"server":{"type":"string"},"uri":{"type":"string","description":"The URI of the resource that changed."}},"required":["server","uri"]}`),
			Example:     json.RawMessage(fmt.Sprintf(`{"server":%q,"uri":"file:///repo/README.md"}`, name)),
			Priority:    "normal",
			Tags:        tags,
		},
		mcpe.EventType{
			Type:        p + kindLog,
			Description: fmt.Sprintf("Upstream MCP server %q logged a message (notifications/message) at or above the configured level.", name),
			DataSchema:  json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"server":{"type":"string"},"level":{"type":"string","enum":["debug","info","notice","warning","error","critical","alert","emergency"]},"logger":{"type":"string"},"data":{"description":"The logged message or object."},"truncated":{"const":true,"description":"Present when data was longer than %d bytes: data is then the start of its JSON text."}},"required":["server","level","data"]}`, MaxLogDataBytes)),
			Example:     json.RawMessage(fmt.Sprintf(`{"server":%q,"level":"error","logger":"database","data":{"error":"connection refused"}}`, name)),
			Priority:    "from the level: emergency, alert, critical -> critical; error -> high; warning -> normal; others -> low",
			Tags:        tags,
		},
		mcpe.EventType{
			Type:        p + "<type>",
			Description: fmt.Sprintf("An event upstream MCP server %q sent itself (MCPE events/event or events/batch), re-published under its own type prefixed with %q; sourceEventId is %q followed by its id.", name, p, name+":"),
			DataSchema:  json.RawMessage(`{"type":"object","description":"The upstream event's data, unchanged."}`),
			Example:     json.RawMessage(`{"number":42}`),
			Priority:    "the upstream event's",
			Tags:        fmt.Sprintf("the upstream event's, and %q", upstreamTag(name)),
		},
	)
}
