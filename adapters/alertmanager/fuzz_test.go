package alertmanager

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// maxDataBytes bounds the data of one event: every kept field at its
// limit, each byte escaped to six in JSON, and room for the keys.
const maxDataBytes = 6*(MaxLabels*(MaxNameBytes+MaxLabelValueBytes)+
	MaxAnnotations*(MaxNameBytes+MaxAnnotationValueBytes)+
	MaxLabelValueBytes+ // alertname
	2*MaxURLBytes+2*maxFieldBytes+maxFingerprintBytes+2*64) + 4096

// validatingPublisher accepts every valid event and stores nothing.
type validatingPublisher struct{ clock clock.Clock }

func (p validatingPublisher) Publish(_ context.Context, ev subscriptions.Event) (subscriptions.PublishResult, error) {
	if err := ev.Normalize(p.clock.Now()); err != nil {
		return subscriptions.PublishResult{}, err
	}
	return subscriptions.PublishResult{EventID: ev.ID}, nil
}

// FuzzNotification feeds arbitrary bodies to the parser and the handler:
// nothing panics, a refusal has a reason, and what is accepted is a bounded
// number of valid, bounded events.
func FuzzNotification(f *testing.F) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, path := range fixtures {
		if strings.HasSuffix(path, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"version": "4"}`, `{"version": "4", "alerts": null}`,
		`{"version": "4", "alerts": [{}]}`, `{"version": "4", "alerts": [null, 1, "x", []]}`,
		`{"version": "4", "alerts": [{"status": "resolved", "labels": {"": ""}, "endsAt": "9999-12-31T23:59:59-23:59"}]}`,
		`{"version": "4", "alerts": [{"status": "firing", "labels": {"alertname": "\u0000..\u2028"}, "fingerprint": "` + strings.Repeat("\\u0001", 200) + `"}]}`,
	} {
		f.Add([]byte(s))
	}
	clk := clock.NewFake(t0)
	a, err := New(Options{Publisher: validatingPublisher{clock: clk}, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, reqErr := decode(body)
		if reqErr != nil {
			if reqErr.message == "" || (reqErr.status != http.StatusBadRequest && reqErr.status != http.StatusRequestEntityTooLarge) {
				t.Fatalf("refusal %d %q", reqErr.status, reqErr.message)
			}
		} else {
			if len(n.alerts) > MaxAlerts {
				t.Fatalf("%d alerts accepted, at most %d allowed", len(n.alerts), MaxAlerts)
			}
			results := a.convert(n)
			if len(results) != len(n.alerts) {
				t.Fatalf("%d results for %d alerts", len(results), len(n.alerts))
			}
			for _, c := range results {
				if c.err != nil {
					if c.err.Error() == "" {
						t.Fatal("an alert refused without a reason")
					}
					continue
				}
				checkEvent(t, c.event)
			}
		}
		w := post(a, body)
		switch w.Code {
		case http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for body %q: %s", w.Code, body, w.Body)
		}
	})
}

func checkEvent(t *testing.T, ev subscriptions.Event) {
	t.Helper()
	if len(ev.Data) > maxDataBytes {
		t.Fatalf("data is %d bytes; the bound is %d", len(ev.Data), maxDataBytes)
	}
	if !strings.HasPrefix(ev.Type, "alert.") || strings.Count(ev.Type, ".") != 2 {
		t.Fatalf("type %q is not alert.<alertname>.<status>", ev.Type)
	}
	if ev.Metadata.SourceEventID == "" {
		t.Fatal("no sourceEventId")
	}
	if err := ev.Normalize(t0); err != nil {
		t.Fatalf("invalid event %+v: %v", ev, err)
	}
}
