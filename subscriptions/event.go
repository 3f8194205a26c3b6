package subscriptions

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// priorityBit returns the priority's bit in a priority mask, or 0 if it is
// unknown.
func priorityBit(p mcpe.Priority) uint8 {
	switch p {
	case mcpe.PriorityLow:
		return 1
	case mcpe.PriorityNormal:
		return 2
	case mcpe.PriorityHigh:
		return 4
	case mcpe.PriorityCritical:
		return 8
	}
	return 0
}

// NormalizeEvent validates e and fills in what the server assigns: a UUID
// when ID is empty, now when Timestamp is zero, normal when Priority is
// empty, and an empty object when Data is empty; Timestamp is kept to the
// millisecond. The error is an *mcpe.InvalidError naming the field.
func NormalizeEvent(e *mcpe.Event, now time.Time) error {
	if e.ID == "" {
		e.ID = NewID()
	} else if err := uuid.Validate(e.ID); err != nil {
		return invalid("id", "%q is not a UUID; leave id out and the server assigns one", e.ID)
	}
	if err := mcpe.ValidateType(e.Type); err != nil {
		return err
	}
	data := bytes.TrimSpace(e.Data)
	switch {
	case len(data) == 0:
		e.Data = json.RawMessage("{}")
	case data[0] != '{' || !json.Valid(data):
		return invalid("data", "must be a JSON object, such as {\"number\": 42}, not %s", mcpe.DescribeJSON(data))
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
	e.Metadata.Timestamp = e.Metadata.Timestamp.UTC().Truncate(time.Millisecond)
	// A UTC offset can carry a time out of the years RFC 3339 can write
	// ("9999-12-31T23:59:59-23:59" is in the year 10000 in UTC).
	if y := e.Metadata.Timestamp.Year(); y < 0 || y > 9999 {
		return invalid("metadata.timestamp", "is in the year %d once converted to UTC; give a time between the years 0000 and 9999, e.g. \"2025-01-15T10:30:00Z\", or leave it out for the time of receipt", y)
	}
	if e.Metadata.Priority == "" {
		e.Metadata.Priority = mcpe.PriorityNormal
	} else if !e.Metadata.Priority.Valid() {
		return invalid("metadata.priority", "%q is not a priority; use %s", e.Metadata.Priority, mcpe.PriorityList)
	}
	if len(e.Metadata.SourceEventID) > mcpe.MaxSourceIDLength {
		return invalid("metadata.sourceEventId", "is %d characters long; at most %d are accepted", len(e.Metadata.SourceEventID), mcpe.MaxSourceIDLength)
	}
	return mcpe.ValidateTags("metadata.tags", e.Metadata.Tags)
}

// EventFromInput converts the input into an event and normalizes it.
func EventFromInput(in mcpe.EventInput, now time.Time) (mcpe.Event, error) {
	ev := mcpe.Event{ID: in.ID, Type: in.Type, Data: in.Data}
	if m := in.Metadata; m != nil {
		ev.Metadata = mcpe.Metadata{SourceEventID: m.SourceEventID, Priority: m.Priority, Tags: m.Tags}
		if m.Timestamp != "" {
			ts, err := time.Parse(time.RFC3339Nano, m.Timestamp)
			if err != nil {
				return mcpe.Event{}, invalid("metadata.timestamp", "%q is not an RFC 3339 time; use e.g. \"2025-01-15T10:30:00Z\", or leave it out for the time of receipt", m.Timestamp)
			}
			ev.Metadata.Timestamp = ts
		}
	}
	if err := NormalizeEvent(&ev, now); err != nil {
		return mcpe.Event{}, err
	}
	return ev, nil
}

// NewID returns a new UUID for an event or a subscription: version 7, whose
// leading bits are the time, so that rows keyed by it are appended to their
// tables' B-trees in order instead of spread over them (a commit then
// writes one page of them, not one per row).
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
