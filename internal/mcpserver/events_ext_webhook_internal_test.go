package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
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
	c := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
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

// noDNS resolves nothing, at once.
type noDNS struct{}

func (noDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestConfirmVerifiedURLsFirst: a URL under the operator's verifiedURLs is
// confirmed before anything goes on the network (its host resolves to
// nothing here), and recorded for that principal only; a URL beside it is
// looked up and challenged, and fails with the challenge's error.
func TestConfirmVerifiedURLsFirst(t *testing.T) {
	sender, err := webhook.New(&webhook.Options{VerifiedURLs: []string{"https://hooks.example.com/mcp/"}, Test: &testhook.Webhook{Resolver: noDNS{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32)))
	c := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	w := &webhookState{sender: sender, verified: map[string]time.Time{}, timers: map[string]clock.Timer{}}
	url := "https://hooks.example.com/mcp/a"
	if err := w.confirm(context.Background(), c, "alice", webhookFilterIDPrefix+"x", url, secret); err != nil {
		t.Fatalf("confirm of an allowlisted URL: %v", err)
	}
	if !w.isVerified("alice", url, c.Now()) || w.isVerified("bob", url, c.Now()) {
		t.Fatal("the allowlist hit is not recorded for (alice, url) only")
	}
	err = w.confirm(context.Background(), c, "alice", webhookFilterIDPrefix+"x", "https://hooks.example.com/mcpX", secret)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != CodeCallbackEndpointError {
		t.Fatalf("confirm of a URL beside the prefix: %v; want CallbackEndpointError", err)
	}
	if w.isVerified("alice", "https://hooks.example.com/mcpX", c.Now()) {
		t.Fatal("a failed verification is recorded")
	}
}
