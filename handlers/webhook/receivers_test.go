package webhook

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestVerifiedURLsValidate(t *testing.T) {
	long := "https://hooks.example.com/" + strings.Repeat("a", MaxVerifiedURLLen)
	many := make([]string, MaxVerifiedURLs+1)
	for i := range many {
		many[i] = fmt.Sprintf("https://h%d.example.com/", i)
	}
	for _, tc := range []struct {
		urls        []string
		field, want string
	}{
		{[]string{"http://hooks.example.com/"}, "verifiedURLs[0]", `uses the scheme "http"; SEP-3415 callback URLs are https only`},
		{[]string{"https://ok.example/", "hooks.example.com/x"}, "verifiedURLs[1]", "is not a URL prefix"},
		{[]string{"/hooks/"}, "verifiedURLs[0]", "is not a URL prefix"},
		{[]string{"https://u:p@hooks.example.com/"}, "verifiedURLs[0]", "contains user information"},
		{[]string{"https://hooks.example.com/?a=1"}, "verifiedURLs[0]", "has a query or a fragment"},
		{[]string{"https://hooks.example.com/#x"}, "verifiedURLs[0]", "has a query or a fragment"},
		{[]string{"https://hooks.example.com/a/../b"}, "verifiedURLs[0]", "segments"},
		{[]string{long}, "verifiedURLs[0]", fmt.Sprintf("at most %d are accepted", MaxVerifiedURLLen)},
		{many, "verifiedURLs", fmt.Sprintf("has %d entries; at most %d", MaxVerifiedURLs+1, MaxVerifiedURLs)},
	} {
		err := (&Options{VerifiedURLs: tc.urls}).Validate()
		var ie *mcpe.InvalidError
		if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(ie.Message, tc.want) {
			t.Errorf("VerifiedURLs %.80q: %v; want %s: ...%s...", tc.urls, err, tc.field, tc.want)
		}
	}
	if err := (&Options{VerifiedURLs: []string{"https://hooks.example.com", "https://[2001:db8::1]:8443/mcp/"}}).Validate(); err != nil {
		t.Errorf("valid VerifiedURLs: %v", err)
	}
}

func TestPreverified(t *testing.T) {
	s := newSender(t, &Options{VerifiedURLs: []string{"https://a.example/hooks", "https://B.example:8443/mcp/"}})
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"https://a.example/hooks", true},
		{"https://a.example/hooks/x", true},
		{"https://A.EXAMPLE:443/hooks/x?q=1", true},
		{"https://a.example/hooksX", false},
		{"https://a.example/hook", false},
		{"https://a.example/", false},
		{"https://a.example.evil.com/hooks", false},
		{"https://evil.com/a.example/hooks", false},
		{"http://a.example/hooks", false},
		{"https://a.example:8443/hooks", false},
		{"https://u@a.example/hooks", false},
		{"https://a.example/hooks/../admin", false},
		{"https://a.example/hooks%2fx", false},
		{"https://b.example:8443/mcp/", true},
		{"https://b.example:8443/mcp", false},
		{"https://b.example/mcp/x", false},
		{"::not a url", false},
	} {
		if got := s.Preverified(tc.url); got != tc.want {
			t.Errorf("Preverified(%q) = %v; want %v", tc.url, got, tc.want)
		}
	}
	if newSender(t, nil).Preverified("https://a.example/hooks") {
		t.Error("Preverified with no VerifiedURLs")
	}
}

// docServer is an https receiver origin that serves a receiver document
// (or what serve chooses) and counts the requests it got.
type docServer struct {
	*receiver
	mu    sync.Mutex
	serve func(w http.ResponseWriter, r *http.Request)
}

func newDocServer(t *testing.T) *docServer {
	d := &docServer{}
	d.receiver = newReceiver(t, true, func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		f := d.serve
		d.mu.Unlock()
		if f == nil || r.URL.Path != WellKnownPath {
			http.NotFound(w, r)
			return
		}
		f(w, r)
	})
	return d
}

func (d *docServer) set(f func(w http.ResponseWriter, r *http.Request)) {
	d.mu.Lock()
	d.serve = f
	d.mu.Unlock()
}

