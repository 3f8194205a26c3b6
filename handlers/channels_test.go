package handlers_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// runSummary describes a handler run by its kind and the data.n of its
// events, e.g. "event 1" or "batch 1 2 (remaining 0)".
func runSummary(t *testing.T, inv *subscriptions.Invocation) string {
	t.Helper()
	n := func(raw json.RawMessage) string {
		var ev struct {
			Data struct{ N int } `json:"data"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("the handler got an event that is not JSON: %v: %s", err, raw)
		}
		return fmt.Sprint(ev.Data.N)
	}
	if inv.Kind == mcpe.InboxBatch {
		var ns []string
		for _, ev := range inv.Events {
			ns = append(ns, n(ev))
		}
		return fmt.Sprintf("batch %s (remaining %d)", strings.Join(ns, " "), inv.Remaining)
	}
	return "event " + n(inv.Event)
}

// TestHandlersOnEveryChannel checks that a handler runs for every delivery
// of its subscription, whatever the channel: once per event on realtime,
// once per digest when a cron or scheduled subscription fires (once per
// event when the digest is not aggregated), and never before the fire.
func TestHandlersOnEveryChannel(t *testing.T) {
	start := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	no := false
	tests := []struct {
		name     string
		delivery *mcpe.Delivery
		fireAt   time.Time // zero for realtime
		want     []string
	}{
		{
			name: "realtime",
			want: []string{"event 1", "event 2"},
		},
		{
			name: "cron",
			delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelCron},
				CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC"}},
			fireAt: start.Add(time.Hour),
			want:   []string{"batch 1 2 (remaining 0)"},
		},
		{
			name: "cron, not aggregated",
			delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelCron},
				CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "UTC", AggregateEvents: &no}},
			fireAt: start.Add(time.Hour),
			want:   []string{"event 1", "event 2"},
		},
		{
			name: "scheduled",
			delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelScheduled},
				ScheduledDelivery: &mcpe.ScheduledDelivery{DeliverAt: "2026-03-02T10:00:00Z"}},
			fireAt: start.Add(2 * time.Hour),
			want:   []string{"batch 1 2 (remaining 0)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHandler(nil)
			clk := clocktest.NewFake(start)
			e := newEnvWith(t, filepath.Join(t.TempDir(), "db"), clk, envOptions{
				kinds: map[mcpe.HandlerType]subscriptions.Handler{mcpe.HandlerBash: h},
				timed: true,
			})
			sub, err := e.svc.Subscribe(t.Context(), "alice", mcpe.SubscribeRequest{
				Filter:   mcpe.Filter{EventTypes: []string{"test.*"}},
				Delivery: tt.delivery,
				Handler:  &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "notify"},
			})
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 2; n++ {
				if _, err := e.svc.Publish(t.Context(), mcpe.Event{Type: "test.created", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}); err != nil {
					t.Fatal(err)
				}
			}
			if !tt.fireAt.IsZero() {
				h.none(t) // nothing runs before the digest fires
				clk.AdvanceTo(tt.fireAt)
			}
			var got []string
			for range tt.want {
				inv := h.wait(t)
				if inv.SubscriptionID != sub.ID || inv.Principal != "alice" || inv.Attempt != 1 {
					t.Errorf("invocation %+v: want attempt 1 of alice's %s", inv, sub.ID)
				}
				got = append(got, runSummary(t, inv))
			}
			h.none(t)
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("handler runs mismatch (-want +got):\n%s", diff)
			}
			st := e.status(t, sub.ID, func(s mcpe.HandlerStatus) bool { return s.Succeeded == int64(len(tt.want)) })
			if st.Failed != 0 || st.Pending != 0 {
				t.Errorf("status %+v; want %d succeeded and nothing else", st, len(tt.want))
			}
		})
	}
}
