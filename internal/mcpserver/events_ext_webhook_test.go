package mcpserver_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Signing secrets of the tests' clients.
var (
	secretA = "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	secretB = "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 32)))
)

// hookRequest is one POST a receiver took, its signature verified.
type hookRequest struct {
	path   string
	header http.Header
	body   map[string]any
	raw    []byte
	secret string
}

// receiver is a webhook endpoint on loopback (TLS). It verifies every POST
// against the secrets it knows, as a receiver must, before anything else
// (401 otherwise). Under /ok/ it answers a verification body with its
// challenge and an event with the status status chooses (200 when nil);
// /silent/ answers 200 with no challenge, /fail/ 500. A GET of its
// receiver document (webhook.WellKnownPath) is answered by doc (404 when
// nil); every request is counted by method and path.
type receiver struct {
	ts      *httptest.Server
	clock   *clocktest.Fake
	secrets []string
	got     chan hookRequest

	mu     sync.Mutex
	status func(hookRequest) int
	doc    http.HandlerFunc
	seen   map[string]int // "METHOD /path" -> requests
}

func newReceiver(t *testing.T, c *clocktest.Fake, secrets ...string) *receiver {
	r := &receiver{clock: c, secrets: secrets, got: make(chan hookRequest, 256)}
	r.ts = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.ts.Close)
	return r
}

// options are the webhook options of an operator who allows the receiver.
func (r *receiver) options() *webhook.Options {
	pool := x509.NewCertPool()
	pool.AddCert(r.ts.Certificate())
	return &webhook.Options{
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Test:          &testhook.Webhook{RootCAs: pool, NoJitter: true},
	}
}

func (r *receiver) setStatus(f func(hookRequest) int) {
	r.mu.Lock()
	r.status = f
	r.mu.Unlock()
}

// setDoc sets what answers a GET of the receiver document.
func (r *receiver) setDoc(f http.HandlerFunc) {
	r.mu.Lock()
	r.doc = f
	r.mu.Unlock()
}

// count returns how many requests of method to path the receiver got.
func (r *receiver) count(method, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[method+" "+path]
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	if r.seen == nil {
		r.seen = make(map[string]int)
	}
	r.seen[req.Method+" "+req.URL.Path]++
	doc := r.doc
	r.mu.Unlock()
	if req.Method == http.MethodGet {
		if req.URL.Path != webhook.WellKnownPath || doc == nil {
			http.NotFound(w, req)
			return
		}
		doc(w, req)
		return
	}
	body, _ := io.ReadAll(req.Body)
	hr := hookRequest{path: req.URL.Path, header: req.Header.Clone(), raw: body}
	for _, s := range r.secrets {
		if webhook.Verify(s, req.Header, body, r.clock.Now()) == nil {
			hr.secret = s
			break
		}
	}
	if hr.secret == "" || json.Unmarshal(body, &hr.body) != nil {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	select {
	case r.got <- hr:
	default: // nobody reads (the golden tests)
	}
	switch {
	case strings.HasPrefix(hr.path, "/fail/"):
		w.WriteHeader(http.StatusInternalServerError)
	case strings.HasPrefix(hr.path, "/silent/"):
		w.Write([]byte(`{}`))
	case hr.body["type"] == "verification":
		json.NewEncoder(w).Encode(map[string]any{"challenge": hr.body["challenge"]})
	default:
		r.mu.Lock()
		f := r.status
		r.mu.Unlock()
		code := http.StatusOK
		if f != nil {
			code = f(hr)
		}
		w.WriteHeader(code)
	}
}

// next returns the next POST, or fails after a bound.
func (r *receiver) next(t *testing.T) hookRequest {
	t.Helper()
	select {
	case hr := <-r.got:
		return hr
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver got nothing within 10s")
	}
	return hookRequest{}
}

// none checks that nothing arrives for a short while.
func (r *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case hr := <-r.got:
		t.Fatalf("unexpected POST %s %v", hr.path, hr.body)
	case <-time.After(200 * time.Millisecond):
	}
}

