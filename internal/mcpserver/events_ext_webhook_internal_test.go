package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// failingBackend is a webhookBackend whose Get fails.
type failingBackend struct{ webhookBackend }

func (failingBackend) Get(context.Context, string, string) (*subscriptions.Subscription, error) {
	return nil, errors.New("database is locked")
}

// TestExpireWebhookRearmsAfterFailedGet: when the subscription whose TTL
// is over cannot be looked up, its expiry is tried again shortly rather
// than forgotten.
func TestExpireWebhookRearmsAfterFailedGet(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s := &Server{opts: Options{Clock: c}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		webhooks: &webhookState{backend: failingBackend{}, verified: map[string]time.Time{}, timers: map[string]clock.Timer{}}}
	s.expireWebhook("alice", webhookIDPrefix+"x")
	s.webhooks.mu.Lock()
	_, armed := s.webhooks.timers["alice\x00"+webhookIDPrefix+"x"]
	s.webhooks.mu.Unlock()
	if !armed {
		t.Fatal("no expiry timer after a failed look-up; the subscription would never end")
	}
	s.closeWebhooks()
}

// TestVerificationBoundsPerPrincipal: one principal has at most
// maxVerifying handshakes in flight (ResourceExhausted beyond) and at most
// maxVerifiedPerPrincipal entries in the shared verification cache.
func TestVerificationBoundsPerPrincipal(t *testing.T) {
	w := &webhookState{verified: map[string]time.Time{}, timers: map[string]clock.Timer{}}
	var dones []func()
	for range maxVerifying {
		done, err := w.startVerify("alice")
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, done)
	}
	_, err := w.startVerify("alice")
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != CodeResourceExhausted {
		t.Fatalf("verification %d in flight: %v; want ResourceExhausted", maxVerifying+1, err)
	}
	if done, err := w.startVerify("bob"); err != nil {
		t.Fatalf("bob is bounded by alice's handshakes: %v", err)
	} else {
		done()
	}
	dones[0]()
	if _, err := w.startVerify("alice"); err != nil {
		t.Fatalf("after one ended: %v", err)
	}

	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range maxVerifiedPerPrincipal + 1 {
		w.markVerified("alice", fmt.Sprintf("https://h%d.example/", i), now)
	}
	if w.isVerified("alice", fmt.Sprintf("https://h%d.example/", maxVerifiedPerPrincipal), now) {
		t.Fatalf("alice holds more than %d cache entries", maxVerifiedPerPrincipal)
	}
	w.markVerified("bob", "https://h0.example/", now)
	if !w.isVerified("bob", "https://h0.example/", now) {
		t.Fatal("bob cannot be cached beside alice")
	}
	later := now.Add(verifiedTTL)
	w.markVerified("alice", "https://new.example/", later)
	if !w.isVerified("alice", "https://new.example/", later) {
		t.Fatal("alice's expired entries do not make room")
	}
}
