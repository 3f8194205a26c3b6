package alertmanager

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

// t0 is the fake clock's time: after every time in the fixtures.
var t0 = time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC)

// newTestAdapter returns an adapter on a fake clock and publisher; edit
// changes its options first.
func newTestAdapter(t testing.TB, edit func(*Options)) (*Adapter, *adaptertest.Publisher) {
	t.Helper()
	clk := clocktest.NewFake(t0)
	pub := &adaptertest.Publisher{Clock: clk}
	opts := Options{Publisher: pub, Clock: clk}
	if edit != nil {
		edit(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, pub
}

// post sends body to h as Alertmanager does, with headers on top.
func post(h http.Handler, body []byte, headers ...string) *httptest.ResponseRecorder {
	headers = append([]string{"User-Agent", "Alertmanager/0.28.1"}, headers...)
	return adaptertest.Serve(h, adaptertest.Request("", Endpoint, "", body, headers...))
}
