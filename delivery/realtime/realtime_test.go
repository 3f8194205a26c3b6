package realtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

type notified struct {
	Principal    string
	Notification subscriptions.Notification
}

// recorder is a Notifier that remembers what it was given.
type recorder struct{ got []notified }

func (r *recorder) Notify(principal string, n subscriptions.Notification) {
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
				{Seq: 7, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: subscriptions.InboxEvent, Event: ev1, CreatedAt: at},
			},
			want: []notified{
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodEvent,
					Params: subscriptions.EventParams{SubscriptionID: "sub-1", Cursor: "7", Event: ev1},
				}},
			},
		},
		{
			name: "one entry for several subscriptions: one notification each, same cursor",
			entries: []subscriptions.InboxEntry{
				{Seq: 9, Principal: "alice", SubscriptionIDs: []string{"sub-1", "sub-2"}, Kind: subscriptions.InboxEvent, Event: ev1},
			},
			want: []notified{
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodEvent,
					Params: subscriptions.EventParams{SubscriptionID: "sub-1", Cursor: "9", Event: ev1},
				}},
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodEvent,
					Params: subscriptions.EventParams{SubscriptionID: "sub-2", Cursor: "9", Event: ev1},
				}},
			},
		},
		{
			name: "several principals and kinds in order, unknown kinds skipped",
			entries: []subscriptions.InboxEntry{
				{Seq: 10, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: subscriptions.InboxEvent, Event: ev1},
				{Seq: 11, Principal: "bob", SubscriptionIDs: []string{"sub-2"}, Kind: subscriptions.InboxEvent, Event: ev1},
				{Seq: 12, Principal: "alice", SubscriptionIDs: []string{"sub-3"}, Kind: subscriptions.InboxExpired},
				{Seq: 13, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: subscriptions.InboxEvent, Event: ev2},
				{Seq: 14, Principal: "carol", SubscriptionIDs: []string{"sub-4"}, Kind: subscriptions.InboxKind("future_kind"), Event: ev2},
			},
			want: []notified{
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodEvent,
					Params: subscriptions.EventParams{SubscriptionID: "sub-1", Cursor: "10", Event: ev1},
				}},
				{Principal: "bob", Notification: subscriptions.Notification{
					Method: subscriptions.MethodEvent,
					Params: subscriptions.EventParams{SubscriptionID: "sub-2", Cursor: "11", Event: ev1},
				}},
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodSubscriptionExpired,
					Params: subscriptions.ExpiredParams{SubscriptionID: "sub-3", Cursor: "12"},
				}},
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodEvent,
					Params: subscriptions.EventParams{SubscriptionID: "sub-1", Cursor: "13", Event: ev2},
				}},
			},
		},
		{
			name: "a digest",
			entries: []subscriptions.InboxEntry{
				{Seq: 5, Principal: "alice", SubscriptionIDs: []string{"sub-9"}, Kind: subscriptions.InboxBatch,
					Events: []json.RawMessage{ev1, ev2}, Remaining: 3},
			},
			want: []notified{
				{Principal: "alice", Notification: subscriptions.Notification{
					Method: subscriptions.MethodBatch,
					Params: subscriptions.BatchParams{SubscriptionID: "sub-9", Cursor: "5", Events: []json.RawMessage{ev1, ev2}, Remaining: 3},
				}},
			},
		},
		{
			name: "only unknown kinds",
			entries: []subscriptions.InboxEntry{
				{Seq: 1, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: subscriptions.InboxKind("future_kind")},
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recorder
			New(&r).Deliver(tt.entries)
			if diff := cmp.Diff(tt.want, r.got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// The params are what a client reads on the wire: check their JSON form.
func TestDeliverWireForm(t *testing.T) {
	var r recorder
	New(&r).Deliver([]subscriptions.InboxEntry{{
		Seq: 42, Principal: "alice", SubscriptionIDs: []string{"sub-1"}, Kind: subscriptions.InboxEvent,
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
