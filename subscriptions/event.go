package subscriptions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Limits on event fields. They keep one event small enough to route, store
// and show to a model, and they are the same for every source.
const (
	MaxTypeLength     = 256
	MaxTypeSegments   = 16
	MaxTags           = 32
	MaxTagLength      = 128
	MaxSourceIDLength = 256
)

// Priority is an event's urgency.
type Priority string

// The four priorities, lowest first.
const (
	PriorityLow      Priority = "low"
	PriorityNormal   Priority = "normal"
	PriorityHigh     Priority = "high"
	PriorityCritical Priority = "critical"
)

// Priorities lists every priority, lowest first.
var Priorities = []Priority{PriorityLow, PriorityNormal, PriorityHigh, PriorityCritical}

const prioritiesText = `"low", "normal", "high" or "critical"`

// bit returns the priority's bit in a priority mask, or 0 if it is unknown.
func (p Priority) bit() uint8 {
	switch p {
	case PriorityLow:
		return 1
	case PriorityNormal:
		return 2
	case PriorityHigh:
		return 4
	case PriorityCritical:
		return 8
	}
	return 0
}

// Valid reports whether p is one of the four priorities.
func (p Priority) Valid() bool { return p.bit() != 0 }

// Event is one thing that happened, in the shape of MCPE section 4.
type Event struct {
	// ID is a UUID; the server assigns one when the source gives none.
	ID string `json:"id"`
	// Type is a hierarchical, dot-separated name such as "github.issue.opened".
	Type string `json:"type"`
	// Data is the event payload, always a JSON object.
	Data json.RawMessage `json:"data"`
	// Metadata describes where the event came from and how urgent it is.
	Metadata Metadata `json:"metadata"`
}

// Metadata is the metadata object of an event.
type Metadata struct {
	// SourceEventID is the event's ID at its source. The same SourceEventID
	// for the same Type is accepted once.
	SourceEventID string `json:"sourceEventId,omitempty"`
	// Timestamp is when the event happened; the server fills in the time it
	// received the event when the source gives none.
	Timestamp time.Time `json:"timestamp"`
	// Priority defaults to normal.
	Priority Priority `json:"priority"`
	// Tags categorise the event; filters match any of them.
	Tags []string `json:"tags,omitempty"`
}

// Normalize validates e and fills in what the server assigns: a UUID when ID
// is empty, now when Timestamp is zero, normal when Priority is empty, and an
// empty object when Data is empty. The error is an *InvalidError naming the
// field.
func (e *Event) Normalize(now time.Time) error {
	if e.ID == "" {
		e.ID = uuid.NewString()
	} else if err := uuid.Validate(e.ID); err != nil {
		return invalid("id", "%q is not a UUID; leave id out and the server assigns one", e.ID)
	}
	if err := ValidateType(e.Type); err != nil {
		return err
	}
	data := bytes.TrimSpace(e.Data)
	switch {
	case len(data) == 0:
		e.Data = json.RawMessage("{}")
	case data[0] != '{' || !json.Valid(data):
		return invalid("data", "must be a JSON object, such as {\"number\": 42}, not %s", DescribeJSON(data))
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return invalid("data", "is not valid JSON: %v", err)
		}
		e.Data = buf.Bytes()
	}
	if e.Metadata.Timestamp.IsZero() {
		e.Metadata.Timestamp = now
	}
	e.Metadata.Timestamp = e.Metadata.Timestamp.UTC()
	// A UTC offset can carry a time out of the years RFC 3339 can write
	// ("9999-12-31T23:59:59-23:59" is in the year 10000 in UTC).
	if y := e.Metadata.Timestamp.Year(); y < 0 || y > 9999 {
		return invalid("metadata.timestamp", "is in the year %d once converted to UTC; give a time between the years 0000 and 9999, e.g. \"2025-01-15T10:30:00Z\", or leave it out for the time of receipt", y)
	}
	if e.Metadata.Priority == "" {
		e.Metadata.Priority = PriorityNormal
	} else if !e.Metadata.Priority.Valid() {
		return invalid("metadata.priority", "%q is not a priority; use %s", e.Metadata.Priority, prioritiesText)
	}
	if len(e.Metadata.SourceEventID) > MaxSourceIDLength {
		return invalid("metadata.sourceEventId", "is %d characters long; at most %d are accepted", len(e.Metadata.SourceEventID), MaxSourceIDLength)
	}
	return validateTags("metadata.tags", e.Metadata.Tags)
}

