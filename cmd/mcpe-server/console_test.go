package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// consoleConfig has two principals, an ingest token and a console admin.
const consoleConfig = `
auth:
  tokens:
    - principal: alice
      token: alice-token
    - principal: bob
      token: bob-token
  ingestTokens:
    - token: ingest-token
console:
  token: console-admin-token-0123456789
`

// chromium returns the path of Chromium, or skips the test without it
// (fails under CI=true, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium is not installed; .ci/run installs Debian's chromium package")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); skipping the browser test")
	return ""
}

// newBrowser returns a chromedp context on a headless Chromium with a fresh
// profile, with the flags that work on a machine without network.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	return bctx
}

// publishEvent posts an event of type typ with priority high and returns
// its ID.
func publishEvent(t *testing.T, base, typ, data string) string {
	t.Helper()
	code, body := post(t, base, "ingest-token", fmt.Sprintf(`{"type": %q, "data": %s, "metadata": {"priority": "high", "tags": ["prod"]}}`, typ, data))
	if code != http.StatusAccepted {
		t.Fatalf("POST %s: %d %s", typ, code, body)
	}
	return acceptedID(t, body)
}

// TestConsoleInBrowser logs in to the console in headless Chromium, sees a
// subscription made over MCP, pauses it there, and checks that an event
// then no longer reaches it. With UPDATE_SCREENSHOT=1 it writes the page to
// docs/console.png.
func TestConsoleInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte(consoleConfig), 0o600)
	base, _, _ := startHTTPServer(t, "--config", cfg)

	alice := httpClient(t, base, "alice-token")
	bob := httpClient(t, base, "bob-token")
	sub := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"deploy.*"}, "priority": []string{"high", "critical"}}})
	fence := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"alert.*"}}})
	alice.Subscribe(t, map[string]any{
		"filter":   map[string]any{"eventTypes": []string{"github.**"}},
		"delivery": map[string]any{"channels": []string{"cron"}, "cronSchedule": map[string]any{"expression": "0 9 * * 1-5", "timezone": "Europe/Paris"}},
	})
	bobSub := bob.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"*"}}})

	first := publishEvent(t, base, "deploy.finished", `{"service": "api", "version": "1.4.2", "note": "<b>not bold</b>"}`)
	if _, ev := alice.NextEvent(t); ev.ID != first {
		t.Fatalf("alice got %s, want %s", ev.ID, first)
	}
	publishEvent(t, base, "github.pull_request.opened", `{"number": 42, "title": "Add the web console"}`)

	row := fmt.Sprintf(`tr.sub[data-id=%q]`, sub.ID)
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(`#token`),
		chromedp.SendKeys(`#token`, "alice-token"),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible(row),
	)
	if err != nil {
		t.Fatalf("log in and see the subscription: %v", err)
	}
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(`html`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, bobSub.ID) || !strings.Contains(html, fence.ID) {
		t.Errorf("alice's console shows bob's subscription, or not her own")
	}
	if !strings.Contains(html, "&lt;b&gt;not bold&lt;/b&gt;") {
		t.Errorf("the event's data is not on the page, escaped")
	}

	err = chromedp.Do(ctx,
		chromedp.Click(row+` button[value="pause"]`),
		chromedp.WaitVisible(`#flash`),
		chromedp.WaitVisible(row+`[data-status="paused"]`),
	)
	if err != nil {
		t.Fatalf("pause in the console: %v", err)
	}
	if delivered, err := chromedp.Run(ctx, chromedp.Text(row+` .delivered`)); err != nil || delivered != "1" {
		t.Errorf("delivered count before the second event = %q (%v), want 1", delivered, err)
	}

	// An event for the paused subscription no longer reaches alice: the
	// next notification she gets is the one after it, for the fence.
	publishEvent(t, base, "deploy.finished", `{"service": "api", "version": "1.4.3"}`)
	after := publishEvent(t, base, "alert.disk.full", `{"host": "db1", "used": "97%"}`)
	params, ev := alice.NextEvent(t)
	if ev.ID != after || params.SubscriptionID != fence.ID {
		t.Fatalf("alice got %s (%s) for %s; the paused subscription must get nothing", ev.ID, ev.Type, params.SubscriptionID)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(row)); err != nil {
		t.Fatal(err)
	}
	delivered, err := chromedp.Run(ctx, chromedp.Text(row+` .delivered`))
	if err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx, chromedp.AttributeValue(row, "data-status"))
	if err != nil {
		t.Fatal(err)
	}
	if delivered != "1" || status.Value != string(mcpe.StatusPaused) {
		t.Errorf("after an event for the paused subscription: delivered %q, status %q; want 1, paused", delivered, status.Value)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "console.png")
	if os.Getenv("UPDATE_SCREENSHOT") == "1" {
		shot = filepath.Join("..", "..", "docs", "console.png")
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(alice.Pending()); n != 0 {
		t.Errorf("alice has %d notifications more", n)
	}
}

