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

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// testNow is the injected clock reading of the event tests.
var testNow = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

const testEventID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"

// invalidField returns the field of err, which must be an *InvalidError.
func invalidField(t *testing.T, err error) string {
	t.Helper()
	var ie *subscriptions.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
	}
	if ie.Message == "" {
		t.Errorf("error for field %q has an empty message", ie.Field)
	}
	return ie.Field
}

func TestValidateType(t *testing.T) {
	valid := []string{
		"a",
		"github.push",
		"github.issue.opened",
		"Slack.Message_Posted",
		"ci-build.v2.finished",
		"0.1",
		"_._",
		strings.Repeat("a", subscriptions.MaxTypeLength),
		strings.Repeat("a.", subscriptions.MaxTypeSegments-1) + "a",
	}
	for _, typ := range valid {
		if err := subscriptions.ValidateType(typ); err != nil {
			t.Errorf("ValidateType(%q) = %v, want nil", typ, err)
		}
	}

	invalid := []struct {
		name string
		typ  string
	}{
		{"empty", ""},
		{"only a dot", "."},
		{"leading dot", ".github.push"},
		{"trailing dot", "github.push."},
		{"double dot", "github..push"},
		{"space", "github push"},
		{"slash", "github/push"},
		{"colon", "github:push"},
		{"wildcard", "github.*"},
		{"non-ASCII", "café.opened"},
		{"control character", "github\npush"},
		{"too long", strings.Repeat("a", subscriptions.MaxTypeLength+1)},
		{"too many segments", strings.Repeat("a.", subscriptions.MaxTypeSegments) + "a"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			err := subscriptions.ValidateType(tt.typ)
			if err == nil {
				t.Fatalf("ValidateType(%q) = nil, want an error", tt.typ)
			}
			if field := invalidField(t, err); field != "type" {
				t.Errorf("field = %q, want %q", field, "type")
			}
		})
	}
}

