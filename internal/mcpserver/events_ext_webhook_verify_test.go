package mcpserver_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// The endpoint verification of events/subscribe besides the challenge:
// the operator's handlers.webhook.verifiedURLs, and the receiver document
// of the callback URL's origin. The receivers count what they got, to show
// that no challenge was sent.

// subscribeOK subscribes url with secret on w and returns the id.
func subscribeOK(t *testing.T, w *wire, url, secret, extra string) string {
	t.Helper()
	m := call(t, w, "events/subscribe", subscribeParams(url, secret, extra))
	res, _ := m["result"].(map[string]any)
	id, _ := res["id"].(string)
	if id == "" {
		t.Fatalf("events/subscribe %s: %v", url, m)
	}
	return id
}

// receiverDoc serves body as the receiver document with the Cache-Control
// cc ("" for none).
func receiverDoc(body, cc string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// challenged checks that the next POST r got is a verification to path.
func challenged(t *testing.T, r *receiver, path string) {
	t.Helper()
	if v := r.next(t); v.body["type"] != "verification" || v.path != path {
		t.Fatalf("got %s %v; want the challenge to %s", v.path, v.body, path)
	}
}

// docGets is how many times r's receiver document was fetched.
func docGets(r *receiver) int { return r.count(http.MethodGet, webhook.WellKnownPath) }

// TestEventsWebhookVerifiedURLs: a callback URL under one of the
// operator's verifiedURLs is delivered to with no challenge and no
// document lookup, for any principal; a URL beside the prefix is
// challenged.
func TestEventsWebhookVerifiedURLs(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA, secretB)
	r.setDoc(receiverDoc(`{"receivers":["/"]}`, "")) // not asked: the allowlist comes first
	o := r.options()
	o.VerifiedURLs = []string{r.ts.URL + "/ok/allowed"}
	e := newEnv(t, envOptions{clock: c, webhooks: o})
	alice, bob := sepSession(t, e, "alice"), sepSession(t, e, "bob")

	id := subscribeOK(t, alice, r.ts.URL+"/ok/allowed/a", secretA, ``)
	publishWH(t, e, idA, "wh.one")
	if d := r.next(t); d.body["eventId"] != idA || d.header.Get("X-MCP-Subscription-Id") != id || d.path != "/ok/allowed/a" {
		t.Fatalf("first POST %s %v; want the event, no challenge", d.path, d.body)
	}
	subscribeOK(t, alice, r.ts.URL+"/ok/allowed", secretA, `,"ttlMs":60000`)
	subscribeOK(t, bob, r.ts.URL+"/ok/allowed/a", secretB, ``)
	r.none(t)
	if n := docGets(r); n != 0 {
		t.Fatalf("%d receiver document lookups for allowlisted URLs; want none", n)
	}

	// Segment-aware: /ok/allowedX is not under /ok/allowed.
	r.setDoc(nil)
	subscribeOK(t, alice, r.ts.URL+"/ok/allowedX", secretA, ``)
	challenged(t, r, "/ok/allowedX")
}

// TestEventsWebhookWellKnown: a callback URL its origin's receiver
// document covers is delivered to with no challenge; the document is
// fetched once per origin while cached (max-age, on the injected clock),
// for every principal; a URL it does not cover is challenged, and so is
// one looked up again after the document was withdrawn.
func TestEventsWebhookWellKnown(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA, secretB)
	r.setDoc(receiverDoc(`{"receivers":["/ok/gw/"]}`, "public, max-age=600"))
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	alice, bob := sepSession(t, e, "alice"), sepSession(t, e, "bob")

	id := subscribeOK(t, alice, r.ts.URL+"/ok/gw/a", secretA, ``)
	publishWH(t, e, idA, "wh.one")
	if d := r.next(t); d.body["eventId"] != idA || d.header.Get("X-MCP-Subscription-Id") != id {
		t.Fatalf("first POST %s %v; want the event, no challenge", d.path, d.body)
	}
	subscribeOK(t, alice, r.ts.URL+"/ok/gw/b", secretA, ``)
	subscribeOK(t, bob, r.ts.URL+"/ok/gw/a", secretB, ``)
	r.none(t)
	if n := docGets(r); n != 1 {
		t.Fatalf("%d document lookups; want 1, cached for the origin", n)
	}

	subscribeOK(t, alice, r.ts.URL+"/ok/other", secretA, ``)
	challenged(t, r, "/ok/other")
	if n := docGets(r); n != 1 {
		t.Fatalf("%d document lookups; want the cached one used", n)
	}

	// Withdrawn: used until max-age is over, then looked up again.
	r.setDoc(nil)
	c.Advance(599 * time.Second)
	subscribeOK(t, alice, r.ts.URL+"/ok/gw/c", secretA, ``)
	r.none(t)
	c.Advance(time.Second)
	subscribeOK(t, alice, r.ts.URL+"/ok/gw/d", secretA, ``)
	challenged(t, r, "/ok/gw/d")
	if n := docGets(r); n != 2 {
		t.Fatalf("%d document lookups; want 2", n)
	}
}

