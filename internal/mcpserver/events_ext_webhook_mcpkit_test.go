package mcpserver_test

// Interop with the other Go implementation of the events extension,
// github.com/panyam/mcpkit (experimental/ext/events, read at caf24e8). Its
// events client generates delivery.secret as whsec_ and the URL-safe base64
// of 32 random bytes without padding (RFC 4648 section 5; its own server
// accepts that and the standard alphabet, as SDKs disagree), and its
// Receiver verifies webhook-signature with an HMAC-SHA256 keyed with the
// bytes of the whole secret text, whsec_ included, not the bytes it
// encodes, comparing each space-separated signature with "v1,<base64>" as
// a whole, and answers 401 when none matches. Its Receiver has no case for
// a verification body (it would answer 200 without the challenge), so its
// callback URL is verified by the receiver document of its origin, as a
// gateway in front of it would publish. The client below is written the
// same way and drives the server over Streamable HTTP.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
)

// mcpkitSecret is a secret as mcpkit's events.GenerateSecret makes one
// (whsec_ and base64.RawURLEncoding of 32 bytes), with bytes chosen so
// that its text has the characters only the URL-safe alphabet has.
var mcpkitSecret = "whsec_" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb, 0xef, 0xbe, 0xff}, 8))

// mcpkitDelivery is a POST an mcpkit-like receiver took, with its answer.
type mcpkitDelivery struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// newMcpkitReceiver starts a receiver that verifies as mcpkit's does, with
// secret, under /mcpkit/, and serves a receiver document covering that.
func newMcpkitReceiver(t *testing.T, secret string) (*httptest.Server, chan mcpkitDelivery) {
	got := make(chan mcpkitDelivery, 64)
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && req.URL.Path == webhook.WellKnownPath {
			io.WriteString(w, `{"receivers":["/mcpkit/"]}`)
			return
		}
		body, _ := io.ReadAll(req.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(req.Header.Get("webhook-id") + "." + req.Header.Get("webhook-timestamp") + "."))
		mac.Write(body)
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		status := http.StatusUnauthorized
		for _, sig := range strings.Fields(req.Header.Get("webhook-signature")) {
			if hmac.Equal([]byte(sig), []byte(want)) {
				status = http.StatusOK
			}
		}
		d := mcpkitDelivery{status: status, header: req.Header.Clone(), raw: body}
		json.Unmarshal(body, &d.body)
		got <- d
		w.WriteHeader(status)
	}))
	t.Cleanup(ts.Close)
	return ts, got
}

// TestEventsWebhookMcpkitClient: an mcpkit-like client subscribes with its
// SDK's secret (URL-safe base64, refused as not base64 before) and with a
// standard one, and its receiver takes every delivery and control body
// (it answered 401 to each: nothing was signed with the key it computes),
// while the SEP's signature is still there for Standard Webhooks
// receivers.
func TestEventsWebhookMcpkitClient(t *testing.T) {
	for _, tc := range []struct{ name, secret string }{
		{"its SDK's secret", mcpkitSecret},
		{"a standard secret", secretA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.NewFake(start)
			ts, got := newMcpkitReceiver(t, tc.secret)
			pool := x509.NewCertPool()
			pool.AddCert(ts.Certificate())
			o := &webhook.Options{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Test: &testhook.Webhook{RootCAs: pool, NoJitter: true}}
			e := newEnv(t, envOptions{clock: c, webhooks: o})
			w := httpSEP(t, e, "alice")
			next := func(what string) mcpkitDelivery {
				t.Helper()
				select {
				case d := <-got:
					if d.status != http.StatusOK || webhook.Verify(tc.secret, d.header, d.raw, c.Now()) != nil {
						t.Fatalf("%s: the mcpkit receiver answered %d to signatures %q; want 200, and the SEP's signature verifying too", what, d.status, d.header.Get("webhook-signature"))
					}
					return d
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: nothing within 10s", what)
				}
				return mcpkitDelivery{}
			}

			// The params as mcpkit's Subscription.subscribe sends them.
			params, _ := json.Marshal(map[string]any{
				"name":      "mcpe.filter",
				"arguments": map[string]any{"eventTypes": []string{"wh.*"}},
				"delivery":  map[string]any{"mode": "webhook", "url": ts.URL + "/mcpkit/hook", "secret": tc.secret},
				"cursor":    nil,
				"ttlMs":     60000,
			})
			m := call(t, w, "events/subscribe", string(params))
			res, _ := m["result"].(map[string]any)
			id, _ := res["id"].(string)
			if id == "" {
				t.Fatalf("events/subscribe with secret %s: %v", tc.secret, m)
			}

			publishWH(t, e, idA, "wh.one")
			if d := next("the event"); d.body["eventId"] != idA || d.header.Get("X-MCP-Subscription-Id") != id {
				t.Fatalf("delivery %v %v; want event %s of %s", d.header, d.body, idA, id)
			}
			// The delivery recorded before the clock moves: an expiry
			// meanwhile could meet the runner preparing its first statement
			// (the SQLite statement cache holds its lock while it waits for
			// the one write connection, which the expiry's transaction holds).
			waitFor(t, "the delivery recorded", func() bool {
				sub, err := e.svc.Get(context.Background(), "alice", id)
				return err == nil && sub.HandlerStatus != nil && sub.HandlerStatus.Succeeded == 1
			})
			c.Advance(time.Minute + time.Second)
			if d := next("the terminated body"); d.body["type"] != "terminated" {
				t.Fatalf("after the TTL: %v; want the terminated body", d.body)
			}
		})
	}
}
