package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters/github"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/mcpe"
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
	if params.SubscriptionID != sub.ID || ev.Type != "alert.DiskFull.firing" || ev.Metadata.Priority != mcpe.PriorityCritical {
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
		var cat mcpe.Catalog
		c.MustCall(t, "events_catalog", map[string]any{}, &cat)
		configured := map[string]bool{}
		var upstream *mcpe.SourceState
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

// TestSignedAdaptersEndToEnd runs the binary with the GitHub and Slack
// receivers: signed deliveries reach a subscriber, unsigned ones are
// refused, and a delivery addressed to another host (a tunnel in front of a
// loopback server) is taken, while /v1/events keeps refusing such requests.
func TestSignedAdaptersEndToEnd(t *testing.T) {
	cfg := writeConfig(t, `
adapters:
  github:
    token: gh-secret
  slack:
    signingSecret: {token: slack-secret}
`)
	c, base := startStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), nil, "--config", cfg)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"github.issues.*", "slack.app_mention"}}})

	issue, err := os.ReadFile(filepath.Join("..", "..", "adapters", "github", "testdata", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	postGitHub := func(signature string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+github.Endpoint, bytes.NewReader(issue))
		req.Host = "events.example.com" // through a tunnel
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		if signature != "" {
			req.Header.Set(github.SignatureHeader, signature)
		}
		return do(t, req, "")
	}
	if code, body := postGitHub(""); code != http.StatusUnauthorized {
		t.Fatalf("unsigned GitHub delivery: %d %s; want 401", code, body)
	}
	if code, body := postGitHub(github.Signature([]byte("wrong"), issue)); code != http.StatusUnauthorized {
		t.Fatalf("GitHub delivery signed with another secret: %d %s; want 401", code, body)
	}
	if code, body := postGitHub(github.Signature([]byte("gh-secret"), issue)); code != http.StatusAccepted {
		t.Fatalf("signed GitHub delivery: %d %s; want 202", code, body)
	}
	params, ev := c.NextEvent(t)
	if params.SubscriptionID != sub.ID || ev.Type != "github.issues.opened" || !slices.Contains(ev.Metadata.Tags, "repo:octo-org/octo-repo") {
		t.Fatalf("got %s %v for %s; want github.issues.opened tagged repo:octo-org/octo-repo for %s", ev.Type, ev.Metadata.Tags, params.SubscriptionID, sub.ID)
	}

	mention := []byte(`{"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
  "event_id": "Ev0001", "event_time": ` + strconv.FormatInt(time.Now().Unix(), 10) + `,
  "event": {"type": "app_mention", "user": "U1", "text": "<@U0BOT> deploy failed?", "ts": "1.2", "channel": "C1", "event_ts": "1.2"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequest(http.MethodPost, base+slack.Endpoint, bytes.NewReader(mention))
	req.Host = "events.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(slack.HeaderTimestamp, ts)
	req.Header.Set(slack.HeaderSignature, slack.Signature([]byte("slack-secret"), ts, mention))
	if code, body := do(t, req, ""); code != http.StatusOK {
		t.Fatalf("signed Slack event: %d %s; want 200", code, body)
	}
	if _, ev := c.NextEvent(t); ev.Type != "slack.app_mention" || ev.Metadata.Priority != mcpe.PriorityHigh {
		t.Fatalf("got %s (%s); want slack.app_mention (high)", ev.Type, ev.Metadata.Priority)
	}

	// The plain ingest endpoint keeps the loopback Host check.
	req, _ = http.NewRequest(http.MethodPost, base+"/v1/events", strings.NewReader(`{"type": "x.y", "data": {}}`))
	req.Host = "events.example.com"
	req.Header.Set("Content-Type", "application/json")
	if code, body := do(t, req, ""); code != http.StatusForbidden {
		t.Fatalf("/v1/events addressed to another host: %d %s; want 403", code, body)
	}

	// Without a pattern the tool gives an overview, the sources with the
	// names of their types; a pattern that matches one type (here a
	// family) gives its schema and example; the resource holds everything.
	var overview mcpe.Catalog
	c.MustCall(t, "events_catalog", map[string]any{}, &overview)
	names := 0
	for _, s := range overview.Sources {
		names += len(s.Types)
	}
	if overview.Note == "" || names < 20 || len(overview.Types) != 0 {
		t.Fatalf("overview: note %q, %d type names, %d types described; want a note and the names of the GitHub and Slack types", overview.Note, names, len(overview.Types))
	}
	var cat mcpe.Catalog
	c.MustCall(t, "events_catalog", map[string]any{"pattern": "github.issues.*"}, &cat)
	if len(cat.Types) == 0 || cat.Note != "" {
		t.Fatalf("events_catalog(github.issues.*): %d types, note %q; want GitHub's issue types and no note", len(cat.Types), cat.Note)
	}
	for _, ty := range cat.Types {
		if ty.Source != "github" || len(ty.DataSchema) == 0 || len(ty.Example) == 0 {
			t.Fatalf("events_catalog(github.issues.*) type %+v; want a GitHub type with its schema and example", ty)
		}
	}
	res, err := c.Session.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "events://catalog"})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read events://catalog: %v %+v", err, res)
	}
	var full mcpe.Catalog
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &full); err != nil {
		t.Fatal(err)
	}
	if len(full.Types) != names || full.Note != "" || len(full.Types[0].DataSchema) == 0 {
		t.Fatalf("events://catalog: %d types (overview %d), note %q; want every type with its schema", len(full.Types), names, full.Note)
	}
}