func TestValidateTypeErrorText(t *testing.T) {
	tests := []struct {
		typ  string
		want string
	}{
		{"", `type: is empty; give a dot-separated name such as "github.issue.opened"`},
		{"github..push", `type: "github..push" has an empty segment; a type is dot-separated segments such as "github.issue.opened", with no leading, trailing or doubled dots`},
		{".github", `type: ".github" has an empty segment; a type is dot-separated segments such as "github.issue.opened", with no leading, trailing or doubled dots`},
		{"github push", `type: "github push" contains ' '; a type is dot-separated segments of letters, digits, '_' and '-', such as "github.issue.opened"`},
		// The whole character is named, not the first byte of its encoding.
		{"café", `type: "café" contains 'é'; a type is dot-separated segments of letters, digits, '_' and '-', such as "github.issue.opened"`},
		{strings.Repeat("a", 300), `type: is 300 characters long; at most 256 are accepted`},
		{strings.Repeat("a.", 16) + "a", `type: "` + strings.Repeat("a.", 16) + `a" has 17 segments; at most 16 are accepted`},
	}
	for _, tt := range tests {
		err := subscriptions.ValidateType(tt.typ)
		if err == nil {
			t.Errorf("ValidateType(%q) = nil, want %q", tt.typ, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("ValidateType(%q) mismatch (-want +got):\n%s", tt.typ, diff)
		}
	}
}

func TestEventNormalize(t *testing.T) {
	ts := time.Date(2024, 12, 24, 18, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   subscriptions.Event
		want subscriptions.Event
	}{
		{
			name: "defaults",
			in:   subscriptions.Event{ID: testEventID, Type: "github.push"},
			want: subscriptions.Event{
				ID:       testEventID,
				Type:     "github.push",
				Data:     json.RawMessage(`{}`),
				Metadata: subscriptions.Metadata{Timestamp: testNow, Priority: subscriptions.PriorityNormal},
			},
		},
		{
			name: "whitespace-only data becomes an empty object",
			in:   subscriptions.Event{ID: testEventID, Type: "a", Data: json.RawMessage(" \n\t ")},
			want: subscriptions.Event{
				ID:       testEventID,
				Type:     "a",
				Data:     json.RawMessage(`{}`),
				Metadata: subscriptions.Metadata{Timestamp: testNow, Priority: subscriptions.PriorityNormal},
			},
		},
		{
			name: "data is compacted",
			in: subscriptions.Event{
				ID:   testEventID,
				Type: "github.issue.opened",
				Data: json.RawMessage(" {\n  \"number\" : 42,\n  \"labels\": [ \"bug\", \"ui\" ],\n  \"title\": \"a  b\"\n}\n"),
			},
			want: subscriptions.Event{
				ID:       testEventID,
				Type:     "github.issue.opened",
				Data:     json.RawMessage(`{"number":42,"labels":["bug","ui"],"title":"a  b"}`),
				Metadata: subscriptions.Metadata{Timestamp: testNow, Priority: subscriptions.PriorityNormal},
			},
		},
		{
			name: "given metadata is kept, timestamp in UTC",
			in: subscriptions.Event{
				ID:   testEventID,
				Type: "ci.build.failed",
				Data: json.RawMessage(`{"ok":false}`),
				Metadata: subscriptions.Metadata{
					SourceEventID: "build-17",
					Timestamp:     ts,
					Priority:      subscriptions.PriorityCritical,
					Tags:          []string{"ci", "deploy"},
				},
			},
			want: subscriptions.Event{
				ID:   testEventID,
				Type: "ci.build.failed",
				Data: json.RawMessage(`{"ok":false}`),
				Metadata: subscriptions.Metadata{
					SourceEventID: "build-17",
					Timestamp:     time.Date(2024, 12, 24, 17, 0, 0, 0, time.UTC),
					Priority:      subscriptions.PriorityCritical,
					Tags:          []string{"ci", "deploy"},
				},
			},
		},
		{
			name: "limits are inclusive",
			in: subscriptions.Event{
				ID:   testEventID,
				Type: "a",
				Metadata: subscriptions.Metadata{
					SourceEventID: strings.Repeat("s", subscriptions.MaxSourceIDLength),
					Priority:      subscriptions.PriorityLow,
					Tags:          manyTags(subscriptions.MaxTags),
				},
			},
			want: subscriptions.Event{
				ID:   testEventID,
				Type: "a",
				Data: json.RawMessage(`{}`),
				Metadata: subscriptions.Metadata{
					SourceEventID: strings.Repeat("s", subscriptions.MaxSourceIDLength),
					Timestamp:     testNow,
					Priority:      subscriptions.PriorityLow,
					Tags:          manyTags(subscriptions.MaxTags),
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			if err := got.Normalize(testNow); err != nil {
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
	ev := subscriptions.Event{Type: "a"}
	if err := ev.Normalize(testNow); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if err := uuid.Validate(ev.ID); err != nil {
		t.Errorf("assigned ID %q is not a UUID: %v", ev.ID, err)
	}
	other := subscriptions.Event{Type: "a"}
	if err := other.Normalize(testNow); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	if ev.ID == other.ID {
		t.Errorf("two events were assigned the same ID %q", ev.ID)
	}
}

func TestEventNormalizeInvalid(t *testing.T) {
	base := func(edit func(*subscriptions.Event)) subscriptions.Event {
		ev := subscriptions.Event{ID: testEventID, Type: "github.push", Data: json.RawMessage(`{"a":1}`)}
		edit(&ev)
		return ev
	}
	tests := []struct {
		name      string
		ev        subscriptions.Event
		wantField string
	}{
		{"id not a UUID", base(func(e *subscriptions.Event) { e.ID = "event-1" }), "id"},
		{"id truncated UUID", base(func(e *subscriptions.Event) { e.ID = testEventID[:35] }), "id"},
		{"bad type", base(func(e *subscriptions.Event) { e.Type = "github..push" }), "type"},
		{"empty type", base(func(e *subscriptions.Event) { e.Type = "" }), "type"},
		{"data array", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`[1,2]`) }), "data"},
		{"data string", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`"x"`) }), "data"},
		{"data number", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`42`) }), "data"},
		{"data boolean", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`true`) }), "data"},
		{"data null", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`null`) }), "data"},
		{"data invalid JSON", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`{"a":`) }), "data"},
		{"data two objects", base(func(e *subscriptions.Event) { e.Data = json.RawMessage(`{}{}`) }), "data"},
		{"unknown priority", base(func(e *subscriptions.Event) { e.Metadata.Priority = "urgent" }), "metadata.priority"},
		{"priority is case-sensitive", base(func(e *subscriptions.Event) { e.Metadata.Priority = "HIGH" }), "metadata.priority"},
		{"source ID too long", base(func(e *subscriptions.Event) {
			e.Metadata.SourceEventID = strings.Repeat("s", subscriptions.MaxSourceIDLength+1)
		}), "metadata.sourceEventId"},
		{"too many tags", base(func(e *subscriptions.Event) { e.Metadata.Tags = manyTags(subscriptions.MaxTags + 1) }), "metadata.tags"},
		{"empty tag", base(func(e *subscriptions.Event) { e.Metadata.Tags = []string{"ci", ""} }), "metadata.tags[1]"},
		{"blank tag", base(func(e *subscriptions.Event) { e.Metadata.Tags = []string{" \t"} }), "metadata.tags[0]"},
		{"tag too long", base(func(e *subscriptions.Event) {
			e.Metadata.Tags = []string{"ok", "ok", strings.Repeat("t", subscriptions.MaxTagLength+1)}
		}), "metadata.tags[2]"},
		{"tag with control character", base(func(e *subscriptions.Event) { e.Metadata.Tags = []string{"a\x00b"} }), "metadata.tags[0]"},
		{"tag with DEL", base(func(e *subscriptions.Event) { e.Metadata.Tags = []string{"a\x7f"} }), "metadata.tags[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			err := ev.Normalize(testNow)
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
		ev   subscriptions.Event
		want string
	}{
		{
			name: "id",
			ev:   subscriptions.Event{ID: "event-1", Type: "a"},
			want: `id: "event-1" is not a UUID; leave id out and the server assigns one`,
		},
		{
			name: "data array",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Data: json.RawMessage(` [1] `)},
			want: `data: must be a JSON object, such as {"number": 42}, not an array`,
		},
		{
			name: "data string",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`"hello"`)},
			want: `data: must be a JSON object, such as {"number": 42}, not a string`,
		},
		{
			name: "data number",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`-1.5`)},
			want: `data: must be a JSON object, such as {"number": 42}, not a number`,
		},
		{
			name: "data null",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`null`)},
			want: `data: must be a JSON object, such as {"number": 42}, not null`,
		},
		{
			name: "data invalid",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Data: json.RawMessage(`{"a":}`)},
			want: `data: must be a JSON object, such as {"number": 42}, not invalid JSON`,
		},
		{
			name: "priority",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Metadata: subscriptions.Metadata{Priority: "urgent"}},
			want: `metadata.priority: "urgent" is not a priority; use "low", "normal", "high" or "critical"`,
		},
		{
			name: "too many tags",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Metadata: subscriptions.Metadata{Tags: manyTags(33)}},
			want: `metadata.tags: has 33 tags; at most 32 are accepted`,
		},
		{
			name: "empty tag",
			ev:   subscriptions.Event{ID: testEventID, Type: "a", Metadata: subscriptions.Metadata{Tags: []string{""}}},
			want: `metadata.tags[0]: is empty; a tag is a non-empty string such as "frontend"`,
		},
		{
			name: "tag too long",
			ev: subscriptions.Event{ID: testEventID, Type: "a", Metadata: subscriptions.Metadata{
				Tags: []string{"x", strings.Repeat("t", 129)},
			}},
			want: `metadata.tags[1]: is 129 characters long; at most 128 are accepted`,
		},
		{
			name: "source ID too long",
			ev: subscriptions.Event{ID: testEventID, Type: "a", Metadata: subscriptions.Metadata{
				SourceEventID: strings.Repeat("s", 257),
			}},
			want: `metadata.sourceEventId: is 257 characters long; at most 256 are accepted`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			err := ev.Normalize(testNow)
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
		want subscriptions.Event
	}{
		{
			name: "minimal",
			body: `{"id": "` + testEventID + `", "type": "github.push"}`,
			want: subscriptions.Event{
				ID:       testEventID,
				Type:     "github.push",
				Data:     json.RawMessage(`{}`),
				Metadata: subscriptions.Metadata{Timestamp: testNow, Priority: subscriptions.PriorityNormal},
			},
		},
		{
			name: "metadata without timestamp defaults to now",
			body: `{"id": "` + testEventID + `", "type": "a.b", "data": {"x": [1, 2]},
				"metadata": {"priority": "high", "tags": ["ci"], "sourceEventId": "gh-1"}}`,
			want: subscriptions.Event{
				ID:   testEventID,
				Type: "a.b",
				Data: json.RawMessage(`{"x":[1,2]}`),
				Metadata: subscriptions.Metadata{
					SourceEventID: "gh-1",
					Timestamp:     testNow,
					Priority:      subscriptions.PriorityHigh,
					Tags:          []string{"ci"},
				},
			},
		},
		{
			name: "RFC 3339 timestamp in UTC",
			body: `{"id": "` + testEventID + `", "type": "a", "metadata": {"timestamp": "2025-01-15T10:30:00Z"}}`,
			want: subscriptions.Event{
				ID:   testEventID,
				Type: "a",
				Data: json.RawMessage(`{}`),
				Metadata: subscriptions.Metadata{
					Timestamp: time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
					Priority:  subscriptions.PriorityNormal,
				},
			},
		},
		{
			name: "RFC 3339 timestamp with offset and fraction",
			body: `{"id": "` + testEventID + `", "type": "a", "metadata": {"timestamp": "2024-02-29T23:59:59.123456789+02:00"}}`,
			want: subscriptions.Event{
				ID:   testEventID,
				Type: "a",
				Data: json.RawMessage(`{}`),
				Metadata: subscriptions.Metadata{
					Timestamp: time.Date(2024, 2, 29, 21, 59, 59, 123456789, time.UTC),
					Priority:  subscriptions.PriorityNormal,
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in subscriptions.EventInput
			if err := json.Unmarshal([]byte(tt.body), &in); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			got, err := in.Event(testNow)
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
	got, err := subscriptions.EventInput{Type: "a"}.Event(testNow)
	if err != nil {
		t.Fatalf("Event: %v", err)
	}
	if err := uuid.Validate(got.ID); err != nil {
		t.Errorf("assigned ID %q is not a UUID: %v", got.ID, err)
	}
	want := subscriptions.Event{
		Type:     "a",
		Data:     json.RawMessage(`{}`),
		Metadata: subscriptions.Metadata{Timestamp: testNow, Priority: subscriptions.PriorityNormal},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(subscriptions.Event{}, "ID")); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestEventInputEventInvalid(t *testing.T) {
	timestamp := func(ts string) subscriptions.EventInput {
		return subscriptions.EventInput{Type: "a", Metadata: &subscriptions.MetadataInput{Timestamp: ts}}
	}
	tests := []struct {
		name      string
		in        subscriptions.EventInput
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
		{"id", subscriptions.EventInput{ID: "42", Type: "a"}, "id"},
		{"type", subscriptions.EventInput{Type: "a b"}, "type"},
		{"data array", subscriptions.EventInput{Type: "a", Data: json.RawMessage(`[]`)}, "data"},
		{"priority", subscriptions.EventInput{Type: "a", Metadata: &subscriptions.MetadataInput{Priority: "p1"}}, "metadata.priority"},
		{"tag", subscriptions.EventInput{Type: "a", Metadata: &subscriptions.MetadataInput{Tags: []string{""}}}, "metadata.tags[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Event(testNow)
			if err == nil {
				t.Fatalf("Event = %+v, want an error for %s", got, tt.wantField)
			}
			if field := invalidField(t, err); field != tt.wantField {
				t.Errorf("field = %q, want %q (error: %v)", field, tt.wantField, err)
			}
			if diff := cmp.Diff(subscriptions.Event{}, got); diff != "" {
				t.Errorf("event returned with the error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventInputEventTimestampErrorText(t *testing.T) {
	_, err := subscriptions.EventInput{
		Type:     "a",
		Metadata: &subscriptions.MetadataInput{Timestamp: "15/01/2025"},
	}.Event(testNow)
	want := `metadata.timestamp: "15/01/2025" is not an RFC 3339 time; use e.g. "2025-01-15T10:30:00Z", or leave it out for the time of receipt`
	if err == nil {
		t.Fatalf("Event = nil error, want %q", want)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	ev, err := subscriptions.EventInput{
		ID:       testEventID,
		Type:     "github.issue.opened",
		Data:     json.RawMessage(`{ "number": 7 }`),
		Metadata: &subscriptions.MetadataInput{Priority: "high", Tags: []string{"triage"}},
	}.Event(testNow)
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

func TestPriorityValid(t *testing.T) {
	for _, p := range subscriptions.Priorities {
		if !p.Valid() {
			t.Errorf("%q.Valid() = false, want true", p)
		}
	}
	for _, p := range []subscriptions.Priority{"", "urgent", "Normal", " low"} {
		if p.Valid() {
			t.Errorf("%q.Valid() = true, want false", p)
		}
	}
}

func FuzzValidateType(f *testing.F) {
	for _, seed := range []string{
		"", "a", "github.push", "github.issue.opened", ".", "a..b", ".a", "a.", "a b", "café",
		"github.*", "a\x00", strings.Repeat("a", 257), strings.Repeat("a.", 16) + "a", "\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, typ string) {
		err := subscriptions.ValidateType(typ)
		want := referenceValidType(typ)
		if want != (err == nil) {
			t.Fatalf("ValidateType(%q) = %v; the reference says valid = %t", typ, err, want)
		}
		if err != nil {
			var ie *subscriptions.InvalidError
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
		ev := subscriptions.Event{Type: typ}
		if err := ev.Normalize(testNow); err != nil {
			t.Fatalf("Normalize with type %q: %v", typ, err)
		}
	})
}

// referenceValidType is ValidateType written plainly.
func referenceValidType(typ string) bool {
	if typ == "" || len(typ) > subscriptions.MaxTypeLength {
		return false
	}
	segments := strings.Split(typ, ".")
	if len(segments) > subscriptions.MaxTypeSegments {
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
