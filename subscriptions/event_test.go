package subscriptions_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testNow is the injected clock reading of the event tests.
var testNow = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

const testEventID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"

// invalidField returns the field of err, which must be an *InvalidError.
func invalidField(t *testing.T, err error) string {
	t.Helper()
	var ie *mcpe.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
	}
	if ie.Message == "" {
		t.Errorf("error for field %q has an empty message", ie.Field)
	}
	return ie.Field
}

func TestEventNormalize(t *testing.T) {
	ts := time.Date(2024, 12, 24, 18, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   mcpe.Event
		want mcpe.Event
	}{
		{
			name: "defaults",
			in:   mcpe.Event{ID: testEventID, Type: "github.push"},
			want: mcpe.Event{
				ID:       testEventID,
				Type:     "github.push",
				Data:     json.RawMessage(`{}`),
				Metadata: mcpe.Metadata{Timestamp: testNow, Priority: mcpe.PriorityNormal},
			},
		},
		{
			name: "whitespace-only data becomes an empty object",
			in:   mcpe.Event{ID: testEventID, Type: "a", Data: json.RawMessage(" \n\t ")},
			want: mcpe.Event{
				ID:       testEventID,
				Type:     "a",
				Data:     json.RawMessage(`{}`),
				Metadata: mcpe.Metadata{Timestamp: testNow, Priority: mcpe.PriorityNormal},
			},
		},
		{
			name: "data is compacted",
			in: mcpe.Event{
				ID:   testEventID,
				Type: "github.issue.opened",
				Data: json.RawMessage(" {\n  \"number\" : 42,\n  \"labels\": [ \"bug\", \"ui\" ],\n  \"title\": \"a  b\"\n}\n"),
			},
			want: mcpe.Event{
				ID:       testEventID,
				Type:     "github.issue.opened",
				Data:     json.RawMessage(`{"number":42,"labels":["bug","ui"],"title":"a  b"}`),
				Metadata: mcpe.Metadata{Timestamp: testNow, Priority: mcpe.PriorityNormal},
			},
		},
		{
			name: "given metadata is kept, timestamp in UTC",
			in: mcpe.Event{
				ID:   testEventID,
				Type: "ci.build.failed",
				Data: json.RawMessage(`{"ok":false}`),
				Metadata: mcpe.Metadata{
					SourceEventID: "build-17",
					Timestamp:     ts,
					Priority:      mcpe.PriorityCritical,
					Tags:          []string{"ci", "deploy"},
				},
			},
			want: mcpe.Event{
				ID:   testEventID,
				Type: "ci.build.failed",
				Data: json.RawMessage(`{"ok":false}`),
				Metadata: mcpe.Metadata{
					SourceEventID: "build-17",
					Timestamp:     time.Date(2024, 12, 24, 17, 0, 0, 0, time.UTC),
					Priority:      mcpe.PriorityCritical,
					Tags:          []string{"ci", "deploy"},
				},
			},
		},
		{
			name: "limits are inclusive",
			in: mcpe.Event{
				ID:   testEventID,
				Type: "a",
				Metadata: mcpe.Metadata{
					SourceEventID: strings.Repeat("s", mcpe.MaxSourceIDLength),
					Priority:      mcpe.PriorityLow,
					Tags:          manyTags(mcpe.MaxTags),
				},
			},
			want: mcpe.Event{
				ID:   testEventID,
				Type: "a",
				Data: json.RawMessage(`{}`),
				Metadata: mcpe.Metadata{
					SourceEventID: strings.Repeat("s", mcpe.MaxSourceIDLength),
					Timestamp:     testNow,
					Priority:      mcpe.PriorityLow,
					Tags:          manyTags(mcpe.MaxTags),
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			if err := subscriptions.NormalizeEvent(&got, testNow); err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = "tag" + strings.Repeat("x", i)
	}
	return tags
}

func TestEventNormalizeAssignsID(t *testing.T) {
	ev := mcpe.Event{Type: "a"}
	if err := subscriptions.NormalizeEvent(&ev, testNow); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if err := uuid.Validate(ev.ID); err != nil {
		t.Errorf("assigned ID %q is not a UUID: %v", ev.ID, err)
	}
	other := mcpe.Event{Type: "a"}
	if err := subscriptions.NormalizeEvent(&other, testNow); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if ev.ID == other.ID {
		t.Errorf("two events were assigned the same ID %q", ev.ID)
	}
}

func TestEventNormalizeInvalid(t *testing.T) {
	base := func(edit func(*mcpe.Event)) mcpe.Event {
		ev := mcpe.Event{ID: testEventID, Type: "github.push", Data: json.RawMessage(`{"a":1}`)}
		edit(&ev)
		return ev
	}
	tests := []struct {
		name      string
		ev        mcpe.Event
		wantField string
	}{
		{"id not a UUID", base(func(e *mcpe.Event) { e.ID = "event-1" }), "id"},
		{"id truncated UUID", base(func(e *mcpe.Event) { e.ID = testEventID[:35] }), "id"},
		{"bad type", base(func(e *mcpe.Event) { e.Type = "github..push" }), "type"},
		{"empty type", base(func(e *mcpe.Event) { e.Type = "" }), "type"},
		{"data array", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`[1,2]`) }), "data"},
		{"data string", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`"x"`) }), "data"},
		{"data number", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`42`) }), "data"},
		{"data boolean", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`true`) }), "data"},
		{"data null", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`null`) }), "data"},
		{"data invalid JSON", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`{"a":`) }), "data"},
		{"data two objects", base(func(e *mcpe.Event) { e.Data = json.RawMessage(`{}{}`) }), "data"},
		{"unknown priority", base(func(e *mcpe.Event) { e.Metadata.Priority = "urgent" }), "metadata.priority"},
		{"priority is case-sensitive", base(func(e *mcpe.Event) { e.Metadata.Priority = "HIGH" }), "metadata.priority"},
		{"source ID too long", base(func(e *mcpe.Event) {
			e.Metadata.SourceEventID = strings.Repeat("s", mcpe.MaxSourceIDLength+1)
		}), "metadata.sourceEventId"},
		{"too many tags", base(func(e *mcpe.Event) { e.Metadata.Tags = manyTags(mcpe.MaxTags + 1) }), "metadata.tags"},
		{"empty tag", base(func(e *mcpe.Event) { e.Metadata.Tags = []string{"ci", ""} }), "metadata.tags[1]"},
		{"blank tag", base(func(e *mcpe.Event) { e.Metadata.Tags = []string{" \t"} }), "metadata.tags[0]"},
		{"tag too long", base(func(e *mcpe.Event) {
			e.Metadata.Tags = []string{"ok", "ok", strings.Repeat("t", mcpe.MaxTagLength+1)}
		}), "metadata.tags[2]"},
		{"tag with control character", base(func(e *mcpe.Event) { e.Metadata.Tags = []string{"a\x00b"} }), "metadata.tags[0]"},
		{"tag with DEL", base(func(e *mcpe.Event) { e.Metadata.Tags = []string{"a\x7f"} }), "metadata.tags[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			err := subscriptions.NormalizeEvent(&ev, testNow)
			if err == nil {
				t.Fatalf("Normalize = nil, want an error for %s", tt.wantField)
			}
			if field := invalidField(t, err); field != tt.wantField {
				t.Errorf("field = %q, want %q (error: %v)", field, tt.wantField, err)
			}
		})
	}
}

