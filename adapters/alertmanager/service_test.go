package alertmanager_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Alertmanager repeats notifications (repeat_interval, retries, HA peers):
// through the real Service and store, a repeated alert state is routed
// once, and the alert resolving is routed as a new event.
func TestRedeliveryRoutedOnce(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC))
	rec := &adaptertest.Subscriber{}
	svc := adaptertest.NewService(t, clk, rec, "alice", mcpe.Filter{EventTypes: []string{"alert.*"}})
	a, err := alertmanager.New(alertmanager.Options{
		Publisher: svc,
		Tokens:    httpapi.NewTokens(map[string]string{"am-token": "alertmanager"}),
		Clock:     clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	send := func(fixture string) alertmanager.Response {
		t.Helper()
		status, answer := adaptertest.Post(t, srv.Client(), srv.URL+alertmanager.Endpoint, adaptertest.ReadFixture(t, fixture),
			"Authorization", "Bearer am-token")
		var res alertmanager.Response
		if err := json.Unmarshal(answer, &res); err != nil {
			t.Fatal(err)
		}
		if status != http.StatusAccepted {
			t.Fatalf("%s: status %d, answer %+v", fixture, status, res)
		}
		return res
	}

	first := send("firing_group.json")
	want := []string{
		"alert.KubePodCrashLooping.firing critical",
		"alert.KubePodCrashLooping.firing high",
		"alert.KubePodCrashLooping.firing low",
	}
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Fatalf("first notification: deliveries mismatch (-want +got):\n%s", diff)
	}
	if len(first.IDs) != 3 || first.Duplicates != 0 {
		t.Errorf("first answer = %+v; want 3 IDs, no duplicates", first)
	}

	again := send("firing_group.json")
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("after the repeat: deliveries mismatch (-want +got):\n%s", diff)
	}
	if again.Duplicates != 3 || !cmp.Equal(first.IDs, again.IDs) {
		t.Errorf("repeat answer = %+v; want 3 duplicates with the first IDs %v", again, first.IDs)
	}

	send("resolved.json")
	want = append(want, "alert.KubePodCrashLooping.resolved critical")
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("after resolved: deliveries mismatch (-want +got):\n%s", diff)
	}
	send("resolved.json")
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("after resolved again: deliveries mismatch (-want +got):\n%s", diff)
	}
}
