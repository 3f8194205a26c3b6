package realtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

type notified struct {
	Principal    string
	Notification Notification
}

// recorder is a Notifier that remembers what it was given.
type recorder struct{ got []notified }

// Notify records n with pre-encoded params decoded into their typed form,
// so that tests compare values.
func (r *recorder) Notify(principal string, n Notification) {
	if raw, ok := n.Params.(json.RawMessage); ok {
		var typed any
		switch n.Method {
		case mcpe.MethodEvent:
			var p mcpe.EventParams
			json.Unmarshal(raw, &p)
			typed = p
		case mcpe.MethodBatch:
			var p mcpe.BatchParams
			json.Unmarshal(raw, &p)
			typed = p
		}
		n.Params = typed
	}
	r.got = append(r.got, notified{Principal: principal, Notification: n})
}

func TestDeliver(t *testing.T) {
	ev1 := json.RawMessage(`{"id":"e1","type":"deploy.failed","data":{}}`)
	ev2 := json.RawMessage(`{"id":"e2","type":"deploy.ok","data":{}}`)
	at := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	tests := []struct {
		name    string
		entries []subscriptions.InboxEntry
		want    []notified
	}{
		{name: "nothing", entries: nil, want: nil},
		{
			name: "one event",
			entries: []subscriptions.InboxEntry{
				{Seq: 7, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxEvent, Event: ev1, CreatedAt: at},
			},
			want: []notified{
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodEvent,
					Params: mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "7", Event: ev1},
				}},
			},
		},
		{
			name: "one entry for several subscriptions: one notification each, same cursor",
			entries: []subscriptions.InboxEntry{
				{Seq: 9, Principal: "alice", SubscriptionIDs: []string{"sub-1", "sub-2"}, Kind: mcpe.InboxEvent, Event: ev1},
			},
			want: []notified{
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodEvent,
					Params: mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "9", Event: ev1},
				}},
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodEvent,
					Params: mcpe.EventParams{SubscriptionID: "sub-2", Cursor: "9", Event: ev1},
				}},
			},
		},
		{
			name: "several principals and kinds in order, unknown kinds skipped",
			entries: []subscriptions.InboxEntry{
				{Seq: 10, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxEvent, Event: ev1},
				{Seq: 11, Principal: "bob", SubscriptionIDs: []string{"sub-2"}, Kind: mcpe.InboxEvent, Event: ev1},
				{Seq: 12, Principal: "alice", SubscriptionIDs: []string{"sub-3"}, Kind: mcpe.InboxExpired},
				{Seq: 13, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxEvent, Event: ev2},
				{Seq: 14, Principal: "carol", SubscriptionIDs: []string{"sub-4"}, Kind: mcpe.InboxKind("future_kind"), Event: ev2},
			},
			want: []notified{
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodEvent,
					Params: mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "10", Event: ev1},
				}},
				{Principal: "bob", Notification: Notification{
					Method: mcpe.MethodEvent,
					Params: mcpe.EventParams{SubscriptionID: "sub-2", Cursor: "11", Event: ev1},
				}},
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodSubscriptionExpired,
					Params: mcpe.ExpiredParams{SubscriptionID: "sub-3", Cursor: "12"},
				}},
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodEvent,
					Params: mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "13", Event: ev2},
				}},
			},
		},
		{
			name: "a digest",
			entries: []subscriptions.InboxEntry{
				{Seq: 5, Principal: "alice", SubscriptionIDs: []string{"sub-9"}, Kind: mcpe.InboxBatch,
					Events: []json.RawMessage{ev1, ev2}, Remaining: 3},
			},
			want: []notified{
				{Principal: "alice", Notification: Notification{
					Method: mcpe.MethodBatch,
					Params: mcpe.BatchParams{SubscriptionID: "sub-9", Cursor: "5", Events: []json.RawMessage{ev1, ev2}, Remaining: 3},
				}},
			},
		},
		{
			name: "only unknown kinds",
			entries: []subscriptions.InboxEntry{
				{Seq: 1, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxKind("future_kind")},
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			NewChannel(&r).Deliver(tt.entries)
			if diff := cmp.Diff(tt.want, r.got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The params are what a client reads on the wire: check their JSON form.
func TestDeliverWireForm(t *testing.T) {
	var r recorder
	NewChannel(&r).Deliver([]subscriptions.InboxEntry{{
		Seq: 42, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: mcpe.InboxEvent,
		Event: json.RawMessage(`{"id":"e1","type":"a.b","data":{"n":1}}`),
	}})
	if len(r.got) != 1 {
		t.Fatalf("got %d notifications, want 1", len(r.got))
	}
	raw, err := json.Marshal(r.got[0].Notification.Params)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"subscriptionId": "sub-1",
		"cursor":         "42",
		"event":          map[string]any{"id": "e1", "type": "a.b", "data": map[string]any{"n": float64(1)}},
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
		{"event", eventParams("sub-1", "42", ev1), mcpe.EventParams{SubscriptionID: "sub-1", Cursor: "42", Event: ev1}},
		{"event, odd ID", eventParams(`a"b\c`, "7", ev1), mcpe.EventParams{SubscriptionID: `a"b\c`, Cursor: "7", Event: ev1}},
		{"event, no cursor", eventParams("s", "", ev2), mcpe.EventParams{SubscriptionID: "s", Event: ev2}},
		{"batch", batchParams("sub-2", "9", []json.RawMessage{ev1, ev2}, 3), mcpe.BatchParams{SubscriptionID: "sub-2", Cursor: "9", Events: []json.RawMessage{ev1, ev2}, Remaining: 3}},
		{"batch, none remaining", batchParams("sub-2", "9", []json.RawMessage{ev1}, 0), mcpe.BatchParams{SubscriptionID: "sub-2", Cursor: "9", Events: []json.RawMessage{ev1}}},
		{"batch, empty", batchParams("sub-2", "9", nil, 0), mcpe.BatchParams{SubscriptionID: "sub-2", Cursor: "9", Events: []json.RawMessage{}}},
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
