package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/adapters/catalog"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery"
	"github.com/mcpe-server/mcpe-server/delivery/cron"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/delivery/scheduled"
	"github.com/mcpe-server/mcpe-server/handlers"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
	"github.com/mcpe-server/mcpe-server/tools"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// env is one server over a SQLite file, with a fake clock.
type env struct {
	t          *testing.T
	clock      *clocktest.Fake
	store      *sqlite.Store
	svc        *subscriptions.Service
	schedulers delivery.Schedulers
	reg        *realtime.Registry
	srv        *mcpserver.Server
	// runner runs handler jobs when envOptions.webhooks is set.
	runner *handlers.Runner
	// hookURL replaces @hook in the golden scripts: a webhook receiver.
	hookURL string
	// catalog is the golden tests' catalog, which their scripts post to.
	catalog *catalog.Catalog
}

type envOptions struct {
	dbPath string
	clock  *clocktest.Fake
	max    int
	logger *slog.Logger
	// catalog, when set, is the server's event catalog.
	catalog tools.Catalog
	// handlers are the handlers subscriptions may carry; conversation
	// configures conversation events.
	handlers     map[mcpe.HandlerType]subscriptions.Handler
	conversation mcpserver.ConversationOptions
	// webhooks, when set, turns the webhook handler on with these
	// options (its clock is the env's), and with it SEP-3415 webhook
	// delivery; a handler runner runs the jobs.
	webhooks *webhook.Options
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	if o.dbPath == "" {
		o.dbPath = filepath.Join(t.TempDir(), "mcpe.db")
	}
	if o.clock == nil {
		o.clock = clocktest.NewFake(start)
	}
	store, err := sqlite.Open(ctx, o.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	reg := realtime.NewRegistry(&realtime.Options{Inbox: store})
	var (
		sender  *webhook.Sender
		runner  *handlers.Runner
		byType  = maps.Clone(o.handlers)
		written func()
	)
	if o.webhooks != nil {
		wo := *o.webhooks
		wo.Clock = o.clock
		if sender, err = webhook.New(&wo); err != nil {
			t.Fatal(err)
		}
		if byType == nil {
			byType = map[mcpe.HandlerType]subscriptions.Handler{}
		}
		byType[mcpe.HandlerWebhook] = mcpserver.WebhookHandler(sender, o.clock, o.logger)
		if runner, err = handlers.New(handlers.Options{Jobs: store, Handlers: byType, Clock: o.clock}); err != nil {
			t.Fatal(err)
		}
		written = runner.Wake
	}
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{
		Store:     store,
		Deliverer: reg,
		Presence:  reg,
		Backlog:   reg,
		Timings: map[mcpe.Channel]subscriptions.Timing{
			mcpe.ChannelCron:      cron.New(nil),
			mcpe.ChannelScheduled: scheduled.Channel{},
		},
		Clock:            o.clock,
		MaxSubscriptions: o.max,
		EphemeralPrefix:  mcpserver.SessionPrincipalPrefix,
		Managed:          mcpserver.ManagedPrefixes(),
		// Tests move the fake clock by hours and days; retention has its
		// own tests.
		PruneInterval: 24 * time.Hour,
		Handlers:      byType,
		JobsWritten:   written,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if runner != nil {
		if err := runner.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	schedOpts := &delivery.SchedulerOptions{Clock: o.clock}
	windows, err := delivery.NewScheduler(subscriptions.Windows, svc, schedOpts)
	if err != nil {
		t.Fatal(err)
	}
	schedulers := delivery.Schedulers{cron.NewScheduler(svc, schedOpts), scheduled.NewScheduler(svc, schedOpts), windows}
	for _, s := range schedulers {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := mcpserver.New(mcpserver.Options{Service: svc, Sessions: reg, Clock: o.clock, Logger: o.logger, Catalog: o.catalog, Conversation: o.conversation, Webhooks: sender})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: o.clock, store: store, svc: svc, schedulers: schedulers, reg: reg, srv: srv, runner: runner}
	t.Cleanup(e.close)
	return e
}

// close shuts the server down in the same order the command does.
func (e *env) close() {
	for ss := range e.srv.MCP().Sessions() {
		ss.Close()
	}
	e.reg.Close()
	e.srv.Close()
	e.srv.Wait()
	if e.runner != nil {
		e.runner.Stop()
	}
	e.schedulers.Stop()
	e.svc.Stop()
	e.store.Close()
}

// connect connects an in-memory client acting for principal.
func (e *env) connect(principal string, opts *mcp.ClientSessionOptions) *mcpetest.Client {
	e.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(context.Background(), st, principal); err != nil {
		e.t.Fatal(err)
	}
	return mcpetest.Connect(e.t, ct, opts)
}

// publish publishes an event through the Go API and returns its ID.
func (e *env) publish(typ, data string, md mcpe.Metadata) string {
	e.t.Helper()
	res, err := e.svc.Publish(context.Background(), mcpe.Event{Type: typ, Data: json.RawMessage(data), Metadata: md})
	if err != nil {
		e.t.Fatalf("publish %s: %v", typ, err)
	}
	return res.EventID
}

// protocols are the protocol versions the go-sdk client speaks.
var protocols = []struct {
	name string
	opts *mcp.ClientSessionOptions
}{
	{"2026-07-28", nil},
	{"2025-11-25", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}},
}

func TestCapabilityAdvertised(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e := newEnv(t, envOptions{max: 7})
			c := e.connect("alice", p.opts)
			want := mcpe.Capability{
				MaxSubscriptions: 7,
				DeliveryChannels: []mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron, mcpe.ChannelScheduled},
				Features:         mcpe.Features{Pause: true, Wildcards: true, CronSchedule: true, ScheduledDelivery: true},
				Handlers:         []mcpe.HandlerType{},
			}
			var raw struct {
				Capabilities struct {
					Events       *mcpe.Capability `json:"events"`
					Experimental struct {
						Events *mcpe.Capability `json:"events"`
					} `json:"experimental"`
					Tools *struct{} `json:"tools"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(c.InitializeRaw(), &raw); err != nil {
				t.Fatalf("decode initialize result %s: %v", c.InitializeRaw(), err)
			}
			if diff := cmp.Diff(&want, raw.Capabilities.Events); diff != "" {
				t.Errorf("capabilities.events mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(&want, raw.Capabilities.Experimental.Events); diff != "" {
				t.Errorf("capabilities.experimental.events mismatch (-want +got):\n%s", diff)
			}
			if raw.Capabilities.Tools == nil {
				t.Errorf("capabilities.tools missing from %s", c.InitializeRaw())
			}
			if got := c.Session.InitializeResult().Capabilities.Experimental["events"]; got == nil {
				t.Errorf("the go-sdk client does not see capabilities.experimental.events")
			}
		})
	}
}

func TestToolsListed(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	res, err := c.Session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		// The others take a subscriptionId, or nothing required.
		if example := tool.Name == "events_subscribe" || tool.Name == "events_update"; strings.Contains(tool.Description, "Example: {") != example {
			t.Errorf("%s: description has an example: %v, want %v: %q", tool.Name, !example, example, tool.Description)
		}
	}
	slices.Sort(names)
	want := []string{"events_list", "events_pause", "events_poll", "events_resume", "events_subscribe", "events_unsubscribe", "events_update"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
}

func TestRealtimeDelivery(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			c := e.connect("alice", p.opts)
			sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"github.*"}}})
			if sub.Status != mcpe.StatusActive || sub.ID == "" {
				t.Fatalf("subscribe returned %+v", sub)
			}

			id := e.publish("github.issue.opened", `{"title": "Bug report", "number": 123}`,
				mcpe.Metadata{SourceEventID: "gh-evt-456", Tags: []string{"bug", "frontend"}, Priority: mcpe.PriorityHigh})
			params, ev := c.NextEvent(t)
			if params.SubscriptionID != sub.ID {
				t.Errorf("subscriptionId = %q, want %q", params.SubscriptionID, sub.ID)
			}
			if params.Cursor == "" {
				t.Errorf("params have no cursor: %+v", params)
			}
			want := mcpe.Event{
				ID:   id,
				Type: "github.issue.opened",
				Data: json.RawMessage(`{"title":"Bug report","number":123}`),
				Metadata: mcpe.Metadata{
					SourceEventID: "gh-evt-456", Timestamp: start, Priority: mcpe.PriorityHigh, Tags: []string{"bug", "frontend"},
				},
			}
			if diff := cmp.Diff(want, ev); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}

			// A non-matching event is not delivered: the next one to arrive
			// is the matching one published after it.
			e.publish("slack.message", `{}`, mcpe.Metadata{})
			e.publish("github", `{}`, mcpe.Metadata{})
			e.publish("github.push", `{"ref": "main"}`, mcpe.Metadata{})
			_, ev = c.NextEvent(t)
			if ev.Type != "github.push" {
				t.Errorf("got %s; want only github.push after two non-matching events", ev.Type)
			}
			if ev.Metadata.Priority != mcpe.PriorityNormal {
				t.Errorf("priority = %q, want the default normal", ev.Metadata.Priority)
			}
		})
	}
}

func TestFilterByTagsAndPriority(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	// The combined example of MCPE section 5.
	c.Subscribe(t, map[string]any{"filter": map[string]any{
		"eventTypes": []string{"github.push", "github.deployment.*", "slack.message"},
		"tags":       []string{"ci", "deploy"},
		"priority":   []string{"high", "critical"},
	}})
	e.publish("github.push", `{}`, mcpe.Metadata{Tags: []string{"ci"}, Priority: mcpe.PriorityNormal})       // priority
	e.publish("github.push", `{}`, mcpe.Metadata{Tags: []string{"docs"}, Priority: mcpe.PriorityHigh})       // tags
	e.publish("github.issue.opened", `{}`, mcpe.Metadata{Tags: []string{"ci"}, Priority: mcpe.PriorityHigh}) // type
	want := e.publish("github.deployment.failed", `{}`, mcpe.Metadata{Tags: []string{"x", "deploy"}, Priority: mcpe.PriorityCritical})
	if _, ev := c.NextEvent(t); ev.ID != want {
		t.Errorf("got event %s %s; want only the deployment event", ev.Type, ev.ID)
	}
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}}})
	ref := map[string]any{"subscriptionId": sub.ID}

	var paused subscriptions.Subscription
	c.MustCall(t, "events_pause", ref, &paused)
	if paused.Status != mcpe.StatusPaused {
		t.Fatalf("status after pause = %q", paused.Status)
	}
	c.MustCall(t, "events_pause", ref, &paused) // pausing again changes nothing
	if paused.Status != mcpe.StatusPaused {
		t.Fatalf("status after second pause = %q", paused.Status)
	}
	var list mcpe.ListResult
	c.MustCall(t, "events_list", map[string]any{"status": "paused"}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID {
		t.Fatalf("events_list paused = %+v", list.Subscriptions)
	}

	e.publish("deploy.failed", `{"n": 1}`, mcpe.Metadata{})

	var resumed subscriptions.Subscription
	c.MustCall(t, "events_resume", ref, &resumed)
	if resumed.Status != mcpe.StatusActive {
		t.Fatalf("status after resume = %q", resumed.Status)
	}
	want := e.publish("deploy.failed", `{"n": 2}`, mcpe.Metadata{})
	if _, ev := c.NextEvent(t); ev.ID != want {
		t.Fatalf("first event after resume is %s; the one published while paused must never arrive", ev.Data)
	}
	var poll mcpe.PollResult
	c.MustCall(t, "events_poll", map[string]any{}, &poll)
	if len(poll.Items) != 1 || !strings.Contains(string(poll.Items[0].Event), `"n":2`) {
		t.Fatalf("events_poll = %+v; want only the event published after resume", poll.Items)
	}
	c.MustCall(t, "events_list", map[string]any{}, &list)
	if got := list.Subscriptions[0]; got.DeliveredCount != 1 || got.LastDeliveredAt == nil {
		t.Errorf("counters after one delivery: deliveredCount=%d lastDeliveredAt=%v", got.DeliveredCount, got.LastDeliveredAt)
	}
}

func TestExpiry(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	expires := start.Add(time.Hour)
	sub := c.Subscribe(t, map[string]any{
		"filter":    map[string]any{"eventTypes": []string{"*"}},
		"expiresAt": expires.Format(time.RFC3339),
	})
	if sub.ExpiresAt == nil || !sub.ExpiresAt.Equal(expires) {
		t.Fatalf("expiresAt = %v, want %v", sub.ExpiresAt, expires)
	}
	other := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"sentinel"}}})

	e.clock.Advance(time.Hour - time.Second)
	if got := c.Pending(); len(got) != 0 {
		t.Fatalf("notifications before expiry: %v", got)
	}
	e.clock.Advance(time.Second) // the timer fires at expiresAt, not on the next event
	n := c.Next(t)
	if n.Method != mcpe.MethodSubscriptionExpired {
		t.Fatalf("got %v; want %s", n, mcpe.MethodSubscriptionExpired)
	}
	var p mcpe.ExpiredParams
	if err := json.Unmarshal(n.Params, &p); err != nil || p.SubscriptionID != sub.ID {
		t.Fatalf("params %s: want subscriptionId %s (err %v)", n.Params, sub.ID, err)
	}

	var list mcpe.ListResult
	c.MustCall(t, "events_list", map[string]any{"status": "expired"}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID {
		t.Fatalf("expired list = %+v", list.Subscriptions)
	}
	// The expired subscription receives nothing more; it cannot be changed.
	e.publish("sentinel", `{}`, mcpe.Metadata{})
	if params, _ := c.NextEvent(t); params.SubscriptionID != other.ID {
		t.Fatalf("event went to %s; the expired subscription must receive nothing", params.SubscriptionID)
	}
	for _, tool := range []string{"events_resume", "events_pause"} {
		if msg := c.CallError(t, tool, map[string]any{"subscriptionId": sub.ID}); !strings.Contains(msg, "expired; create a new one with events_subscribe") {
			t.Errorf("%s on expired: %q", tool, msg)
		}
	}
}

func TestUpdate(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	sub := c.Subscribe(t, map[string]any{
		"filter":    map[string]any{"eventTypes": []string{"a.*"}},
		"expiresAt": start.Add(time.Hour).Format(time.RFC3339),
	})
	e.clock.Advance(time.Minute)
	var got subscriptions.Subscription
	c.MustCall(t, "events_update", map[string]any{
		"subscriptionId": sub.ID,
		"filter":         map[string]any{"eventTypes": []string{"b.*"}},
		"expiresAt":      nil,
	}, &got)
	if diff := cmp.Diff([]string{"b.*"}, got.Filter.EventTypes); diff != "" {
		t.Errorf("filter mismatch (-want +got):\n%s", diff)
	}
	if got.ExpiresAt != nil {
		t.Errorf("expiresAt = %v after setting it to null", got.ExpiresAt)
	}
	if !got.UpdatedAt.Equal(start.Add(time.Minute)) || !got.CreatedAt.Equal(start) {
		t.Errorf("createdAt %v, updatedAt %v", got.CreatedAt, got.UpdatedAt)
	}
	e.publish("a.x", `{}`, mcpe.Metadata{})
	want := e.publish("b.x", `{}`, mcpe.Metadata{})
	if _, ev := c.NextEvent(t); ev.ID != want {
		t.Fatalf("got %s; want b.x under the new filter", ev.Type)
	}
	// The expiry was removed: moving past the old time expires nothing.
	e.clock.Advance(2 * time.Hour)
	if pending := c.Pending(); len(pending) != 0 {
		t.Fatalf("unexpected notifications: %v", pending)
	}

	// A paused subscription stays paused through an update.
	c.MustCall(t, "events_pause", map[string]any{"subscriptionId": sub.ID}, nil)
	c.MustCall(t, "events_update", map[string]any{"subscriptionId": sub.ID, "filter": map[string]any{"eventTypes": []string{"c.*"}}}, &got)
	if got.Status != mcpe.StatusPaused {
		t.Errorf("status after updating a paused subscription = %q", got.Status)
	}
}

func TestPollPaging(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"n.*"}}})
	var ids []string
	for i := range 5 {
		ids = append(ids, e.publish(fmt.Sprintf("n.e%d", i), `{}`, mcpe.Metadata{}))
	}
	eventIDs := func(r mcpe.PollResult) []string {
		var out []string
		for _, it := range r.Items {
			var ev mcpe.Event
			if err := json.Unmarshal(it.Event, &ev); err != nil {
				t.Fatal(err)
			}
			if len(it.SubscriptionIDs) != 1 || it.SubscriptionIDs[0] != sub.ID || it.Kind != mcpe.InboxEvent {
				t.Errorf("item %+v", it)
			}
			out = append(out, ev.ID)
		}
		return out
	}
	var p1, p2, again, p3, empty mcpe.PollResult
	c.MustCall(t, "events_poll", map[string]any{"limit": 2}, &p1)
	c.MustCall(t, "events_poll", map[string]any{"limit": 2}, &p2)
	c.MustCall(t, "events_poll", map[string]any{"limit": 2, "cursor": p1.NextCursor}, &again)
	c.MustCall(t, "events_poll", map[string]any{}, &p3)
	c.MustCall(t, "events_poll", map[string]any{}, &empty)
	for _, tc := range []struct {
		name string
		got  mcpe.PollResult
		ids  []string
		more bool
	}{
		{"first page", p1, ids[:2], true},
		{"default continues after the last page", p2, ids[2:4], true},
		{"same cursor, same answer", again, ids[2:4], true},
		{"last page", p3, ids[4:], false},
		{"nothing new", empty, nil, false},
	} {
		if diff := cmp.Diff(tc.ids, eventIDs(tc.got)); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tc.name, diff)
		}
		if tc.got.HasMore != tc.more {
			t.Errorf("%s: hasMore = %v, want %v", tc.name, tc.got.HasMore, tc.more)
		}
	}
	if empty.NextCursor != p3.NextCursor {
		t.Errorf("an empty page moved the cursor from %q to %q", p3.NextCursor, empty.NextCursor)
	}
	if diff := cmp.Diff(p2, again); diff != "" {
		t.Errorf("same cursor, different answer (-first +again):\n%s", diff)
	}
}

func TestPrincipalsAreIsolated(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice := e.connect("alice", nil)
	bob := e.connect("bob", nil)
	sub := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"secret.*"}}})
	bobSub := bob.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"public.*"}}})

	var list mcpe.ListResult
	bob.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != bobSub.ID {
		t.Fatalf("bob sees %+v", list.Subscriptions)
	}
	unknown := "0b6e3a57-1d2c-4f5e-8a9b-c0d1e2f3a4b5"
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"events_pause", map[string]any{}},
		{"events_resume", map[string]any{}},
		{"events_unsubscribe", map[string]any{}},
		{"events_update", map[string]any{"filter": map[string]any{"eventTypes": []string{"*"}}}},
	} {
		foreign, missing := map[string]any{"subscriptionId": sub.ID}, map[string]any{"subscriptionId": unknown}
		for k, v := range tc.args {
			foreign[k], missing[k] = v, v
		}
		gotForeign := strings.ReplaceAll(bob.CallError(t, tc.tool, foreign), sub.ID, "ID")
		gotMissing := strings.ReplaceAll(bob.CallError(t, tc.tool, missing), unknown, "ID")
		if gotForeign != gotMissing || !strings.Contains(gotForeign, "not found") {
			t.Errorf("%s: foreign subscription says %q, unknown one says %q; want the same \"not found\"", tc.tool, gotForeign, gotMissing)
		}
	}
	e.publish("secret.plan", `{}`, mcpe.Metadata{})
	e.publish("public.note", `{}`, mcpe.Metadata{})
	if params, ev := bob.NextEvent(t); params.SubscriptionID != bobSub.ID || ev.Type != "public.note" {
		t.Fatalf("bob received %s for %s", ev.Type, params.SubscriptionID)
	}
	if _, ev := alice.NextEvent(t); ev.Type != "secret.plan" {
		t.Fatalf("alice received %s", ev.Type)
	}
	var poll mcpe.PollResult
	bob.MustCall(t, "events_poll", map[string]any{}, &poll)
	if len(poll.Items) != 1 || !slices.Equal(poll.Items[0].SubscriptionIDs, []string{bobSub.ID}) {
		t.Fatalf("bob's poll = %+v", poll.Items)
	}
	// Alice's subscription is untouched by bob's attempts.
	alice.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].Status != mcpe.StatusActive {
		t.Fatalf("alice's subscriptions = %+v", list.Subscriptions)
	}
}

func TestSessionsOfOnePrincipalAllReceive(t *testing.T) {
	e := newEnv(t, envOptions{})
	a1 := e.connect("alice", nil)
	a2 := e.connect("alice", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	a1.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	a2.MustCall(t, "events_list", map[string]any{}, nil) // a2 has spoken, so it is attached
	e.publish("x", `{}`, mcpe.Metadata{})
	for i, c := range []*mcpetest.Client{a1, a2} {
		if _, ev := c.NextEvent(t); ev.Type != "x" {
			t.Errorf("session %d got %s", i, ev.Type)
		}
	}
}

func TestSubscriptionLimit(t *testing.T) {
	e := newEnv(t, envOptions{max: 2})
	c := e.connect("alice", nil)
	args := map[string]any{"filter": map[string]any{"eventTypes": []string{"*"}}}
	c.Subscribe(t, args)
	second := c.Subscribe(t, args)
	msg := c.CallError(t, "events_subscribe", args)
	if !strings.Contains(msg, "you already have 2 active or paused subscriptions, the most this server allows") {
		t.Errorf("limit error = %q", msg)
	}
	c.MustCall(t, "events_unsubscribe", map[string]any{"subscriptionId": second.ID}, nil)
	c.Subscribe(t, args)
	// Other principals have their own limit.
	e.connect("bob", nil).Subscribe(t, args)
}

func TestRestartKeepsSubscriptionsAndInbox(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mcpe.db")
	clk := clocktest.NewFake(start)
	e := newEnv(t, envOptions{dbPath: db, clock: clk})
	c := e.connect(mcpserver.LocalPrincipal, nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"ci.*"}}})
	first := e.publish("ci.failed", `{"run": 1}`, mcpe.Metadata{})
	c.NextEvent(t)
	e.close()

	e2 := newEnv(t, envOptions{dbPath: db, clock: clk})
	c2 := e2.connect(mcpserver.LocalPrincipal, nil)
	var list mcpe.ListResult
	c2.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].ID != sub.ID || list.Subscriptions[0].DeliveredCount != 1 {
		t.Fatalf("after restart: %+v", list.Subscriptions)
	}
	var poll mcpe.PollResult
	c2.MustCall(t, "events_poll", map[string]any{}, &poll)
	if len(poll.Items) != 1 || !strings.Contains(string(poll.Items[0].Event), first) {
		t.Fatalf("inbox after restart: %+v", poll.Items)
	}
	second := e2.publish("ci.failed", `{"run": 2}`, mcpe.Metadata{})
	if _, ev := c2.NextEvent(t); ev.ID != second {
		t.Fatalf("after restart got %s", ev.ID)
	}
}

func TestBadToolInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	id := sub.ID
	for _, tc := range []struct {
		tool string
		args string
		want string
	}{
		{"events_subscribe", `{}`, `filter: is empty; give at least one of eventTypes, tags, priority or where. To receive every event, use {"eventTypes": ["*"]}`},
		{"events_subscribe", `{"filter": {}}`, `filter: is empty`},
		{"events_subscribe", `{"filter": {"eventTypes": []}}`, `filter.eventTypes: is an empty list`},
		{"events_subscribe", `{"filter": {"eventTypes": ["git{hub"]}}`, `filter.eventTypes[0]: "git{hub" is not a valid pattern (unclosed`},
		{"events_subscribe", `{"filter": {"eventTypes": ["github push"]}}`, `filter.eventTypes[0]: "github push" is neither a valid event type nor a pattern`},
		{"events_subscribe", `{"filter": {"eventTypes": ["a..*"]}}`, ``},
		{"events_subscribe", `{"filter": {"eventTypes": "github.*"}}`, `filter.eventTypes must be an array of strings, not a string`},
		{"events_subscribe", `{"filter": {"priority": ["urgent"]}}`, `filter.priority[0]: "urgent" is not a priority; use "low", "normal", "high" or "critical"`},
		{"events_subscribe", `{"filter": {"tags": [""]}}`, `filter.tags[0]: is empty`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["hourly"]}}`, `delivery.channels[0]: "hourly" is not a delivery channel this server offers; use one of "realtime", "cron", "scheduled"`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"]}}`, `delivery.cronSchedule: is required with the "cron" channel`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "0 25 * * *"}}}`, `delivery.cronSchedule.expression: "0 25 * * *" is not a cron expression`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "@daily", "timezone": "Moon/Base"}}}`, `delivery.cronSchedule.timezone: "Moon/Base" is not an IANA time zone`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "@every 5s"}}}`, `fires more often than this server allows; use an interval of at least 1m0s, e.g. "@every 1m0s"`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "@daily", "maxEventsPerDelivery": 0.5}}}`, `delivery.cronSchedule.maxEventsPerDelivery must be a whole number`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "@daily", "cron": "x"}}}`, `unknown field "cron" in delivery.cronSchedule; delivery.cronSchedule accepts "aggregateEvents", "expression", "maxEventsPerDelivery", "timezone"`},
		{"events_subscribe", `{"filter": {"eventTypes": [7]}}`, `each entry of filter.eventTypes must be a string, not a number`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["scheduled"], "scheduledDelivery": {"deliverAt": "2020-01-01T00:00:00Z"}}}`, `delivery.scheduledDelivery.deliverAt: 2020-01-01T00:00:00Z is in the past (the server's time is 2026-03-01T09:00:00Z)`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["scheduled"], "scheduledDelivery": {"deliverAt": "2026-03-02T10:00:00"}}}`, `has no UTC offset; add one (e.g. "2026-03-02T10:00:00Z") or give scheduledDelivery.timezone`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": []}}`, `delivery.channels: is empty; use ["realtime", "cron", "scheduled"]`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "expiresAt": "2020-01-01T00:00:00Z"}`, `expiresAt: 2020-01-01T00:00:00Z is in the past (the server's time is 2026-03-01T09:00:00Z)`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "expiresAt": "tomorrow"}`, `expiresAt: "tomorrow" is not an RFC 3339 time; use e.g. "2026-03-01T10:00:00Z"`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "expiresAt": "2026-03-02T10:00:00"}`, `expiresAt: "2026-03-02T10:00:00" has no UTC offset`},
		{"events_subscribe", `{"filters": {"eventTypes": ["*"]}}`, `unknown field "filters"; the arguments accept "delivery", "dryRun", "expiresAt", "filter"`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "handler": {"type": "bash"}}`, `handler: this server runs no handlers (the operator enabled none); leave handler out`},
		{"events_subscribe", `[1]`, `the arguments must be a JSON object`},
		{"events_unsubscribe", `{}`, `subscriptionId: is required; events_list shows your subscriptions and their IDs`},
		{"events_unsubscribe", `{"subscriptionId": 42}`, `subscriptionId must be a string, not a number`},
		{"events_unsubscribe", `{"subscriptionId": "nope"}`, `subscription "nope" not found; events_list shows your subscriptions`},
		{"events_pause", `{"subscriptionId": ""}`, `subscriptionId: is required`},
		{"events_resume", `{"id": "x"}`, `unknown field "id"; the arguments accept "subscriptionId"`},
		{"events_list", `{"status": "done"}`, `status: "done" is not a status; use "active", "paused" or "expired", or leave it out to list all`},
		{"events_update", `{"subscriptionId": "` + id + `"}`, `nothing to update: give at least one of label, filter, delivery, expiresAt, handler or rotateSecret`},
		{"events_update", `{"subscriptionId": "` + id + `", "filter": {"priority": []}}`, `filter.priority: is an empty list`},
		{"events_update", `{"subscriptionId": "` + id + `", "expiresAt": "2000-01-01T00:00:00Z"}`, `expiresAt: 2000-01-01T00:00:00Z is in the past`},
		{"events_update", `{"subscriptionId": "` + id + `", "expiresAt": 5}`, `expiresAt`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "@daily", "aggregateEvents": "yes"}}}`, `delivery.cronSchedule.aggregateEvents must be true or false, not a string`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["scheduled"], "scheduledDelivery": {"deliverAt": "2026-03-02T10:00:00", "timezone": "CET+1"}}}`, `delivery.scheduledDelivery.timezone: "CET+1" is not an IANA time zone; use a name such as "America/New_York", "Europe/Paris" or "UTC"`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["scheduled"], "scheduledDelivery": {"deliverAt": "2026-03-02T10:00:00Z", "description": "` + strings.Repeat("d", 501) + `"}}}`, `delivery.scheduledDelivery.description: is 501 characters long; at most 500 are accepted`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["scheduled"], "scheduledDelivery": {"deliverAt": "2026-03-02T10:00:00Z", "autoExpire": 1}}}`, `delivery.scheduledDelivery.autoExpire must be true or false, not a number`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["scheduled"]}}`, `delivery.scheduledDelivery: is required with the "scheduled" channel`},
		{"events_subscribe", `{"filter": {"eventTypes": ["*"]}, "delivery": {"channels": ["cron", "scheduled"], "cronSchedule": {"expression": "@daily"}, "scheduledDelivery": {"deliverAt": "2026-03-02T10:00:00Z"}}}`, `delivery.channels: "cron" and "scheduled" cannot be combined in one subscription; create one subscription for each`},
		{"events_update", `{}`, `subscriptionId: is required; events_list shows your subscriptions and their IDs`},
		{"events_update", `{"subscriptionId": "` + id + `", "delivery": {"channels": ["email"]}}`, `delivery.channels[0]: "email" is not a delivery channel this server offers; use one of "realtime", "cron", "scheduled"`},
		{"events_update", `{"subscriptionId": "` + id + `", "filter": {}}`, `filter: is empty`},
		{"events_update", `{"subscriptionId": "` + id + `", "rotateSecret": true}`, `rotateSecret: this subscription has no handler; give a webhook handler to get a secret`},
		{"events_list", `{"status": 5}`, `status must be a string, not a number`},
		{"events_poll", `{"cursor": 5}`, `cursor must be a string, not a number`},
		{"events_poll", `{"cursor": "abc"}`, `cursor: "abc" is not a cursor this server gave out`},
		{"events_poll", `{"limit": 0.5}`, `limit must be a whole number, not 0.5`},
		{"events_poll", `{"limit": 1000}`, `limit: is 1000; give a number from 1 to 500, or leave it out for 50`},
		{"events_poll", `{"limit": -1}`, `limit: is -1`},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			res, errText := c.Call(t, tc.tool, json.RawMessage(tc.args))
			if tc.want == "" {
				// Accepted: a pattern that can never match is legal.
				if errText != "" {
					t.Fatalf("error %q; want success", errText)
				}
				return
			}
			if errText == "" {
				t.Fatalf("succeeded with %s; want an error containing %q", res, tc.want)
			}
			if !strings.Contains(errText, tc.want) {
				t.Errorf("error text:\n  %s\nwant it to contain:\n  %s", errText, tc.want)
			}
		})
	}
}

func TestHTTPSessionPrincipalForgottenWhenSessionEnds(t *testing.T) {
	e := newEnv(t, envOptions{})
	hs := httptest.NewServer(e.srv.HTTPHandler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	c := mcpetest.Connect(t, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	sub := c.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}})
	all := func() []*subscriptions.Subscription {
		subs, err := e.store.ListSubscriptions(context.Background(), subscriptions.ListQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return subs
	}
	if subs := all(); len(subs) != 1 || subs[0].ID != sub.ID {
		t.Fatalf("stored: %+v", subs)
	}
	c.Session.Close() // DELETE ends the session
	deadline := time.Now().Add(mcpetest.Wait)
	for len(all()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the ended session's subscriptions are still stored after %v", mcpetest.Wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDigestOverMCP(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			c := e.connect("alice", p.opts)
			sub := c.Subscribe(t, map[string]any{
				"filter": map[string]any{"eventTypes": []string{"github.issues.*"}},
				"delivery": map[string]any{"channels": []string{"cron"},
					"cronSchedule": map[string]any{"expression": "0 10 * * *", "timezone": "Europe/Paris", "maxEventsPerDelivery": 2}},
			})
			// The clock starts at 10:00 in Paris; the first fire is strictly
			// after it, the next day.
			want := &mcpe.DeliveryTime{At: "2026-03-02T10:00:00+01:00", UTC: "2026-03-02T09:00:00Z"}
			if diff := cmp.Diff(want, sub.NextDelivery); diff != "" {
				t.Fatalf("nextDelivery mismatch (-want +got):\n%s", diff)
			}
			var ids []string
			for i := range 3 {
				ids = append(ids, e.publish("github.issues.opened", fmt.Sprintf(`{"number": %d}`, i), mcpe.Metadata{}))
			}
			e.clock.AdvanceTo(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
			n := c.Next(t)
			if n.Method != mcpe.MethodBatch {
				t.Fatalf("got %v; want events/batch", n)
			}
			var params struct {
				SubscriptionID string            `json:"subscriptionId"`
				Cursor         string            `json:"cursor"`
				Events         []json.RawMessage `json:"events"`
				Remaining      int               `json:"remaining"`
			}
			if err := json.Unmarshal(n.Params, &params); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, raw := range params.Events {
				var ev mcpe.Event
				json.Unmarshal(raw, &ev)
				got = append(got, ev.ID)
			}
			if params.SubscriptionID != sub.ID || params.Remaining != 1 || params.Cursor == "" {
				t.Errorf("params = %s", n.Params)
			}
			if diff := cmp.Diff(ids[:2], got); diff != "" {
				t.Errorf("digest events mismatch (-want +got):\n%s", diff)
			}
			var poll mcpe.PollResult
			c.MustCall(t, "events_poll", map[string]any{}, &poll)
			if len(poll.Items) != 1 || poll.Items[0].Kind != mcpe.InboxBatch || len(poll.Items[0].Events) != 2 || poll.Items[0].Remaining != 1 {
				t.Errorf("events_poll = %+v", poll.Items)
			}

			// events_update and events_list show the next fire too, in the
			// new zone and in UTC; a paused digest has none.
			var updated subscriptions.Subscription
			c.MustCall(t, "events_update", map[string]any{"subscriptionId": sub.ID, "delivery": map[string]any{"channels": []string{"cron"},
				"cronSchedule": map[string]any{"expression": "30 20 * * *", "timezone": "Asia/Tokyo"}}}, &updated)
			want = &mcpe.DeliveryTime{At: "2026-03-02T20:30:00+09:00", UTC: "2026-03-02T11:30:00Z"}
			if diff := cmp.Diff(want, updated.NextDelivery); diff != "" {
				t.Errorf("events_update nextDelivery mismatch (-want +got):\n%s", diff)
			}
			if updated.BufferedEvents != 1 {
				t.Errorf("events_update: bufferedEvents = %d; the event left over must still wait", updated.BufferedEvents)
			}
			var list mcpe.ListResult
			c.MustCall(t, "events_list", map[string]any{}, &list)
			if len(list.Subscriptions) != 1 {
				t.Fatalf("events_list = %+v", list.Subscriptions)
			}
			if diff := cmp.Diff(want, list.Subscriptions[0].NextDelivery); diff != "" {
				t.Errorf("events_list nextDelivery mismatch (-want +got):\n%s", diff)
			}
			var paused subscriptions.Subscription
			c.MustCall(t, "events_pause", map[string]any{"subscriptionId": sub.ID}, &paused)
			list = mcpe.ListResult{} // decoding into the old one would keep its nextDelivery
			c.MustCall(t, "events_list", map[string]any{}, &list)
			if paused.NextDelivery != nil || list.Subscriptions[0].NextDelivery != nil {
				t.Errorf("paused digest shows nextDelivery %+v / %+v (status %s); it does not fire while paused", paused.NextDelivery, list.Subscriptions[0].NextDelivery, list.Subscriptions[0].Status)
			}
		})
	}
}

func TestDigestWaitsForOfflineOwner(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect("alice", nil)
	sub := c.Subscribe(t, map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"x"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "@hourly"}},
	})
	e.publish("x", `{}`, mcpe.Metadata{})
	c.Session.Close() // the laptop is closed
	deadline := time.Now().Add(mcpetest.Wait)
	for e.reg.Connected("alice") {
		if time.Now().After(deadline) {
			t.Fatal("the session never detached")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.clock.Advance(time.Hour) // the digest fires with nobody there

	c2 := e.connect("alice", nil)
	c2.MustCall(t, "events_list", map[string]any{}, nil) // attaches: the digest follows
	n := c2.Next(t)
	var params mcpe.BatchParams
	if err := json.Unmarshal(n.Params, &params); err != nil || n.Method != mcpe.MethodBatch || params.SubscriptionID != sub.ID || len(params.Events) != 1 {
		t.Fatalf("on reconnect got %v (%v); want the digest for %s", n, err, sub.ID)
	}
}
