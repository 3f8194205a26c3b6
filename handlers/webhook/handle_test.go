package webhook

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func TestHandleSends(t *testing.T) {
	rc := newReceiver(t, false, nil)
	clk := clocktest.NewFake(t0)
	o := httpOptions(clk)
	o.Secrets = map[string]Secret{"TOKEN": {Value: "s3cr3t", URLs: []string{rc.URL + "/hooks/"}}}
	s := newSender(t, o)

	inv := invocation(rc.URL+"/hooks/mcpe?x=1", 1)
	inv.Spec.Headers = map[string]string{
		"Authorization": "Bearer ${TOKEN}",
		"x-literal":     "$TOKEN",
		"User-Agent":    "custom/1",
	}
	out := s.Handle(t.Context(), inv)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if diff := cmp.Diff(subscriptions.Outcome{Output: `200 OK: {"ok":true}`}, out); diff != "" {
		t.Errorf("outcome mismatch (-want +got):\n%s", diff)
	}
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("the receiver got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	ts := strconv.FormatInt(t0.Unix(), 10)
	type seen struct {
		Method, Path, Body                          string
		ContentType, ID, Timestamp, Signature       string
		UserAgent, Authorization, Literal, Encoding string
	}
	got := seen{r.Method, r.Path, string(r.Body),
		r.Header.Get("Content-Type"), r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"),
		r.Header.Get("User-Agent"), r.Header.Get("Authorization"), r.Header.Get("X-Literal"), r.Header.Get("Accept-Encoding")}
	want := seen{"POST", "/hooks/mcpe", `{"type":"deploy.done","data":{"n":1}}`,
		"application/json", "msg_sub1_42", ts, hmacSignature(t, testSecret, "msg_sub1_42", ts, r.Body),
		"custom/1", "Bearer s3cr3t", "$TOKEN", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request mismatch (-want +got):\n%s", diff)
	}
	if err := Verify(testSecret, r.Header, r.Body, clk.Now()); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestHandleUserAgent(t *testing.T) {
	rc := newReceiver(t, false, nil)
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	if o := s.Handle(t.Context(), invocation(rc.URL, 1)); o.Err != nil {
		t.Fatal(o.Err)
	}
	if got := rc.requests()[0].Header.Get("User-Agent"); got != userAgent {
		t.Errorf("User-Agent = %q, want %q", got, userAgent)
	}
}

func TestHandleStableIDAcrossAttempts(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	clk := clocktest.NewFake(t0)
	s := newSender(t, httpOptions(clk))
	var wantTS []string
	for attempt := 1; attempt <= 3; attempt++ {
		o := s.Handle(t.Context(), invocation(rc.URL, attempt))
		if o.RetryIn <= 0 {
			t.Fatalf("attempt %d: %+v, want a retry", attempt, o)
		}
		wantTS = append(wantTS, strconv.FormatInt(clk.Now().Unix(), 10))
		clk.Advance(o.RetryIn)
	}
	var ids, tss []string
	for _, r := range rc.requests() {
		ids = append(ids, r.Header.Get("webhook-id"))
		tss = append(tss, r.Header.Get("webhook-timestamp"))
		if err := Verify(testSecret, r.Header, r.Body, time.Unix(mustInt(t, r.Header.Get("webhook-timestamp")), 0)); err != nil {
			t.Errorf("Verify: %v", err)
		}
	}
	if diff := cmp.Diff([]string{"msg_sub1_42", "msg_sub1_42", "msg_sub1_42"}, ids); diff != "" {
		t.Errorf("webhook-id mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantTS, tss); diff != "" {
		t.Errorf("webhook-timestamp mismatch (-want +got):\n%s", diff)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHandleRotation(t *testing.T) {
	rc := newReceiver(t, false, nil)
	clk := clocktest.NewFake(t0)
	s := newSender(t, httpOptions(clk))
	current, previous := subscriptions.NewWebhookSecret(), subscriptions.NewWebhookSecret()
	until := t0.Add(time.Hour)
	inv := invocation(rc.URL, 1)
	inv.Secrets = &subscriptions.WebhookSecrets{Current: current, Previous: previous, PreviousUntil: &until}

	for _, n := range []int{2, 1} { // in the grace period, then after it
		if o := s.Handle(t.Context(), inv); o.Err != nil {
			t.Fatal(o.Err)
		}
		reqs := rc.requests()
		r := reqs[len(reqs)-1]
		ts := r.Header.Get("webhook-timestamp")
		sigs := strings.Split(r.Header.Get("webhook-signature"), " ")
		want := []string{hmacSignature(t, current, "msg_sub1_42", ts, r.Body), hmacSignature(t, previous, "msg_sub1_42", ts, r.Body)}[:n]
		if diff := cmp.Diff(want, sigs); diff != "" {
			t.Errorf("signatures mismatch (-want +got):\n%s", diff)
		}
		for _, secret := range []string{current, previous}[:n] {
			if err := Verify(secret, r.Header, r.Body, clk.Now()); err != nil {
				t.Errorf("Verify: %v", err)
			}
		}
		clk.Advance(time.Hour)
	}
}

func TestHandleBatch(t *testing.T) {
	rc := newReceiver(t, false, nil)
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	inv := invocation(rc.URL, 1)
	inv.Kind = mcpe.InboxBatch
	inv.Event = nil
	inv.Events = []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)}
	inv.Remaining = 3
	if o := s.Handle(t.Context(), inv); o.Err != nil {
		t.Fatal(o.Err)
	}
	r := rc.requests()[0]
	if diff := cmp.Diff(string(inv.Payload()), string(r.Body)); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(r.Body), `"events":[{"n":1},{"n":2}]`) {
		t.Errorf("body %s does not hold the events", r.Body)
	}
	if err := Verify(testSecret, r.Header, r.Body, t0); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestHandleTLS(t *testing.T) {
	rc := newReceiver(t, true, nil)
	roots := x509.NewCertPool()
	roots.AddCert(rc.Certificate())
	clk := clocktest.NewFake(t0)
	s := newSender(t, &Options{
		AllowNetworks: loopback,
		Clock:         clk,
		// httptest's certificate is for 127.0.0.1, ::1 and example.com.
		Test: &testhook.Webhook{RootCAs: roots, Resolver: fakeResolver{"example.com": {rc.addr(t)}}},
	})
	for _, u := range []string{rc.URL + "/hook", "https://example.com:" + rc.port(t) + "/hook"} {
		o := s.Handle(t.Context(), invocation(u, 1))
		if o.Err != nil {
			t.Fatalf("Handle(%s): %v", u, o.Err)
		}
	}
	for _, r := range rc.requests() {
		if err := Verify(testSecret, r.Header, r.Body, clk.Now()); err != nil {
			t.Errorf("Verify: %v", err)
		}
	}

	// Without the test CA the certificate is not trusted: a network
	// failure, retried.
	untrusting := newSender(t, &Options{AllowNetworks: loopback, Clock: clk, Test: &testhook.Webhook{NoJitter: true}})
	o := untrusting.Handle(t.Context(), invocation(rc.URL+"/hook", 1))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "certificate") || o.RetryIn != 5*time.Second {
		t.Errorf("Handle with an untrusted certificate = %+v, want a certificate error retried in 5s", o)
	}
	if n := len(rc.requests()); n != 2 {
		t.Errorf("the receiver got %d requests, want 2", n)
	}
}

func TestHandleBadInput(t *testing.T) {
	rc := newReceiver(t, false, nil)
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	strict := newSender(t, &Options{Clock: clocktest.NewFake(t0)})
	mod := func(f func(inv *subscriptions.Invocation)) *subscriptions.Invocation {
		inv := invocation(rc.URL, 1)
		f(inv)
		return inv
	}
	tests := []struct {
		name   string
		sender *Sender
		inv    *subscriptions.Invocation
		want   string
	}{
		{"nil invocation", s, nil, "no handler"},
		{"nil spec", s, mod(func(inv *subscriptions.Invocation) { inv.Spec = nil }), "no handler"},
		{"no payload", s, mod(func(inv *subscriptions.Invocation) { inv.Event = nil }), "no payload"},
		{"bad batch", s, mod(func(inv *subscriptions.Invocation) {
			inv.Kind = mcpe.InboxBatch
			inv.Events = []json.RawMessage{json.RawMessage(`{`)}
		}), "no payload"},
		{"no secrets", s, mod(func(inv *subscriptions.Invocation) { inv.Secrets = nil }), "no signing secret"},
		{"empty secret", s, mod(func(inv *subscriptions.Invocation) { inv.Secrets.Current = "" }), "no signing secret"},
		{"bad secret", s, mod(func(inv *subscriptions.Invocation) { inv.Secrets.Current = "hunter2" }), "whsec_"},
		{"bad previous secret", s, mod(func(inv *subscriptions.Invocation) {
			until := t0.Add(time.Hour)
			inv.Secrets.Previous, inv.Secrets.PreviousUntil = "x", &until
		}), "previous signing secret"},
		{"http not allowed", strict, invocation(rc.URL, 1), "https is required"},
		{"unknown secret in header", s, mod(func(inv *subscriptions.Invocation) {
			inv.Spec.Headers = map[string]string{"Authorization": "${GONE}"}
		}), "cannot be filled in for this URL"},
		{"dotted job id", s, mod(func(inv *subscriptions.Invocation) { inv.JobID = "1.2" }), "webhook-id"},
		{"empty job id", s, mod(func(inv *subscriptions.Invocation) { inv.JobID = "" }), "webhook-id"},
		{"attempt zero", s, mod(func(inv *subscriptions.Invocation) { inv.Attempt = 0 }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.sender.Handle(t.Context(), tt.inv)
			if tt.want == "" {
				if o.Err != nil {
					t.Errorf("Handle: %v", o.Err)
				}
				return
			}
			if o.Err == nil || !strings.Contains(o.Err.Error(), tt.want) || o.RetryIn != 0 || o.Disable {
				t.Errorf("Handle = %+v, want an error saying %q, no retry", o, tt.want)
			}
		})
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1 (attempt zero)", n)
	}
}

func TestHandleTimeout(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server closes
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	inv := invocation(rc.URL, 1)
	inv.Spec.Timeout = 200
	o := s.Handle(t.Context(), inv)
	if o.Err == nil || !strings.Contains(o.Err.Error(), "did not answer within 200ms") || o.RetryIn != 5*time.Second {
		t.Errorf("Handle = %+v, want a timeout retried in 5s", o)
	}
}

func TestHandleConnectionRefused(t *testing.T) {
	rc := newReceiver(t, false, nil)
	url := rc.URL
	rc.Close()
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	o := s.Handle(t.Context(), invocation(url, 2))
	if o.Err == nil || o.RetryIn != 30*time.Second {
		t.Errorf("Handle = %+v, want a network error retried in 30s", o)
	}
	o = s.Handle(t.Context(), invocation(url, 6))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "gave up after 6 attempts") || o.RetryIn != 0 {
		t.Errorf("Handle = %+v, want given up after 6 attempts", o)
	}
}

func TestHandleUnknownHost(t *testing.T) {
	s := newSender(t, &Options{AllowHTTP: true, Clock: clocktest.NewFake(t0), Test: &testhook.Webhook{Resolver: fakeResolver{}, NoJitter: true}})
	noDial(s)
	o := s.Handle(t.Context(), invocation("http://nowhere.test/", 1))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "nowhere.test") || o.RetryIn != 5*time.Second {
		t.Errorf("Handle = %+v, want a lookup failure retried in 5s", o)
	}
}

