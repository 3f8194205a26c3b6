package alertmanager

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// maxDataBytes bounds the data of one event: every kept field at its
// limit, each byte escaped to six in JSON, and room for the keys.
const maxDataBytes = 6*(MaxLabels*(MaxNameBytes+MaxLabelValueBytes)+
	MaxAnnotations*(MaxNameBytes+MaxAnnotationValueBytes)+
	MaxLabelValueBytes+ // alertname
	2*MaxURLBytes+2*maxFieldBytes+maxFingerprintBytes+2*64) + 4096

// allocBound is the most the parser may allocate for a body of n bytes:
// linear in the body, plus what every alert may carry from the notification
// (receiver, externalURL and groupKey copied into each event's data), plus
// a constant.
func allocBound(n int) uint64 {
	return uint64(64*n) + MaxAlerts*16<<10 + 4<<20
}

// FuzzNotification feeds arbitrary bodies to the parser and the handler:
// nothing panics, a refusal has a reason, and what is accepted is a bounded
// number of valid, bounded events.
func FuzzNotification(f *testing.F) {
	for _, name := range adaptertest.Fixtures(f) {
		f.Add(adaptertest.ReadFixture(f, name+".json"))
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"version": "4"}`, `{"version": "4", "alerts": null}`,
		`{"version": "4", "alerts": [{}]}`, `{"version": "4", "alerts": [null, 1, "x", []]}`,
		`{"version": "4", "alerts": [{"status": "resolved", "labels": {"": ""}, "endsAt": "9999-12-31T23:59:59-23:59"}]}`,
		`{"version": "4", "alerts": [{"status": "firing", "labels": {"alertname": "\u0000..\u2028"}, "fingerprint": "` + strings.Repeat("\\u0001", 200) + `"}]}`,
	} {
		f.Add([]byte(s))
	}
	for _, b := range worstCases() {
		f.Add(b)
	}
	clk := clocktest.NewFake(t0)
	a, err := New(Options{Publisher: adaptertest.ValidatingPublisher{Clock: clk}, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var (
			n       *notification
			reqErr  *httpapi.RequestError
			results []converted
		)
		if alloc := adaptertest.Allocated(func() {
			n, reqErr = decode(body)
			if reqErr == nil {
				results = a.convert(n)
			}
		}); alloc > allocBound(len(body)) {
			t.Fatalf("parsing %d bytes allocated %d bytes; the bound is %d", len(body), alloc, allocBound(len(body)))
		}
		if reqErr != nil {
			if reqErr.Message == "" || (reqErr.Status != http.StatusBadRequest && reqErr.Status != http.StatusRequestEntityTooLarge) {
				t.Fatalf("refusal %d %q", reqErr.Status, reqErr.Message)
			}
		} else {
			if len(n.alerts) > MaxAlerts {
				t.Fatalf("%d alerts accepted, at most %d allowed", len(n.alerts), MaxAlerts)
			}
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

func checkEvent(t *testing.T, ev mcpe.Event) {
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
	if err := subscriptions.NormalizeEvent(&ev, t0); err != nil {
		t.Fatalf("invalid event %+v: %v", ev, err)
	}
}

// worstCases are notifications that make the parser allocate the most for
// their size: the most alerts, each carrying the longest receiver,
// externalURL and groupKey; one alert with many labels; more alerts than
// accepted.
func worstCases() [][]byte {
	group := func(n int, alert string) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, `{"version": "4", "receiver": %q, "externalURL": %q, "groupKey": %q, "alerts": [`,
			strings.Repeat("r", maxFieldBytes), strings.Repeat("u", MaxURLBytes), strings.Repeat("g", maxFieldBytes))
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(alert)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	var labels strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&labels, `"l%d": "",`, i)
	}
	return [][]byte{
		group(MaxAlerts, `{"status": "firing"}`),
		group(MaxAlerts+1, `{"status": "firing"}`),
		group(1, `{"status": "firing", "labels": {`+labels.String()+`"alertname": "A"}}`),
		group(MaxAlerts, `{"status": "firing", "labels": {"alertname": "`+strings.Repeat("\\u2028", 100)+`"}, "annotations": {"d": "`+strings.Repeat("<>&", 100)+`"}}`),
	}
}

// The worst cases stay within the allocation bound that FuzzNotification
// checks, and the bound is not so loose that it checks nothing.
func TestParserAllocationBound(t *testing.T) {
	clk := clocktest.NewFake(t0)
	a, err := New(Options{Publisher: adaptertest.ValidatingPublisher{Clock: clk}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range worstCases() {
		alloc := adaptertest.Allocated(func() {
			if n, reqErr := decode(body); reqErr == nil {
				a.convert(n)
			}
		})
		t.Logf("case %d: %d bytes in, %d allocated (%.1f per byte), bound %d", i, len(body), alloc, float64(alloc)/float64(len(body)), allocBound(len(body)))
		if alloc > allocBound(len(body)) {
			t.Errorf("case %d: %d bytes allocated for %d; the bound is %d", i, alloc, len(body), allocBound(len(body)))
		}
	}
	if allocBound(adapters.DefaultMaxBodyBytes) > 256<<20 {
		t.Errorf("the bound for a body of the default limit is %d bytes; it should stay well under 256 MiB", allocBound(adapters.DefaultMaxBodyBytes))
	}
}