// call sends one request on w and returns its response.
func call(t *testing.T, w *wire, method, params string) map[string]any {
	t.Helper()
	w.send(t, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`)
	return nextSEP(t, w)
}

func subscribeParams(url, secret, extra string) string {
	return `{"name":"mcpe.filter","arguments":{"eventTypes":["wh.*"]},"delivery":{"mode":"webhook","url":"` + url + `","secret":"` + secret + `"}` + extra + `}`
}

func publishWH(t *testing.T, e *env, id, typ string) {
	t.Helper()
	if _, err := e.svc.Publish(context.Background(), mcpe.Event{ID: id, Type: typ, Data: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestEventsWebhookDelivery: the verification handshake, a signed event
// with X-MCP-Subscription-Id, an idempotent refresh, a rotated secret, and
// the expiry of a subscription not refreshed, with its terminated body.
func TestEventsWebhookDelivery(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA, secretB)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	w := sepSession(t, e, "alice")
	url := r.ts.URL + "/ok/alice"

	m := call(t, w, "events/subscribe", subscribeParams(url, secretA, `,"ttlMs":600000`))
	res, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("events/subscribe: %v", m)
	}
	id, _ := res["id"].(string)
	if !strings.HasPrefix(id, "sepwf-") || res["refreshBefore"] != start.Add(10*time.Minute).Format(time.RFC3339Nano) ||
		res["cursor"] != nil || res["truncated"] != false || res["resultType"] != "complete" {
		t.Fatalf("events/subscribe result: %v", res)
	}
	v := r.next(t)
	if v.body["type"] != "verification" || v.header.Get("X-MCP-Subscription-Id") != id || v.secret != secretA ||
		!strings.HasPrefix(v.header.Get("webhook-id"), "msg_verification_") {
		t.Fatalf("verification: %v %v", v.header, v.body)
	}

	publishWH(t, e, idA, "wh.one")
	d := r.next(t)
	if d.header.Get("webhook-id") != idA || d.header.Get("X-MCP-Subscription-Id") != id || d.secret != secretA ||
		d.body["eventId"] != idA || d.body["name"] != "mcpe.filter" || d.header.Get("Content-Type") != "application/json" {
		t.Fatalf("delivery: %v %v", d.header, d.body)
	}
	if data, _ := d.body["data"].(map[string]any); data["type"] != "wh.one" || d.body["timestamp"] == nil {
		t.Fatalf("delivery body: %v", d.body)
	}

	// A refresh with the same key is the same subscription: no new
	// handshake, a new grant; a new secret signs from now on, the old one
	// beside it.
	c.Advance(5 * time.Minute)
	m = call(t, w, "events/subscribe", subscribeParams(url, secretB, `,"ttlMs":600000`))
	res, _ = m["result"].(map[string]any)
	if res["id"] != id || res["refreshBefore"] != start.Add(15*time.Minute).Format(time.RFC3339Nano) {
		t.Fatalf("refresh: %v", m)
	}
	publishWH(t, e, idB, "wh.two")
	d = r.next(t)
	// Four signatures: each secret's, and each keyed with its whole text
	// for receivers that compute it so (see the mcpkit interop test).
	if d.body["eventId"] != idB || webhook.Verify(secretB, d.header, d.raw, c.Now()) != nil || webhook.Verify(secretA, d.header, d.raw, c.Now()) != nil ||
		len(strings.Fields(d.header.Get("webhook-signature"))) != 4 {
		t.Fatalf("delivery after rotation: %v %v", d.header, d.body)
	}

	// Not refreshed again: it ends at refreshBefore, with a terminated body.
	c.Advance(10*time.Minute + time.Second)
	term := r.next(t)
	errObj, _ := term.body["error"].(map[string]any)
	if term.body["type"] != "terminated" || errObj["code"] != float64(-32023) || term.header.Get("X-MCP-Subscription-Id") != id ||
		!strings.HasPrefix(term.header.Get("webhook-id"), "msg_terminated_") {
		t.Fatalf("terminated: %v %v", term.header, term.body)
	}
	waitFor(t, "the expired subscription removed", func() bool {
		_, err := e.svc.Get(context.Background(), "alice", id)
		return err != nil
	})
	publishWH(t, e, "01900000-0000-7000-8000-0000000000c1", "wh.three")
	r.none(t)
	m = call(t, w, "events/unsubscribe", `{"name":"mcpe.filter","arguments":{"eventTypes":["wh.*"]},"delivery":{"url":"`+url+`"}}`)
	if errObj, _ := m["error"].(map[string]any); errObj["code"] != float64(-32023) {
		t.Fatalf("unsubscribe after expiry: %v", m)
	}

	// Subscribing again is a fresh subscription with the same id; the
	// endpoint was verified lately for this principal: no handshake.
	m = call(t, w, "events/subscribe", subscribeParams(url, secretA, ``))
	if res, _ := m["result"].(map[string]any); res["id"] != id {
		t.Fatalf("subscribe again: %v", m)
	}
	r.none(t)
}

// TestEventsWebhookGone: a receiver answering 410 declines that event: it
// is not retried, and the subscription goes on.
func TestEventsWebhookGone(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	w := sepSession(t, e, "alice")
	r.setStatus(func(hr hookRequest) int {
		if hr.body["eventId"] == idA {
			return http.StatusGone
		}
		return http.StatusOK
	})
	m := call(t, w, "events/subscribe", subscribeParams(r.ts.URL+"/ok/gone", secretA, ``))
	id, _ := m["result"].(map[string]any)["id"].(string)
	r.next(t) // verification
	publishWH(t, e, idA, "wh.one")
	if d := r.next(t); d.body["eventId"] != idA {
		t.Fatalf("first delivery: %v", d.body)
	}
	waitFor(t, "the 410 recorded", func() bool {
		sub, err := e.svc.Get(context.Background(), "alice", id)
		return err == nil && sub.HandlerStatus != nil && sub.HandlerStatus.Failed == 1 && sub.HandlerStatus.Pending == 0
	})
	c.Advance(30 * time.Minute)
	publishWH(t, e, idB, "wh.two")
	if d := r.next(t); d.body["eventId"] != idB {
		t.Fatalf("after 410, got %v; want the next event and no retry", d.body)
	}
	r.none(t)
	sub, err := e.svc.Get(context.Background(), "alice", id)
	if err != nil || sub.HandlerStatus.Disabled != "" || sub.Status != mcpe.StatusActive {
		t.Fatalf("subscription after 410: %+v, %v", sub, err)
	}
}

// TestEventsWebhookRetriesBounded: a receiver that keeps failing gets five
// attempts, then a gap body.
func TestEventsWebhookRetriesBounded(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	w := sepSession(t, e, "alice")
	r.setStatus(func(hookRequest) int { return http.StatusServiceUnavailable })
	m := call(t, w, "events/subscribe", subscribeParams(r.ts.URL+"/ok/retry", secretA, `,"ttlMs":null`))
	// A request for no expiry is granted the longest TTL.
	if res, _ := m["result"].(map[string]any); res == nil || res["refreshBefore"] != start.Add(mcpserver.MaxWebhookTTL).UTC().Format(time.RFC3339Nano) {
		t.Fatalf("no-expiry subscribe: %v; want refreshBefore %v", m, start.Add(mcpserver.MaxWebhookTTL))
	}
	r.next(t) // verification
	publishWH(t, e, idA, "wh.one")
	attempts := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		var hr hookRequest
		select {
		case hr = <-r.got:
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("no gap body within 20s; %d attempts", attempts)
			}
			c.Advance(time.Minute)
			continue
		}
		if hr.body["type"] == "gap" {
			if hr.body["cursor"] != nil || hr.header.Get("X-MCP-Subscription-Id") == "" {
				t.Fatalf("gap: %v %v", hr.header, hr.body)
			}
			break
		}
		if hr.body["eventId"] != idA {
			t.Fatalf("unexpected POST %v", hr.body)
		}
		attempts++
	}
	if attempts != 5 {
		t.Fatalf("%d attempts; want 5", attempts)
	}
	c.Advance(time.Hour)
	r.none(t)
}

// TestEventsWebhookIsolation: two principals subscribing the same name,
// arguments and URL get distinct subscriptions, and neither can remove the
// other's.
func TestEventsWebhookIsolation(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA, secretB)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	alice, bob := sepSession(t, e, "alice"), sepSession(t, e, "bob")
	url := r.ts.URL + "/ok/shared"
	ma := call(t, alice, "events/subscribe", subscribeParams(url, secretA, ``))
	r.next(t)
	mb := call(t, bob, "events/subscribe", subscribeParams(url, secretB, ``))
	// Verification is per (principal, url): Bob's subscription is verified
	// on its own.
	if v := r.next(t); v.secret != secretB || v.body["type"] != "verification" {
		t.Fatalf("bob's verification: %v", v.body)
	}
	ida, idb := ma["result"].(map[string]any)["id"], mb["result"].(map[string]any)["id"]
	if ida == idb {
		t.Fatalf("same id %v for two principals", ida)
	}
	unsub := `{"name":"mcpe.filter","arguments":{"eventTypes":["wh.*"]},"delivery":{"url":"` + url + `"}}`
	if m := call(t, bob, "events/unsubscribe", unsub); m["result"] == nil {
		t.Fatalf("bob unsubscribes: %v", m)
	}
	if m := call(t, bob, "events/unsubscribe", unsub); m["error"] == nil {
		t.Fatalf("bob unsubscribes again: %v", m)
	}
	publishWH(t, e, idA, "wh.one")
	if d := r.next(t); d.secret != secretA || d.header.Get("X-MCP-Subscription-Id") != ida {
		t.Fatalf("alice's delivery: %v", d.header)
	}
	r.none(t)
}

// TestEventsWebhookSurvivesRestart: a delivery accepted and not yet taken
// by the endpoint is delivered after a restart, the stored subscription
// needs no new handshake, and one not refreshed still ends at its TTL with
// a terminated body.
func TestEventsWebhookSurvivesRestart(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	db := filepath.Join(t.TempDir(), "mcpe.db")
	e := newEnv(t, envOptions{dbPath: db, clock: c, webhooks: r.options()})
	w := sepSession(t, e, "alice")
	url := r.ts.URL + "/ok/restart"
	m := call(t, w, "events/subscribe", subscribeParams(url, secretA, ``))
	id, _ := m["result"].(map[string]any)["id"].(string)
	r.next(t) // verification
	short := r.ts.URL + "/ok/short"
	m = call(t, w, "events/subscribe", `{"name":"mcpe.filter","arguments":{"eventTypes":["none.*"]},"delivery":{"url":"`+short+`","secret":"`+secretA+`"},"ttlMs":300000}`)
	shortID, _ := m["result"].(map[string]any)["id"].(string)
	r.next(t) // verification
	r.setStatus(func(hookRequest) int { return http.StatusServiceUnavailable })
	publishWH(t, e, idA, "wh.one")
	if d := r.next(t); d.body["eventId"] != idA {
		t.Fatalf("first attempt: %v", d.body)
	}
	waitFor(t, "the failed attempt recorded", func() bool {
		sub, err := e.svc.Get(context.Background(), "alice", id)
		return err == nil && sub.HandlerStatus != nil && sub.HandlerStatus.LastError != ""
	})
	e.close()

	r.setStatus(nil)
	e2 := newEnv(t, envOptions{dbPath: db, clock: c, webhooks: r.options()})
	c.Advance(time.Minute)
	d := r.next(t)
	if d.body["eventId"] != idA || d.header.Get("X-MCP-Subscription-Id") != id || d.secret != secretA {
		t.Fatalf("after restart: %v %v", d.header, d.body)
	}
	w2 := sepSession(t, e2, "alice")
	m = call(t, w2, "events/subscribe", subscribeParams(url, secretA, ``))
	if res, _ := m["result"].(map[string]any); res["id"] != id {
		t.Fatalf("refresh after restart: %v", m)
	}
	r.none(t)
	c.Advance(5 * time.Minute)
	term := r.next(t)
	if term.body["type"] != "terminated" || term.header.Get("X-MCP-Subscription-Id") != shortID || term.path != "/ok/short" {
		t.Fatalf("terminated after restart: %v %v", term.header, term.body)
	}
	r.none(t)
}

// httpSEP opens a Streamable HTTP session with token ("" for none) and
// sends initialize only: the session is not attached yet.
func httpSEP(t *testing.T, e *env, token string) *wire {
	var opts mcpserver.HTTPOptions
	if token != "" {
		opts.Tokens = httpapi.NewTokens(map[string]string{token: token})
	}
	ts := httptest.NewServer(e.srv.HTTPHandler(opts))
	t.Cleanup(ts.Close)
	w := dialHTTP(t, ts.URL, token, "")
	w.send(t, initialize2025)
	w.next(t)
	return w
}

// TestEventsWebhookTokenBeforeAttach: events/subscribe on a session not
// attached yet (no notifications/initialized) takes the principal of the
// request's bearer token, not the session's.
func TestEventsWebhookTokenBeforeAttach(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	w := httpSEP(t, e, "alice")
	m := call(t, w, "events/subscribe", subscribeParams(r.ts.URL+"/ok/early", secretA, ``))
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("subscribe before attach: %v", m)
	}
	r.next(t) // verification
	if _, err := e.svc.Get(context.Background(), "alice", res["id"].(string)); err != nil {
		t.Fatalf("the subscription is not alice's: %v", err)
	}
}

// TestRegisterNeedsAuthenticatedPrincipal: resources/subscriptions/register
// refuses a session without a token, as events/subscribe does.
func TestRegisterNeedsAuthenticatedPrincipal(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	w := httpSEP(t, e, "")
	w.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	params := `{"uris":["event://wh.*"],"targetUri":"` + r.ts.URL + `/ok/reg"}`
	m := call(t, w, "resources/subscriptions/register", params)
	errObj, _ := m["error"].(map[string]any)
	if errObj == nil || errObj["code"] != float64(mcpserver.CodeForbidden) {
		t.Fatalf("register without a token: %v; want Forbidden", m)
	}
	sub := call(t, w, "events/subscribe", subscribeParams(r.ts.URL+"/ok/reg", secretA, ``))
	if e2, _ := sub["error"].(map[string]any); e2 == nil || e2["code"] != errObj["code"] || e2["message"] != errObj["message"] {
		t.Fatalf("events/subscribe without a token: %v; want the same error as register's %v", sub, errObj)
	}
}

// TestConcurrentResourceSubscribeNoLeak: concurrent resources/subscribe
// for one URI on one session leave one backing subscription.
func TestConcurrentResourceSubscribeNoLeak(t *testing.T) {
	e := newEnv(t, envOptions{})
	w := sepSession(t, e, "alice")
	const n = 16
	for i := range n {
		w.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"event://race.*"}}`, 100+i))
	}
	for range n {
		if m := nextSEP(t, w); m["error"] != nil {
			t.Fatalf("subscribe: %v", m)
		}
	}
	subs, err := e.svc.List(context.Background(), "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 {
		t.Fatalf("%d backing subscriptions after %d concurrent subscribes; want 1", len(subs), n)
	}
}