// document serves body with the Cache-Control cc ("" for none).
func document(body, cc string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// gets counts the GETs of the document d got.
func (d *docServer) gets() int {
	n := 0
	for _, r := range d.requests() {
		if r.Method == http.MethodGet && r.Path == WellKnownPath {
			n++
		}
	}
	return n
}

// tlsOptions trust d's certificate and allow loopback.
func (d *docServer) tlsOptions(c clock.Clock) *Options {
	pool := x509.NewCertPool()
	pool.AddCert(d.Certificate())
	return &Options{AllowNetworks: loopback, Clock: c, Test: &testhook.Webhook{RootCAs: pool, NoJitter: true}}
}

func TestReceiverDeclares(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
		path  string
		want  bool
	}{
		{"covered", document(`{"receivers":["/hooks/"]}`, ""), "/hooks/a", true},
		{"exact", document(`{"receivers":["/hooks"]}`, ""), "/hooks", true},
		{"under a prefix without slash", document(`{"receivers":["/hooks"]}`, ""), "/hooks/a/b", true},
		{"segment-aware", document(`{"receivers":["/hooks"]}`, ""), "/hooksX", false},
		{"not covered", document(`{"receivers":["/hooks/"]}`, ""), "/other/a", false},
		{"whole origin", document(`{"receivers":["/"], "note": "ignored"}`, ""), "/any/where", true},
		{"empty", document(`{"receivers":[]}`, ""), "/hooks/a", false},
		{"not found", nil, "/hooks/a", false},
		{"server error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }, "/hooks/a", false},
		{"not JSON", document(`<html>hi</html>`, ""), "/hooks/a", false},
		{"no receivers", document(`{"receiver":["/hooks/"]}`, ""), "/hooks/a", false},
		{"receivers not strings", document(`{"receivers":[1]}`, ""), "/hooks/a", false},
		{"relative prefix", document(`{"receivers":["hooks/"]}`, ""), "/hooks/a", false},
		{"absolute URL as prefix", document(`{"receivers":["https://evil.example/hooks/"]}`, ""), "/hooks/a", false},
		{"scheme-relative prefix", document(`{"receivers":["//evil.example/hooks/"]}`, ""), "/hooks/a", false},
		{"prefix with query", document(`{"receivers":["/hooks/?a"]}`, ""), "/hooks/a", false},
		{"one bad prefix spoils the document", document(`{"receivers":["/hooks/","/a/../b"]}`, ""), "/hooks/a", false},
		{"too many prefixes", document(`{"receivers":[`+strings.Repeat(`"/hooks/",`, MaxReceiverPrefixes)+`"/hooks/"]}`, ""), "/hooks/a", false},
		{"too large", document(`{"receivers":["/hooks/"],"pad":"`+strings.Repeat("x", MaxReceiverDocument)+`"}`, ""), "/hooks/a", false},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere.json", http.StatusFound)
		}, "/hooks/a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDocServer(t)
			d.set(tc.serve)
			s := newSender(t, d.tlsOptions(clocktest.NewFake(t0)))
			if got := s.ReceiverDeclares(ctx, d.URL+tc.path); got != tc.want {
				t.Errorf("ReceiverDeclares(%s) = %v; want %v", tc.path, got, tc.want)
			}
			reqs := d.requests()
			if len(reqs) != 1 || reqs[0].Method != http.MethodGet || reqs[0].Path != WellKnownPath {
				t.Errorf("requests %v; want one GET %s (and no redirect followed)", reqs, WellKnownPath)
			}
		})
	}
	// A URL that no prefix can cover costs no GET.
	d := newDocServer(t)
	d.set(document(`{"receivers":["/"]}`, ""))
	s := newSender(t, d.tlsOptions(clocktest.NewFake(t0)))
	for _, path := range []string{"/hooks/../admin", "/hooks/%2e%2e/admin", "/a%2fb"} {
		if s.ReceiverDeclares(ctx, d.URL+path) {
			t.Errorf("%s declared", path)
		}
	}
	if n := len(d.requests()); n != 0 {
		t.Errorf("%d requests for URLs no prefix covers; want none", n)
	}
}

