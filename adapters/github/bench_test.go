package github

import (
	"net/http"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
)

// BenchmarkServeHTTP receives a signed pull_request delivery of about
// 10 KB, as GitHub sends it.
func BenchmarkServeHTTP(b *testing.B) {
	a, _ := newTestAdapter(b, nil)
	d := fixtureDelivery(b, "pull_request.closed")
	b.SetBytes(int64(len(d.body)))
	b.ReportAllocs()
	for b.Loop() {
		if w := send(a, d); w.Code != http.StatusAccepted {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkConvertPush reads a push of 25 commits and makes its event.
func BenchmarkConvertPush(b *testing.B) {
	a, _ := newTestAdapter(b, nil)
	body := adaptertest.ReadFixture(b, "push.many_commits.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, reqErr := decode(body)
		if reqErr != nil {
			b.Fatal(reqErr)
		}
		if _, err := a.event("push", "d", p, body, t0); err != nil {
			b.Fatal(err)
		}
	}
}
