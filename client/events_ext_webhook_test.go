package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
)

// hookReceiver answers the SEP-3415 verification challenge and keeps the
// bodies of the deliveries it could verify.
type hookReceiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	events []string
	got    chan struct{}
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	r := &hookReceiver{secret: secret, got: make(chan struct{}, 64)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if webhook.Verify(r.secret, req.Header, body, time.Now()) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var m map[string]any
		json.Unmarshal(body, &m)
		if m["type"] == "verification" {
			json.NewEncoder(w).Encode(map[string]any{"challenge": m["challenge"]})
			return
		}
		r.mu.Lock()
		r.events = append(r.events, string(body))
		r.mu.Unlock()
		r.got <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

// TestWebhookSubscription subscribes through the client for webhook
// delivery, receives a signed event, keeps the subscription alive with
// RunWebhook (a renewal before refreshBefore keeps the same id), and
// unsubscribes.
func TestWebhookSubscription(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rcv := newHookReceiver(t, secret)
	l := stdioLinkConfig(t, "", "handlers:\n  webhook:\n    enabled: true\n    allowHTTP: true\n    allowNetworks: [\"127.0.0.1\"]\n")
	c := connect(t, l, &client.Options{Reconnect: l.transport, Logger: testLogger(t)}, nil)
	ctx := ctxT(t)
	w := client.WebhookSubscription{Name: "mcpe.filter", Arguments: sepFilter, URL: rcv.URL + "/hook", Secret: secret, TTL: time.Minute}

	if _, err := c.SubscribeWebhook(ctx, client.WebhookSubscription{Name: "mcpe.filter", URL: rcv.URL, Secret: "plain"}); err == nil {
		t.Error("a secret that is not whsec_ was accepted")
	}
	g, err := c.SubscribeWebhook(ctx, w)
	if err != nil {
		t.Fatalf("SubscribeWebhook: %v", err)
	}
	if g.ID == "" || g.RefreshBefore.IsZero() || time.Until(g.RefreshBefore) > 2*time.Minute {
		t.Fatalf("grant %+v; want an id and a refreshBefore about a minute away", g)
	}
	publishN(t, l, 1, "hooked")
	select {
	case <-rcv.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no verified delivery reached the receiver")
	}

	// RunWebhook renews early: a renewal 59.5 s before refreshBefore comes
	// at once, with the same id.
	grants := make(chan client.WebhookGrant, 4)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.RunWebhook(runCtx, client.WebhookLoop{WebhookSubscription: w, Early: 59500 * time.Millisecond,
			OnGrant: func(g client.WebhookGrant) { grants <- g }})
	}()
	for i := range 2 {
		select {
		case again := <-grants:
			if again.ID != g.ID {
				t.Fatalf("renewal %d has id %q; want %q", i, again.ID, g.ID)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("RunWebhook made %d grants within 10 s; want 2", i)
		}
	}
	cancel()
	<-done

	if err := c.UnsubscribeWebhook(ctx, w); err != nil {
		t.Fatalf("UnsubscribeWebhook: %v", err)
	}
	if err := c.UnsubscribeWebhook(ctx, w); err == nil {
		t.Error("a second UnsubscribeWebhook succeeded; want not found")
	}
}
