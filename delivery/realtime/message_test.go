package realtime

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// typed decodes a message's params into the type clients decode them into,
// so that tests compare values.
func typed(t *testing.T, m Message) any {
	t.Helper()
	var v any
	switch m.Method {
	case mcpe.MethodEvent:
		v = &mcpe.EventParams{}
	case mcpe.MethodBatch:
		v = &mcpe.BatchParams{}
	case mcpe.MethodSubscriptionExpired:
		v = &mcpe.ExpiredParams{}
	case mcpe.MethodMissed:
		v = &mcpe.MissedParams{}
	default:
		t.Fatalf("unknown method %q", m.Method)
	}
	if err := json.Unmarshal(m.Params, v); err != nil {
		t.Fatalf("%s params %s: %v", m.Method, m.Params, err)
	}
	return v
}

func TestMessages(t *testing.T) {
	ev1 := json.RawMessage(`{"id":"e1","type":"deploy.failed","data":{}}`)
	ev2 := json.RawMessage(`{"id":"e2","type":"deploy.ok","data":{}}`)
	at := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	tests := []struct {
		name  string
		entry subscriptions.InboxEntry
		want  []any
	}{
		{"one event",
			subscriptions.InboxEntry{Seq: 7, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxEvent, Event: ev1, CreatedAt: at},
			[]any{&mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "7", Event: ev1}}},
		{"one entry for several subscriptions: one notification each, same cursor",
			subscriptions.InboxEntry{Seq: 9, Principal: "alice", SubscriptionIDs: []string{"sub-1", "sub-2"}, Kind: mcpe.InboxEvent, Event: ev1},
			[]any{&mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "9", Event: ev1}, &mcpe.EventParams{SubscriptionID: "sub-2", Cursor: "9", Event: ev1}}},
		{"an expiry",
			subscriptions.InboxEntry{Seq: 12, Principal: "alice", SubscriptionIDs: []string{"sub-3"}, Kind: mcpe.InboxExpired},
			[]any{&mcpe.ExpiredParams{SubscriptionID: "sub-3", Cursor: "12"}}},
		{"a digest",
			subscriptions.InboxEntry{Seq: 5, Principal: "alice", SubscriptionIDs: []string{"sub-9"}, Kind: mcpe.InboxBatch, Events: []json.RawMessage{ev1, ev2}, Remaining: 3},
			[]any{&mcpe.BatchParams{SubscriptionID: "sub-9", Cursor: "5", Events: []json.RawMessage{ev1, ev2}, Remaining: 3}}},
		{"an unknown kind is skipped",
			subscriptions.InboxEntry{Seq: 14, Principal: "carol", SubscriptionIDs: []string{"sub-4"}, Kind: mcpe.InboxKind("future_kind"), Event: ev2},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []any
			for _, m := range messages(tt.entry, nil) {
				got = append(got, typed(t, m))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The params are what a client reads on the wire: check their JSON form.
func TestMessageWireForm(t *testing.T) {
	msgs := messages(subscriptions.InboxEntry{
		Seq: 42, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxEvent,
		Event: json.RawMessage(`{"id":"e1","type":"a.b","data":{"n":1}}`),
	}, nil)
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	var got map[string]any
	if err := json.Unmarshal(AppendNotification(nil, msgs[0]), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"jsonrpc": "2.0",
		"method":  "events/event",
		"params": map[string]any{
			"subscriptionId": "sub-1",
			"cursor":         "42",
			"event":          map[string]any{"id": "e1", "type": "a.b", "data": map[string]any{"n": float64(1)}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestParamsEncodeLikeTheTypes checks that the params written by hand are
// byte for byte what json.Marshal makes of the typed structs clients decode.
func TestParamsEncodeLikeTheTypes(t *testing.T) {
	ev1 := json.RawMessage(`{"id":"e1","type":"a.b","data":{"t":"x"}}`)
	ev2 := json.RawMessage(`{"id":"e2","type":"a.c","data":{}}`)
	for _, tc := range []struct {
		name string
		got  json.RawMessage
		want any
	}{
		{"event", eventParams("sub-1", "", "42", ev1, 0), mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "42", Event: ev1}},
		{"event, odd ID", eventParams(`a"b\c`, "", "7", ev1, 0), mcpe.EventParams{SubscriptionID: `a"b\c`, Cursor: "7", Event: ev1}},
		{"event, no cursor", eventParams("s", "", "", ev2, 0), mcpe.EventParams{SubscriptionID: "s", Event: ev2}},
		{"batch", batchParams("sub-2", "", "9", []json.RawMessage{ev1, ev2}, 3), mcpe.BatchParams{SubscriptionID: "sub-2", Cursor: "9", Events: []json.RawMessage{ev1, ev2}, Remaining: 3}},
		{"batch, none remaining", batchParams("sub-2", "", "9", []json.RawMessage{ev1}, 0), mcpe.BatchParams{SubscriptionID: "sub-2", Cursor: "9", Events: []json.RawMessage{ev1}}},
		{"batch, empty", batchParams("sub-2", "", "9", nil, 0), mcpe.BatchParams{SubscriptionID: "sub-2", Cursor: "9", Events: []json.RawMessage{}}},
		{"event, label", eventParams("s", `PRs "merged" ✓`, "3", ev2, 0), mcpe.EventParams{SubscriptionID: "s", Label: `PRs "merged" ✓`, Cursor: "3", Event: ev2}},
		{"event, folded", eventParams("s", "", "3", ev2, 4), mcpe.EventParams{SubscriptionID: "s", Cursor: "3", Event: ev2, Folded: 4}},
		{"batch, label", batchParams("s", "digest", "4", []json.RawMessage{ev2}, 0), mcpe.BatchParams{SubscriptionID: "s", Label: "digest", Cursor: "4", Events: []json.RawMessage{ev2}}},
		{"expired", expiredParams("sub-3", "12"), mcpe.ExpiredParams{SubscriptionID: "sub-3", Cursor: "12"}},
	} {
		want, err := json.Marshal(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if string(tc.got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, want)
		}
	}
}

// TestMessagesRendering checks that each subscription's notification of
// one entry carries its label and its events shaped by its delivery.
func TestMessagesRendering(t *testing.T) {
	ev := json.RawMessage(`{"id":"e1","type":"a.b","data":{"issue":{"title":"T","body":"long"},"n":1},"metadata":{"priority":"normal"}}`)
	rendering := func(id string) (string, mcpe.Delivery) {
		if id == "shaped" {
			return "my label", mcpe.Delivery{Fields: []string{"issue.title"}}
		}
		return "", mcpe.Delivery{}
	}
	for _, kind := range []mcpe.InboxKind{mcpe.InboxEvent, mcpe.InboxBatch} {
		msgs := messages(subscriptions.InboxEntry{Seq: 5, SubscriptionIDs: []string{"whole", "shaped"}, Kind: kind, Event: ev, Events: []json.RawMessage{ev}}, rendering)
		want := []string{
			`{"subscriptionId":"whole","cursor":"5",` + map[bool]string{true: `"event":` + string(ev) + `}`, false: `"events":[` + string(ev) + `]}`}[kind == mcpe.InboxEvent],
			`{"subscriptionId":"shaped","label":"my label","cursor":"5",` + map[bool]string{true: `"event":%s}`, false: `"events":[%s]}`}[kind == mcpe.InboxEvent],
		}
		want[1] = fmt.Sprintf(want[1], `{"id":"e1","type":"a.b","data":{"issue":{"title":"T"}},"metadata":{"priority":"normal"},"shaped":true}`)
		if len(msgs) != 2 || string(msgs[0].Params) != want[0] || string(msgs[1].Params) != want[1] {
			t.Errorf("%s: got %d messages:\n%s\n%s\nwant\n%s\n%s", kind, len(msgs), msgs[0].Params, msgs[len(msgs)-1].Params, want[0], want[1])
		}
	}
}