// consoleClient is a console session outside a browser, for the checks a
// browser would not let a page make.
type consoleClient struct {
	t          *testing.T
	base, csrf string
	c          *http.Client
}

func consoleLogin(t *testing.T, base, token string) *consoleClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	cc := &consoleClient{t: t, base: base, c: &http.Client{Jar: jar}}
	code, body := cc.post("/console/login", url.Values{"token": {token}})
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("console login: %d\n%s", code, body)
	}
	cc.csrf = m[1]
	return cc
}

func (cc *consoleClient) post(path string, form url.Values) (int, string) {
	cc.t.Helper()
	resp, err := cc.c.PostForm(cc.base+path, form)
	if err != nil {
		cc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConsoleIsolationAndCSRF checks the console of the binary: the
// security headers, a principal that cannot see or act on another's
// subscriptions, and actions refused without the session's CSRF token.
func TestConsoleIsolationAndCSRF(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte(consoleConfig), 0o600)
	base, _, _ := startHTTPServer(t, "--config", cfg)
	alice := httpClient(t, base, "alice-token")
	sub := alice.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"a.*"}}})

	resp, err := http.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}

	bob := consoleLogin(t, base, "bob-token")
	if code, body := bob.post("/console", nil); code != http.StatusMethodNotAllowed || strings.Contains(body, sub.ID) {
		t.Errorf("POST /console: %d", code)
	}
	for _, action := range []string{"pause", "delete", "fire"} {
		code, body := bob.post("/console/action", url.Values{"csrf": {bob.csrf}, "action": {action}, "subscription": {sub.ID}, "principal": {"alice"}})
		if code != http.StatusOK || !strings.Contains(body, "not found") || strings.Contains(body, `data-id="`+sub.ID) {
			t.Errorf("bob's %s of alice's subscription: %d, want the page saying not found", action, code)
		}
	}
	a := consoleLogin(t, base, "alice-token")
	if code, _ := a.post("/console/action", url.Values{"action": {"pause"}, "subscription": {sub.ID}}); code != http.StatusForbidden {
		t.Errorf("an action without the CSRF token: %d, want 403", code)
	}
	var list mcpe.ListResult
	alice.MustCall(t, "events_list", map[string]any{}, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].Status != mcpe.StatusActive {
		t.Errorf("alice's subscriptions after refused actions: %+v", list.Subscriptions)
	}
}

// TestConsoleWithoutTokens checks the console of a server without
// auth.tokens: off without an admin token, the administrator's only with
// one, where each HTTP session's principal is listed.
func TestConsoleWithoutTokens(t *testing.T) {
	base, _, _ := startHTTPServer(t)
	resp, err := http.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /console without tokens or an admin token: %s, want 404", resp.Status)
	}

	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("console:\n  tokenEnv: TEST_CONSOLE_ADMIN\n"), 0o600)
	t.Setenv("TEST_CONSOLE_ADMIN", "console-admin-token-0123456789")
	base, _, _ = startHTTPServer(t, "--config", cfg)
	session := httpClient(t, base, "")
	sub := session.Subscribe(t, map[string]any{"filter": map[string]any{"eventTypes": []string{"a.*"}}})
	admin := consoleLogin(t, base, "console-admin-token-0123456789")
	resp, err = admin.c.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), sub.ID) || !strings.Contains(string(body), "session:") {
		t.Errorf("the admin's console does not list the session's principal and subscription:\n%s", body)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err = c.PostForm(base+"/console/login", url.Values{"token": {"anything"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with another token: %s, want 401", resp.Status)
	}
}
