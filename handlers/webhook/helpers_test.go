package webhook

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

type spec = mcpe.HandlerSpec

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// loopback allowlists the test servers' addresses.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}

// fakeResolver answers from a map; other names are not found.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// newSender returns a Sender closed when the test ends.
func newSender(t testing.TB, o *Options) *Sender {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// request is what a receiver got.
type request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// receiver is a test server that records its requests and answers with
// answer, or 200 {"ok":true} when answer is nil.
type receiver struct {
	*httptest.Server
	answer func(w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	reqs []request
}

func newReceiver(t testing.TB, tls bool, answer func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{r.Method, r.URL.Path, r.Header.Clone(), body})
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	rc.Server = httptest.NewUnstartedServer(h)
	rc.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes are expected
	if tls {
		rc.StartTLS()
	} else {
		rc.Start()
	}
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// port returns the server's port.
func (rc *receiver) port(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(rc.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// addr returns the server's address.
func (rc *receiver) addr(t testing.TB) netip.Addr {
	t.Helper()
	u, err := url.Parse(rc.URL)
	if err != nil {
		t.Fatal(err)
	}
	return netip.MustParseAddr(u.Hostname())
}

// testSecret is a fixed signing secret: 32 bytes 0x00..0x1f.
var testSecret = func() string {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	return SecretPrefix + b64(key)
}()

// invocation returns a delivery of payload to url with testSecret.
func invocation(url string, attempt int) *subscriptions.Invocation {
	return &subscriptions.Invocation{
		JobID:          "42",
		SubscriptionID: "sub_1",
		Principal:      "alice",
		Attempt:        attempt,
		Kind:           mcpe.InboxEvent,
		Event:          json.RawMessage(`{"type":"deploy.done","data":{"n":1}}`),
		Spec: &mcpe.HandlerSpec{
			Type: mcpe.HandlerWebhook,
			URL:  url,
		},
		Secrets: &subscriptions.WebhookSecrets{Current: testSecret},
	}
}

// httpOptions are options for plain-http tests on loopback.
func httpOptions(c clock.Clock) *Options {
	return &Options{AllowHTTP: true, AllowNetworks: loopback, Clock: c, Test: &testhook.Webhook{NoJitter: true}}
}
