package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// now is the time of the fake clock; events without a timestamp get it.
var now = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

// routed records what the service handed to the realtime channel.
type routed struct {
	mu      sync.Mutex
	entries []subscriptions.InboxEntry
}

func (r *routed) Deliver(entries []subscriptions.InboxEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, entries...)
}

// Replay keeps entries as Deliver does.
func (r *routed) Replay(_ string, entries []subscriptions.InboxEntry) { r.Deliver(entries) }

func (r *routed) all() []subscriptions.InboxEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]subscriptions.InboxEntry(nil), r.entries...)
}

// countingStore counts the events that reached the store.
type countingStore struct {
	subscriptions.Store
	mu     sync.Mutex
	stored int
}

func (s *countingStore) Publish(ctx context.Context, b subscriptions.PublishBatch) ([]subscriptions.PublishResult, error) {
	res, err := s.Store.Publish(ctx, b)
	for _, r := range res {
		if err == nil && !r.Duplicate {
			s.mu.Lock()
			s.stored++
			s.mu.Unlock()
		}
	}
	return res, err
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored
}

// fixture is an ingest handler over a real service and an in-memory SQLite
// store, with one subscription of "alice" that matches every event.
type fixture struct {
	handler http.Handler
	svc     *subscriptions.Service
	store   *countingStore
	routed  *routed
	sub     *subscriptions.Subscription
}

// newFixture builds the handler from opts; Publisher and Clock are filled in.
func newFixture(t testing.TB, opts IngestOptions) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Memory)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{store: &countingStore{Store: db}, routed: &routed{}}
	clk := clocktest.NewFake(now)
	f.svc, err = subscriptions.NewService(subscriptions.ServiceOptions{
		Store:     f.store,
		Deliverer: f.routed,
		Clock:     clk,
	})
	if err != nil {
		t.Fatalf("new service: %v", err)
	}
	if err := f.svc.Start(ctx); err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(f.svc.Stop)
	f.sub, err = f.svc.Subscribe(ctx, "alice", mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"*"}},
	})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	opts.Publisher = f.svc
	opts.Clock = clk
	h, err := NewIngest(opts)
	if err != nil {
		t.Fatalf("NewIngest: %v", err)
	}
	f.handler = h
	return f
}

// answer is what the handler wrote.
type answer struct {
	status int
	header http.Header
	body   string
}

// post sends body as JSON; edit may change the request first.
func (f *fixture) post(t testing.TB, body string, edit ...func(*http.Request)) answer {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for _, e := range edit {
		e(r)
	}
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return answer{status: w.Code, header: w.Result().Header, body: w.Body.String()}
}