// TestEventsWebhookBatchGoneGoesOn: in a batch, a 410 on one event does
// not drop the rest; an event that cannot be decoded is not sent nor
// counted as delivered.
func TestEventsWebhookBatchGoneGoesOn(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	wo := r.options()
	wo.Clock = c
	sender, err := webhook.New(wo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)
	r.setStatus(func(hr hookRequest) int {
		if hr.body["eventId"] == idA {
			return http.StatusGone
		}
		return http.StatusOK
	})
	ev := func(id string) json.RawMessage {
		b, _ := json.Marshal(mcpe.Event{ID: id, Type: "wh.one", Metadata: mcpe.Metadata{Timestamp: start}, Data: json.RawMessage(`{"n":1}`)})
		return b
	}
	h := mcpserver.WebhookHandler(sender, c, nil)
	out := h.Handle(context.Background(), &subscriptions.Invocation{
		JobID: "job1", SubscriptionID: "sepwf-0123", Principal: "alice",
		Spec:    &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: r.ts.URL + "/ok/batch"},
		Secrets: &subscriptions.WebhookSecrets{Current: secretA}, Attempt: 1,
		Kind: mcpe.InboxBatch, Events: []json.RawMessage{json.RawMessage(`{"id":`), ev(idA), ev(idB)},
	})
	if a := r.next(t); a.body["eventId"] != idA {
		t.Fatalf("first POST: %v", a.body)
	}
	if b := r.next(t); b.body["eventId"] != idB {
		t.Fatalf("second POST: %v; want the event after the 410", b.body)
	}
	if out.Output != "1 delivered" || out.Err == nil || !strings.Contains(out.Err.Error(), idA) || out.RetryIn != 0 {
		t.Fatalf("outcome %+v; want 1 delivered, the 410 recorded, no retry", out)
	}
}
