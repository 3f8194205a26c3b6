package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestOnEventDispatchesByPattern subscribes to every event and checks which
// OnEvent handlers each event type reaches: the patterns are those of
// subscription filters, compiled by the same code.
func TestOnEventDispatchesByPattern(t *testing.T) {
	l := memoryLink(t, "")
	patterns := []string{
		"github.issues.*",
		"github.*",
		"*",
		"github.{push,pull_request.*}",
		"svc?.created",
		"svc[0-4].created",
		"[!x]*.failed",
		"deploy.failed",
		"*.failed",
	}
	var mu sync.Mutex
	got := map[string][]string{} // event type -> patterns whose handler ran, in order
	c := connect(t, l, nil, func(c *client.Client) {
		for _, p := range patterns {
			if _, err := c.OnEvent(p, func(_ context.Context, _ string, ev mcpe.Event) {
				mu.Lock()
				got[ev.Type] = append(got[ev.Type], p)
				mu.Unlock()
			}); err != nil {
				t.Fatalf("OnEvent(%q): %v", p, err)
			}
		}
	})
	ctx := ctxT(t)
	if _, err := c.Subscribe(ctx, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"*"}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"github.issues.opened":        {"github.issues.*", "github.*", "*"},
		"github.issues":               {"github.*", "*"},
		"github.push":                 {"github.*", "*", "github.{push,pull_request.*}"},
		"github.pull_request.closed":  {"github.*", "*", "github.{push,pull_request.*}"},
		"svc1.created":                {"*", "svc?.created", "svc[0-4].created"},
		"svc7.created":                {"*", "svc?.created"},
		"deploy.failed":               {"*", "[!x]*.failed", "deploy.failed", "*.failed"},
		"xci.build.failed":            {"*", "*.failed"},
		"gitlab.push":                 {"*"},
		"github":                      {"*"},
		"svc10.created":               {"*"},
		"github_enterprise.push.main": {"*"},
	}
	for typ := range want {
		l.publish(t, typ, `{}`)
	}
	if err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handlers reached mismatch (-want +got):\n%s", diff)
	}
}

// TestOnEventPatternErrors checks that a pattern the server would refuse is
// refused by OnEvent too, with the server's explanation.
func TestOnEventPatternErrors(t *testing.T) {
	c, err := client.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"", "github.{push", "github..push", "a b", "[z-a]"} {
		_, err := c.OnEvent(p, func(context.Context, string, mcpe.Event) {})
		_, want := subscriptions.CompilePattern(p)
		var inv *mcpe.InvalidError
		if !errors.As(err, &inv) || want == nil || err.Error() != want.Error() {
			t.Errorf("OnEvent(%q) = %v, want the error of CompilePattern: %v", p, err, want)
		}
	}
}

// TestHandlerRemoval checks that the function OnEvent, OnBatch and OnExpired
// return removes the handler, and that a handler may register another.
func TestHandlerRemoval(t *testing.T) {
	l := memoryLink(t, "")
	rec := newRecorder()
	var removeFirst func()
	c := connect(t, l, nil, func(c *client.Client) {
		var err error
		removeFirst, err = c.OnEvent("*", rec.event("first"))
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		if _, err := c.OnEvent("*", func(_ context.Context, _ string, ev mcpe.Event) {
			// Registered from a handler: runs from the next event on.
			once.Do(func() {
				if _, err := c.OnEvent("*", rec.event("late")); err != nil {
					t.Error(err)
				}
			})
		}); err != nil {
			t.Fatal(err)
		}
		c.OnExpired(rec.expired)()
		c.OnBatch(rec.batch)()
	})
	ctx := ctxT(t)
	sub, err := c.Subscribe(ctx, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"a.*"}}})
	if err != nil {
		t.Fatal(err)
	}
	one := l.publish(t, "a.one", `{}`)
	rec.expect(t, received{Handler: "first", SubscriptionID: sub.ID, Type: "a.one", ID: one})
	removeFirst()
	removeFirst() // a second call does nothing
	two := l.publish(t, "a.two", `{}`)
	rec.expect(t, received{Handler: "late", SubscriptionID: sub.ID, Type: "a.two", ID: two})
	// The expiry and batch handlers were removed at once.
	if _, err := c.Update(ctx, mcpe.UpdateRequest{SubscriptionID: sub.ID, ExpiresAt: mcpe.OptionalString{Set: true, Value: l.now().Add(time.Second).UTC().Format(time.RFC3339Nano)}}); err != nil {
		t.Fatal(err)
	}
	l.fake.Advance(2 * time.Second)
	rec.none(t, c)
}
