package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
)

// refusedAddrs has one address of each refused range, and the range's name.
var refusedAddrs = []struct {
	addr, rng string
}{
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "unspecified"},
	{"10.1.2.3", "private 10.0.0.0/8"},
	{"100.64.0.1", "CGNAT"},
	{"127.0.0.1", "loopback 127.0.0.0/8"},
	{"127.255.255.254", "loopback"},
	{"169.254.169.254", "link-local"},
	{"172.16.0.1", "private 172.16.0.0/12"},
	{"172.31.255.255", "private 172.16.0.0/12"},
	{"192.0.0.8", "IETF protocol assignments"},
	{"192.0.2.1", "documentation"},
	{"192.88.99.1", "6to4 relay anycast"},
	{"192.168.1.1", "private 192.168.0.0/16"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"198.51.100.7", "documentation"},
	{"203.0.113.9", "documentation"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},

	{"::", "unspecified"},
	{"::1", "loopback ::1/128"},
	{"::127.0.0.1", "IPv4-compatible"},
	{"::ffff:127.0.0.1", "loopback 127.0.0.0/8"},
	{"::ffff:10.0.0.1", "private 10.0.0.0/8"},
	{"::ffff:169.254.169.254", "link-local"},
	{"64:ff9b::a00:1", "NAT64"},
	{"64:ff9b:1::1", "NAT64"},
	{"100::1", "discard-only"},
	{"2001::1", "Teredo"},
	{"2001:2::1", "IETF protocol assignments"},
	{"2001:db8::1", "documentation"},
	{"2002:7f00:1::1", "6to4"},
	{"3fff::1", "documentation"},
	{"5f00::1", "segment routing"},
	{"fc00::1", "unique-local"},
	{"fd12:3456::1", "unique-local"},
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"fec0::1", "site-local"},
	{"ff02::1", "multicast"},
	{"4000::1", "outside IPv6 global unicast"},
}

// publicAddrs are globally reachable.
var publicAddrs = []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450::1", "::ffff:8.8.8.8"}

func TestCheckRefusesSpecialAddresses(t *testing.T) {
	s := newSender(t, nil)
	for _, tt := range refusedAddrs {
		t.Run(tt.addr, func(t *testing.T) {
			host := tt.addr
			if strings.Contains(host, ":") {
				host = "[" + strings.Replace(host, "%", "%25", 1) + "]"
			}
			plain := netip.MustParseAddr(tt.addr).Unmap().WithZone("").String()
			want := &checkResult{"handler.url", []string{"host " + plain + " ", tt.rng, "allowNetworks"}}
			got := checkOf(s.Check(t.Context(), "alice", &spec{URL: "https://" + host + "/hook"}))
			if diff := cmp.Diff(want, keepSaid(want, got)); diff != "" {
				t.Errorf("Check mismatch (-want +got):\n%s", diff)
			}
		})
	}
	for _, a := range publicAddrs {
		host := a
		if strings.Contains(a, ":") {
			host = "[" + a + "]"
		}
		if err := s.Check(t.Context(), "alice", &spec{URL: "https://" + host + "/hook"}); err != nil {
			t.Errorf("Check(%s) = %v, want nil", a, err)
		}
	}
}

func TestAllowNetworks(t *testing.T) {
	s := newSender(t, &Options{AllowNetworks: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::ffff:127.0.0.1/128"), // taken as 127.0.0.1/32
		netip.MustParsePrefix("fd00::/8"),
	}})
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"10.1.2.3", true},
		{"::ffff:10.1.2.3", true},
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true},
		{"127.0.0.2", false},
		{"::1", false},
		{"fd12::1", true},
		{"fc00::1", false},
		{"192.168.0.1", false},
		{"8.8.8.8", true},
	}
	for _, tt := range tests {
		err := s.checkAddr("", netip.MustParseAddr(tt.addr))
		if (err == nil) != tt.allowed {
			t.Errorf("checkAddr(%s) = %v, want allowed %v", tt.addr, err, tt.allowed)
		}
	}
}

// noDial replaces s's dial with one that records its calls and connects
// nowhere.
func noDial(s *Sender) func() []string {
	var mu sync.Mutex
	var dialed []string
	s.dial = func(_ context.Context, _, address string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		dialed = append(dialed, address)
		return nil, errors.New("test: no dialing")
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return dialed
	}
}

