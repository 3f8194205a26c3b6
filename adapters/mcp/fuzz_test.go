package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// parse runs what the adapter does with one notification an upstream
// sends: the SDK decodes the params of the notifications it knows (a log
// message, a resource update), client.Tap hands over events/* as they are.
func parse(method string, params []byte) ([]mcpe.Event, []error) {
	switch method {
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, []error{err}
		}
		ev, err := logEvent("up", &p, t0)
		if err != nil {
			return nil, []error{err}
		}
		return []mcpe.Event{ev}, nil
	case "notifications/resources/updated":
		var p mcp.ResourceUpdatedNotificationParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, []error{err}
		}
		ev, err := resourceEvent("up", &p, t0)
		if err != nil {
			return nil, []error{err}
		}
		return []mcpe.Event{ev}, nil
	}
	return notificationEvents("up", method, params)
}

// allocBound is the most parsing n bytes of params may allocate: linear in
// the input, plus a constant.
func allocBound(n int) uint64 { return uint64(48*n) + 1<<20 }

// FuzzNotification feeds arbitrary params to the parsers of every
// notification the adapter turns into events: nothing panics, every event
// is valid (the Service would take it), bounded and tagged with its
// upstream, every skip has a reason, and the allocation stays linear in the
// input.
func FuzzNotification(f *testing.F) {
	for _, seed := range []struct{ method, params string }{
		{"events/event", `{"subscriptionId":"s","cursor":"1","event":{"id":"e1","type":"build.finished","data":{"ok":true},"metadata":{"sourceEventId":"x","timestamp":"2026-01-15T09:00:00Z","priority":"high","tags":["ci"]}}}`},
		{"events/event", `{"event":{"type":"a","data":null,"metadata":{"timestamp":"9999-12-31T23:59:59-23:59","tags":["\u0001\u00a0"," ",""]}}}`},
		{"events/event", `{"event":null}`},
		{"events/event", `{"event":{"type":"connected"}}`},
		{"events/event", `[]`},
		{"events/batch", `{"subscriptionId":"s","events":[{"id":"1","type":"a.b","data":{}},{"type":""},1,null,{"type":"x","data":[1]}]}`},
		{"events/batch", `{"events":null}`},
		{"events/subscription_expired", `{"subscriptionId":"s"}`},
		{"notifications/message", `{"level":"error","logger":"db","data":{"msg":"disk full"}}`},
		{"notifications/message", `{"level":"loud","data":1}`},
		{"notifications/message", `{"level":"info","data":"` + strings.Repeat("é", 9000) + `"}`},
		{"notifications/resources/updated", `{"uri":"file:///a"}`},
		{"notifications/resources/updated", `{"uri":""}`},
		{"notifications/resources/updated", `{"uri":"` + strings.Repeat("u", MaxURIBytes+1) + `"}`},
	} {
		f.Add(seed.method, []byte(seed.params))
	}
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		var (
			events []mcpe.Event
			errs   []error
		)
		if alloc := adaptertest.Allocated(func() { events, errs = parse(method, params) }); alloc > allocBound(len(params)) {
			t.Fatalf("%s with %d bytes of params allocated %d bytes; the bound is %d", method, len(params), alloc, allocBound(len(params)))
		}
		for _, err := range errs {
			if err == nil || err.Error() == "" {
				t.Fatal("an event was skipped without a reason")
			}
		}
		for _, ev := range events {
			if !strings.HasPrefix(ev.Type, "mcp.up.") {
				t.Fatalf("type %q is not under mcp.up.", ev.Type)
			}
			if len(ev.Data) > MaxEventDataBytes+4096 {
				t.Fatalf("%s data is %d bytes", ev.Type, len(ev.Data))
			}
			if ev.Type == "mcp.up.log" && len(ev.Data) > 6*MaxLogDataBytes+4096 {
				t.Fatalf("log data is %d bytes", len(ev.Data))
			}
			if !containsTag(ev.Metadata.Tags, "upstream:up") {
				t.Fatalf("%s tags %q lack upstream:up", ev.Type, ev.Metadata.Tags)
			}
			if err := subscriptions.NormalizeEvent(&ev, t0); err != nil {
				t.Fatalf("%s is not a valid event: %v (%+v)", ev.Type, err, ev)
			}
		}
	})
}

func containsTag(tags []string, tag string) bool {
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}
