package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/console"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

const adminToken = "admin-token-0123456789"

var tokens = httpapi.NewTokens(map[string]string{"alice-token": "alice", "bob-token": "bob"})

type nopDeliverer struct{}

func (nopDeliverer) Deliver([]subscriptions.InboxEntry)        {}
func (nopDeliverer) Replay(string, []subscriptions.InboxEntry) {}

// fixture is a console in front of a real service, behind the server's mux
// (so with its cross-origin protection).
type fixture struct {
	t   *testing.T
	svc *subscriptions.Service
	srv *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err := subscriptions.NewService(subscriptions.ServiceOptions{Store: store, Deliverer: nopDeliverer{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	c, err := console.New(console.Options{Service: svc, Tokens: tokens, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	nop := http.NotFoundHandler()
	srv := httptest.NewServer(httpapi.NewMux(httpapi.MuxOptions{MCP: nop, Ingest: nop, Console: c}))
	t.Cleanup(srv.Close)
	return &fixture{t: t, svc: svc, srv: srv}
}

func (f *fixture) subscribe(principal string, types ...string) string {
	f.t.Helper()
	sub, err := f.svc.Subscribe(context.Background(), principal, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: types}})
	if err != nil {
		f.t.Fatal(err)
	}
	return sub.ID
}

func (f *fixture) status(principal, id string) mcpe.Status {
	f.t.Helper()
	sub, err := f.svc.Get(context.Background(), principal, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return sub.Status
}

// browser is a logged-in client.
type browser struct {
	f    *fixture
	c    *http.Client
	csrf string
}

func (f *fixture) login(token string) *browser {
	f.t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{f: f, c: &http.Client{Jar: jar}}
	res, body := b.post("/console/login", url.Values{"token": {token}})
	if res.StatusCode != http.StatusOK {
		f.t.Fatalf("login with %q: %s\n%s", token, res.Status, body)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		f.t.Fatalf("no CSRF token on the page after login:\n%s", body)
	}
	b.csrf = m[1]
	return b
}

func (b *browser) get(path string) (*http.Response, string) {
	b.f.t.Helper()
	res, err := b.c.Get(b.f.srv.URL + path)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.f.t.Helper()
	res, err := b.c.PostForm(b.f.srv.URL+path, form)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func (b *browser) act(form url.Values) (*http.Response, string) {
	form.Set("csrf", b.csrf)
	return b.post("/console/action", form)
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/console", "/console/static/console.js"} {
		res, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Cache-Control": "no-store"} {
			if got := res.Header.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
	b := f.login("alice-token")
	_, body := b.get("/console")
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]`).MatchString(body) || strings.Contains(body, " style=") || strings.Contains(body, "onclick") {
		t.Errorf("the page has inline script or style:\n%s", body)
	}
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	res, err := http.PostForm(f.srv.URL+"/console/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 || !strings.Contains(string(body), "not a token of this server") {
		t.Errorf("a wrong token: %s, cookies %v", res.Status, res.Cookies())
	}

	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = c.PostForm(f.srv.URL+"/console/login", url.Values{"token": {"alice-token"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console" {
		t.Errorf("login: %s to %q", res.Status, res.Header.Get("Location"))
	}
	cookies := res.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" || ck.Secure || strings.Contains(ck.Value, "alice") {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console, not Secure over plain HTTP, no token", ck)
	}

	// A token in the URL logs nobody in.
	b := &browser{f: f, c: http.DefaultClient}
	if _, body := b.get("/console?token=alice-token"); !strings.Contains(body, `action="/console/login"`) {
		t.Errorf("a token in the URL was taken")
	}

	// Logging out ends the session.
	a := f.login("alice-token")
	a.post("/console/logout", url.Values{"csrf": {a.csrf}})
	if _, body := a.get("/console"); !strings.Contains(body, `action="/console/login"`) {
		t.Errorf("still logged in after logging out")
	}
}

func TestPrincipalsAreIsolated(t *testing.T) {
	f := newFixture(t)
	mine := f.subscribe("alice", "gh.*")
	theirs := f.subscribe("bob", "gh.*")
	a := f.login("alice-token")
	_, body := a.get("/console")
	if !strings.Contains(body, mine) || strings.Contains(body, theirs) || strings.Contains(body, "bob") {
		t.Errorf("alice's page: want her subscription %s and nothing of bob's (%s):\n%s", mine, theirs, body)
	}
	// The principal field is ignored for a principal, and another's
	// subscription is not found.
	for _, action := range []string{"pause", "delete"} {
		_, body = a.act(url.Values{"action": {action}, "subscription": {theirs}, "principal": {"bob"}})
		if !strings.Contains(body, "not found") {
			t.Errorf("alice's %s of bob's subscription: want not found on the page", action)
		}
	}
	if got := f.status("bob", theirs); got != mcpe.StatusActive {
		t.Errorf("bob's subscription is %s after alice's actions", got)
	}
	// alice does not see bob's events either.
	if _, err := f.svc.Publish(context.Background(), mcpe.Event{Type: "gh.push", Data: json.RawMessage(`{"secret":"only-for-the-owners"}`)}); err != nil {
		t.Fatal(err)
	}
	admin := f.login(adminToken)
	_, body = admin.get("/console?principal=bob")
	if !strings.Contains(body, theirs) || !strings.Contains(body, mine[:8]) && !strings.Contains(body, "alice") {
		t.Errorf("the admin's page for bob: want bob's subscription and alice listed")
	}
	admin.act(url.Values{"action": {"pause"}, "subscription": {theirs}, "principal": {"bob"}})
	if got := f.status("bob", theirs); got != mcpe.StatusPaused {
		t.Errorf("bob's subscription is %s after the admin paused it", got)
	}
}

func TestActionsNeedTheCSRFToken(t *testing.T) {
	f := newFixture(t)
	id := f.subscribe("alice", "gh.*")
	a := f.login("alice-token")
	for name, form := range map[string]url.Values{
		"no token":    {"action": {"pause"}, "subscription": {id}},
		"wrong token": {"action": {"pause"}, "subscription": {id}, "csrf": {"x" + a.csrf}},
	} {
		res, _ := a.post("/console/action", form)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s, want 403", name, res.Status)
		}
	}
	// Another session's token does not do either.
	other := f.login("alice-token")
	res, _ := a.post("/console/action", url.Values{"action": {"pause"}, "subscription": {id}, "csrf": {other.csrf}})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("another session's CSRF token: %s, want 403", res.Status)
	}
	// A cross-site request is refused before the console sees it.
	req, _ := http.NewRequest("POST", f.srv.URL+"/console/action", strings.NewReader(url.Values{"action": {"pause"}, "subscription": {id}, "csrf": {a.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := a.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST: %s, want 403", res.Status)
	}
	if got := f.status("alice", id); got != mcpe.StatusActive {
		t.Fatalf("paused without a valid CSRF token: %s", got)
	}
	a.act(url.Values{"action": {"pause"}, "subscription": {id}})
	if got := f.status("alice", id); got != mcpe.StatusPaused {
		t.Errorf("with the CSRF token: %s, want paused", got)
	}
}

func TestActions(t *testing.T) {
	f := newFixture(t)
	id := f.subscribe("alice", "gh.*")
	a := f.login("alice-token")
	for _, tc := range []struct {
		action string
		want   mcpe.Status
		flash  string
	}{
		{"pause", mcpe.StatusPaused, "Paused"},
		{"resume", mcpe.StatusActive, "Resumed"},
		{"fire", mcpe.StatusActive, "delivers in real time"},
	} {
		res, body := a.act(url.Values{"action": {tc.action}, "subscription": {id}})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, tc.flash) {
			t.Errorf("%s: %s, want the page with %q", tc.action, res.Status, tc.flash)
		}
		if got := f.status("alice", id); got != tc.want {
			t.Errorf("after %s: %s, want %s", tc.action, got, tc.want)
		}
	}
	res, err := f.svc.Publish(context.Background(), mcpe.Event{Type: "gh.push", Data: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := a.act(url.Values{"action": {"replay"}, "subscription": {id}, "event": {res.EventID}}); !strings.Contains(body, "Replayed event") {
		t.Errorf("replay: no confirmation on the page")
	}
	a.act(url.Values{"action": {"delete"}, "subscription": {id}})
	if _, err := f.svc.Get(context.Background(), "alice", id); err == nil {
		t.Errorf("the subscription is still there after delete")
	}
	for name, form := range map[string]url.Values{
		"unknown action":   {"action": {"drop"}, "subscription": {id}},
		"bad id":           {"action": {"pause"}, "subscription": {"<x>"}},
		"long id":          {"action": {"pause"}, "subscription": {strings.Repeat("a", 65)}},
		"bad event id":     {"action": {"replay"}, "subscription": {id}, "event": {"a b"}},
		"missing event id": {"action": {"replay"}, "subscription": {id}},
	} {
		if res, _ := a.act(form); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s, want 400", name, res.Status)
		}
	}
	admin := f.login(adminToken)
	if res, _ := admin.act(url.Values{"action": {"pause"}, "subscription": {id}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("an admin action without a principal: %s, want 400", res.Status)
	}
}

func TestEventDataIsEscaped(t *testing.T) {
	f := newFixture(t)
	f.subscribe("alice", "gh.*")
	hostile := `{"title":"<script>alert(1)</script><img src=x onerror=alert(2)>"}`
	if _, err := f.svc.Publish(context.Background(), mcpe.Event{Type: "gh.push", Data: json.RawMessage(hostile),
		Metadata: mcpe.Metadata{Tags: []string{`"><b>tag</b>`}}}); err != nil {
		t.Fatal(err)
	}
	a := f.login("alice-token")
	_, body := a.get("/console")
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") || strings.Contains(body, "<b>tag") {
		t.Errorf("event data reached the page unescaped:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the event's data is not on the page, escaped:\n%s", body)
	}
}

func TestNewNeedsSomeoneToLogIn(t *testing.T) {
	if _, err := console.New(console.Options{Service: &subscriptions.Service{}}); err == nil {
		t.Error("New without tokens or an admin token: no error")
	}
}

// TestCookieSecureBehindAProxy checks that the session cookie is Secure
// when the console is reached by a name other than loopback (through a TLS
// proxy, as the server serves no TLS), and not on loopback.
func TestCookieSecureBehindAProxy(t *testing.T) {
	f := newFixture(t)
	c, err := console.New(console.Options{Service: f.svc, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"console.example.com", true},
		{"console.example.com:8080", true},
		{"192.0.2.7:8080", true},
		{"localhost:8080", false},
		{"127.0.0.1:8080", false},
		{"[::1]:8080", false},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://"+tc.host+"/console/login", strings.NewReader(url.Values{"token": {"alice-token"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("login at %s: %d, %d cookies", tc.host, rec.Code, len(cookies))
		}
		if cookies[0].Secure != tc.want {
			t.Errorf("login at %s: cookie Secure %t, want %t", tc.host, cookies[0].Secure, tc.want)
		}
	}
}

// TestLoginGuessesLimited checks that wrong tokens may be tried only so
// fast, from one client address and from all together: past the limit a
// login, even with a right token, is answered 429 with when to retry.
func TestLoginGuessesLimited(t *testing.T) {
	f := newFixture(t)
	clk := clocktest.NewFake(time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC))
	c, err := console.New(console.Options{Service: f.svc, Tokens: tokens, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	login := func(addr, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/console/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = addr + ":4242"
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w
	}
	for i := range 10 {
		if w := login("192.0.2.1", "wrong"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d; want 401", i+1, w.Code)
		}
	}
	w := login("192.0.2.1", "alice-token")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "6" || !strings.Contains(w.Body.String(), "try again in 6 seconds") {
		t.Fatalf("a login after 10 wrong tokens: %d, Retry-After %q\n%s; want 429, retry in 6 seconds", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := login("192.0.2.2", "alice-token"); w.Code != http.StatusSeeOther {
		t.Errorf("a login from another address: %d; want it logged in", w.Code)
	}
	clk.Advance(6 * time.Second)
	if w := login("192.0.2.1", "alice-token"); w.Code != http.StatusSeeOther {
		t.Errorf("a login once the wait is over: %d; want it logged in", w.Code)
	}
	// From many addresses: 100 wrong tokens in all (with the 6 allowed
	// again over the last 6 seconds), then everyone waits.
	for i := range 96 {
		if w := login(fmt.Sprintf("198.51.100.%d", i), "wrong"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token from address %d: %d; want 401", i, w.Code)
		}
	}
	if w := login("203.0.113.1", "bob-token"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("a login after 100 wrong tokens in all: %d, Retry-After %q; want 429, retry in 1 second", w.Code, w.Header().Get("Retry-After"))
	}
}
