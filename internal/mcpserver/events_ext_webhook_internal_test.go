package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

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