// TestReceiverDeclaresCache: a document is cached per origin for its
// max-age, clamped; an origin without one for a minute; a lookup is made
// again once that has passed.
func TestReceiverDeclaresCache(t *testing.T) {
	ctx := context.Background()
	c := clocktest.NewFake(t0)
	d := newDocServer(t)
	d.set(document(`{"receivers":["/hooks/"]}`, "public, max-age=300"))
	s := newSender(t, d.tlsOptions(c))
	if !s.ReceiverDeclares(ctx, d.URL+"/hooks/a") || !s.ReceiverDeclares(ctx, d.URL+"/hooks/b") || s.ReceiverDeclares(ctx, d.URL+"/other") {
		t.Fatal("document not applied")
	}
	if n := d.gets(); n != 1 {
		t.Fatalf("%d GETs for three URLs of one origin; want 1", n)
	}
	// Withdrawn: still used until max-age is over.
	d.set(nil)
	c.Advance(299 * time.Second)
	if !s.ReceiverDeclares(ctx, d.URL+"/hooks/a") || d.gets() != 1 {
		t.Fatalf("within max-age: %d GETs", d.gets())
	}
	c.Advance(time.Second)
	if s.ReceiverDeclares(ctx, d.URL+"/hooks/a") || d.gets() != 2 {
		t.Fatalf("after max-age: %d GETs; want the document fetched again, and gone", d.gets())
	}
	// Negative: remembered for a minute.
	d.set(document(`{"receivers":["/hooks/"]}`, "max-age=1"))
	c.Advance(NegativeReceiverDocumentCache - time.Second)
	if s.ReceiverDeclares(ctx, d.URL+"/hooks/a") || d.gets() != 2 {
		t.Fatalf("within the negative cache: %d GETs", d.gets())
	}
	c.Advance(time.Second)
	if !s.ReceiverDeclares(ctx, d.URL+"/hooks/a") || d.gets() != 3 {
		t.Fatalf("after the negative cache: %d GETs", d.gets())
	}
	// max-age=1 is raised to the least lifetime.
	c.Advance(MinReceiverDocumentCache - time.Second)
	s.ReceiverDeclares(ctx, d.URL+"/hooks/a")
	if n := d.gets(); n != 3 {
		t.Fatalf("max-age=1 cached for less than %v: %d GETs", MinReceiverDocumentCache, n)
	}
}

// TestReceiverDeclaresOrigin: a document speaks only for its own origin.
func TestReceiverDeclaresOrigin(t *testing.T) {
	ctx := context.Background()
	a, b := newDocServer(t), newDocServer(t)
	a.set(document(`{"receivers":["/hooks/"]}`, ""))
	o := a.tlsOptions(clocktest.NewFake(t0))
	o.Test.RootCAs.AddCert(b.Certificate())
	s := newSender(t, o)
	if !s.ReceiverDeclares(ctx, a.URL+"/hooks/x") {
		t.Fatal("a's own URL not covered")
	}
	// b is another origin (the same host, another port): a's document,
	// cached, does not cover it; b's own is looked up, and it has none.
	if s.ReceiverDeclares(ctx, b.URL+"/hooks/x") {
		t.Fatal("a's document covers b")
	}
	if a.gets() != 1 || b.gets() != 1 {
		t.Fatalf("GETs: a %d, b %d; want 1 each", a.gets(), b.gets())
	}
	// The same server by another name is another origin too: its
	// document is looked up again, not taken from the cache.
	named := *o
	named.Test = &testhook.Webhook{RootCAs: o.Test.RootCAs, Resolver: fakeResolver{"example.com": {a.addr(t)}}} // a name a's certificate has
	s = newSender(t, &named)
	if !s.ReceiverDeclares(ctx, a.URL+"/hooks/x") || !s.ReceiverDeclares(ctx, "https://example.com:"+a.port(t)+"/hooks/x") {
		t.Fatal("a's document not applied under either name")
	}
	if n := a.gets(); n != 3 {
		t.Fatalf("a got %d GETs; want 3 (one more per name)", n)
	}
}

// TestReceiverDeclaresGuarded: the document is fetched like a delivery:
// only over https, to an address the guard allows, and not at all when
// the operator turned the lookup off.
func TestReceiverDeclaresGuarded(t *testing.T) {
	ctx := context.Background()
	d := newDocServer(t)
	d.set(document(`{"receivers":["/"]}`, ""))
	o := d.tlsOptions(clocktest.NewFake(t0))

	strict := *o
	strict.AllowNetworks = nil
	strict.Test = &testhook.Webhook{RootCAs: o.Test.RootCAs, Resolver: fakeResolver{"receiver.test": {d.addr(t)}}}
	s := newSender(t, &strict)
	if s.ReceiverDeclares(ctx, d.URL+"/x") || s.ReceiverDeclares(ctx, "https://receiver.test:"+d.port(t)+"/x") {
		t.Fatal("a loopback origin declared without allowNetworks")
	}

	plain := *o
	plain.AllowHTTP = true
	if newSender(t, &plain).ReceiverDeclares(ctx, strings.Replace(d.URL, "https:", "http:", 1)+"/x") {
		t.Fatal("an http URL declared")
	}
	if n := len(d.requests()); n != 0 {
		t.Fatalf("the origin got %d requests; want none", n)
	}
}

