package alertmanager_test

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

	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/bearer"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// recorder is a Deliverer that keeps the types of the events it delivers.
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

// Alertmanager repeats notifications (repeat_interval, retries, HA peers):
// through the real Service and store, a repeated alert state is routed
// once, and the alert resolving is routed as a new event.
func TestRedeliveryRoutedOnce(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "mcpe.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clk := clock.NewFake(time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC))
	rec := &recorder{}
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: rec, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	if _, err := svc.Subscribe(ctx, "alice", subscriptions.SubscribeRequest{Filter: subscriptions.Filter{EventTypes: []string{"alert.*"}}}); err != nil {
		t.Fatal(err)
	}
	a, err := alertmanager.New(alertmanager.Options{
		Publisher: svc,
		Tokens:    bearer.NewSet(map[string]string{"am-token": "alertmanager"}),
		Clock:     clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	send := func(fixture string) alertmanager.Response {
		t.Helper()
		body, err := os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+alertmanager.Endpoint, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer am-token")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res alertmanager.Response
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: status %d, answer %+v", fixture, resp.StatusCode, res)
		}
		return res
	}

	first := send("firing_group.json")
	want := []string{
		"alert.KubePodCrashLooping.firing critical",
		"alert.KubePodCrashLooping.firing high",
		"alert.KubePodCrashLooping.firing low",
	}
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Fatalf("first notification: deliveries mismatch (-want +got):\n%s", diff)
	}
	if len(first.IDs) != 3 || first.Duplicates != 0 {
		t.Errorf("first answer = %+v; want 3 IDs, no duplicates", first)
	}

	again := send("firing_group.json")
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("after the repeat: deliveries mismatch (-want +got):\n%s", diff)
	}
	if again.Duplicates != 3 || !cmp.Equal(first.IDs, again.IDs) {
		t.Errorf("repeat answer = %+v; want 3 duplicates with the first IDs %v", again, first.IDs)
	}

	send("resolved.json")
	want = append(want, "alert.KubePodCrashLooping.resolved critical")
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("after resolved: deliveries mismatch (-want +got):\n%s", diff)
	}
	send("resolved.json")
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("after resolved again: deliveries mismatch (-want +got):\n%s", diff)
	}
}
