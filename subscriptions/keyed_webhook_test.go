package subscriptions_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestKeyedWebhook: made once, refreshed in place (expiry, secret rotated
// with the previous one signing for the grace), replaced once expired,
// listed by Expiring; refused when webhook handlers are off.
func TestKeyedWebhook(t *testing.T) {
	ctx := context.Background()
	f, _ := handlerFixture(t, mcpe.HandlerWebhook)
	filter := mcpe.Filter{EventTypes: []string{"a.*"}}
	spec := &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: "https://hooks.example.com/x"}
	exp := svcStart.Add(10 * time.Minute)
	sub, created, err := f.svc.KeyedWebhook(ctx, "alice", "sepw-1", filter, spec, "whsec_one", &exp)
	if err != nil || !created || sub.Secrets.Current != "whsec_one" || !sub.ExpiresAt.Equal(exp) || sub.Handler.URL != spec.URL {
		t.Fatalf("create: %+v %v %v", sub, created, err)
	}

	f.clock.Advance(5 * time.Minute)
	exp2 := f.clock.Now().Add(10 * time.Minute)
	sub, created, err = f.svc.KeyedWebhook(ctx, "alice", "sepw-1", mcpe.Filter{EventTypes: []string{"other"}}, spec, "whsec_two", &exp2)
	if err != nil || created || !sub.ExpiresAt.Equal(exp2) {
		t.Fatalf("refresh: %+v %v %v", sub, created, err)
	}
	got, err := f.svc.Get(ctx, "alice", "sepw-1")
	if err != nil || got.Secrets.Current != "whsec_two" || got.Secrets.Previous != "whsec_one" || got.Filter.EventTypes[0] != "a.*" {
		t.Fatalf("after refresh: %+v %+v %v", got, got.Secrets, err)
	}
	if subs, err := f.svc.Expiring(ctx, "sepw-"); err != nil || len(subs) != 1 || subs[0].Principal != "alice" {
		t.Fatalf("Expiring: %v %v", subs, err)
	}
	if subs, err := f.svc.Expiring(ctx, "other-"); err != nil || len(subs) != 0 {
		t.Fatalf("Expiring other prefix: %v %v", subs, err)
	}

	// Expired: a refresh makes it anew.
	f.clock.Advance(11 * time.Minute)
	exp3 := f.clock.Now().Add(time.Hour)
	sub, created, err = f.svc.KeyedWebhook(ctx, "alice", "sepw-1", filter, spec, "whsec_three", &exp3)
	if err != nil || !created || sub.Secrets.Current != "whsec_three" || sub.Secrets.Previous != "" {
		t.Fatalf("after expiry: %+v %v %v", sub, created, err)
	}
	// No expiry.
	if sub, _, err = f.svc.KeyedWebhook(ctx, "alice", "sepw-1", filter, spec, "whsec_three", nil); err != nil || sub.ExpiresAt != nil {
		t.Fatalf("no expiry: %+v %v", sub, err)
	}

	off, _ := handlerFixture(t, mcpe.HandlerBash)
	if _, _, err := off.svc.KeyedWebhook(ctx, "alice", "sepw-1", filter, spec, "whsec_one", nil); err == nil {
		t.Fatal("KeyedWebhook without webhook handlers: no error")
	}
}
