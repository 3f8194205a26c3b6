package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// resultOf returns the result of a response, failing on an error.
func resultOf(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	res, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("response without result: %v", resp)
	}
	return res
}

func TestResourceSubscriptionsIsolated(t *testing.T) {
	for _, proto := range []string{proto2025, proto2026} {
		t.Run(proto, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			alice := stdioWire(t, e, "alice", proto)
			bob := stdioWire(t, e, "bob", proto)
			subscribe := func(w *wire, uri string) {
				if proto == proto2025 {
					resultOf(t, w.call("resources/subscribe", map[string]any{"uri": uri}))
					return
				}
				w.request("subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
				w.await("the acknowledgement", func(m map[string]any) bool { return m["method"] == "notifications/subscriptions/acknowledged" })
			}
			subscribe(alice, "event://deploy.*")
			subscribe(bob, "event://build.*")
			e.publish("build.done", `{"secret": "bob-only"}`, mcpe.Metadata{})
			e.publish("deploy.done", `{"n": 1}`, mcpe.Metadata{})
			got := alice.await("alice's event", isResourceUpdated)
			if uri := got["params"].(map[string]any)["uri"]; uri != "event://deploy.done" {
				t.Errorf("alice got %v; want event://deploy.done", uri)
			}
			got = bob.await("bob's event", isResourceUpdated)
			if uri := got["params"].(map[string]any)["uri"]; uri != "event://build.done" {
				t.Errorf("bob got %v; want event://build.done", uri)
			}
			// Nothing else for either.
			for _, w := range []*wire{alice, bob} {
				w.noneBefore("tools/call", map[string]any{"name": "events_list", "arguments": map[string]any{}}, isResourceUpdated)
			}
			if a, b := e.listSubscriptions("alice"), e.listSubscriptions("bob"); len(a) != 1 || len(b) != 1 {
				t.Fatalf("alice has %v, bob has %v; want one each", a, b)
			}
			// Bob cannot unsubscribe alice's resource: his session does not
			// hold it.
			if proto == proto2025 {
				resultOf(t, bob.call("resources/unsubscribe", map[string]any{"uri": "event://deploy.*"}))
				if a := e.listSubscriptions("alice"); len(a) != 1 {
					t.Errorf("bob's unsubscribe removed alice's subscription")
				}
			}
		})
	}
}

func TestResourceSubscriptionEndsWithSession(t *testing.T) {
	e := newEnv(t, envOptions{})
	w := stdioWire(t, e, "alice", proto2025)
	resultOf(t, w.call("resources/subscribe", map[string]any{"uri": "event://deploy.*"}))
	resultOf(t, w.call("resources/subscribe", map[string]any{"uri": "event://deploy.*"})) // idempotent
	if got := e.listSubscriptions("alice"); len(got) != 1 {
		t.Fatalf("alice has %d subscriptions after subscribing twice to one URI; want 1", len(got))
	}
	for ss := range e.srv.MCP().Sessions() {
		ss.Close()
	}
	e.waitNoSubscriptions("alice")
}

func TestCapabilitiesDeclared(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e := webhookEnv(t)
			c := e.connect("alice", p.opts)
			var raw struct {
				Capabilities struct {
					Resources struct {
						Events       bool     `json:"events"`
						Subscribe    bool     `json:"subscribe"`
						Subscription []string `json:"subscription"`
					} `json:"resources"`
					ConversationEvents struct {
						OnUserMessage bool `json:"onUserMessage"`
					} `json:"conversationEvents"`
				} `json:"capabilities"`
			}
			if err := json.Unmarshal(c.InitializeRaw(), &raw); err != nil {
				t.Fatal(err)
			}
			r := raw.Capabilities.Resources
			if !r.Events || !r.Subscribe || strings.Join(r.Subscription, ",") != "notification,webhook" || !raw.Capabilities.ConversationEvents.OnUserMessage {
				t.Errorf("capabilities %s lack resources.events, subscribe, subscription [notification webhook] or conversationEvents.onUserMessage", c.InitializeRaw())
			}
		})
	}
}

func TestRegisterNeedsWebhooks(t *testing.T) {
	e := newEnv(t, envOptions{})
	w := stdioWire(t, e, "alice", proto2025)
	resp := w.call(mcpserver.MethodRegister, map[string]any{"uris": []string{"event://x"}, "targetUri": "https://hooks.example.com/"})
	msg, _ := resp["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "handlers.webhook.enabled") {
		t.Errorf("register without webhooks answered %v; want an error naming handlers.webhook.enabled", resp)
	}
}
