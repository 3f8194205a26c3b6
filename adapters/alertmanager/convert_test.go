package alertmanager

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// convertOne turns one alert, given as JSON, into its event.
func convertOne(t *testing.T, a *Adapter, alert string) (mcpe.Event, error) {
	t.Helper()
	n, reqErr := decode([]byte(`{"version": "4", "receiver": "mcpe", "alerts": [` + alert + `]}`))
	if reqErr != nil {
		t.Fatalf("decode: %v", reqErr)
	}
	c := a.convert(n)
	if len(c) != 1 {
		t.Fatalf("%d results, want 1", len(c))
	}
	return c[0].event, c[0].err
}

func eventData(t *testing.T, ev mcpe.Event) Data {
	t.Helper()
	var d Data
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The fingerprint Alertmanager itself sent for these labels.
func TestFingerprintMatchesAlertmanager(t *testing.T) {
	labels := map[string]string{
		"alertname":                    "Deployment",
		"app_kubernetes_io_instance":   "eric-oss-common-base",
		"app_kubernetes_io_managed_by": "Helm",
		"app_kubernetes_io_name":       "eric-pm-kube-state-metrics",
		"app_kubernetes_io_version":    "2.1.0_10",
		"chart":                        "eric-pm-kube-state-metrics-2.1.0_10",
		"deployment":                   "eric-log-transformer",
		"instance":                     "192.168.69.53:8080",
		"job":                          "eric-pm-kube-state-metrics",
		"kubernetes_name":              "eric-pm-kube-state-metrics",
		"kubernetes_namespace":         "eric-eo-cm-ci406",
		"namespace":                    "eric-eo-cm-ci406",
		"severity":                     "Warning",
	}
	if got, want := Fingerprint(labels), "fbab788ec4c1018b"; got != want {
		t.Errorf("Fingerprint = %s, want %s", got, want)
	}
	// The FNV-1a 64 offset basis: no labels hashed.
	if got, want := Fingerprint(nil), "cbf29ce484222325"; got != want {
		t.Errorf("Fingerprint(nil) = %s, want %s", got, want)
	}
	// The separator keeps names and values apart.
	if Fingerprint(map[string]string{"ab": "c"}) == Fingerprint(map[string]string{"a": "bc"}) {
		t.Error("different label sets share a fingerprint")
	}
}

// An alert without a fingerprint gets the one Alertmanager would give it,
// so it is the same alert for dedup either way.
func TestDerivedFingerprint(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	labels := `{"alertname": "Watchdog", "prometheus": "monitoring/k8s"}`
	without, err := convertOne(t, a, `{"status": "firing", "labels": `+labels+`, "startsAt": "2025-06-01T00:00:00Z"}`)
	if err != nil {
		t.Fatal(err)
	}
	fp := Fingerprint(map[string]string{"alertname": "Watchdog", "prometheus": "monitoring/k8s"})
	with, err := convertOne(t, a, `{"status": "firing", "labels": `+labels+`, "startsAt": "2025-06-01T00:00:00Z", "fingerprint": "`+fp+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if without.Metadata.SourceEventID != with.Metadata.SourceEventID || eventData(t, without).Fingerprint != fp {
		t.Errorf("sourceEventId without a fingerprint %q, with %q; want both from %s", without.Metadata.SourceEventID, with.Metadata.SourceEventID, fp)
	}
}

func TestSourceEventID(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	id := func(alert string) string {
		t.Helper()
		ev, err := convertOne(t, a, alert)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Metadata.SourceEventID
	}
	firing := id(`{"status": "firing", "labels": {"alertname": "A"}, "fingerprint": "f1", "startsAt": "2025-06-02T10:00:00+02:00"}`)
	if firing != "f1:firing:2025-06-02T08:00:00Z" {
		t.Errorf("firing sourceEventId = %q", firing)
	}
	// The same state written with another offset, or with another
	// annotation, is the same event.
	if again := id(`{"status": "firing", "labels": {"alertname": "A"}, "annotations": {"summary": "now worse"}, "fingerprint": "f1", "startsAt": "2025-06-02T08:00:00.000Z"}`); again != firing {
		t.Errorf("repeat sourceEventId = %q, want %q", again, firing)
	}
	resolved := id(`{"status": "resolved", "labels": {"alertname": "A"}, "fingerprint": "f1", "startsAt": "2025-06-02T08:00:00Z", "endsAt": "2025-06-02T08:30:00Z"}`)
	refired := id(`{"status": "firing", "labels": {"alertname": "A"}, "fingerprint": "f1", "startsAt": "2025-06-02T09:00:00Z"}`)
	if resolved == firing || refired == firing || refired == resolved {
		t.Errorf("firing %q, resolved %q, fired again %q: want three distinct IDs", firing, resolved, refired)
	}
	long := id(`{"status": "firing", "labels": {"alertname": "A"}, "fingerprint": "` + strings.Repeat("f", 300) + `", "startsAt": "2025-06-02T08:00:00Z"}`)
	if len(long) > mcpe.MaxSourceIDLength || !strings.HasPrefix(long, "sha256-") {
		t.Errorf("sourceEventId of a long fingerprint = %q (%d bytes); want a sha256- one within %d", long, len(long), mcpe.MaxSourceIDLength)
	}
}

func TestTimestamps(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	tests := []struct {
		name          string
		alert         string
		wantTimestamp string
		wantStartsAt  string
		wantEndsAt    string
	}{
		{
			name:          "firing: startsAt, zero endsAt left out",
			alert:         `{"status": "firing", "startsAt": "2025-06-02T10:00:00.5+02:00", "endsAt": "0001-01-01T00:00:00Z"}`,
			wantTimestamp: "2025-06-02T08:00:00.5Z", wantStartsAt: "2025-06-02T08:00:00.5Z",
		},
		{
			name:          "resolved: endsAt",
			alert:         `{"status": "resolved", "startsAt": "2025-06-02T08:00:00Z", "endsAt": "2025-06-02T09:00:00Z"}`,
			wantTimestamp: "2025-06-02T09:00:00Z", wantStartsAt: "2025-06-02T08:00:00Z", wantEndsAt: "2025-06-02T09:00:00Z",
		},
		{
			name:          "firing without startsAt: now",
			alert:         `{"status": "firing"}`,
			wantTimestamp: "2025-06-02T13:00:00Z",
		},
		{
			name:          "resolved without endsAt: now",
			alert:         `{"status": "resolved", "startsAt": "2025-06-02T08:00:00Z", "endsAt": "0001-01-01T00:00:00Z"}`,
			wantTimestamp: "2025-06-02T13:00:00Z", wantStartsAt: "2025-06-02T08:00:00Z",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := convertOne(t, a, tt.alert)
			if err != nil {
				t.Fatal(err)
			}
			d := eventData(t, ev)
			got := []string{ev.Metadata.Timestamp.Format("2006-01-02T15:04:05.999999999Z07:00"), d.StartsAt, d.EndsAt}
			if diff := cmp.Diff([]string{tt.wantTimestamp, tt.wantStartsAt, tt.wantEndsAt}, got); diff != "" {
				t.Errorf("[timestamp, startsAt, endsAt] mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(string(ev.Data), "0001-01-01") {
				t.Errorf("data %s shows a zero time", ev.Data)
			}
		})
	}
}

func TestBadAlerts(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	tests := []struct {
		alert string
		want  string
	}{
		{`{"labels": {}}`, "status is missing"},
		{`{"status": "pending"}`, `status "pending" is not an alert status`},
		{`{"status": "firing", "startsAt": "2025-06-02 08:00"}`, `startsAt "2025-06-02 08:00" is not an RFC 3339 time`},
		{`{"status": "resolved", "endsAt": "soon"}`, `endsAt "soon" is not an RFC 3339 time`},
		{`{"status": "firing", "startsAt": "0000-01-01T00:00:00+01:00"}`, "in the year -1"},
		{`{"status": "firing", "labels": ["a"]}`, "labels has a JSON array"},
		{`{"status": "firing", "annotations": {"summary": null, "n": 1}}`, "annotations has a JSON number"},
		{`{"status": 1}`, "status has a JSON number where a string is expected"},
		{`null`, "is null"},
		{`[]`, "is an array"},
	}
	for _, tt := range tests {
		_, err := convertOne(t, a, tt.alert)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("alert %s: error %v, want one containing %q", tt.alert, err, tt.want)
		}
	}
	// Status is read without regard to case or spaces.
	if ev, err := convertOne(t, a, `{"status": " Firing ", "labels": {"alertname": "A"}}`); err != nil || ev.Type != "alert.A.firing" {
		t.Errorf("status \" Firing \": %q, %v; want alert.A.firing", ev.Type, err)
	}
}

func TestTags(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	labels := map[string]string{
		"zone": "eu-1", "alertname": "HighCPU Usage", "team": "infra", "job": "node",
		"severity": "warning", "service": "web", "instance": "web-1:9100", "namespace": "prod",
	}
	raw, _ := json.Marshal(labels)
	ev, err := convertOne(t, a, fmt.Sprintf(`{"status": "firing", "labels": %s}`, raw))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"alertname:HighCPU Usage", "severity:warning", "instance:web-1:9100", "job:node",
		"namespace:prod", "service:web", "team:infra", "zone:eu-1",
	}
	if diff := cmp.Diff(want, ev.Metadata.Tags); diff != "" {
		t.Errorf("tags mismatch (-want +got):\n%s", diff)
	}
	if ev.Type != "alert.HighCPU_Usage.firing" {
		t.Errorf("type = %q, want alert.HighCPU_Usage.firing", ev.Type)
	}
}