// ValidateType checks that t is a valid event type: dot-separated segments of
// letters, digits, '_' and '-', such as "github.issue.opened".
func ValidateType(t string) error {
	const field = "type"
	if t == "" {
		return invalid(field, "is empty; give a dot-separated name such as \"github.issue.opened\"")
	}
	if len(t) > MaxTypeLength {
		return invalid(field, "is %d characters long; at most %d are accepted", len(t), MaxTypeLength)
	}
	segments := 1
	start := 0
	for i := 0; i <= len(t); i++ {
		if i < len(t) && t[i] != '.' {
			if !isTypeChar(t[i]) {
				// Name the whole character, not the first byte of its
				// UTF-8 encoding.
				r, _ := utf8.DecodeRuneInString(t[i:])
				return invalid(field, "%q contains %q; a type is dot-separated segments of letters, digits, '_' and '-', such as \"github.issue.opened\"", t, r)
			}
			continue
		}
		if i == start {
			return invalid(field, "%q has an empty segment; a type is dot-separated segments such as \"github.issue.opened\", with no leading, trailing or doubled dots", t)
		}
		if i < len(t) {
			segments++
		}
		start = i + 1
	}
	if segments > MaxTypeSegments {
		return invalid(field, "%q has %d segments; at most %d are accepted", t, segments, MaxTypeSegments)
	}
	return nil
}

func isTypeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func validateTags(field string, tags []string) error {
	if len(tags) > MaxTags {
		return invalid(field, "has %d tags; at most %d are accepted", len(tags), MaxTags)
	}
	for i, tag := range tags {
		f := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(tag) == "" {
			return invalid(f, "is empty; a tag is a non-empty string such as \"frontend\"")
		}
		if len(tag) > MaxTagLength {
			return invalid(f, "is %d characters long; at most %d are accepted", len(tag), MaxTagLength)
		}
		for _, r := range tag {
			if r < 0x20 || r == 0x7f {
				return invalid(f, "%q contains a control character", tag)
			}
		}
	}
	return nil
}

// DescribeJSON names the kind of a JSON value for error messages: "an
// object", "an array", "a string", "a number", "a boolean", "null", and
// "empty" or "invalid JSON" for what is no value.
func DescribeJSON(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "empty"
	}
	if !json.Valid(data) {
		return "invalid JSON"
	}
	switch data[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// EventInput is an event as a source sends it, with times as text: the body
// of POST /v1/events.
type EventInput struct {
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata *MetadataInput  `json:"metadata,omitempty"`
}

// MetadataInput is the metadata of an EventInput.
type MetadataInput struct {
	SourceEventID string   `json:"sourceEventId,omitempty"`
	Timestamp     string   `json:"timestamp,omitempty"`
	Priority      Priority `json:"priority,omitempty"`
	Tags          []string `json:"tags,omitempty"`
}

// Event converts the input into an Event and normalizes it.
func (in EventInput) Event(now time.Time) (Event, error) {
	ev := Event{ID: in.ID, Type: in.Type, Data: in.Data}
	if m := in.Metadata; m != nil {
		ev.Metadata = Metadata{SourceEventID: m.SourceEventID, Priority: m.Priority, Tags: m.Tags}
		if m.Timestamp != "" {
			ts, err := time.Parse(time.RFC3339Nano, m.Timestamp)
			if err != nil {
				return Event{}, invalid("metadata.timestamp", "%q is not an RFC 3339 time; use e.g. \"2025-01-15T10:30:00Z\", or leave it out for the time of receipt", m.Timestamp)
			}
			ev.Metadata.Timestamp = ts
		}
	}
	if err := ev.Normalize(now); err != nil {
		return Event{}, err
	}
	return ev, nil
}
