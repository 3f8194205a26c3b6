package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestIngestCannotPreemptAdapter posts to /v1/events, with no token, the
// sourceEventId that Alertmanager's resolution of a firing alert will
// carry (visible in the firing event): the real resolution, from the
// adapter, is still accepted and delivered, and the forgery is not taken
// for it. Each source's sourceEventIds are its own.
func TestIngestCannotPreemptAdapter(t *testing.T) {
	cfg := &config.Config{Adapters: config.Adapters{Alertmanager: &config.AlertmanagerAdapter{}}}
	a, err := New(context.Background(), Options{Config: cfg, Store: openStore(t), HTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Service.Subscribe(t.Context(), "alice", mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"alert.*"}}}); err != nil {
		t.Fatal(err)
	}
	h, err := a.HTTPHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(path, body string) string {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}

	post("/v1/events", `{"type": "alert.DiskFull.resolved", "data": {"forged": true},
		"metadata": {"sourceEventId": "a1b2c3d4e5f60718:resolved:2026-11-24T08:00:00Z"}}`)
	if got := post("/adapters/alertmanager", `{"version": "4", "status": "resolved", "receiver": "mcpe",
		"groupKey": "{}:{alertname=\"DiskFull\"}", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
		"externalURL": "http://alertmanager.example.com", "truncatedAlerts": 0,
		"alerts": [{"status": "resolved", "labels": {"alertname": "DiskFull"}, "annotations": {},
			"startsAt": "2026-11-24T08:00:00Z", "endsAt": "2026-11-24T09:00:00Z",
			"generatorURL": "", "fingerprint": "a1b2c3d4e5f60718"}]}`); strings.Contains(got, "duplicates") {
		t.Errorf("the adapter's resolution was taken for a duplicate of the forgery: %s", got)
	}
	page, err := a.Service.Poll(t.Context(), "alice", mcpe.PollRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, it := range page.Items {
		bodies = append(bodies, string(it.Event))
	}
	if len(bodies) != 2 || !strings.Contains(bodies[1], `"fingerprint":"a1b2c3d4e5f60718"`) {
		t.Errorf("alice's inbox holds %d events %v; want the forgery, then the adapter's resolution", len(bodies), bodies)
	}
}