// accepted decodes a 202 answer.
func accepted(t *testing.T, a answer) IngestResponse {
	t.Helper()
	if a.status != http.StatusAccepted {
		t.Fatalf("status %d (%s); want 202", a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var res IngestResponse
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("202 body %q: %v", a.body, err)
	}
	return res
}

// inbox returns the events in alice's inbox, oldest first.
func (f *fixture) inbox(t *testing.T) []map[string]any {
	t.Helper()
	res, err := f.svc.Poll(context.Background(), "alice", mcpe.PollRequest{Cursor: "0", Limit: mcpe.MaxPollLimit})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	var out []map[string]any
	for _, it := range res.Items {
		var ev map[string]any
		if err := json.Unmarshal(it.Event, &ev); err != nil {
			t.Fatalf("inbox event %s: %v", it.Event, err)
		}
		out = append(out, ev)
	}
	return out
}

// routedIDs returns the IDs of the events routed to the realtime channel.
func (f *fixture) routedIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, e := range f.routed.all() {
		var ev struct{ ID string }
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			t.Fatalf("routed event %s: %v", e.Event, err)
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

func jsonObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func TestAccepted(t *testing.T) {
	const clientID = "0b7e3f0e-3c55-4a8e-9a43-5c1f2c1d9e11"
	tests := []struct {
		name string
		body string
		edit func(*http.Request)
		// want is the stored event; "ID" is replaced with the answered id.
		want string
	}{
		{
			name: "type and data only",
			body: `{"type": "deploy.failed", "data": {"service": "api"}}`,
			want: `{"id": "ID", "type": "deploy.failed", "data": {"service": "api"},
				"metadata": {"timestamp": "2025-01-15T10:30:00Z", "priority": "normal"}}`,
		},
		{
			name: "no data",
			body: `{"type": "heartbeat"}`,
			want: `{"id": "ID", "type": "heartbeat", "data": {},
				"metadata": {"timestamp": "2025-01-15T10:30:00Z", "priority": "normal"}}`,
		},
		{
			name: "all fields",
			body: `{"id": "` + clientID + `", "type": "github.issue.opened", "data": {"number": 42, "labels": ["bug"]},
				"metadata": {"sourceEventId": "gh-1", "timestamp": "2025-01-14T08:00:00+02:00", "priority": "critical", "tags": ["frontend", "p1"]}}`,
			want: `{"id": "` + clientID + `", "type": "github.issue.opened", "data": {"number": 42, "labels": ["bug"]},
				"metadata": {"sourceEventId": "gh-1", "timestamp": "2025-01-14T06:00:00Z", "priority": "critical", "tags": ["frontend", "p1"]}}`,
		},
		{
			name: "charset in the content type",
			body: `{"type": "a.b"}`,
			edit: func(r *http.Request) { r.Header.Set("Content-Type", "application/json; charset=utf-8") },
			want: `{"id": "ID", "type": "a.b", "data": {}, "metadata": {"timestamp": "2025-01-15T10:30:00Z", "priority": "normal"}}`,
		},
		{
			name: "content type in capitals",
			body: `{"type": "a.b"}`,
			edit: func(r *http.Request) { r.Header.Set("Content-Type", "Application/JSON") },
			want: `{"id": "ID", "type": "a.b", "data": {}, "metadata": {"timestamp": "2025-01-15T10:30:00Z", "priority": "normal"}}`,
		},
		{
			name: "whitespace around the object",
			body: "\n\t {\"type\": \"a.b\"} \r\n",
			want: `{"id": "ID", "type": "a.b", "data": {}, "metadata": {"timestamp": "2025-01-15T10:30:00Z", "priority": "normal"}}`,
		},
		{
			name: "null metadata and null id",
			body: `{"type": "a.b", "metadata": null, "id": null}`,
			want: `{"id": "ID", "type": "a.b", "data": {}, "metadata": {"timestamp": "2025-01-15T10:30:00Z", "priority": "normal"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, IngestOptions{})
			var edits []func(*http.Request)
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			res := accepted(t, f.post(t, tt.body, edits...))
			if err := uuid.Validate(res.ID); err != nil {
				t.Errorf("id %q is not a UUID: %v", res.ID, err)
			}
			if res.Duplicate {
				t.Errorf("duplicate = true for a new event")
			}
			want := jsonObject(t, strings.Replace(tt.want, `"ID"`, `"`+res.ID+`"`, 1))
			if diff := cmp.Diff([]map[string]any{want}, f.inbox(t)); diff != "" {
				t.Errorf("inbox mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{res.ID}, f.routedIDs(t)); diff != "" {
				t.Errorf("routed mismatch (-want +got):\n%s", diff)
			}
			if got := f.routed.all()[0].SubscriptionIDs; len(got) != 1 || got[0] != f.sub.ID {
				t.Errorf("routed to subscriptions %q, want [%q]", got, f.sub.ID)
			}
		})
	}
}

func TestClientIDKept(t *testing.T) {
	f := newFixture(t, IngestOptions{})
	const id = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	res := accepted(t, f.post(t, `{"id": "`+id+`", "type": "a.b"}`))
	if diff := cmp.Diff(IngestResponse{ID: id}, res); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	// The same ID again is the same event, whatever else it says.
	res = accepted(t, f.post(t, `{"id": "`+id+`", "type": "c.d", "data": {"x": 1}}`))
	if diff := cmp.Diff(IngestResponse{ID: id, Duplicate: true}, res); diff != "" {
		t.Errorf("second post mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{id}, f.routedIDs(t)); diff != "" {
		t.Errorf("routed mismatch (-want +got):\n%s", diff)
	}
}

func TestDuplicateSourceEventID(t *testing.T) {
	f := newFixture(t, IngestOptions{})
	first := accepted(t, f.post(t, `{"type": "github.push", "data": {"n": 1}, "metadata": {"sourceEventId": "delivery-1"}}`))
	if first.Duplicate {
		t.Fatalf("first post answered duplicate")
	}
	again := accepted(t, f.post(t, `{"type": "github.push", "data": {"n": 2}, "metadata": {"sourceEventId": "delivery-1"}}`))
	if diff := cmp.Diff(IngestResponse{ID: first.ID, Duplicate: true}, again); diff != "" {
		t.Errorf("same type and sourceEventId: mismatch (-want +got):\n%s", diff)
	}
	// The raw body says "duplicate": true, as documented.
	if a := f.post(t, `{"type": "github.push", "metadata": {"sourceEventId": "delivery-1"}}`); !strings.Contains(a.body, `"duplicate":true`) {
		t.Errorf("duplicate body %q does not contain \"duplicate\":true", a.body)
	}
	other := accepted(t, f.post(t, `{"type": "github.pull_request", "metadata": {"sourceEventId": "delivery-1"}}`))
	if other.Duplicate || other.ID == first.ID {
		t.Errorf("same sourceEventId, other type: got %+v; want a new event", other)
	}
	if diff := cmp.Diff([]string{first.ID, other.ID}, f.routedIDs(t)); diff != "" {
		t.Errorf("routed mismatch (-want +got):\n%s", diff)
	}
	if got := len(f.inbox(t)); got != 2 {
		t.Errorf("inbox has %d events, want 2", got)
	}
	if got := f.store.count(); got != 2 {
		t.Errorf("store holds %d events, want 2", got)
	}
}

func TestBearerTokens(t *testing.T) {
	tokens := NewTokens(map[string]string{"publish-secret": "ingest", "second-secret": "ingest"})
	tests := []struct {
		name           string
		authorization  string
		wantStatus     int
		wantChallenge  string
		wantMessageHas string
	}{
		{
			name:           "no header",
			wantStatus:     http.StatusUnauthorized,
			wantChallenge:  `Bearer realm="mcpe-server"`,
			wantMessageHas: `this endpoint needs an "Authorization: Bearer <token>" header with an ingest token`,
		},
		{
			name:           "basic auth",
			authorization:  "Basic cHVibGlzaDpzZWNyZXQ=",
			wantStatus:     http.StatusUnauthorized,
			wantChallenge:  `Bearer realm="mcpe-server"`,
			wantMessageHas: `"Authorization: Bearer <token>"`,
		},
		{
			name:           "empty bearer",
			authorization:  "Bearer ",
			wantStatus:     http.StatusUnauthorized,
			wantChallenge:  `Bearer realm="mcpe-server"`,
			wantMessageHas: `"Authorization: Bearer <token>"`,
		},
		{
			name:           "wrong token",
			authorization:  "Bearer guess",
			wantStatus:     http.StatusUnauthorized,
			wantChallenge:  `Bearer realm="mcpe-server", error="invalid_token"`,
			wantMessageHas: "the bearer token is not an ingest token of this server",
		},
		{name: "right token", authorization: "Bearer publish-secret", wantStatus: http.StatusAccepted},
		{name: "second token, lower-case scheme", authorization: "bearer second-secret", wantStatus: http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, IngestOptions{Tokens: tokens})
			a := f.post(t, `{"type": "a.b"}`, func(r *http.Request) {
				if tt.authorization != "" {
					r.Header.Set("Authorization", tt.authorization)
				}
			})
			if tt.wantStatus == http.StatusAccepted {
				res := accepted(t, a)
				if diff := cmp.Diff([]string{res.ID}, f.routedIDs(t)); diff != "" {
					t.Errorf("routed mismatch (-want +got):\n%s", diff)
				}
				return
			}
			checkRefusal(t, f, a, refusal{status: tt.wantStatus, code: CodeUnauthorized, message: tt.wantMessageHas})
			if got := a.header.Get("WWW-Authenticate"); got != tt.wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantChallenge)
			}
		})
	}
}

// refusal is an expected error answer.
type refusal struct {
	status int
	code   string
	// message is a part of the error message.
	message string
}

// checkRefusal checks a, and that nothing was stored or routed.
func checkRefusal(t *testing.T, f *fixture, a answer, want refusal) {
	t.Helper()
	if a.status != want.status {
		t.Errorf("status %d, want %d (body %s)", a.status, want.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var body ErrorBody
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %q: %v", a.body, err)
	}
	if body.Error.Code != want.code {
		t.Errorf("code %q, want %q (message %q)", body.Error.Code, want.code, body.Error.Message)
	}
	if !strings.Contains(body.Error.Message, want.message) {
		t.Errorf("message %q does not contain %q", body.Error.Message, want.message)
	}
	if n := f.store.count(); n != 0 {
		t.Errorf("%d events stored; a refusal must store nothing", n)
	}
	if got := f.routed.all(); len(got) != 0 {
		t.Errorf("%d entries routed; a refusal must route nothing", len(got))
	}
	if got := f.inbox(t); len(got) != 0 {
		t.Errorf("inbox has %d events; a refusal must deliver nothing", len(got))
	}
}

func TestRefusals(t *testing.T) {
	contentType := func(v string) func(*http.Request) {
		return func(r *http.Request) {
			if v == "" {
				r.Header.Del("Content-Type")
			} else {
				r.Header.Set("Content-Type", v)
			}
		}
	}
	const mediaHelp = `send the event as JSON with "Content-Type: application/json"`
	tests := []struct {
		name string
		body string
		edit func(*http.Request)
		want refusal
	}{
		{name: "no content type", body: `{"type": "a.b"}`, edit: contentType(""),
			want: refusal{http.StatusUnsupportedMediaType, CodeUnsupportedMedia, mediaHelp}},
		{name: "form content type", body: `{"type": "a.b"}`, edit: contentType("application/x-www-form-urlencoded"),
			want: refusal{http.StatusUnsupportedMediaType, CodeUnsupportedMedia, mediaHelp}},
		{name: "text content type", body: `{"type": "a.b"}`, edit: contentType("text/plain"),
			want: refusal{http.StatusUnsupportedMediaType, CodeUnsupportedMedia, mediaHelp}},
		{name: "json suffix type", body: `{"type": "a.b"}`, edit: contentType("application/cloudevents+json"),
			want: refusal{http.StatusUnsupportedMediaType, CodeUnsupportedMedia, mediaHelp}},
		{name: "unparsable content type", body: `{"type": "a.b"}`, edit: contentType("application/json; charset"),
			want: refusal{http.StatusUnsupportedMediaType, CodeUnsupportedMedia, mediaHelp}},

		{name: "empty body", body: ``,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is empty; send a JSON object such as {"type": "deploy.failed", "data": {"service": "api"}}`}},
		{name: "blank body", body: " \n\t ",
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is empty`}},
		{name: "array body", body: `[{"type": "a.b"}]`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body must be a JSON object, such as {"type": "deploy.failed", "data": {"service": "api"}}`}},
		{name: "string body", body: `"a.b"`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body must be a JSON object`}},
		{name: "null body", body: `null`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body must be a JSON object`}},
		{name: "number body", body: `42`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body must be a JSON object`}},
		{name: "missing value", body: `{"type": }`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is not valid JSON: invalid character '}' looking for beginning of value at byte 10`}},
		{name: "single quotes", body: `{'type': 'a.b'}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is not valid JSON: invalid character '\'' looking for beginning of object key string`}},
		{name: "cut short", body: `{"type": "a.b"`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is not valid JSON: it ends too early`}},
		{name: "trailing comma", body: `{"type": "a.b",}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is not valid JSON: invalid character '}'`}},
		{name: "second value", body: `{"type": "a.b"} {"type": "a.c"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body holds more than one JSON value; send one object per request`}},
		{name: "text after the object", body: `{"type": "a.b"} thanks`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body holds more than one JSON value`}},
		{name: "stray closing brace", body: `{"type": "a.b"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is not valid JSON: unexpected "}" after the object`}},
		{name: "stray closing bracket", body: `{"type": "a.b"}]`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `the body is not valid JSON: unexpected "]" after the object`}},
		{name: "misspelled metadata", body: `{"type": "a.b", "metdata": {"priority": "high"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `unknown field "metdata"; the body accepts "id", "type", "data", "metadata" (with "sourceEventId", "timestamp", "priority", "tags")`}},
		{name: "unknown metadata field", body: `{"type": "a.b", "metadata": {"severity": "high"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `unknown field "severity" in metadata; metadata accepts "sourceEventId", "timestamp", "priority", "tags"`}},
		{name: "type as number", body: `{"type": 42}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `type must be a string, not a number`}},
		{name: "tags as string", body: `{"type": "a.b", "metadata": {"tags": "frontend"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `metadata.tags must be an array of strings, not a string`}},
		{name: "tag as number", body: `{"type": "a.b", "metadata": {"tags": [1]}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `each entry of metadata.tags must be a string, not a number`}},
		{name: "metadata as string", body: `{"type": "a.b", "metadata": "high"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `metadata must be an object, not a string`}},
		{name: "priority as number", body: `{"type": "a.b", "metadata": {"priority": 3}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `metadata.priority must be a string, not a number`}},
		{name: "id as number", body: `{"type": "a.b", "id": 7}`,
			want: refusal{http.StatusBadRequest, CodeInvalidJSON, `id must be a string, not a number`}},

		{name: "no type", body: `{"data": {"x": 1}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `type: is empty; give a dot-separated name such as "github.issue.opened"`}},
		{name: "doubled dot in type", body: `{"type": "deploy..failed"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `type: "deploy..failed" has an empty segment`}},
		{name: "space in type", body: `{"type": "deploy failed"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `type: "deploy failed" contains ' '`}},
		{name: "wildcard in type", body: `{"type": "deploy.*"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `type: "deploy.*" contains '*'`}},
		{name: "data array", body: `{"type": "a.b", "data": [1, 2]}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `data: must be a JSON object, such as {"number": 42}, not an array`}},
		{name: "data string", body: `{"type": "a.b", "data": "hello"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `data: must be a JSON object, such as {"number": 42}, not a string`}},
		{name: "data null", body: `{"type": "a.b", "data": null}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `data: must be a JSON object, such as {"number": 42}, not null`}},
		{name: "data number", body: `{"type": "a.b", "data": 42}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `data: must be a JSON object, such as {"number": 42}, not a number`}},
		{name: "bad priority", body: `{"type": "a.b", "metadata": {"priority": "urgent"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.priority: "urgent" is not a priority; use "low", "normal", "high" or "critical"`}},
		{name: "priority in capitals", body: `{"type": "a.b", "metadata": {"priority": "HIGH"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.priority: "HIGH" is not a priority`}},
		{name: "bad timestamp", body: `{"type": "a.b", "metadata": {"timestamp": "yesterday"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.timestamp: "yesterday" is not an RFC 3339 time; use e.g. "2025-01-15T10:30:00Z", or leave it out for the time of receipt`}},
		{name: "timestamp without offset", body: `{"type": "a.b", "metadata": {"timestamp": "2025-01-15T10:30:00"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.timestamp: "2025-01-15T10:30:00" is not an RFC 3339 time`}},
		{name: "timestamp past year 9999 in UTC", body: `{"type": "a.b", "metadata": {"timestamp": "9999-12-31T23:59:59-23:59"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.timestamp: is in the year 10000 once converted to UTC; give a time between the years 0000 and 9999`}},
		{name: "timestamp before year 0 in UTC", body: `{"type": "a.b", "metadata": {"timestamp": "0000-01-01T00:00:00+01:00"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.timestamp: is in the year -1 once converted to UTC`}},
		{name: "bad id", body: `{"type": "a.b", "id": "42"}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `id: "42" is not a UUID; leave id out and the server assigns one`}},
		{name: "empty tag", body: `{"type": "a.b", "metadata": {"tags": ["ok", " "]}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.tags[1]: is empty`}},
		{name: "source id too long", body: `{"type": "a.b", "metadata": {"sourceEventId": "` + strings.Repeat("s", mcpe.MaxSourceIDLength+1) + `"}}`,
			want: refusal{http.StatusBadRequest, CodeInvalidEvent, `metadata.sourceEventId: is 257 characters long; at most 256 are accepted`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, IngestOptions{})
			var edits []func(*http.Request)
			if tt.edit != nil {
				edits = append(edits, tt.edit)
			}
			checkRefusal(t, f, f.post(t, tt.body, edits...), tt.want)
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		t.Run(method, func(t *testing.T) {
			f := newFixture(t, IngestOptions{})
			a := f.post(t, `{"type": "a.b"}`, func(r *http.Request) { r.Method = method })
			checkRefusal(t, f, a, refusal{http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use POST, not " + method})
			if got := a.header.Get("Allow"); got != http.MethodPost {
				t.Errorf("Allow = %q, want POST", got)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 64
	// body builds an event body of exactly n bytes by padding the type.
	body := func(n int) string {
		const frame = `{"type": "a"}`
		return `{"type": "a` + strings.Repeat("b", n-len(frame)) + `"}`
	}
	t.Run("at the limit", func(t *testing.T) {
		f := newFixture(t, IngestOptions{})
		f.handler.(*Ingest).maxBody = limit
		b := body(limit)
		if len(b) != limit {
			t.Fatalf("test body is %d bytes, want %d", len(b), limit)
		}
		res := accepted(t, f.post(t, b))
		if diff := cmp.Diff([]string{res.ID}, f.routedIDs(t)); diff != "" {
			t.Errorf("routed mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("one byte over", func(t *testing.T) {
		f := newFixture(t, IngestOptions{})
		f.handler.(*Ingest).maxBody = limit
		checkRefusal(t, f, f.post(t, body(limit+1)), refusal{http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			"the body is larger than this server's limit of 64 bytes; send less data"})
	})
	t.Run("far over", func(t *testing.T) {
		f := newFixture(t, IngestOptions{})
		f.handler.(*Ingest).maxBody = limit
		checkRefusal(t, f, f.post(t, body(10*limit)), refusal{http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "limit of 64 bytes"})
	})
}

// failingPublisher fails every event the way a broken store would.
type failingPublisher struct{}

func (failingPublisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{}, context.DeadlineExceeded
}

// invalidPublisher refuses every event the way the service refuses one.
type invalidPublisher struct{}

func (invalidPublisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{}, &mcpe.InvalidError{Field: "type", Message: "is not accepted here"}
}

func TestPublisherErrors(t *testing.T) {
	tests := []struct {
		name       string
		publisher  subscriptions.Publisher
		wantStatus int
		wantBody   ErrorBody
	}{
		{name: "store failure", publisher: failingPublisher{}, wantStatus: http.StatusInternalServerError,
			wantBody: errorBody(CodeInternal, "the event could not be stored; it was not accepted, try again")},
		{name: "invalid event", publisher: invalidPublisher{}, wantStatus: http.StatusBadRequest,
			wantBody: errorBody(CodeInvalidEvent, "type: is not accepted here")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewIngest(IngestOptions{Publisher: tt.publisher})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(`{"type": "a.b"}`))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", w.Code, tt.wantStatus)
			}
			var got ErrorBody
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if diff := cmp.Diff(tt.wantBody, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func errorBody(code, message string) ErrorBody {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, message
	return b
}

func TestNewHandlerOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    IngestOptions
		wantErr string
	}{
		{name: "no publisher", opts: IngestOptions{}, wantErr: "IngestOptions.Publisher is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewIngest(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewIngest: err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	h, err := NewIngest(IngestOptions{Publisher: failingPublisher{}})
	if err != nil {
		t.Fatal(err)
	}
	if h.maxBody != MaxBodyBytes {
		t.Errorf("maxBody = %d, want %d", h.maxBody, MaxBodyBytes)
	}
}
