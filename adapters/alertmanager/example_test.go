package alertmanager_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters/alertmanager"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// printer is a Publisher that prints what it is given.
type printer struct{}

func (printer) Publish(_ context.Context, ev mcpe.Event) (subscriptions.PublishResult, error) {
	fmt.Println(ev.Type, ev.Metadata.Priority, ev.Metadata.SourceEventID)
	fmt.Println(" ", strings.Join(ev.Metadata.Tags, " "))
	return subscriptions.PublishResult{EventID: "5f0c6f5e-6a47-4a8e-9a52-3c1de3f0b001"}, nil
}

// An Alertmanager notification with one firing alert becomes one event.
func Example() {
	a, err := alertmanager.New(alertmanager.Options{Publisher: printer{}})
	if err != nil {
		panic(err)
	}
	body := `{
	  "version": "4", "status": "firing", "receiver": "mcpe",
	  "groupKey": "{}:{alertname=\"HighCPU Usage\"}", "truncatedAlerts": 0,
	  "alerts": [{
	    "status": "firing",
	    "labels": {"alertname": "HighCPU Usage", "severity": "warning", "instance": "web-1:9100", "job": "node"},
	    "annotations": {"summary": "CPU above 90% on web-1"},
	    "startsAt": "2025-01-15T10:30:00Z", "endsAt": "0001-01-01T00:00:00Z",
	    "fingerprint": "5b1e0c9f2d7a8e31"
	  }]
	}`
	r := httptest.NewRequest("POST", alertmanager.Endpoint, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// alert.HighCPU_Usage.firing high 5b1e0c9f2d7a8e31:firing:2025-01-15T10:30:00Z
	//   alertname:HighCPU Usage severity:warning instance:web-1:9100 job:node
	// 202 {"ids":["5f0c6f5e-6a47-4a8e-9a52-3c1de3f0b001"]}
}
