package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// recorder is a Deliverer that keeps the types and priorities of the
// events it delivers.
type recorder struct {
	mu    sync.Mutex
	types []string
}

func (r *recorder) Deliver(entries []subscriptions.InboxEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		if e.Kind != subscriptions.InboxEvent {
			continue
		}
		var ev subscriptions.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			panic(err)
		}
		r.types = append(r.types, ev.Type+" "+string(ev.Metadata.Priority))
	}
}

func (r *recorder) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.types...)
}

// GitHub redelivers a delivery (from Recent Deliveries, or an app's retry)
// with the same X-GitHub-Delivery: through the real Service and store it is
// answered as a duplicate and routed once. Another delivery of the same
// payload is a new event.
func TestRedeliveryRoutedOnce(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "mcpe.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clk := clock.NewFake(time.Date(2025, 6, 3, 8, 0, 0, 0, time.UTC))
	rec := &recorder{}
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: rec, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	if _, err := svc.Subscribe(ctx, "alice", subscriptions.SubscribeRequest{Filter: subscriptions.Filter{EventTypes: []string{"github.*"}}}); err != nil {
		t.Fatal(err)
	}
	secret := []byte("webhook-secret")
	a, err := github.New(github.Options{Publisher: svc, Secret: secret, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	send := func(event, fixture, delivery string, wantStatus int) []byte {
		t.Helper()
		body, err := os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+github.Endpoint, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", github.Signature(secret, body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		if resp.StatusCode != wantStatus {
			t.Fatalf("%s %s: status %d, want %d; body %s", event, delivery, resp.StatusCode, wantStatus, buf.Bytes())
		}
		return buf.Bytes()
	}
	answer := func(b []byte) adapters.Accepted {
		t.Helper()
		var res adapters.Accepted
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}

	send("ping", "ping.json", "5a1f0e20-3f5a-11f0-8a3e-1c2b9e4b7d10", http.StatusOK)
	first := answer(send("issues", "issues.opened.json", "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted))
	want := []string{"github.issues.opened high"}
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Fatalf("first delivery: deliveries mismatch (-want +got):\n%s", diff)
	}
	if len(first.IDs) != 1 || first.Duplicates != 0 {
		t.Errorf("first answer = %+v; want one ID, no duplicate", first)
	}

	again := answer(send("issues", "issues.opened.json", "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted))
	if again.Duplicates != 1 || !cmp.Equal(first.IDs, again.IDs) {
		t.Errorf("redelivery answer = %+v; want a duplicate with the first ID %v", again, first.IDs)
	}
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("after the redelivery: deliveries mismatch (-want +got):\n%s", diff)
	}

	// The same payload in a new delivery is a new event.
	send("issues", "issues.opened.json", "8e1f9a40-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted)
	send("workflow_run", "workflow_run.completed.json", "9b2c1d00-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted)
	send("workflow_run", "workflow_run.completed.json", "9b2c1d00-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted)
	want = append(want, "github.issues.opened high", "github.workflow_run.completed high")
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("at the end: deliveries mismatch (-want +got):\n%s", diff)
	}
}
