package slack_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/slack"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// printer is a Publisher that prints what it is given.
type printer struct{}

func (printer) Publish(_ context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	fmt.Println(ev.Type, ev.Metadata.Priority, ev.Metadata.SourceEventID, ev.Metadata.Timestamp.Format(time.RFC3339))
	fmt.Println(" ", strings.Join(ev.Metadata.Tags, " "))
	fmt.Println(" ", string(ev.Data))
	return subscriptions.PublishResult{EventID: "5f0c6f5e-6a47-4a8e-9a52-3c1de3f0b001"}, nil
}

// A signed event_callback carrying a direct message becomes one event.
func Example() {
	secret := []byte("8f742231b10e8888abcd99yyyzzz85a5")
	a, err := slack.New(slack.Options{Publisher: printer{}, SigningSecret: secret})
	if err != nil {
		panic(err)
	}
	body := `{"token": "XXYYZZ", "team_id": "T0C0ACME01", "api_app_id": "A0C5APP0001", "type": "event_callback",
	  "event_id": "Ev08X1DM0001", "event_time": 1748865700,
	  "event": {"type": "message", "user": "U0C0NS9HN1B", "text": "Is the deploy done?", "ts": "1748865700.000100",
	            "channel": "D0C2FR9E2UA", "event_ts": "1748865700.000100", "channel_type": "im"}}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r := httptest.NewRequest("POST", slack.Endpoint, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(slack.HeaderTimestamp, ts)
	r.Header.Set(slack.HeaderSignature, slack.Signature(secret, ts, []byte(body)))
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// slack.message high Ev08X1DM0001 2025-06-02T12:01:40Z
	//   channel:D0C2FR9E2UA user:U0C0NS9HN1B team:T0C0ACME01 channel_type:im
	//   {"team_id":"T0C0ACME01","api_app_id":"A0C5APP0001","type":"message","user":"U0C0NS9HN1B","channel":"D0C2FR9E2UA","channel_type":"im","text":"Is the deploy done?","ts":"1748865700.000100","event_ts":"1748865700.000100"}
	// 200 {"ids":["5f0c6f5e-6a47-4a8e-9a52-3c1de3f0b001"]}
}