func TestHandleRefusesResolvedAddresses(t *testing.T) {
	for _, https := range []bool{false, true} {
		for _, tt := range refusedAddrs {
			t.Run(tt.addr, func(t *testing.T) {
				a := netip.MustParseAddr(tt.addr)
				s := newSender(t, &Options{
					AllowHTTP: true,
					Clock:     clocktest.NewFake(t0),
					Test:      &testhook.Webhook{Resolver: fakeResolver{"target.test": {a}}},
				})
				dialed := noDial(s)
				u := "http://target.test:8080/hook"
				if https {
					u = "https://target.test/hook"
				}
				o := s.Handle(t.Context(), invocation(u, 1))
				ae, ok := isRefused(o.Err)
				if !ok {
					t.Fatalf("Handle error = %v, want an *AddressError", o.Err)
				}
				got := struct {
					Addr    netip.Addr
					Host    string
					InRange bool
					RetryIn int64
					Dialed  []string
				}{ae.Addr, ae.Host, strings.Contains(ae.Range, tt.rng), int64(o.RetryIn), dialed()}
				want := got
				want.Addr, want.Host, want.InRange, want.RetryIn, want.Dialed = a.Unmap().WithZone(""), "target.test", true, 0, nil
				if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
					t.Errorf("refusal mismatch (-want +got):\n%s", diff)
				}
				for _, part := range []string{ae.Addr.String(), "target.test", "allowNetworks"} {
					if !strings.Contains(o.Err.Error(), part) {
						t.Errorf("error %q does not mention %q", o.Err, part)
					}
				}
			})
		}
	}
}

func TestHandleLiteralRefusedAtDialToo(t *testing.T) {
	// Check refuses literals, but Handle must not rely on it having run.
	s := newSender(t, &Options{AllowHTTP: true, Clock: clocktest.NewFake(t0)})
	dialed := noDial(s)
	c, err := s.dialContext(t.Context(), "tcp", "[::ffff:127.0.0.1]:80")
	if _, ok := isRefused(err); !ok || c != nil {
		t.Errorf("dialContext(::ffff:127.0.0.1) = %v, %v; want an *AddressError", c, err)
	}
	if d := dialed(); d != nil {
		t.Errorf("dialed %v", d)
	}
}

func TestHostnameToLoopbackNotAllowlisted(t *testing.T) {
	rc := newReceiver(t, false, nil)
	s := newSender(t, &Options{
		AllowHTTP: true,
		Clock:     clocktest.NewFake(t0),
		Test:      &testhook.Webhook{Resolver: fakeResolver{"evil.test": {rc.addr(t)}}},
	})
	o := s.Handle(t.Context(), invocation("http://evil.test:"+rc.port(t)+"/hook", 1))
	if _, ok := isRefused(o.Err); !ok || o.RetryIn != 0 {
		t.Errorf("Handle = %+v, want an *AddressError and no retry", o)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}
}

func TestMixedResolutionDialsOnlyAllowed(t *testing.T) {
	rc := newReceiver(t, false, nil)
	s := newSender(t, &Options{
		AllowHTTP:     true,
		AllowNetworks: loopback,
		Clock:         clocktest.NewFake(t0),
		Test:          &testhook.Webhook{Resolver: fakeResolver{"mixed.test": {netip.MustParseAddr("10.9.9.9"), netip.MustParseAddr("169.254.169.254"), rc.addr(t)}}},
	})
	var mu sync.Mutex
	var dialed []string
	dial := s.dial
	s.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		return dial(ctx, network, address)
	}
	o := s.Handle(t.Context(), invocation("http://mixed.test:"+rc.port(t)+"/hook", 1))
	if o.Err != nil {
		t.Fatalf("Handle: %v", o.Err)
	}
	want := []string{net.JoinHostPort(rc.addr(t).String(), rc.port(t))}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, dialed); diff != "" {
		t.Errorf("dialed mismatch (-want +got):\n%s", diff)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
}