func TestLimits(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	labels := map[string]string{"alertname": "Big", "severity": "critical"}
	for i := range 100 {
		labels[fmt.Sprintf("label_%03d", i)] = strings.Repeat("v", 10)
	}
	labels["label_000"] = strings.Repeat("é", MaxLabelValueBytes) // twice the limit, in 2-byte runes
	labels[strings.Repeat("n", 200)] = "long name"
	annotations := map[string]string{"description": strings.Repeat("d", 10*MaxAnnotationValueBytes)}
	for i := range 40 {
		annotations[fmt.Sprintf("note_%02d", i)] = "x"
	}
	l, _ := json.Marshal(labels)
	an, _ := json.Marshal(annotations)
	ev, err := convertOne(t, a, fmt.Sprintf(`{"status": "firing", "labels": %s, "annotations": %s, "generatorURL": %q}`,
		l, an, "http://x/"+strings.Repeat("g", 3*MaxURLBytes)))
	if err != nil {
		t.Fatal(err)
	}
	d := eventData(t, ev)
	if !d.Truncated {
		t.Error("data.truncated is false")
	}
	if len(d.Labels) != MaxLabels || len(d.Annotations) != MaxAnnotations {
		t.Errorf("%d labels and %d annotations kept, want %d and %d", len(d.Labels), len(d.Annotations), MaxLabels, MaxAnnotations)
	}
	if d.Labels["alertname"] != "Big" || d.Labels["severity"] != "critical" || d.Annotations["description"] == "" {
		t.Errorf("alertname, severity or description dropped: %v", d.Labels)
	}
	v := d.Labels["label_000"]
	if len(v) > MaxLabelValueBytes || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
		t.Errorf("long label value cut to %d bytes, valid UTF-8 %v, %q...; want at most %d ending in …", len(v), utf8.ValidString(v), v[:10], MaxLabelValueBytes)
	}
	if n := len(d.Annotations["description"]); n > MaxAnnotationValueBytes {
		t.Errorf("description is %d bytes, want at most %d", n, MaxAnnotationValueBytes)
	}
	if n := len(d.GeneratorURL); n > MaxURLBytes {
		t.Errorf("generatorURL is %d bytes, want at most %d", n, MaxURLBytes)
	}
	for name := range d.Labels {
		if len(name) > MaxNameBytes {
			t.Errorf("label name of %d bytes kept", len(name))
		}
	}
	if n := len(ev.Metadata.Tags); n != mcpe.MaxTags {
		t.Errorf("%d tags, want %d", n, mcpe.MaxTags)
	}
	if err := subscriptions.NormalizeEvent(&ev, t0); err != nil {
		t.Errorf("event is not valid: %v", err)
	}
}
