package slack

import (
	"net/http"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
)

// BenchmarkServeHTTP verifies, parses and publishes a channel message.
func BenchmarkServeHTTP(b *testing.B) {
	a, _, _ := newTestAdapter(b, nil)
	body := adaptertest.ReadFixture(b, "message_channel.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if w := post(a, body); w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkUnmappedEvent publishes an event without a mapping, which
// carries a bounded copy of itself.
func BenchmarkUnmappedEvent(b *testing.B) {
	a, _, _ := newTestAdapter(b, nil)
	body := adaptertest.ReadFixture(b, "team_join.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if w := post(a, body); w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
