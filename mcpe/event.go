package mcpe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on event fields. They keep one event small enough to route, store
// and show to a model, and they are the same for every source.
const (
	MaxTypeLength     = 256
	MaxTypeSegments   = 16
	MaxTags           = 32
	MaxTagLength      = 128
	MaxSourceIDLength = 256
	// DefaultMaxDataDepth is how deeply an event's data may nest objects
	// and arrays unless the server says otherwise: far below what MCP
	// clients accept in a message (the go-sdk refuses more than 1000
	// levels, and drops the session that sent them).
	DefaultMaxDataDepth = 64
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

// PriorityList names the priorities for messages that say what is accepted.
const PriorityList = `"low", "normal", "high" or "critical"`

// Valid reports whether p is one of the four priorities.
func (p Priority) Valid() bool { return slices.Contains(Priorities, p) }

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
	// for the same Type from the same source is accepted once.
	SourceEventID string `json:"sourceEventId,omitempty"`
	// Timestamp is when the event happened; the server fills in the time it
	// received the event when the source gives none.
	Timestamp time.Time `json:"timestamp"`
	// Priority defaults to normal.
	Priority Priority `json:"priority"`
	// Tags categorise the event; filters match any of them.
	Tags []string `json:"tags,omitempty"`
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

// ValidateType checks that t is a valid event type: dot-separated segments of
// letters, digits, '_' and '-', such as "github.issue.opened". A segment does
// not start with '-', so that a type passed to a program (a bash handler's
// $MCPE_EVENT_TYPE) never reads as an option.
func ValidateType(t string) error {
	const field = "type"
	if t == "" {
		return Invalid(field, "is empty; give a dot-separated name such as \"github.issue.opened\"")
	}
	if len(t) > MaxTypeLength {
		return Invalid(field, "is %d characters long; at most %d are accepted", len(t), MaxTypeLength)
	}
	for seg := range strings.SplitSeq(t, ".") {
		if i := strings.IndexFunc(seg, func(r rune) bool { return !isTypeChar(r) }); i >= 0 {
			// Name the whole character, not the first byte of its UTF-8
			// encoding.
			r, _ := utf8.DecodeRuneInString(seg[i:])
			return Invalid(field, "%q contains %q; a type is dot-separated segments of letters, digits, '_' and '-', such as \"github.issue.opened\"", t, r)
		}
		if seg == "" {
			return Invalid(field, "%q has an empty segment; a type is dot-separated segments such as \"github.issue.opened\", with no leading, trailing or doubled dots", t)
		}
		if seg[0] == '-' {
			return Invalid(field, "%q has a segment that starts with '-' (%q); a segment starts with a letter, digit or '_', so that no type reads as a command-line option", t, seg)
		}
	}
	if segments := strings.Count(t, ".") + 1; segments > MaxTypeSegments {
		return Invalid(field, "%q has %d segments; at most %d are accepted", t, segments, MaxTypeSegments)
	}
	return nil
}

func isTypeChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidateTags checks a list of tags named field: at most MaxTags, each a
// non-empty string of at most MaxTagLength bytes without control characters.
func ValidateTags(field string, tags []string) error {
	if len(tags) > MaxTags {
		return Invalid(field, "has %d tags; at most %d are accepted", len(tags), MaxTags)
	}
	for i, tag := range tags {
		f := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(tag) == "" {
			return Invalid(f, "is empty; a tag is a non-empty string such as \"frontend\"")
		}
		if len(tag) > MaxTagLength {
			return Invalid(f, "is %d characters long; at most %d are accepted", len(tag), MaxTagLength)
		}
		for _, r := range tag {
			if r < 0x20 || r == 0x7f {
				return Invalid(f, "%q contains a control character", tag)
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

// JSONDepth returns how deeply the JSON value data nests objects and
// arrays: 0 for a scalar, 1 for {} or [1, 2], 2 for {"a": [1]}. It reads
// data once without decoding it, and expects valid JSON.
func JSONDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
