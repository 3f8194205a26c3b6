package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var t0 = time.Date(2025, 6, 2, 13, 0, 0, 0, time.UTC)

func TestPublisher(t *testing.T) {
	ctx := context.Background()
	p := &Publisher{Clock: clock.NewFake(t0)}
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
