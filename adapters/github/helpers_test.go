package github

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

// t0 is the fake clock's time: after every time in the fixtures.
var t0 = time.Date(2025, 6, 3, 8, 0, 0, 0, time.UTC)

// testSecret signs the deliveries of the tests.
var testSecret = []byte("It's a Secret to Everybody")

// newTestAdapter returns an adapter with testSecret on a fake clock and
// publisher; edit changes its options first.
func newTestAdapter(t testing.TB, edit func(*Options)) (*Adapter, *adaptertest.Publisher) {
	t.Helper()
	clk := clocktest.NewFake(t0)
	pub := &adaptertest.Publisher{Clock: clk}
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
	h := []string{"User-Agent", "GitHub-Hookshot/a8ed9c8", "X-GitHub-Hook-ID", "512034119"}
	if d.event != "" {
		h = append(h, EventHeader, d.event)
	}
	if d.id != "" {
		h = append(h, DeliveryHeader, d.id)
	}
	switch d.signature {
	case "":
		h = append(h, SignatureHeader, Signature(testSecret, d.body))
	case "-":
	default:
		h = append(h, SignatureHeader, d.signature)
	}
	return adaptertest.Request("", Endpoint, d.contentType, d.body, append(h, d.headers...)...)
}

// send serves d with h.
func send(h http.Handler, d delivery) *httptest.ResponseRecorder {
	return adaptertest.Serve(h, d.request())
}