// TestEventsWebhookWellKnownFallsBack: a receiver document that cannot be
// had or does not cover the URL is no error: the challenge decides.
func TestEventsWebhookWellKnownFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  http.HandlerFunc
	}{
		{"not found", nil},
		{"server error", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }},
		{"not covering", receiverDoc(`{"receivers":["/elsewhere/"]}`, "")},
		{"covering a longer path", receiverDoc(`{"receivers":["/ok/fb/a/b"]}`, "")},
		{"not valid", receiverDoc(`{"receivers":"/ok/"}`, "")},
		{"not JSON", receiverDoc(`<html>welcome</html>`, "")},
		{"bad prefix", receiverDoc(`{"receivers":["ok/"]}`, "")},
		{"too large", receiverDoc(`{"receivers":["/ok/"],"pad":"`+strings.Repeat("x", webhook.MaxReceiverDocument)+`"}`, "")},
		{"redirect", func(w http.ResponseWriter, req *http.Request) {
			http.Redirect(w, req, "/ok/doc.json", http.StatusFound)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.NewFake(start)
			r := newReceiver(t, c, secretA)
			r.setDoc(tc.doc)
			e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
			w := sepSession(t, e, "alice")
			subscribeOK(t, w, r.ts.URL+"/ok/fb/a", secretA, ``)
			challenged(t, r, "/ok/fb/a")
			if docGets(r) != 1 || r.count(http.MethodGet, "/ok/doc.json") != 0 {
				t.Fatalf("GETs: document %d, redirect target %d; want 1 and 0", docGets(r), r.count(http.MethodGet, "/ok/doc.json"))
			}
			// An endpoint that then fails the challenge gets the
			// challenge's error, never the document's.
			m := call(t, w, "events/subscribe", subscribeParams(r.ts.URL+"/silent/fb", secretA, ``))
			errObj, _ := m["error"].(map[string]any)
			data, _ := errObj["data"].(map[string]any)
			if errObj["code"] != float64(mcpserver.CodeCallbackEndpointError) || data["reason"] != "challenge_failed" {
				t.Fatalf("subscribe to an endpoint failing the challenge: %v; want -32027 challenge_failed", m)
			}
		})
	}
}

// TestEventsWebhookWellKnownNegativeCache: an origin without a document is
// not asked again for a minute (on the injected clock).
func TestEventsWebhookWellKnownNegativeCache(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	e := newEnv(t, envOptions{clock: c, webhooks: r.options()})
	w := sepSession(t, e, "alice")
	subscribeOK(t, w, r.ts.URL+"/ok/n/1", secretA, ``)
	challenged(t, r, "/ok/n/1")

	r.setDoc(receiverDoc(`{"receivers":["/ok/n/"]}`, ""))
	c.Advance(webhook.NegativeReceiverDocumentCache - time.Second)
	subscribeOK(t, w, r.ts.URL+"/ok/n/2", secretA, ``)
	challenged(t, r, "/ok/n/2")
	if n := docGets(r); n != 1 {
		t.Fatalf("%d document lookups within the negative cache; want 1", n)
	}
	c.Advance(time.Second)
	subscribeOK(t, w, r.ts.URL+"/ok/n/3", secretA, ``)
	r.none(t)
	if n := docGets(r); n != 2 {
		t.Fatalf("%d document lookups after the negative cache; want 2", n)
	}
}

