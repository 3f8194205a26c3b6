package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// discard is a Deliverer with no live sessions.
type discard struct{}

func (discard) Deliver([]subscriptions.InboxEntry)        {}
func (discard) Replay(string, []subscriptions.InboxEntry) {}

// TestPollEventByID checks that events_poll with eventId gives an event of
// the caller's inbox whole, a shaped one too, and answers another
// principal's event, an unknown id and a malformed one alike, without
// saying whether they exist; and that eventId refuses cursor and limit.
func TestPollEventByID(t *testing.T) {
	ctx := t.Context()
	svc, call, mustCall := serve(t)

	var sub struct{}
	mustCall("alice", mcpe.ToolSubscribe, `{"filter": {"eventTypes": ["github.issues.opened"]}, "delivery": {"channels": ["realtime"], "fields": ["issue.title"]}}`, &sub)
	mustCall("bob", mcpe.ToolSubscribe, `{"filter": {"eventTypes": ["github.*"]}}`, &sub)
	data := `{"issue":{"title":"T","body":"a long body","labels":["bug"]}}`
	issue, err := svc.Publish(ctx, mcpe.Event{Type: "github.issues.opened", Data: json.RawMessage(data)})
	if err != nil {
		t.Fatal(err)
	}
	push, err := svc.PublishFor(ctx, "bob", mcpe.Event{Type: "github.push", Data: json.RawMessage(`{"ref":"main"}`)})
	if err != nil {
		t.Fatal(err)
	}

	type event struct {
		ID     string          `json:"id"`
		Data   json.RawMessage `json:"data"`
		Shaped bool            `json:"shaped"`
	}
	var page struct {
		Items []struct{ Event event } `json:"items"`
	}
	mustCall("alice", mcpe.ToolPoll, `{}`, &page)
	if len(page.Items) != 1 || !page.Items[0].Event.Shaped || string(page.Items[0].Event.Data) != `{"issue":{"title":"T"}}` {
		t.Fatalf("alice's poll: %+v; want the issue event shaped to issue.title", page.Items)
	}
	for _, principal := range []string{"alice", "bob"} {
		var whole struct{ Event event }
		mustCall(principal, mcpe.ToolPoll, `{"eventId": "`+page.Items[0].Event.ID+`"}`, &whole)
		if whole.Event.ID != issue.EventID || whole.Event.Shaped || string(whole.Event.Data) != data {
			t.Errorf("%s's events_poll by eventId: %+v; want event %s whole, data %s", principal, whole.Event, issue.EventID, data)
		}
	}

	for _, id := range []string{push.EventID, "00000000-0000-4000-9000-000000000099", "not-an-id"} {
		text, isErr := call("alice", mcpe.ToolPoll, `{"eventId": "`+id+`"}`)
		if want := `eventId: no event "` + id + `" in your inbox;`; !isErr || !strings.HasPrefix(text, want) {
			t.Errorf("alice's events_poll of %s: %s; want an error beginning %s", id, text, want)
		}
	}
	for _, args := range []string{`{"eventId": "` + issue.EventID + `", "limit": 5}`, `{"eventId": "` + issue.EventID + `", "cursor": "0"}`} {
		if text, isErr := call("alice", mcpe.ToolPoll, args); !isErr || !strings.Contains(text, "leave out cursor and limit") {
			t.Errorf("events_poll %s: %s; want it refused, naming cursor and limit", args, text)
		}
	}
}

// TestListNamesIDOnce checks that events_list gives each subscription's ID
// once, under "id" (the name MCPE's Subscription has, which the reference
// client reads), while events_subscribe still answers subscriptionId.
func TestListNamesIDOnce(t *testing.T) {
	_, _, mustCall := serve(t)
	var sub map[string]any
	mustCall("alice", mcpe.ToolSubscribe, `{"filter": {"eventTypes": ["github.*"]}}`, &sub)
	var list struct{ Subscriptions []map[string]any }
	mustCall("alice", mcpe.ToolList, `{}`, &list)
	if id := sub["subscriptionId"]; id == nil || len(list.Subscriptions) != 1 || list.Subscriptions[0]["id"] != id || list.Subscriptions[0]["subscriptionId"] != nil {
		t.Errorf("events_subscribe answered %v, events_list %v; want subscriptionId there and only id here", sub, list.Subscriptions)
	}
	var typed mcpe.ListResult
	mustCall("alice", mcpe.ToolList, `{}`, &typed)
	if len(typed.Subscriptions) != 1 || typed.Subscriptions[0].ID != sub["subscriptionId"] || typed.Subscriptions[0].Status != mcpe.StatusActive {
		t.Errorf("events_list read as mcpe.ListResult: %+v", typed.Subscriptions)
	}
}

// serve registers the tools over a subscriptions.Service with an SQLite
// store in memory, and returns it with functions that call a tool for a
// principal: call returns the result's text and whether it is an error,
// mustCall decodes a result that must not be one into out.
func serve(t *testing.T) (svc *subscriptions.Service, call func(principal, tool, args string) (string, bool), mustCall func(principal, tool, args string, out any)) {
	store, err := sqlite.Open(t.Context(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err = subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	set := Register(mcp.NewServer(&mcp.Implementation{Name: "test"}, nil), Options{Service: svc,
		Principal: func(context.Context, *mcp.CallToolRequest) (string, error) { return "alice", nil }})
	call = func(principal, tool, args string) (string, bool) {
		t.Helper()
		res, err := set.CallTool(t.Context(), principal, tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	mustCall = func(principal, tool, args string, out any) {
		t.Helper()
		text, isErr := call(principal, tool, args)
		if isErr || json.Unmarshal([]byte(text), out) != nil {
			t.Fatalf("%s %s %s: %s", principal, tool, args, text)
		}
	}
	return svc, call, mustCall
}
