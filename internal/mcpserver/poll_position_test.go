package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// pollTypes calls events_poll with args and returns the types it read.
func pollTypes(t *testing.T, c *mcpetest.Client, args map[string]any) ([]string, mcpe.PollResult) {
	t.Helper()
	var res mcpe.PollResult
	c.MustCall(t, "events_poll", args, &res)
	var types []string
	for _, it := range res.Items {
		var ev mcpe.Event
		if err := json.Unmarshal(it.Event, &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	return types, res
}

// TestHostsSharingAPrincipalEachPollEverything connects two hosts as the
// stdio principal (two hosts on one database): each events_poll session
// goes on from a place of its own, so both read every entry instead of
// splitting the inbox between them. A host that connects later starts
// where the last poll of any ended.
func TestHostsSharingAPrincipalEachPollEverything(t *testing.T) {
	e := newEnv(t, envOptions{})
	desktop := e.connect(mcpserver.LocalPrincipal, nil)
	code := e.connect(mcpserver.LocalPrincipal, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	desktop.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"n.*"}}})
	code.MustCall(t, "events_list", map[string]any{}, nil) // attached
	e.publish("n.one", `{}`, mcpe.Metadata{})
	e.publish("n.two", `{}`, mcpe.Metadata{})

	for _, step := range []struct {
		name string
		c    *mcpetest.Client
		want []string
	}{
		{"desktop", desktop, []string{"n.one", "n.two"}},
		{"code after desktop", code, []string{"n.one", "n.two"}},
		{"desktop again", desktop, nil},
		{"code again", code, nil},
	} {
		got, _ := pollTypes(t, step.c, map[string]any{})
		if fmt.Sprint(got) != fmt.Sprint(step.want) {
			t.Errorf("%s: events_poll read %v; want %v", step.name, got, step.want)
		}
	}
	e.publish("n.three", `{}`, mcpe.Metadata{})
	if got, _ := pollTypes(t, code, map[string]any{}); fmt.Sprint(got) != "[n.three]" {
		t.Errorf("code: events_poll read %v; want [n.three]", got)
	}
	// A host that connects now starts after what was handed out last.
	later := e.connect(mcpserver.LocalPrincipal, nil)
	later.MustCall(t, "events_list", map[string]any{}, nil)
	if got, _ := pollTypes(t, later, map[string]any{}); len(got) != 0 {
		t.Errorf("a host connecting later read %v; want nothing", got)
	}
	if got, _ := pollTypes(t, desktop, map[string]any{}); fmt.Sprint(got) != "[n.three]" {
		t.Errorf("desktop: events_poll read %v; want [n.three]", got)
	}
}

// TestPollCursorPastTheEnd checks that events_poll refuses a cursor past
// the end of the caller's inbox, naming the newest, and does not go on
// from it: the entries that come later are still read.
func TestPollCursorPastTheEnd(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"n.*"}}})
	e.publish("n.one", `{}`, mcpe.Metadata{})
	_, first := pollTypes(t, c, map[string]any{})
	newest := first.NextCursor

	msg := c.CallError(t, "events_poll", map[string]any{"cursor": "999999"})
	if want := fmt.Sprintf(`cursor: "999999" is past the end of your inbox, whose newest cursor is %q`, newest); !strings.Contains(msg, want) {
		t.Errorf("events_poll past the end: %q; want it to contain %q", msg, want)
	}
	if got, res := pollTypes(t, c, map[string]any{"cursor": newest}); len(got) != 0 || res.NextCursor != newest {
		t.Errorf("events_poll at the newest cursor = %v, next %q; want nothing, next %q", got, res.NextCursor, newest)
	}
	e.publish("n.two", `{}`, mcpe.Metadata{})
	if got, _ := pollTypes(t, c, map[string]any{}); fmt.Sprint(got) != "[n.two]" {
		t.Errorf("events_poll after the refusal read %v; want [n.two]", got)
	}

	// A place past the end remembered before cursors were checked is
	// brought back to the end: what comes later is read.
	if err := e.store.SetPollCursor(context.Background(), "alice", 999999); err != nil {
		t.Fatal(err)
	}
	c2 := e.connect("alice", nil)
	c2.MustCall(t, "events_list", map[string]any{}, nil)
	if got, _ := pollTypes(t, c2, map[string]any{}); len(got) != 0 {
		t.Errorf("events_poll from a remembered place past the end read %v; want nothing", got)
	}
	e.publish("n.three", `{}`, mcpe.Metadata{})
	if got, _ := pollTypes(t, c2, map[string]any{}); fmt.Sprint(got) != "[n.three]" {
		t.Errorf("events_poll after a remembered place past the end read %v; want [n.three]", got)
	}
}
