package github_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/adapters/github"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// GitHub redelivers a delivery (from Recent Deliveries, or an app's retry)
// with the same X-GitHub-Delivery: through the real Service and store it is
// answered as a duplicate and routed once. Another delivery of the same
// payload is a new event.
func TestRedeliveryRoutedOnce(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2025, 6, 3, 8, 0, 0, 0, time.UTC))
	rec := &adaptertest.Subscriber{}
	svc := adaptertest.NewService(t, clk, rec, "alice", mcpe.Filter{EventTypes: []string{"github.*"}})
	secret := []byte("webhook-secret")
	a, err := github.New(github.Options{Publisher: svc, Secret: secret, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	send := func(event, fixture, delivery string, wantStatus int) []byte {
		t.Helper()
		body := adaptertest.ReadFixture(t, fixture)
		status, answer := adaptertest.Post(t, srv.Client(), srv.URL+github.Endpoint, body,
			github.EventHeader, event, github.DeliveryHeader, delivery, github.SignatureHeader, github.Signature(secret, body))
		if status != wantStatus {
			t.Fatalf("%s %s: status %d, want %d; body %s", event, delivery, status, wantStatus, answer)
		}
		return answer
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
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Fatalf("first delivery: deliveries mismatch (-want +got):\n%s", diff)
	}
	if len(first.IDs) != 1 || first.Duplicates != 0 {
		t.Errorf("first answer = %+v; want one ID, no duplicate", first)
	}

	again := answer(send("issues", "issues.opened.json", "72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted))
	if again.Duplicates != 1 || !cmp.Equal(first.IDs, again.IDs) {
		t.Errorf("redelivery answer = %+v; want a duplicate with the first ID %v", again, first.IDs)
	}
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("after the redelivery: deliveries mismatch (-want +got):\n%s", diff)
	}

	// The same payload in a new delivery is a new event.
	send("issues", "issues.opened.json", "8e1f9a40-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted)
	send("workflow_run", "workflow_run.completed.json", "9b2c1d00-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted)
	send("workflow_run", "workflow_run.completed.json", "9b2c1d00-cc78-11e3-81ab-4c9367dc0958", http.StatusAccepted)
	want = append(want, "github.issues.opened high", "github.workflow_run.completed high")
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("at the end: deliveries mismatch (-want +got):\n%s", diff)
	}
}
