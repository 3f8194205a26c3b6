package console

import (
	"testing"
	"time"
)

// TestSessionsCapPerPrincipal checks that a principal logging in again and
// again ends only its own oldest sessions, and that the global cap still
// holds.
func TestSessionsCapPerPrincipal(t *testing.T) {
	now := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	var s sessions
	alice := s.create("alice", false, now.Add(time.Minute), now)
	admin := s.create("", true, now.Add(2*time.Minute), now)
	var bobs []string
	for i := range maxSessions * 2 {
		bobs = append(bobs, s.create("bob", false, now.Add(time.Hour+time.Duration(i)*time.Second), now))
	}
	for _, id := range []string{alice, admin} {
		if _, ok := s.get(id, now); !ok {
			t.Errorf("a session of another principal ended when bob logged in %d times", len(bobs))
		}
	}
	for i, id := range bobs {
		_, ok := s.get(id, now)
		if want := i >= len(bobs)-maxPerPrincipal; ok != want {
			t.Errorf("bob's login %d kept: %t, want %t", i, ok, want)
		}
	}
	// An admin session counts apart from a principal named "".
	s.create("", false, now.Add(time.Hour), now)
	if _, ok := s.get(admin, now); !ok {
		t.Error("the administrator's session ended when another logged in")
	}

	// The global cap: many principals, one session each.
	var g sessions
	first := g.create("p-first", false, now.Add(time.Minute), now)
	for i := range maxSessions {
		g.create("p"+string(rune('a'+i%26))+time.Duration(i).String(), false, now.Add(time.Hour), now)
	}
	if n := len(g.m); n != maxSessions {
		t.Errorf("%d sessions kept, want %d", n, maxSessions)
	}
	if _, ok := g.get(first, now); ok {
		t.Error("the session closest to its end outlived the global cap")
	}
}
