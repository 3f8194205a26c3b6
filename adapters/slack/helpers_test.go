package slack

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// t0 is the fake clock's time, at which test requests are signed.
var t0 = time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC)

// testSecret signs the test requests.
var testSecret = []byte("0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6")

// fakePublisher validates events as the Service does, gives them
// predictable IDs, and accepts a type and sourceEventId once.
type fakePublisher struct {
	clock clock.Clock
	// fail, when set, can refuse an event before it is stored.
	fail func(ev subscriptions.Event) error

	mu     sync.Mutex
	calls  int
	events []subscriptions.Event
	seen   map[string]string
}

func (p *fakePublisher) Publish(_ context.Context, ev subscriptions.Event) (subscriptions.PublishResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
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

func (p *fakePublisher) callCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// newTestAdapter returns an adapter on a fake clock at t0 and a fake
// publisher, with testSecret; edit changes its options first.
func newTestAdapter(t testing.TB, edit func(*Options)) (*Adapter, *fakePublisher, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	pub := &fakePublisher{clock: clk}
	opts := Options{Publisher: pub, SigningSecret: testSecret, Clock: clk}
	if edit != nil {
		edit(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, pub, clk
}

// post sends body to h as Slack does: JSON, signed with testSecret at the
// time t0; headers are set on top ("" as a value deletes a header).
func post(h http.Handler, body []byte, headers ...string) *httptest.ResponseRecorder {
	return postAt(h, t0, body, headers...)
}

// postAt is post with the request signed at time at.
func postAt(h http.Handler, at time.Time, body []byte, headers ...string) *httptest.ResponseRecorder {
	ts := strconv.FormatInt(at.Unix(), 10)
	r := httptest.NewRequest(http.MethodPost, Endpoint, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	r.Header.Set(HeaderTimestamp, ts)
	r.Header.Set(HeaderSignature, Signature(testSecret, ts, body))
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			r.Header.Del(headers[i])
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
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
