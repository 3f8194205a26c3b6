package alertmanager

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
)

// BenchmarkServeHTTP posts a group of three alerts.
func BenchmarkServeHTTP(b *testing.B) {
	a, _ := newTestAdapter(b, nil)
	body := adaptertest.ReadFixture(b, "firing_group.json")
	b.ReportAllocs()
	for b.Loop() {
		if w := post(a, body); w.Code != http.StatusAccepted {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkConvertLarge turns MaxAlerts alerts of 40 labels each (a body
// near the default 1 MiB limit) into events.
func BenchmarkConvertLarge(b *testing.B) {
	a, _ := newTestAdapter(b, nil)
	var s strings.Builder
	s.WriteString(`{"version": "4", "receiver": "mcpe", "alerts": [`)
	for i := range MaxAlerts {
		if i > 0 {
			s.WriteString(",")
		}
		fmt.Fprintf(&s, `{"status": "firing", "startsAt": "2025-06-02T12:00:00Z", "labels": {"alertname": "A%d"`, i)
		for j := range 40 {
			fmt.Fprintf(&s, `, "l%d": "v%d"`, j, j)
		}
		s.WriteString(`}}`)
	}
	s.WriteString(`]}`)
	body := []byte(s.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		n, err := decode(body)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range a.convert(n) {
			if c.err != nil {
				b.Fatal(c.err)
			}
		}
	}
}