func TestControlGuard(t *testing.T) {
	s := newSender(t, &Options{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("192.168.7.0/24")}})
	tests := []struct {
		address string
		refused bool
	}{
		{"127.0.0.1:80", true},
		{"[::1]:443", true},
		{"[::ffff:127.0.0.1]:443", true},
		{"[fe80::1%eth0]:443", true},
		{"169.254.169.254:80", true},
		{"192.168.7.9:80", false},
		{"93.184.216.34:443", false},
		{"[2606:4700::1111]:443", false},
		{"not-an-address:80", true},
	}
	for _, tt := range tests {
		if err := s.control("tcp", tt.address, nil); (err != nil) != tt.refused {
			t.Errorf("control(%s) = %v, want refused %v", tt.address, err, tt.refused)
		}
	}
}

func TestControlGuardsRealDial(t *testing.T) {
	// The resolver check is bypassed: the dialer's Control still refuses.
	rc := newReceiver(t, false, nil)
	s := newSender(t, &Options{AllowHTTP: true, Clock: clocktest.NewFake(t0)})
	c, err := s.dial(t.Context(), "tcp", rc.Listener.Addr().String())
	if err == nil {
		c.Close()
	}
	if _, ok := isRefused(err); !ok {
		t.Errorf("dial(%s) = %v, want an *AddressError from Control", rc.Listener.Addr(), err)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, "/other", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	o := s.Handle(t.Context(), invocation(rc.URL+"/start", 1))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "not followed") || !strings.Contains(o.Err.Error(), "/other") || o.RetryIn != 0 || o.Disable {
		t.Errorf("Handle = %+v, want a failure saying the redirect to /other was not followed, no retry", o)
	}
	var paths []string
	for _, r := range rc.requests() {
		paths = append(paths, r.Path)
	}
	if diff := cmp.Diff([]string{"/start"}, paths); diff != "" {
		t.Errorf("requested paths mismatch (-want +got):\n%s", diff)
	}
}

func TestEnvironmentProxyIgnored(t *testing.T) {
	// A proxy would connect to addresses the dialer never checked.
	proxy := newReceiver(t, false, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	rc := newReceiver(t, false, nil)
	s := newSender(t, httpOptions(clocktest.NewFake(t0)))
	if o := s.Handle(t.Context(), invocation(rc.URL+"/hook", 1)); o.Err != nil {
		t.Fatal(o.Err)
	}
	if n := len(proxy.requests()); n != 0 {
		t.Errorf("the proxy got %d requests", n)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
}

func TestDialFallsBackToNextAddress(t *testing.T) {
	rc := newReceiver(t, false, nil)
	if !rc.addr(t).Is4() {
		t.Skip("the test server is not on IPv4")
	}
	s := newSender(t, &Options{
		AllowHTTP:     true,
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		// Nothing listens on 127.0.0.2 at the server's port.
		Test:  &testhook.Webhook{Resolver: fakeResolver{"two.test": {netip.MustParseAddr("127.0.0.2"), rc.addr(t)}}},
		Clock: clocktest.NewFake(t0),
	})
	if o := s.Handle(t.Context(), invocation("http://two.test:"+rc.port(t)+"/", 1)); o.Err != nil {
		t.Fatalf("Handle: %v", o.Err)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
}

// TestLocalhostRefused resolves names with the system's resolver: "localhost"
// resolves to loopback, which is refused when dialling, before any request
// is sent, unless allowlisted.
func TestLocalhostRefused(t *testing.T) {
	rc := newReceiver(t, false, nil)
	u := "http://localhost:" + rc.port(t) + "/hook"
	s := newSender(t, &Options{AllowHTTP: true, Clock: clocktest.NewFake(t0)})
	if err := s.Check(t.Context(), "alice", &spec{URL: u}); err != nil {
		t.Fatalf("Check(%s) = %v; a name is checked when dialled, not before", u, err)
	}
	o := s.Handle(t.Context(), invocation(u, 1))
	ae, ok := isRefused(o.Err)
	if !ok || !ae.Addr.IsLoopback() || ae.Host != "localhost" || o.RetryIn != 0 {
		t.Errorf("Handle(%s) = %+v; want an *AddressError for a loopback address of \"localhost\", no retry", u, o)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}

	// Allowlisted, the same URL reaches the receiver.
	allowed := newSender(t, httpOptions(clocktest.NewFake(t0)))
	if o := allowed.Handle(t.Context(), invocation(u, 1)); o.Err != nil {
		t.Errorf("Handle(%s) with loopback allowlisted: %v", u, o.Err)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
}
