package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestEndToEndNoLoss posts, through the binary's HTTP ingest, a burst
// larger than the in-memory window of a live stdio session whose client
// does not read meanwhile: the session falls behind the window, and once
// its client reads again it gets every event, once, in order, from the
// window and the inbox; it is never told it missed any.
func TestEndToEndNoLoss(t *testing.T) {
	const window = realtime.DefaultWindowEntries
	gate := mcpetest.NewGate()
	c, base, _ := startStdioGated(t, filepath.Join(t.TempDir(), "mcpe.db"), nil, gate)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"burst.*"}}})

	gate.Close()
	var ids []string
	for i := range window + window/2 {
		code, body := post(t, base, "", fmt.Sprintf(`{"type": "burst.e", "data": {"n": %d, "pad": %q}}`, i, strings.Repeat("x", 200)))
		if code != http.StatusAccepted {
			t.Fatalf("POST %d: %d %s", i, code, body)
		}
		ids = append(ids, acceptedID(t, body))
	}
	gate.Open()
	for i, id := range ids {
		n := c.Next(t)
		if n.Method != mcpe.MethodEvent {
			t.Fatalf("notification %d is %s %s; want events/event", i, n.Method, n.Params)
		}
		var p mcpe.EventParams
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatal(err)
		}
		var ev mcpe.Event
		if err := json.Unmarshal(p.Event, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ID != id || p.SubscriptionID != sub.ID {
			t.Fatalf("notification %d is event %s for %s; want %s for %s", i, ev.ID, p.SubscriptionID, id, sub.ID)
		}
	}
	if rest := c.Pending(); len(rest) > 0 {
		t.Errorf("%d notifications more than the events posted, the first %s", len(rest), rest[0])
	}
}

// TestFullBacklogRefusesEvents has a live session fall behind by its
// backlog bound (realtime.Options.BacklogEntries, made small in process):
// events for its owner are then refused with 429 and Retry-After, and
// accepted again once it caught up; it gets every event accepted, once.
func TestFullBacklogRefusesEvents(t *testing.T) {
	const bound = 40
	gate := mcpetest.NewGate()
	s, err := clienttest.Start(context.Background(), &clienttest.Options{WindowEntries: 8, MaxBacklog: bound})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr, err := s.Transport(context.Background(), "local")
	if err != nil {
		t.Fatal(err)
	}
	c, base := mcpetest.Connect(t, gate.Transport(tr), nil), s.URL
	c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"burst.*"}}})

	gate.Close()
	var accepted []string
	var refused *http.Response
	for i := 0; i < 10*bound && refused == nil; i++ {
		resp := postResponse(t, base, fmt.Sprintf(`{"type": "burst.e", "data": {"n": %d}}`, i))
		switch resp.StatusCode {
		case http.StatusAccepted:
			accepted = append(accepted, acceptedID(t, readBody(t, resp)))
		case http.StatusTooManyRequests:
			refused = resp
		default:
			t.Fatalf("POST %d: %d %s", i, resp.StatusCode, readBody(t, resp))
		}
	}
	if refused == nil {
		t.Fatalf("%d events accepted for a session that reads none; want 429 once it is %d behind", len(accepted), bound)
	}
	body := readBody(t, refused)
	if refused.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"busy"`) {
		t.Errorf("429 with Retry-After %q and body %s; want Retry-After 1 and code busy", refused.Header.Get("Retry-After"), body)
	}
	if len(accepted) < bound {
		t.Errorf("refused after %d events; the bound is %d", len(accepted), bound)
	}

	gate.Open()
	got := map[string]int{}
	for range accepted {
		_, ev := c.NextEvent(t)
		got[ev.ID]++
	}
	for _, id := range accepted {
		if got[id] != 1 {
			t.Errorf("event %s received %d times; want once", id, got[id])
		}
	}
	// Caught up: the events are accepted again.
	if code, body := post(t, base, "", `{"type": "burst.after"}`); code != http.StatusAccepted {
		t.Fatalf("POST once caught up: %d %s", code, body)
	}
	if _, ev := c.NextEvent(t); ev.Type != "burst.after" {
		t.Errorf("got %s; want burst.after", ev.Type)
	}
}

func acceptedID(t *testing.T, body string) string {
	t.Helper()
	var a struct{ ID string }
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.ID == "" {
		t.Fatalf("202 body %q has no id (%v)", body, err)
	}
	return a.ID
}

// postResponse posts an event and returns the response, its body unread.
func postResponse(t *testing.T, base, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
