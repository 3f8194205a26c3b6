package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// lastEvent remembers the event the handler last published.
type lastEvent struct {
	subscriptions.Publisher
	mu sync.Mutex
	ev *mcpe.Event
}

func (p *lastEvent) Publish(ctx context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	p.mu.Lock()
	p.ev = &ev
	p.mu.Unlock()
	return p.Publisher.Publish(ctx, ev)
}

func (p *lastEvent) take() *mcpe.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := p.ev
	p.ev = nil
	return ev
}

// FuzzIngest posts arbitrary bodies: the handler never panics, answers 202
// or a 4xx JSON error, and what it accepts is a valid event.
func FuzzIngest(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`{"type": "deploy.failed", "data": {"service": "api"}}`,
		`{"id": "0b7e3f0e-3c55-4a8e-9a43-5c1f2c1d9e11", "type": "github.issue.opened", "data": {"number": 42},
		  "metadata": {"sourceEventId": "gh-1", "timestamp": "2025-01-14T08:00:00+02:00", "priority": "critical", "tags": ["frontend"]}}`,
		`{"type": "a.b", "metadata": {"timestamp": "9999-12-31T23:59:59-23:59"}}`,
		`{"type": "a.b", "metadata": {"timestamp": "0000-01-01T00:00:00+01:00"}}`,
		`{"type": "a.b"}}`,
		`{"type": "a.b"} {"type": "a.c"}`,
		`{"type": "a.b", "data": [1]}`,
		`{"type": "a.b", "data": null}`,
		`{"type": 1}`,
		`{"metdata": {}}`,
		`{"type": "a.b", "metadata": {"tags": ["\u0000"]}}`,
		`{"type": "a.b", "data": {"s": "\ud800"}}`,
		`[]`,
		`nul`,
		"{\"type\": \"a.b\", \"data\": {\"k\": \"\xff\"}}",
	} {
		f.Add([]byte(seed))
	}
	fx := newFixture(f, IngestOptions{})
	rec := &lastEvent{Publisher: fx.svc}
	h, err := NewIngest(IngestOptions{Publisher: rec, Clock: clocktest.NewFake(now)})
	if err != nil {
		f.Fatal(err)
	}
	h.maxBody = 4096
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		published := rec.take()

		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
		switch {
		case w.Code == http.StatusAccepted:
			var res IngestResponse
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatalf("202 body %q: %v", w.Body, err)
			}
			if err := uuid.Validate(res.ID); err != nil {
				t.Errorf("202 id %q is not a UUID", res.ID)
			}
			if published == nil {
				t.Fatalf("202 without publishing an event")
			}
			// The event published is already normalized: normalizing it
			// again succeeds and changes nothing.
			again := *published
			if err := subscriptions.NormalizeEvent(&again, now); err != nil {
				t.Fatalf("accepted event %+v does not validate: %v", *published, err)
			}
			if diff := cmp.Diff(*published, again); diff != "" {
				t.Errorf("accepted event is not normalized: mismatch (-want +got):\n%s", diff)
			}
			if _, err := json.Marshal(published); err != nil {
				t.Errorf("accepted event does not encode: %v", err)
			}
		case w.Code >= 400 && w.Code < 500:
			var eb ErrorBody
			if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
				t.Fatalf("%d body %q: %v", w.Code, w.Body, err)
			}
			if eb.Error.Code == "" || eb.Error.Message == "" {
				t.Errorf("%d body %q has no code or message", w.Code, w.Body)
			}
		default:
			t.Fatalf("status %d (%s) for body %q; want 202 or 4xx", w.Code, w.Body, body)
		}
	})
}
