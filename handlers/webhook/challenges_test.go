package webhook

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
)

// TestAllowChallenge: a host's budget is N challenges at
// once, then one every minute/N; the ports and the case of a host share
// its budget, another host has its own, and an URL with no host is
// refused.
func TestAllowChallenge(t *testing.T) {
	c := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s, err := New(&Options{Clock: c, Test: &testhook.Webhook{ChallengesPerHostPerMinute: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"https://Hooks.Example.com/a", "https://hooks.example.com:8443/b", "https://hooks.example.com/c"} {
		if _, ok := s.AllowChallenge(u); !ok {
			t.Fatalf("challenge %d (%s) refused; want 3 at once", i+1, u)
		}
	}
	wait, ok := s.AllowChallenge("https://hooks.example.com/d")
	if ok || !near(wait, 20*time.Second) {
		t.Fatalf("fourth challenge: ok %v, retry in %v; want refused, 20s", ok, wait)
	}
	if _, ok := s.AllowChallenge("https://HOOKS.example.com./d"); ok {
		t.Fatal("the host name with a final dot allowed; it is the same host")
	}
	if _, ok := s.AllowChallenge("https://other.example.com/a"); !ok {
		t.Fatal("another host's challenge refused; each host has its own budget")
	}
	c.Advance(19 * time.Second)
	if wait, ok := s.AllowChallenge("https://hooks.example.com/d"); ok || !near(wait, time.Second) {
		t.Fatalf("after 19s: ok %v, retry in %v; want refused, 1s", ok, wait)
	}
	c.Advance(time.Second)
	if _, ok := s.AllowChallenge("https://hooks.example.com/d"); !ok {
		t.Fatal("after 20s the budget has one challenge again")
	}
	for _, u := range []string{"", "https://", "::bad", "https://./"} {
		if _, ok := s.AllowChallenge(u); ok {
			t.Fatalf("AllowChallenge(%q) allowed; want refused", u)
		}
	}
}

// TestChallengeHostsBounded: at most MaxChallengeHosts budgets are kept;
// a new host beyond that replaces those whose budget is whole again, and
// is refused while none is.
func TestChallengeHostsBounded(t *testing.T) {
	c := clocktest.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s, err := New(&Options{Clock: c, Test: &testhook.Webhook{ChallengesPerHostPerMinute: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxChallengeHosts {
		if _, ok := s.AllowChallenge(fmt.Sprintf("https://h%d.example.com/", i)); !ok {
			t.Fatalf("host %d refused", i)
		}
	}
	if wait, ok := s.AllowChallenge("https://new.example.com/"); ok || !near(wait, time.Minute) {
		t.Fatalf("a new host while every budget is in use: ok %v, retry in %v; want refused, 1m", ok, wait)
	}
	c.Advance(time.Minute)
	if _, ok := s.AllowChallenge("https://new.example.com/"); !ok {
		t.Fatal("a new host once the budgets are whole again refused")
	}
	if n := len(s.challenges.hosts); n != 1 {
		t.Fatalf("%d budgets kept; want the idle ones forgotten, 1 left", n)
	}
}

// near reports whether d is want within a millisecond (the budget is
// kept in floating point).
func near(d, want time.Duration) bool { return (d - want).Abs() <= time.Millisecond }

// TestAllowChallengeAddressSpellings: the spellings of one IP address (an
// IPv4-mapped IPv6 address, a zone, leading zeros left out or not, the
// case of hex digits) share its budget: each spelling got a budget of its
// own, so a host's share could be multiplied by rewriting its address.
func TestAllowChallengeAddressSpellings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spellings []string
	}{
		{"IPv4 and its mapped forms", []string{"https://127.0.0.1/a", "https://[::ffff:7f00:1]/b", "https://[::FFFF:127.0.0.1]:8443/c", "https://[0:0:0:0:0:ffff:7f00:1]/d"}},
		{"IPv6 with zones and long forms", []string{"https://[::1]/a", "https://[::1%25x1]/b", "https://[0:0:0:0:0:0:0:1%25eth0]/c", "https://[0000::0001]:9/d"}},
		{"IPv6 hex case", []string{"https://[2001:db8::ab]/a", "https://[2001:DB8::AB]/b", "https://[2001:0db8:0:0::00ab%25lo]/c", "https://[2001:db8:0::ab]/d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSender(t, &Options{Clock: clocktest.NewFake(t0), Test: &testhook.Webhook{ChallengesPerHostPerMinute: 3}})
			for i, u := range tc.spellings {
				_, ok := s.AllowChallenge(u)
				if want := i < 3; ok != want {
					t.Fatalf("challenge %d to %s: allowed %v; want %v (one budget of 3 for every spelling)", i+1, u, ok, want)
				}
			}
		})
	}
}

// TestReceiverDocumentLookupCharged: the GET of a receiver document is an
// outbound request to the host like a challenge, so it is charged to the
// host's budget before it is sent (the ports of a host, each an origin of
// its own, could otherwise be asked for documents at will); a document
// already cached costs nothing, and a lookup the budget refused is not
// remembered as "no document".
func TestReceiverDocumentLookupCharged(t *testing.T) {
	ctx := context.Background()
	c := clocktest.NewFake(t0)
	a, b := newDocServer(t), newDocServer(t) // two ports of 127.0.0.1
	a.set(document(`{"receivers":["/hooks/"]}`, "max-age=3600"))
	b.set(document(`{"receivers":["/hooks/"]}`, "max-age=3600"))
	o := a.tlsOptions(c)
	o.Test.RootCAs.AddCert(b.Certificate())
	o.Test.ChallengesPerHostPerMinute = 2
	s := newSender(t, o)

	if !s.ReceiverDeclares(ctx, a.URL+"/hooks/1") || a.gets() != 1 {
		t.Fatalf("first lookup: %d GETs; want 1, covering", a.gets())
	}
	if _, ok := s.AllowChallenge(a.URL + "/other"); !ok {
		t.Fatal("the challenge after one lookup refused; want the second of the budget of 2")
	}
	if s.ReceiverDeclares(ctx, b.URL+"/hooks/1") || b.gets() != 0 {
		t.Fatalf("lookup on another port of the host with its budget spent: %d GETs; want none, and not declared", b.gets())
	}
	if !s.ReceiverDeclares(ctx, a.URL+"/hooks/2") || a.gets() != 1 {
		t.Fatalf("cached document with the budget spent: %d GETs; want it used, with no GET", a.gets())
	}
	c.Advance(time.Minute)
	if !s.ReceiverDeclares(ctx, b.URL+"/hooks/1") || b.gets() != 1 {
		t.Fatalf("lookup once the budget is back: %d GETs; want 1, covering (the refusal was not cached)", b.gets())
	}
}
