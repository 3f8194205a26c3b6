package subscriptions_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// checker is a Handler whose Check refuses the command "forbidden".
type checker struct{ checked []string }

func (c *checker) Check(_ context.Context, principal string, spec *mcpe.HandlerSpec) error {
	c.checked = append(c.checked, principal+" "+string(spec.Type))
	if spec.Command == "forbidden" {
		return mcpe.Invalid("handler.command", "%q is not allowed; allowed: \"notify\"", spec.Command)
	}
	return nil
}

func (c *checker) Handle(context.Context, *subscriptions.Invocation) subscriptions.Outcome {
	return subscriptions.Outcome{}
}

func handlerFixture(t *testing.T, types ...mcpe.HandlerType) (*fixture, *checker) {
	c := &checker{}
	hs := map[mcpe.HandlerType]subscriptions.Handler{}
	for _, ty := range types {
		hs[ty] = c
	}
	f := newFixture(t, filepath.Join(t.TempDir(), "db"), clocktest.NewFake(svcStart), subscriptions.ServiceOptions{Handlers: hs})
	return f, c
}

func TestHandlerValidation(t *testing.T) {
	f, _ := handlerFixture(t, mcpe.HandlerBash, mcpe.HandlerWebhook)
	filter := mcpe.Filter{EventTypes: []string{"*"}}
	for _, tt := range []struct {
		spec mcpe.HandlerSpec
		want string
	}{
		{mcpe.HandlerSpec{}, `handler.type: is required; use one of "bash", "webhook"`},
		{mcpe.HandlerSpec{Type: "agent"}, `handler.type: "agent" is not a handler type this server runs; use one of "bash", "webhook"`},
		{mcpe.HandlerSpec{Type: "bash"}, `handler.command: is required`},
		{mcpe.HandlerSpec{Type: "bash", Command: "notify", URL: "https://x"}, `handler.url: belongs to "webhook" handlers, not "bash"`},
		{mcpe.HandlerSpec{Type: "bash", Command: "notify", Input: "file"}, `handler.input: "file" is not an input mode`},
		{mcpe.HandlerSpec{Type: "bash", Command: "notify", Cwd: "/"}, `handler.cwd: cannot be chosen`},
		{mcpe.HandlerSpec{Type: "bash", Command: "notify", Env: map[string]string{"LD_PRELOAD": "x"}}, `handler.env: cannot be chosen`},
		{mcpe.HandlerSpec{Type: "bash", Command: "notify", Timeout: 30}, `handler.timeout: is 30; it is in milliseconds`},
		{mcpe.HandlerSpec{Type: "bash", Command: "forbidden"}, `handler.command: "forbidden" is not allowed`},
		{mcpe.HandlerSpec{Type: "webhook"}, `handler.url: is required`},
		{mcpe.HandlerSpec{Type: "webhook", URL: "https://x", Secret: "whsec_mine"}, `handler.secret: is chosen by the server`},
		{mcpe.HandlerSpec{Type: "webhook", URL: "https://x", Tools: []string{"a"}}, `handler.tools: belongs to "agent" handlers`},
	} {
		spec := tt.spec
		_, err := f.svc.Subscribe(context.Background(), "alice", mcpe.SubscribeRequest{Filter: filter, Handler: &spec})
		var inv *mcpe.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Subscribe with %+v: error %v; want an InvalidError containing %q", tt.spec, err, tt.want)
		}
	}
	subs, _ := f.svc.List(context.Background(), "alice", "")
	if len(subs) != 0 {
		t.Errorf("refused subscriptions were stored: %d", len(subs))
	}

	none, _ := handlerFixture(t)
	_, err := none.svc.Subscribe(context.Background(), "alice", mcpe.SubscribeRequest{Filter: filter,
		Handler: &mcpe.HandlerSpec{Type: "bash", Command: "notify"}})
	if err == nil || !strings.Contains(err.Error(), "this server runs no handlers") {
		t.Errorf("a server with no handlers: %v", err)
	}
}