func TestHandleReadsBoundedBody(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "\x00héllo\n\tworld "+big)
	})
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	for range 3 {
		o := s.Handle(t.Context(), invocation(rc.URL, 1))
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if !strings.HasPrefix(o.Output, "200 OK: héllo world xxx") || len(o.Output) > maxOutput+40 {
			t.Errorf("Output = %q (%d bytes), want a short single-line prefix", o.Output, len(o.Output))
		}
	}
}

func TestHandleContextCanceled(t *testing.T) {
	rc := newReceiver(t, false, nil)
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	o := s.Handle(ctx, invocation(rc.URL, 1))
	if !errors.Is(o.Err, context.Canceled) || o.RetryIn <= 0 {
		t.Errorf("Handle = %+v, want context.Canceled with a retry", o)
	}
}

func TestAddressErrorText(t *testing.T) {
	e := &AddressError{Host: "evil.test", Addr: netip.MustParseAddr("127.0.0.1"), Range: "loopback 127.0.0.0/8"}
	want := `address 127.0.0.1 (resolved from "evil.test") is loopback 127.0.0.0/8, which webhooks may not reach; use a public address, or ask the operator to allowlist it in handlers.webhook.allowNetworks`
	if diff := cmp.Diff(want, e.Error()); diff != "" {
		t.Errorf("Error mismatch (-want +got):\n%s", diff)
	}
}

func TestHandleReusesConnections(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("y", 10<<10)) // longer than what is shown
	})
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	var dials atomic.Int32
	dial := s.dial
	s.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, address)
	}
	for range 20 {
		if o := s.Handle(t.Context(), invocation(rc.URL, 1)); o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("20 sequential deliveries dialled %d times, want 1", n)
	}
}