// TestEventsWebhookWellKnownOrigin: a receiver document speaks for its own
// origin only: another port of the same host is looked up on its own.
func TestEventsWebhookWellKnownOrigin(t *testing.T) {
	c := clocktest.NewFake(start)
	r1, r2 := newReceiver(t, c, secretA), newReceiver(t, c, secretA)
	r1.setDoc(receiverDoc(`{"receivers":["/ok/"]}`, ""))
	o := r1.options()
	o.Test.RootCAs.AddCert(r2.ts.Certificate())
	e := newEnv(t, envOptions{clock: c, webhooks: o})
	w := sepSession(t, e, "alice")
	subscribeOK(t, w, r1.ts.URL+"/ok/x", secretA, ``)
	r1.none(t)
	subscribeOK(t, w, r2.ts.URL+"/ok/x", secretA, ``)
	challenged(t, r2, "/ok/x")
	if docGets(r1) != 1 || docGets(r2) != 1 {
		t.Fatalf("document lookups: %d and %d; want one on each origin", docGets(r1), docGets(r2))
	}
}

// TestEventsWebhookVerifiedAcrossRestart: ttlMs null is granted the
// longest TTL, not a subscription without expiry, and a stored
// subscription stands for its verification: after a restart, with the
// receiver document that verified it gone, its deliveries go on and a
// refresh sends no challenge.
func TestEventsWebhookVerifiedAcrossRestart(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA)
	r.setDoc(receiverDoc(`{"receivers":["/ok/keep/"]}`, ""))
	db := filepath.Join(t.TempDir(), "mcpe.db")
	e := newEnv(t, envOptions{dbPath: db, clock: c, webhooks: r.options()})
	url := r.ts.URL + "/ok/keep/a"
	m := call(t, sepSession(t, e, "alice"), "events/subscribe", subscribeParams(url, secretA, `,"ttlMs":null`))
	res, _ := m["result"].(map[string]any)
	if res == nil || res["refreshBefore"] != start.Add(mcpserver.MaxWebhookTTL).Format(time.RFC3339Nano) {
		t.Fatalf("subscribe with ttlMs null: %v; want refreshBefore %v", m, start.Add(mcpserver.MaxWebhookTTL))
	}
	id := res["id"]
	r.none(t)
	e.close()

	r.setDoc(nil)
	e2 := newEnv(t, envOptions{dbPath: db, clock: c, webhooks: r.options()})
	publishWH(t, e2, idA, "wh.one")
	if d := r.next(t); d.body["eventId"] != idA || d.header.Get("X-MCP-Subscription-Id") != id {
		t.Fatalf("after the restart, first POST %s %v; want the event", d.path, d.body)
	}
	c.Advance(time.Hour)
	if got := subscribeOK(t, sepSession(t, e2, "alice"), url, secretA, `,"ttlMs":null`); got != id {
		t.Fatalf("refresh after the restart: id %s; want %s", got, id)
	}
	r.none(t)
	if n := docGets(r); n != 1 {
		t.Fatalf("%d document lookups; want only the first", n)
	}
}

