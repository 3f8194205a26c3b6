package console

import (
	"crypto/rand"
	"encoding/base64"
	"maps"
	"sync"
	"time"
)

// Bounds of the console sessions kept. A login past maxPerPrincipal ends
// the session of the same principal (the administrator counts as one)
// closest to its end, so that logging in again and again ends only one's
// own sessions; maxSessions is a backstop over all principals, past which
// a login ends the session closest to its end, whoever owns it.
const (
	maxPerPrincipal = 20
	maxSessions     = 1000
)

// session is one logged-in browser.
type session struct {
	// principal is who the browser acts as; "" with admin.
	principal string
	admin     bool
	// csrf is the token every form of the session carries.
	csrf    string
	expires time.Time
	// flash is the outcome of the last action, shown once.
	flash      string
	flashError bool
}

// sessions keeps console sessions in memory: a restart logs everyone out.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

// randomToken returns 32 random bytes, URL-safe base64.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session and returns its ID.
func (s *sessions) create(principal string, admin bool, expires, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*session{}
	}
	maps.DeleteFunc(s.m, func(_ string, ss *session) bool { return !ss.expires.After(now) })
	for {
		var own int
		var oldest, oldestOwn string
		for id, ss := range s.m {
			if oldest == "" || ss.expires.Before(s.m[oldest].expires) {
				oldest = id
			}
			if ss.principal == principal && ss.admin == admin {
				own++
				if oldestOwn == "" || ss.expires.Before(s.m[oldestOwn].expires) {
					oldestOwn = id
				}
			}
		}
		switch {
		case own >= maxPerPrincipal:
			delete(s.m, oldestOwn)
		case len(s.m) >= maxSessions:
			delete(s.m, oldest)
		default:
			id := randomToken()
			s.m[id] = &session{principal: principal, admin: admin, csrf: randomToken(), expires: expires}
			return id
		}
	}
}

// get returns a copy of the session id, unless it is unknown or over.
func (s *sessions) get(id string, now time.Time) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok || id == "" {
		return session{}, false
	}
	if !ss.expires.After(now) {
		delete(s.m, id)
		return session{}, false
	}
	return *ss, true
}

// setFlash records the outcome of an action for the next page.
func (s *sessions) setFlash(id, msg string, isError bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.m[id]; ok {
		ss.flash, ss.flashError = msg, isError
	}
}

// takeFlash returns and forgets the session's flash.
func (s *sessions) takeFlash(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return "", false
	}
	msg, isErr := ss.flash, ss.flashError
	ss.flash, ss.flashError = "", false
	return msg, isErr
}

// end forgets the session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}