func TestWebhookSecretShownOnceAndRotated(t *testing.T) {
	f, _ := handlerFixture(t, mcpe.HandlerWebhook, mcpe.HandlerBash)
	ctx := context.Background()
	sub, err := f.svc.Subscribe(ctx, "alice", mcpe.SubscribeRequest{
		Filter:  mcpe.Filter{EventTypes: []string{"*"}},
		Handler: &mcpe.HandlerSpec{Type: "webhook", URL: "https://hooks.example.com/a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	first := sub.Handler.Secret
	if !strings.HasPrefix(first, "whsec_") || len(first) < 40 {
		t.Fatalf("secret %q: want a whsec_ secret", first)
	}
	got, _ := f.svc.Get(ctx, "alice", sub.ID)
	if got.Handler.Secret != "" || got.HandlerStatus == nil {
		t.Errorf("events_list shows the secret (%q) or no status (%v)", got.Handler.Secret, got.HandlerStatus)
	}
	if got.Secrets.Current != first {
		t.Errorf("stored secret %q, want the one returned", got.Secrets.Current)
	}

	// Changing the URL keeps the secret, and shows none.
	upd, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID,
		Handler: mcpe.OptionalHandler{Set: true, Value: &mcpe.HandlerSpec{Type: "webhook", URL: "https://hooks.example.com/b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Handler.Secret != "" || upd.Secrets.Current != first || upd.Handler.URL != "https://hooks.example.com/b" {
		t.Errorf("after a URL change: secret shown %q, current %q, url %q", upd.Handler.Secret, upd.Secrets.Current, upd.Handler.URL)
	}

	// Rotation: a new secret, shown once; the old one signs for the grace.
	rot, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, RotateSecret: true})
	if err != nil {
		t.Fatal(err)
	}
	second := rot.Handler.Secret
	if second == "" || second == first {
		t.Fatalf("rotated secret %q", second)
	}
	got, _ = f.svc.Get(ctx, "alice", sub.ID)
	now := f.clock.Now()
	if s := got.Secrets.Signing(now); len(s) != 2 || s[0] != second || s[1] != first {
		t.Errorf("signing secrets during the grace period: %v", s)
	}
	if s := got.Secrets.Signing(now.Add(subscriptions.SecretGrace)); len(s) != 1 || s[0] != second {
		t.Errorf("signing secrets after the grace period: %v", s)
	}

	// Switching to another type drops the secrets; rotateSecret then fails.
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID,
		Handler: mcpe.OptionalHandler{Set: true, Value: &mcpe.HandlerSpec{Type: "bash", Command: "notify"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, RotateSecret: true}); err == nil ||
		!strings.Contains(err.Error(), "applies to webhook handlers only") {
		t.Errorf("rotateSecret on a bash handler: %v", err)
	}
	// Removing the handler.
	rm, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, Handler: mcpe.OptionalHandler{Set: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rm.Handler != nil || rm.HandlerStatus != nil {
		t.Errorf("handler not removed: %+v", rm.Handler)
	}
	if _, err := f.svc.Update(ctx, "alice", mcpe.UpdateRequest{SubscriptionID: sub.ID, RotateSecret: true}); err == nil ||
		!strings.Contains(err.Error(), "has no handler") {
		t.Errorf("rotateSecret without handler: %v", err)
	}
}

func TestHandlerCapability(t *testing.T) {
	f, _ := handlerFixture(t, mcpe.HandlerAgent, mcpe.HandlerBash)
	got := f.svc.Capability().Handlers
	if len(got) != 2 || got[0] != mcpe.HandlerBash || got[1] != mcpe.HandlerAgent {
		t.Errorf("capability handlers = %v, want [bash agent]", got)
	}
}

// TestPayloadOfAnEmptyDigest checks that a handler given a digest of no
// events (a one-time delivery that found nothing) hands on "events": [],
// not null, as the stores read such a digest back with no events.
func TestPayloadOfAnEmptyDigest(t *testing.T) {
	inv := subscriptions.Invocation{SubscriptionID: "sub-1", Kind: mcpe.InboxBatch}
	if got, want := string(inv.Payload()), `{"subscriptionId":"sub-1","events":[]}`; got != want {
		t.Errorf("Payload() = %s, want %s", got, want)
	}
}