// TestEventsWebhookChallengesPerHost: the challenges POSTed to one host,
// and the receiver documents asked of it, are bounded whichever principals
// subscribe (handlers.webhook.
// challengesPerHostPerMinute): past the budget events/subscribe answers
// ResourceExhausted, naming the limit and when to try again, and nothing
// is sent; a verification cached is not challenged again, so it is not
// refused; once the budget refills the challenge goes.
func TestEventsWebhookChallengesPerHost(t *testing.T) {
	c := clocktest.NewFake(start)
	r := newReceiver(t, c, secretA, secretB)
	o := r.options()
	o.Test.ChallengesPerHostPerMinute = 3
	e := newEnv(t, envOptions{clock: c, webhooks: o})
	alice, bob := sepSession(t, e, "alice"), sepSession(t, e, "bob")

	// The lookup of the (missing) receiver document takes one of the 3,
	// each challenge one.
	subscribeOK(t, alice, r.ts.URL+"/ok/a", secretA, ``)
	challenged(t, r, "/ok/a")
	subscribeOK(t, bob, r.ts.URL+"/ok/b", secretB, ``)
	challenged(t, r, "/ok/b")
	if n := docGets(r); n != 1 {
		t.Fatalf("%d document lookups; want 1", n)
	}

	m := call(t, bob, "events/subscribe", subscribeParams(r.ts.URL+"/ok/c", secretB, ``))
	errObj, _ := m["error"].(map[string]any)
	data, _ := errObj["data"].(map[string]any)
	if code, _ := errObj["code"].(float64); int(code) != mcpserver.CodeResourceExhausted || data["limit"] != "challengesPerHost" || data["retryAfterSeconds"] != float64(20) {
		t.Fatalf("fourth request to the host within a minute: %v; want ResourceExhausted, limit challengesPerHost, retryAfterSeconds 20", m)
	}
	if reason, _ := data["reason"].(string); !strings.Contains(reason, "try again in 20 s") || strings.Contains(reason, "alice") {
		t.Fatalf("reason %q; want when to try again, and nothing of other principals", reason)
	}
	r.none(t)

	// Alice's verification of /ok/a is cached: no challenge, no refusal.
	subscribeOK(t, alice, r.ts.URL+"/ok/a", secretA, `,"ttlMs":60000`)
	r.none(t)

	c.Advance(20 * time.Second)
	subscribeOK(t, bob, r.ts.URL+"/ok/c", secretB, ``)
	challenged(t, r, "/ok/c")
	if n := r.count(http.MethodPost, "/ok/c"); n != 1 {
		t.Fatalf("%d POSTs to /ok/c; want the one challenge after the refill", n)
	}
}

// TestEventsWebhookChallengesPerHostSpellings: the spellings of the host's
// address and its other ports share its budget, which is charged before
// the receiver document is asked for. Each spelling ([::ffff:7f00:1],
// [::1%25x1], ...) had a budget of its own, and the document of another
// port was fetched before the budget was looked at.
func TestEventsWebhookChallengesPerHostSpellings(t *testing.T) {
	c := clocktest.NewFake(start)
	r, r2 := newReceiver(t, c, secretA), newReceiver(t, c, secretA) // two ports of 127.0.0.1
	o := r.options()
	o.Test.RootCAs.AddCert(r2.ts.Certificate())
	o.Test.ChallengesPerHostPerMinute = 2
	e := newEnv(t, envOptions{clock: c, webhooks: o})
	w := sepSession(t, e, "alice")

	subscribeOK(t, w, r.ts.URL+"/ok/a", secretA, ``) // a document lookup and a challenge: the budget
	challenged(t, r, "/ok/a")
	_, port, _ := strings.Cut(strings.TrimPrefix(r.ts.URL, "https://"), ":")
	for _, url := range []string{
		"https://[::ffff:7f00:1]:" + port + "/ok/b",
		"https://[::FFFF:127.0.0.1]:" + port + "/ok/c",
		"https://[0:0:0:0:0:ffff:7f00:1]:" + port + "/ok/d",
		r2.ts.URL + "/ok/e",
	} {
		m := call(t, w, "events/subscribe", subscribeParams(url, secretA, ``))
		errObj, _ := m["error"].(map[string]any)
		data, _ := errObj["data"].(map[string]any)
		if code, _ := errObj["code"].(float64); int(code) != mcpserver.CodeResourceExhausted || data["limit"] != "challengesPerHost" {
			t.Fatalf("subscribe %s with the host's budget spent: %v; want ResourceExhausted, limit challengesPerHost", url, m)
		}
	}
	r.none(t)
	r2.none(t)
	if n, n2 := docGets(r), docGets(r2); n != 1 || n2 != 0 {
		t.Fatalf("document lookups: %d of the first port, %d of the second; want 1 and 0", n, n2)
	}
}
