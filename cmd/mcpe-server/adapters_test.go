package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// alertNotification is an Alertmanager webhook (payload version 4) with
// one firing critical alert.
const alertNotification = `{
  "version": "4", "status": "firing", "receiver": "mcpe", "groupKey": "{}:{alertname=\"DiskFull\"}",
  "groupLabels": {"alertname": "DiskFull"}, "commonLabels": {}, "commonAnnotations": {},
  "externalURL": "http://alertmanager.example.com", "truncatedAlerts": 0,
  "alerts": [{"status": "firing",
    "labels": {"alertname": "DiskFull", "severity": "critical", "instance": "db-1"},
    "annotations": {"summary": "Disk on db-1 is 97% full"},
    "startsAt": "2026-11-24T08:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
    "generatorURL": "http://prometheus.example.com/graph", "fingerprint": "a1b2c3d4e5f60718"}]
}`

// postAlert posts an Alertmanager notification with token (none when
// empty) and returns the status and body.
func postAlert(t *testing.T, base, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/adapters/alertmanager", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req, token)
}

// TestAdaptersEndToEnd runs the binary with adapters configured: an alert
// posted to the Alertmanager receiver reaches a subscriber once, and the
// catalog tells which sources are set up and how the upstreams are doing.
func TestAdaptersEndToEnd(t *testing.T) {
	cfg := writeConfig(t, `
adapters:
  alertmanager:
    tokens:
      - token: am-secret
  mcp:
    upstreams:
      - name: broken
        command: ["`+filepath.Join(t.TempDir(), "no-such-program")+`"]
`)
	c, base := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), nil, "--config", cfg)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"alert.*"}, "priority": []string{"critical"}}})

	if code, body := postAlert(t, base, "", alertNotification); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d %s; want 401", code, body)
	}
	if code, body := postAlert(t, base, "am-secret", alertNotification); code != http.StatusAccepted {
		t.Fatalf("with the token: %d %s; want 202", code, body)
	}
	params, ev := c.NextEvent(t)
	if params.SubscriptionID != sub.ID || ev.Type != "alert.DiskFull.firing" || ev.Metadata.Priority != subscriptions.PriorityCritical {
		t.Fatalf("got %s (%s) for %s; want alert.DiskFull.firing (critical) for %s", ev.Type, ev.Metadata.Priority, params.SubscriptionID, sub.ID)
	}

	// Alertmanager repeats a notification; the repeat is accepted once.
	if code, body := postAlert(t, base, "am-secret", alertNotification); code != http.StatusAccepted || !strings.Contains(body, `"duplicates":1`) {
		t.Fatalf("repeat: %d %s; want 202 with one duplicate", code, body)
	}
	// An event posted to /v1/events after the repeat is the next to arrive:
	// the repeat was not delivered.
	if code, body := post(t, base, "", `{"type": "alert.Manual.firing", "data": {}, "metadata": {"priority": "critical"}}`); code != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %d %s", code, body)
	}
	if _, ev := c.NextEvent(t); ev.Type != "alert.Manual.firing" {
		t.Fatalf("after the repeat got %s; want alert.Manual.firing (the repeat must not be delivered)", ev.Type)
	}

	// The catalog lists every source, says which are configured, shows the
	// types posted to /v1/events and the upstream's state.
	deadline := time.Now().Add(mcpetest.Wait)
	for {
		var cat subscriptions.Catalog
		c.MustCall(t, "events_catalog", map[string]any{}, &cat)
		configured := map[string]bool{}
		var upstream *subscriptions.SourceState
		for _, s := range cat.Sources {
			configured[s.Name] = s.Configured
			if s.Name == "mcp" && len(s.Upstreams) == 1 {
				upstream = &s.Upstreams[0]
			}
		}
		for name, want := range map[string]bool{"ingest": true, "alertmanager": true, "mcp": true} {
			if got, ok := configured[name]; !ok || got != want {
				t.Fatalf("catalog source %q: configured %v (listed %v); want %v in %+v", name, got, ok, want, cat.Sources)
			}
		}
		seen := false
		for _, s := range cat.SeenRecently {
			seen = seen || s.Type == "alert.Manual.firing"
		}
		if !seen {
			t.Fatalf("seenRecently %+v does not list alert.Manual.firing", cat.SeenRecently)
		}
		if upstream != nil && upstream.Status == "retrying" && upstream.LastError != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream state %+v; want retrying with the error", upstream)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
