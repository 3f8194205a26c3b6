package client_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestRoundTrip makes every call of the Client against a real server, over
// an in-memory transport, Streamable HTTP and stdio (the mcpe-server
// binary), under both protocol versions, and checks what the handlers get.
func TestRoundTrip(t *testing.T) {
	forEachLink(t, func(t *testing.T, l link) {
		rec := newRecorder()
		c := connect(t, l, nil, func(c *client.Client) {
			if _, err := c.OnEvent("github.issues.*", rec.event("issues")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.OnEvent("*", rec.event("all")); err != nil {
				t.Fatal(err)
			}
			c.OnBatch(rec.batch)
			c.OnExpired(rec.expired)
		})
		ctx := ctxT(t)

		// The capability, as a typed value.
		if !c.SupportsEvents() {
			t.Fatal("SupportsEvents() = false")
		}
		caps, _ := c.Capability()
		wantCaps := mcpe.Capability{
			MaxSubscriptions: 100,
			DeliveryChannels: []mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron, mcpe.ChannelScheduled},
			Features:         mcpe.Features{Pause: true, Wildcards: true, CronSchedule: true, ScheduledDelivery: true},
			Handlers:         []mcpe.HandlerType{},
		}
		if diff := cmp.Diff(wantCaps, caps, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Capability() mismatch (-want +got):\n%s", diff)
		}

		// Subscribe, and receive through the handlers whose pattern matches.
		sub, err := c.Subscribe(ctx, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"github.issues.*"}}})
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		if sub.Status != mcpe.StatusActive || sub.ID == "" {
			t.Fatalf("Subscribe returned %+v", sub)
		}
		opened := l.publish(t, "github.issues.opened", `{"title": "crash on start"}`)
		l.publish(t, "github.push", `{}`) // matches no subscription
		rec.expect(t,
			received{Handler: "issues", SubscriptionID: sub.ID, Type: "github.issues.opened", ID: opened},
			received{Handler: "all", SubscriptionID: sub.ID, Type: "github.issues.opened", ID: opened},
		)
		rec.none(t, c)

		// List, by status.
		for _, tc := range []struct {
			status mcpe.Status
			want   []string
		}{
			{"", []string{sub.ID}},
			{mcpe.StatusActive, []string{sub.ID}},
			{mcpe.StatusPaused, nil},
		} {
			subs, err := c.List(ctx, tc.status)
			if err != nil {
				t.Fatalf("List(%q): %v", tc.status, err)
			}
			if diff := cmp.Diff(tc.want, ids(subs), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("List(%q) mismatch (-want +got):\n%s", tc.status, diff)
			}
		}

		// Pause: nothing arrives; Resume: events arrive again.
		paused, err := c.Pause(ctx, sub.ID)
		if err != nil || paused.Status != mcpe.StatusPaused {
			t.Fatalf("Pause = %+v, %v", paused, err)
		}
		l.publish(t, "github.issues.closed", `{}`)
		rec.none(t, c)
		resumed, err := c.Resume(ctx, sub.ID)
		if err != nil || resumed.Status != mcpe.StatusActive {
			t.Fatalf("Resume = %+v, %v", resumed, err)
		}

		// Update: a new filter and an expiry, then the expiry removed.
		expires := l.now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		updated, err := c.Update(ctx, mcpe.UpdateRequest{
			SubscriptionID: sub.ID,
			Filter:         &mcpe.Filter{EventTypes: []string{"github.push"}},
			ExpiresAt:      mcpe.OptionalString{Set: true, Value: expires.Format(time.RFC3339)},
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if diff := cmp.Diff([]string{"github.push"}, updated.Filter.EventTypes); diff != "" {
			t.Errorf("updated filter mismatch (-want +got):\n%s", diff)
		}
		if updated.ExpiresAt == nil || !updated.ExpiresAt.Equal(expires) {
			t.Errorf("updated expiresAt = %v, want %v", updated.ExpiresAt, expires)
		}
		if updated, err = c.Update(ctx, mcpe.UpdateRequest{SubscriptionID: sub.ID, ExpiresAt: mcpe.OptionalString{Set: true}}); err != nil || updated.ExpiresAt != nil {
			t.Fatalf("Update removing the expiry = %+v, %v", updated, err)
		}
		push := l.publish(t, "github.push", `{"ref": "main"}`)
		rec.expect(t, received{Handler: "all", SubscriptionID: sub.ID, Type: "github.push", ID: push})

		// Poll reads the inbox: the two events delivered, in order.
		page, err := c.Poll(ctx, mcpe.PollRequest{Cursor: "0", Limit: 10})
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		var polled []string
		for _, it := range page.Items {
			if it.Kind != mcpe.InboxEvent || len(it.SubscriptionIDs) != 1 || it.SubscriptionIDs[0] != sub.ID {
				t.Errorf("poll item %+v", it)
			}
			var ev mcpe.Event
			if err := json.Unmarshal(it.Event, &ev); err != nil {
				t.Fatal(err)
			}
			polled = append(polled, ev.ID)
		}
		if diff := cmp.Diff([]string{opened, push}, polled); diff != "" || page.HasMore {
			t.Errorf("Poll mismatch (-want +got), hasMore %v:\n%s", page.HasMore, diff)
		}
		if c.Cursor() != page.NextCursor {
			t.Errorf("Cursor() = %q, want the end of the inbox %q", c.Cursor(), page.NextCursor)
		}

		// A digest: events wait for the schedule, then come as one batch.
		digest := mcpe.Delivery{
			Channels:     []mcpe.Channel{mcpe.ChannelCron},
			CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "America/New_York"},
		}
		if l.fake == nil {
			digest.CronSchedule = &mcpe.CronSchedule{Expression: "@every 1s"}
		}
		daily, err := c.Subscribe(ctx, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"deploy.*"}}, Delivery: &digest})
		if err != nil {
			t.Fatalf("Subscribe to a digest: %v", err)
		}
		if daily.NextDelivery == nil {
			t.Errorf("a digest subscription has no nextDelivery: %+v", daily)
		}
		d1 := l.publish(t, "deploy.started", `{}`)
		d2 := l.publish(t, "deploy.finished", `{}`)
		if l.fake != nil {
			rec.none(t, c)
			l.fake.Advance(time.Hour) // 08:00 to 09:00 in New York
		}
		rec.expect(t, received{Handler: "batch", SubscriptionID: daily.ID, Events: []string{d1, d2}})

		// Expiry.
		ttl := time.Hour
		if l.fake == nil {
			ttl = 1500 * time.Millisecond
		}
		short, err := c.Subscribe(ctx, mcpe.SubscribeRequest{
			Filter:    mcpe.Filter{EventTypes: []string{"never.*"}},
			ExpiresAt: l.now().Add(ttl).UTC().Format(time.RFC3339Nano),
		})
		if err != nil {
			t.Fatalf("Subscribe with an expiry: %v", err)
		}
		if l.fake != nil {
			l.fake.Advance(ttl)
		}
		rec.expect(t, received{Handler: "expired", SubscriptionID: short.ID})

		// The catalog.
		if _, err := c.Catalog(ctx, "github.*"); err != nil {
			t.Errorf("Catalog: %v", err)
		}

		// Unsubscribe, then the server's errors come back as *ToolError.
		if err := c.Unsubscribe(ctx, sub.ID); err != nil {
			t.Fatalf("Unsubscribe: %v", err)
		}
		subs, err := c.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{daily.ID, short.ID}, ids(subs)); diff != "" {
			t.Errorf("List after Unsubscribe mismatch (-want +got):\n%s", diff)
		}
		var te *client.ToolError
		if err := c.Unsubscribe(ctx, sub.ID); !errors.As(err, &te) || te.Tool != "events_unsubscribe" || !strings.Contains(te.Message, "not found") {
			t.Errorf("Unsubscribe twice = %v, want a ToolError saying not found", err)
		}
		if _, err := c.Subscribe(ctx, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"github.{"}}}); !errors.As(err, &te) || !strings.Contains(te.Message, "eventTypes") {
			t.Errorf("Subscribe with a bad pattern = %v, want a ToolError about eventTypes", err)
		}
		rec.none(t, c)
	})
}

func ids(subs []*mcpe.Subscription) []string {
	var out []string
	for _, s := range subs {
		out = append(out, s.ID)
	}
	return out
}

// A server that serves protocol 2026-07-28 statelessly over HTTP sends
// notifications only on subscriptions/listen streams; the Client, asked
// for no version, settles on 2025-11-25 there and keeps receiving. Asked
// for 2026-07-28, it gets it.
func TestStatelessHTTPServer(t *testing.T) {
	s, _ := inProcess(t, &clienttest.Options{Stateless: true})
	l := link{name: "http", negotiated: "2025-11-25", transport: client.StreamableHTTP(s.MCPEndpoint, token), publish: publisher(s)}
	rec := newRecorder()
	c := connect(t, l, nil, func(c *client.Client) {
		if _, err := c.OnEvent("*", rec.event("all")); err != nil {
			t.Fatal(err)
		}
	})
	sub, err := c.Subscribe(ctxT(t), mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"deploy.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := l.publish(t, "deploy.failed", `{}`)
	rec.expect(t, received{Handler: "all", SubscriptionID: sub.ID, Type: "deploy.failed", ID: id})

	l.protocol, l.negotiated = "2026-07-28", "2026-07-28"
	connect(t, l, nil, nil)
}