func TestCacheLifetime(t *testing.T) {
	for cc, want := range map[string]time.Duration{
		"":                          DefaultReceiverDocumentCache,
		"public":                    DefaultReceiverDocumentCache,
		"max-age=600":               10 * time.Minute,
		"public, MAX-AGE=\"3600\"":  time.Hour,
		"max-age=0":                 MinReceiverDocumentCache,
		"max-age=5":                 MinReceiverDocumentCache,
		"max-age=-5":                MinReceiverDocumentCache,
		"max-age=x":                 MinReceiverDocumentCache,
		"max-age=31536000":          MaxReceiverDocumentCache,
		"max-age=99999999999999999": MaxReceiverDocumentCache,
		"no-store":                  MinReceiverDocumentCache,
		"max-age=600, no-cache":     MinReceiverDocumentCache,
	} {
		if got := cacheLifetime(cc); got != want {
			t.Errorf("cacheLifetime(%q) = %v; want %v", cc, got, want)
		}
	}
}

func FuzzParseReceiverDoc(f *testing.F) {
	for _, s := range []string{`{"receivers":["/hooks/"]}`, `{"receivers":["/a/../b","//x"]}`, `{"receivers":null}`, `[]`, `{"receivers":["/%2f"]}`} {
		f.Add(s)
	}
	origin := urlPrefix{scheme: "https", host: "a.example", port: 443, path: "/"}
	f.Fuzz(func(t *testing.T, body string) {
		prefixes, err := parseReceiverDoc([]byte(body), "a.example", origin)
		if err != nil {
			return
		}
		if len(prefixes) > MaxReceiverPrefixes {
			t.Fatalf("%d prefixes", len(prefixes))
		}
		for _, p := range prefixes {
			if p.scheme != origin.scheme || p.host != origin.host || p.port != origin.port || !strings.HasPrefix(p.path, "/") {
				t.Fatalf("prefix %+v outside the origin", p)
			}
		}
	})
}

// TestReceiverDeclaresOneLookup: callers asking for an origin whose
// document is being fetched wait for that lookup instead of making their
// own.
func TestReceiverDeclaresOneLookup(t *testing.T) {
	ctx := context.Background()
	d := newDocServer(t)
	arrived, release := make(chan struct{}, 16), make(chan struct{})
	d.set(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		document(`{"receivers":["/hooks/"]}`, "")(w, r)
	})
	s := newSender(t, d.tlsOptions(clocktest.NewFake(t0)))
	const callers = 8
	results := make(chan bool, callers)
	go func() { results <- s.ReceiverDeclares(ctx, d.URL+"/hooks/0") }()
	<-arrived
	for i := 1; i < callers; i++ {
		go func() { results <- s.ReceiverDeclares(ctx, fmt.Sprintf("%s/hooks/%d", d.URL, i)) }()
	}
	// Give the others time to ask while the first lookup is in flight;
	// whenever they ask, they must not fetch again.
	time.Sleep(100 * time.Millisecond)
	close(release)
	for range callers {
		if !<-results {
			t.Fatal("a caller was not answered from the lookup")
		}
	}
	if n := d.gets(); n != 1 {
		t.Fatalf("%d GETs for %d concurrent callers; want 1", n, callers)
	}
}

// TestReceiverDeclaresCallerGivesUp: a lookup whose caller gave up is not
// cached as a missing document.
func TestReceiverDeclaresCallerGivesUp(t *testing.T) {
	d := newDocServer(t)
	d.set(document(`{"receivers":["/hooks/"]}`, ""))
	s := newSender(t, d.tlsOptions(clocktest.NewFake(t0)))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if s.ReceiverDeclares(cancelled, d.URL+"/hooks/a") {
		t.Fatal("declared for a caller that gave up")
	}
	if !s.ReceiverDeclares(context.Background(), d.URL+"/hooks/a") {
		t.Fatal("the caller that gave up left a missing document in the cache")
	}
}
