package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

func TestPost(t *testing.T) {
	c := clocktest.NewFake(time.Now())
	var got http.Header
	var body []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ = io.ReadAll(r.Body)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	}))
	defer ts.Close()
	s, err := New(httpOptions(c))
	if err != nil {
		t.Fatal(err)
	}
	m := &Message{URL: ts.URL + "/hook", ID: "evt_1", Secrets: []string{testSecret},
		Header: http.Header{"X-Mcp-Subscription-Id": {"sub_9"}, "Webhook-Id": {"forged"}}, Body: []byte(`{"a":1}`)}
	resp, err := s.Post(context.Background(), m)
	if err != nil || resp.Status != http.StatusServiceUnavailable || string(resp.Body) != "busy" || resp.RetryAfter != 7*time.Second {
		t.Fatalf("Post: %+v, %v", resp, err)
	}
	if got.Get("X-MCP-Subscription-Id") != "sub_9" || got.Get(HeaderID) != "evt_1" || got.Get("Content-Type") != "application/json" {
		t.Fatalf("headers: %v", got)
	}
	if err := Verify(testSecret, got, body, c.Now()); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// A redirect is answered, not followed.
	m.URL = ts.URL + "/moved"
	if resp, err := s.Post(context.Background(), m); err != nil || resp.Status != http.StatusFound {
		t.Fatalf("redirect: %+v, %v", resp, err)
	}

	// Without the operator's allowlist, loopback is refused: a literal
	// address by the URL check, a name when dialled.
	strict, err := New(&Options{AllowHTTP: true, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	m.URL = ts.URL + "/hook"
	if _, err := strict.Post(context.Background(), m); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("literal loopback: %v", err)
	}
	m.URL = strings.Replace(ts.URL, "127.0.0.1", "localhost", 1) + "/hook"
	if _, err := strict.Post(context.Background(), m); !IsRefused(err) {
		t.Fatalf("localhost: %v; want a refused address", err)
	}
	if err := strict.CheckURL("http://10.0.0.1/x"); err == nil {
		t.Fatal("CheckURL of a private address: no error")
	}
}

// TestPostSignsForWholeSecretKeys: besides the signatures of the SEP and
// Standard Webhooks (keyed with the decoded bytes after whsec_, which
// Verify checks), a Message carries one per secret keyed with the whole
// whsec_ text, as some receivers compute it (mcpkit's Go events client
// does), so that their deliveries verify too: the spec's first, in the
// order of the secrets, then those.
func TestPostSignsForWholeSecretKeys(t *testing.T) {
	c := clocktest.NewFake(time.Unix(1700000000, 0))
	var got http.Header
	var body []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ = io.ReadAll(r.Body)
	}))
	defer ts.Close()
	s := newSender(t, httpOptions(c))
	urlSafe := SecretPrefix + base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xef\xbe\xff", 8)))
	secrets := []string{urlSafe, testSecret}
	if _, err := s.Post(context.Background(), &Message{URL: ts.URL + "/hook", ID: "evt_1", Secrets: secrets, Body: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	for _, sec := range secrets {
		if err := Verify(sec, got, body, c.Now()); err != nil {
			t.Errorf("Verify with %s: %v", sec, err)
		}
	}
	var want []string
	for _, sec := range secrets {
		sig, err := Sign(sec, "evt_1", c.Now(), body)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, sig)
	}
	for _, sec := range secrets {
		m := hmac.New(sha256.New, []byte(sec))
		m.Write([]byte("evt_1.1700000000." + string(body)))
		want = append(want, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	if diff := cmp.Diff(want, strings.Fields(got.Get(HeaderSignature))); diff != "" {
		t.Errorf("webhook-signature mismatch (-want +got):\n%s", diff)
	}
}
