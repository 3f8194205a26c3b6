package webhook

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
)

// TestAllowChallenge: a host's budget is ChallengesPerHostPerMinute at
// once, then one every minute/N; the ports and the case of a host share
// its budget, another host has its own, and an URL with no host is
// refused.
func TestAllowChallenge(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s, err := New(&Options{Clock: c, ChallengesPerHostPerMinute: 3})
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
	c := clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s, err := New(&Options{Clock: c, ChallengesPerHostPerMinute: 1})
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

// TestChallengesPerHostValidated: the setting is refused out of range,
// naming its key and what is accepted.
func TestChallengesPerHostValidated(t *testing.T) {
	for _, n := range []int{-1, MaxChallengesPerHostPerMinute + 1} {
		_, err := New(&Options{ChallengesPerHostPerMinute: n})
		if err == nil || !strings.Contains(err.Error(), "challengesPerHostPerMinute") || !strings.Contains(err.Error(), "from 1 to 6000") {
			t.Fatalf("ChallengesPerHostPerMinute %d: %v; want an error naming the key and the range", n, err)
		}
	}
}

// near reports whether d is want within a millisecond (the budget is
// kept in floating point).
func near(d, want time.Duration) bool { return (d - want).Abs() <= time.Millisecond }
