package slack

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

// t0 is the fake clock's time, at which test requests are signed.
var t0 = time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC)

// testSecret signs the test requests.
var testSecret = []byte("0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6")

// newTestAdapter returns an adapter on a fake clock at t0 and a fake
// publisher, with testSecret; edit changes its options first.
func newTestAdapter(t testing.TB, edit func(*Options)) (*Adapter, *adaptertest.Publisher, *clocktest.Fake) {
	t.Helper()
	clk := clocktest.NewFake(t0)
	pub := &adaptertest.Publisher{Clock: clk}
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
	return adaptertest.Serve(h, signedRequest("", at, "", body, append([]string{"User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)"}, headers...)...))
}

// signedRequest is adaptertest.Request with the headers of a request signed
// with testSecret at the time at, then headers.
func signedRequest(method string, at time.Time, contentType string, body []byte, headers ...string) *http.Request {
	ts := strconv.FormatInt(at.Unix(), 10)
	signed := []string{HeaderTimestamp, ts, HeaderSignature, Signature(testSecret, ts, body)}
	return adaptertest.Request(method, Endpoint, contentType, body, append(signed, headers...)...)
}
