package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var t0 = time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC)

func TestPublisher(t *testing.T) {
	ctx := context.Background()
	p := &Publisher{Clock: clocktest.NewFake(t0)}
	refuse := errors.New("refused")
	p.Fail = func(ev mcpe.Event) error {
		if ev.Type == "x.refused" {
			return refuse
		}
		return nil
	}
	var got []subscriptions.PublishResult
	for _, ev := range []mcpe.Event{
		{Type: "x.a", Metadata: mcpe.Metadata{SourceEventID: "1"}},
		{Type: "x.a", Metadata: mcpe.Metadata{SourceEventID: "1"}}, // a repeat
		{Type: "x.b", Metadata: mcpe.Metadata{SourceEventID: "1"}}, // another type
		{Type: "x.a"}, // no source ID: never a repeat
		{Type: "x.a"},
	} {
		res, err := p.Publish(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res)
	}
	id := func(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	want := []subscriptions.PublishResult{{EventID: id(1)}, {EventID: id(1), Duplicate: true}, {EventID: id(2)}, {EventID: id(3)}, {EventID: id(4)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
	if _, err := p.Publish(ctx, mcpe.Event{Type: "x.refused"}); err != refuse {
		t.Errorf("Fail's refusal: got %v", err)
	}
	if _, err := p.Publish(ctx, mcpe.Event{Type: "not a type"}); err == nil {
		t.Error("an invalid event was accepted")
	}
	if n := len(p.Published()); n != 4 {
		t.Errorf("%d events stored, want 4", n)
	}
	if n := p.Calls(); n != 7 {
		t.Errorf("Calls() = %d, want 7", n)
	}
	if ts := p.Published()[0].Metadata.Timestamp; !ts.Equal(t0) {
		t.Errorf("timestamp %v, want the clock's %v", ts, t0)
	}
	// Without a clock, the wall clock stamps.
	if _, err := (&Publisher{}).Publish(ctx, mcpe.Event{Type: "x.a"}); err != nil {
		t.Error(err)
	}
}

func TestSubscriber(t *testing.T) {
	var s Subscriber
	entry := func(typ string, p mcpe.Priority) subscriptions.InboxEntry {
		raw, _ := json.Marshal(mcpe.Event{Type: typ, Metadata: mcpe.Metadata{Priority: p}})
		return subscriptions.InboxEntry{Kind: mcpe.InboxEvent, Event: raw}
	}
	go s.Deliver([]subscriptions.InboxEntry{entry("x.a", "high"), {Kind: "other"}, entry("x.b", "low"), entry("x.a", "normal")})
	if got := s.Wait(t, "x.a", 2); len(got) != 2 {
		t.Fatalf("Wait returned %d events", len(got))
	}
	if diff := cmp.Diff([]string{"x.a high", "x.b low", "x.a normal"}, s.TypesAndPriorities()); diff != "" {
		t.Errorf("TypesAndPriorities mismatch (-want +got):\n%s", diff)
	}
}

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		method, contentType string
		headers             []string
		wantMethod          string
		want                http.Header
	}{
		{wantMethod: "POST", want: http.Header{"Content-Type": {"application/json"}}},
		{method: "GET", contentType: "-", headers: []string{"X-A", "1"}, wantMethod: "GET", want: http.Header{"X-A": {"1"}}},
		{contentType: "text/plain", headers: []string{"X-A", "1", "X-A", "2", "Content-Type", ""}, wantMethod: "POST", want: http.Header{"X-A": {"2"}}},
	} {
		r := Request(tc.method, "/p", tc.contentType, []byte("body"), tc.headers...)
		if r.Method != tc.wantMethod || r.URL.Path != "/p" {
			t.Errorf("%+v: %s %s", tc, r.Method, r.URL)
		}
		if diff := cmp.Diff(tc.want, r.Header); diff != "" {
			t.Errorf("%+v: headers mismatch (-want +got):\n%s", tc, diff)
		}
	}
}

func TestCheckCatalog(t *testing.T) {
	const schema = `{"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}, "s": {"enum": ["a", "b"]}}}`
	good := mcpe.EventType{
		Type:        "alert.<alertname>.firing",
		Description: "An alert fires.",
		DataSchema:  json.RawMessage(schema),
		Example:     json.RawMessage(`{"n": 1, "s": "a"}`),
	}
	with := func(edit func(*mcpe.EventType)) []mcpe.EventType {
		et := good
		edit(&et)
		return []mcpe.EventType{et}
	}
	for _, tc := range []struct {
		name  string
		types []mcpe.EventType
		want  string // in the error; empty for none
	}{
		{name: "good", types: []mcpe.EventType{good}},
		{name: "empty", want: "no event types"},
		{name: "twice", types: []mcpe.EventType{good, good}, want: "listed twice"},
		{name: "bad type", types: with(func(et *mcpe.EventType) { et.Type = "alert..firing" }), want: "not a valid type"},
		{name: "bad placeholder", types: with(func(et *mcpe.EventType) { et.Type = "alert.<alert name>" }), want: "not a valid type"},
		{name: "no description", types: with(func(et *mcpe.EventType) { et.Description = " " }), want: "one non-empty line"},
		{name: "two lines", types: with(func(et *mcpe.EventType) { et.Description = "a\nb" }), want: "one non-empty line"},
		{name: "no schema", types: with(func(et *mcpe.EventType) { et.DataSchema = nil }), want: "no data schema"},
		{name: "schema not json", types: with(func(et *mcpe.EventType) { et.DataSchema = json.RawMessage(`{`) }), want: "not a JSON Schema"},
		{name: "schema of a string", types: with(func(et *mcpe.EventType) { et.DataSchema = json.RawMessage(`{"type": "string"}`) }), want: `describes "string"`},
		{name: "no example", types: with(func(et *mcpe.EventType) { et.Example = nil }), want: "no example"},
		{name: "array example", types: with(func(et *mcpe.EventType) { et.Example = json.RawMessage(`[1]`) }), want: "not a JSON object"},
		{name: "missing required", types: with(func(et *mcpe.EventType) { et.Example = json.RawMessage(`{"s": "a"}`) }), want: "does not match the data schema"},
		{name: "wrong type", types: with(func(et *mcpe.EventType) { et.Example = json.RawMessage(`{"n": "one"}`) }), want: "does not match the data schema"},
		{name: "not in enum", types: with(func(et *mcpe.EventType) { et.Example = json.RawMessage(`{"n": 1, "s": "c"}`) }), want: "does not match the data schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCatalog(tc.types)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckCatalog: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("CheckCatalog accepted it; want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("CheckCatalog: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
