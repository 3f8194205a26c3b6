package slack_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Slack retries an event it got no 2xx for within 3 seconds, with the
// same event_id and a fresh signature: through the real Service and SQLite
// store, the retries are routed once, and answered with the first event's
// ID.
func TestRetriesRoutedOnce(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC))
	rec := &adaptertest.Subscriber{}
	svc := adaptertest.NewService(t, clk, rec, "alice",
		mcpe.Filter{EventTypes: []string{"slack.*"}},
		mcpe.Filter{Tags: []string{"channel:C0C1RP2RJ7W"}, Priority: []mcpe.Priority{mcpe.PriorityHigh}},
	)
	secret := []byte("8f742231b10e8888abcd99yyyzzz85a5")
	a, err := slack.New(slack.Options{Publisher: svc, SigningSecret: secret, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()

	send := func(fixture string, retry int) adapters.Accepted {
		t.Helper()
		body := adaptertest.ReadFixture(t, fixture)
		ts := strconv.FormatInt(clk.Now().Unix(), 10)
		headers := []string{slack.HeaderTimestamp, ts, slack.HeaderSignature, slack.Signature(secret, ts, body)}
		if retry > 0 {
			headers = append(headers, slack.HeaderRetryNum, strconv.Itoa(retry), slack.HeaderRetryReason, "http_timeout")
		}
		status, answer := adaptertest.Post(t, srv.Client(), srv.URL+slack.Endpoint, body, headers...)
		var res adapters.Accepted
		if err := json.Unmarshal(answer, &res); err != nil {
			t.Fatal(err)
		}
		if status != http.StatusOK {
			t.Fatalf("%s: status %d, answer %+v", fixture, status, res)
		}
		return res
	}

	first := send("app_mention.json", 0)
	// One subscription matches by type, the other by tag and priority:
	// the owner gets one inbox entry, delivered once.
	want := []string{"slack.app_mention high"}
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
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
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("after the retries: deliveries mismatch (-want +got):\n%s", diff)
	}

	// Another event is routed.
	send("message_changed.json", 0)
	want = append(want, "slack.message.message_changed normal")
	if diff := cmp.Diff(want, rec.TypesAndPriorities()); diff != "" {
		t.Errorf("after another event: deliveries mismatch (-want +got):\n%s", diff)
	}
}
