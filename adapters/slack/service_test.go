package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// recorder is a Deliverer that keeps the type, priority and tags of the
// events it delivers.
type recorder struct {
	mu     sync.Mutex
	events []string
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
		r.events = append(r.events, ev.Type+" "+string(ev.Metadata.Priority))
	}
}

func (r *recorder) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// Slack retries an event it got no 2xx for within 3 seconds, with the
// same event_id and a fresh signature: through the real Service and SQLite
// store, the retries are routed once, and answered with the first event's
// ID.
func TestRetriesRoutedOnce(t *testing.T) {
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
	filters := []subscriptions.Filter{
		{EventTypes: []string{"slack.*"}},
		{Tags: []string{"channel:C0C1RP2RJ7W"}, Priority: []subscriptions.Priority{subscriptions.PriorityHigh}},
	}
	for _, f := range filters {
		if _, err := svc.Subscribe(ctx, "alice", subscriptions.SubscribeRequest{Filter: f}); err != nil {
			t.Fatal(err)
		}
	}
	secret := []byte("8f742231b10e8888abcd99yyyzzz85a5")
	a, err := slack.New(slack.Options{Publisher: svc, SigningSecret: secret, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	send := func(fixture string, retry int) adapters.Accepted {
		t.Helper()
		body, err := os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+slack.Endpoint, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		ts := strconv.FormatInt(clk.Now().Unix(), 10)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(slack.HeaderTimestamp, ts)
		req.Header.Set(slack.HeaderSignature, slack.Signature(secret, ts, body))
		if retry > 0 {
			req.Header.Set(slack.HeaderRetryNum, strconv.Itoa(retry))
			req.Header.Set(slack.HeaderRetryReason, "http_timeout")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res adapters.Accepted
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, answer %+v", fixture, resp.StatusCode, res)
		}
		return res
	}

	first := send("app_mention.json", 0)
	// One subscription matches by type, the other by tag and priority:
	// the owner gets one inbox entry, delivered once.
	want := []string{"slack.app_mention high"}
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Fatalf("first delivery mismatch (-want +got):\n%s", diff)
	}
	if len(first.IDs) != 1 || first.Duplicates != 0 {
		t.Fatalf("first answer = %+v; want one ID", first)
	}
	// Slack retries right away, after a minute and after five minutes.
	for i, wait := range []time.Duration{0, time.Minute, 5 * time.Minute} {
		clk.Advance(wait)
		again := send("app_mention.json", i+1)
		if diff := cmp.Diff(adapters.Accepted{IDs: first.IDs, Duplicates: 1}, again); diff != "" {
			t.Errorf("retry %d: answer mismatch (-want +got):\n%s", i+1, diff)
		}
	}
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("after the retries: deliveries mismatch (-want +got):\n%s", diff)
	}

	// Another event is routed.
	send("message_changed.json", 0)
	want = append(want, "slack.message.message_changed normal")
	if diff := cmp.Diff(want, rec.delivered()); diff != "" {
		t.Errorf("after another event: deliveries mismatch (-want +got):\n%s", diff)
	}
}
