package github

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// t0 is the fake clock's time: after every time in the fixtures.
var t0 = time.Date(2025, 6, 3, 8, 0, 0, 0, time.UTC)

// testSecret signs the deliveries of the tests.
var testSecret = []byte("It's a Secret to Everybody")

// fakePublisher validates events as the Service does, gives them
// predictable IDs, and accepts a type and sourceEventId once.
type fakePublisher struct {
	clock clock.Clock
	// fail, when set, can refuse an event before it is stored.
	fail func(ev subscriptions.Event) error

	mu     sync.Mutex
	events []subscriptions.Event
	seen   map[string]string
}

func (p *fakePublisher) Publish(_ context.Context, ev subscriptions.Event) (subscriptions.PublishResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		if err := p.fail(ev); err != nil {
			return subscriptions.PublishResult{}, err
		}
	}
	ev.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(p.events)+1)
	if err := ev.Normalize(p.clock.Now()); err != nil {
		return subscriptions.PublishResult{}, err
	}
	key := ev.Type + "\x00" + ev.Metadata.SourceEventID
	if id, ok := p.seen[key]; ok && ev.Metadata.SourceEventID != "" {
		return subscriptions.PublishResult{EventID: id, Duplicate: true}, nil
	}
	if p.seen == nil {
		p.seen = make(map[string]string)
	}
	p.seen[key] = ev.ID
	p.events = append(p.events, ev)
	return subscriptions.PublishResult{EventID: ev.ID}, nil
}

func (p *fakePublisher) published() []subscriptions.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]subscriptions.Event(nil), p.events...)
}

// newTestAdapter returns an adapter with testSecret on a fake clock and
// publisher; edit changes its options first.
func newTestAdapter(t testing.TB, edit func(*Options)) (*Adapter, *fakePublisher) {
	t.Helper()
	clk := clock.NewFake(t0)
	pub := &fakePublisher{clock: clk}
	opts := Options{Publisher: pub, Secret: testSecret, Clock: clk}
	if edit != nil {
		edit(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, pub
}

// delivery is a request as GitHub sends it.
type delivery struct {
	event, id   string
	contentType string // "" is application/json; "-" sends none
	body        []byte
	signature   string // "" signs body with testSecret; "-" sends none
	headers     []string
}

func (d delivery) request() *http.Request {
	r := httptest.NewRequest(http.MethodPost, Endpoint, bytes.NewReader(d.body))
	r.Header.Set("User-Agent", "GitHub-Hookshot/a8ed9c8")
	switch d.contentType {
	case "":
		r.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		r.Header.Set("Content-Type", d.contentType)
	}
	if d.event != "" {
		r.Header.Set("X-GitHub-Event", d.event)
	}
	if d.id != "" {
		r.Header.Set("X-GitHub-Delivery", d.id)
	}
	r.Header.Set("X-GitHub-Hook-ID", "512034119")
	switch d.signature {
	case "":
		r.Header.Set("X-Hub-Signature-256", Signature(testSecret, d.body))
	case "-":
	default:
		r.Header.Set("X-Hub-Signature-256", d.signature)
	}
	for i := 0; i+1 < len(d.headers); i += 2 {
		r.Header.Set(d.headers[i], d.headers[i+1])
	}
	return r
}

// send serves d with h.
func send(h http.Handler, d delivery) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, d.request())
	return w
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