func TestEventNormalizeErrorText(t *testing.T) {
	tests := []struct {
		name string
		ev   mcpe.Event
		want string
	}{
		{
			name: "id",
			ev:   mcpe.Event{ID: "event-1", Type: "a"},
			want: `id: "event-1" is not a UUID; leave id out and the server assigns one`,
		},
		{
			name: "data array",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Data: json.RawMessage(` [1] `)},
			want: `data: must be a JSON object, such as {"number": 42}, not an array`,
		},
		{
			name: "data string",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`"hello"`)},
			want: `data: must be a JSON object, such as {"number": 42}, not a string`,
		},
		{
			name: "data number",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`-1.5`)},
			want: `data: must be a JSON object, such as {"number": 42}, not a number`,
		},
		{
			name: "data null",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`null`)},
			want: `data: must be a JSON object, such as {"number": 42}, not null`,
		},
		{
			name: "data invalid",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`{"a":}`)},
			want: `data: must be a JSON object, such as {"number": 42}, not invalid JSON`,
		},
		{
			name: "priority",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Metadata: mcpe.Metadata{Priority: "urgent"}},
			want: `metadata.priority: "urgent" is not a priority; use "low", "normal", "high" or "critical"`,
		},
		{
			name: "too many tags",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Metadata: mcpe.Metadata{Tags: manyTags(33)}},
			want: `metadata.tags: has 33 tags; at most 32 are accepted`,
		},
		{
			name: "empty tag",
			ev:   mcpe.Event{ID: testEventID, Type: "a", Metadata: mcpe.Metadata{Tags: []string{""}}},
			want: `metadata.tags[0]: is empty; a tag is a non-empty string such as "frontend"`,
		},
		{
			name: "tag too long",
			ev: mcpe.Event{ID: testEventID, Type: "a", Metadata: mcpe.Metadata{
				Tags: []string{"x", strings.Repeat("t", 129)},
			}},
			want: `metadata.tags[1]: is 129 characters long; at most 128 are accepted`,
		},
		{
			name: "source ID too long",
			ev: mcpe.Event{ID: testEventID, Type: "a", Metadata: mcpe.Metadata{
				SourceEventID: strings.Repeat("s", 257),
			}},
			want: `metadata.sourceEventId: is 257 characters long; at most 256 are accepted`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			err := subscriptions.NormalizeEvent(&ev, testNow)
			if err == nil {
				t.Fatalf("Normalize = nil, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventInputEvent(t *testing.T) {
	tests := []struct {
		name string
		body string // the JSON an event source sends
		want mcpe.Event
	}{
		{
			name: "minimal",
			body: `{"id": "` + testEventID + `", "type": "github.push"}`,
			want: mcpe.Event{
				ID:       testEventID,
				Type:     "github.push",
				Data:     json.RawMessage(`{}`),
				Metadata: mcpe.Metadata{Timestamp: testNow, Priority: mcpe.PriorityNormal},
			},
		},
		{
			name: "metadata without timestamp defaults to now",
			body: `{"id": "` + testEventID + `", "type": "a.b", "data": {"x": [1, 2]},
				"metadata": {"priority": "high", "tags": ["ci"], "sourceEventId": "gh-1"}}`,
			want: mcpe.Event{
				ID:   testEventID,
				Type: "a.b",
				Data: json.RawMessage(`{"x":[1,2]}`),
				Metadata: mcpe.Metadata{
					SourceEventID: "gh-1",
					Timestamp:     testNow,
					Priority:      mcpe.PriorityHigh,
					Tags:          []string{"ci"},
				},
			},
		},
		{
			name: "RFC 3339 timestamp in UTC",
			body: `{"id": "` + testEventID + `", "type": "a", "metadata": {"timestamp": "2025-01-15T10:30:00Z"}}`,
			want: mcpe.Event{
				ID:   testEventID,
				Type: "a",
				Data: json.RawMessage(`{}`),
				Metadata: mcpe.Metadata{
					Timestamp: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
					Priority:  mcpe.PriorityNormal,
				},
			},
		},
		{
			name: "RFC 3339 timestamp with offset and fraction",
			body: `{"id": "` + testEventID + `", "type": "a", "metadata": {"timestamp": "2024-02-29T23:59:59.123456789+02:00"}}`,
			want: mcpe.Event{
				ID:   testEventID,
				Type: "a",
				Data: json.RawMessage(`{}`),
				Metadata: mcpe.Metadata{
					Timestamp: time.Date(2024, 2, 29, 21, 59, 59, 123000000, time.UTC), // to the millisecond
					Priority:  mcpe.PriorityNormal,
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in mcpe.EventInput
			if err := json.Unmarshal([]byte(tt.body), &in); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			got, err := subscriptions.EventFromInput(in, testNow)
			if err != nil {
				t.Fatalf("Event: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventInputEventAssignsID(t *testing.T) {
	got, err := subscriptions.EventFromInput(mcpe.EventInput{Type: "a"}, testNow)
	if err != nil {
		t.Fatalf("Event: %v", err)
	}
	if err := uuid.Validate(got.ID); err != nil {
		t.Errorf("assigned ID %q is not a UUID: %v", got.ID, err)
	}
	want := mcpe.Event{
		Type:     "a",
		Data:     json.RawMessage(`{}`),
		Metadata: mcpe.Metadata{Timestamp: testNow, Priority: mcpe.PriorityNormal},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mcpe.Event{}, "ID")); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestEventInputEventInvalid(t *testing.T) {
	timestamp := func(ts string) mcpe.EventInput {
		return mcpe.EventInput{Type: "a", Metadata: &mcpe.MetadataInput{Timestamp: ts}}
	}
	tests := []struct {
		name      string
		in        mcpe.EventInput
		wantField string
	}{
		{"date only", timestamp("2025-01-15"), "metadata.timestamp"},
		{"no zone", timestamp("2025-01-15T10:30:00"), "metadata.timestamp"},
		{"space for T", timestamp("2025-01-15 10:30:00Z"), "metadata.timestamp"},
		{"offset without colon", timestamp("2025-01-15T10:30:00+0100"), "metadata.timestamp"},
		{"no seconds", timestamp("2025-01-15T10:30Z"), "metadata.timestamp"},
		{"hour out of range", timestamp("2025-01-15T24:00:00Z"), "metadata.timestamp"},
		{"Unix seconds", timestamp("1736937000"), "metadata.timestamp"},
		{"RFC 1123", timestamp("Wed, 15 Jan 2025 10:30:00 GMT"), "metadata.timestamp"},
		{"year 10000 in UTC", timestamp("9999-12-31T23:59:59-23:59"), "metadata.timestamp"},
		{"year -1 in UTC", timestamp("0000-01-01T00:00:00+01:00"), "metadata.timestamp"},
		{"id", mcpe.EventInput{ID: "42", Type: "a"}, "id"},
		{"type", mcpe.EventInput{Type: "a b"}, "type"},
		{"data array", mcpe.EventInput{Type: "a", Data: json.RawMessage(`[]`)}, "data"},
		{"priority", mcpe.EventInput{Type: "a", Metadata: &mcpe.MetadataInput{Priority: "p1"}}, "metadata.priority"},
		{"tag", mcpe.EventInput{Type: "a", Metadata: &mcpe.MetadataInput{Tags: []string{""}}}, "metadata.tags[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := subscriptions.EventFromInput(tt.in, testNow)
			if err == nil {
				t.Fatalf("Event = %+v, want an error for %s", got, tt.wantField)
			}
			if field := invalidField(t, err); field != tt.wantField {
				t.Errorf("field = %q, want %q (error: %v)", field, tt.wantField, err)
			}
			if diff := cmp.Diff(mcpe.Event{}, got); diff != "" {
				t.Errorf("event returned with the error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventInputEventTimestampErrorText(t *testing.T) {
	_, err := subscriptions.EventFromInput(mcpe.EventInput{
		Type:     "a",
		Metadata: &mcpe.MetadataInput{Timestamp: "15/01/2025"},
	}, testNow)
	want := `metadata.timestamp: "15/01/2025" is not an RFC 3339 time; use e.g. "2025-01-15T10:30:00Z", or leave it out for the time of receipt`
	if err == nil {
		t.Fatalf("Event = nil error, want %q", want)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	ev, err := subscriptions.EventFromInput(mcpe.EventInput{
		ID:       testEventID,
		Type:     "github.issue.opened",
		Data:     json.RawMessage(`{ "number": 7 }`),
		Metadata: &mcpe.MetadataInput{Priority: "high", Tags: []string{"triage"}},
	}, testNow)
	if err != nil {
		t.Fatalf("Event: %v", err)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	want := `{"id":"` + testEventID + `","type":"github.issue.opened","data":{"number":7},` +
		`"metadata":{"timestamp":"2025-01-15T10:30:00Z","priority":"high","tags":["triage"]}}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// referenceValidType is ValidateType written plainly.
func referenceValidType(typ string) bool {
	if typ == "" || len(typ) > mcpe.MaxTypeLength {
		return false
	}
	segments := strings.Split(typ, ".")
	if len(segments) > mcpe.MaxTypeSegments {
		return false
	}
	for _, s := range segments {
		if s == "" {
			return false
		}
		for _, r := range s {
			ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-'
			if !ok {
				return false
			}
		}
	}
	return true
}

func FuzzValidateType(f *testing.F) {
	for _, seed := range []string{
		"", "a", "github.push", "github.issue.opened", ".", "a..b", ".a", "a.", "a b", "café",
		"github.*", "a\x00", strings.Repeat("a", 257), strings.Repeat("a.", 16) + "a", "\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, typ string) {
		err := mcpe.ValidateType(typ)
		want := referenceValidType(typ)
		if want != (err == nil) {
			t.Fatalf("ValidateType(%q) = %v; the reference says valid = %t", typ, err, want)
		}
		if err != nil {
			var ie *mcpe.InvalidError
			if !errors.As(err, &ie) || ie.Field != "type" || ie.Message == "" {
				t.Fatalf("ValidateType(%q) = %#v, want an *InvalidError for field \"type\"", typ, err)
			}
			return
		}
		// A valid type is an exact pattern that matches just itself, and an
		// event may carry it.
		p, err := subscriptions.CompilePattern(typ)
		if err != nil {
			t.Fatalf("CompilePattern(%q) = %v for a valid type", typ, err)
		}
		if !p.Exact() || !p.Match(typ) || p.Match(typ+"x") || p.Match(typ[1:]) {
			t.Fatalf("CompilePattern(%q) is not an exact pattern for it: exact=%t", typ, p.Exact())
		}
		ev := mcpe.Event{Type: typ}
		if err := subscriptions.NormalizeEvent(&ev, testNow); err != nil {
			t.Fatalf("Normalize with type %q: %v", typ, err)
		}
	})
}
