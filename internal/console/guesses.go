package console

import (
	"maps"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed logins allowed, from one client address and from all together: a
// burst, then one per interval. Past either, a login waits, so that tokens
// cannot be guessed at speed. maxAddrs bounds the addresses remembered.
const (
	addrBurst, addrEvery = 10, 6 * time.Second
	allBurst, allEvery   = 100, time.Second
	maxAddrs             = 1024
)

// guesses counts failed logins.
type guesses struct {
	mu     sync.Mutex
	all    *rate.Limiter
	byAddr map[string]*rate.Limiter
}

func newGuesses() *guesses {
	return &guesses{all: rate.NewLimiter(rate.Every(allEvery), allBurst), byAddr: make(map[string]*rate.Limiter)}
}

// wait returns how long addr must wait at now before it may try a token:
// zero while it, and everyone, has failures left.
func (g *guesses) wait(addr string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := time.Duration((1 - g.all.TokensAt(now)) * float64(allEvery))
	if l := g.byAddr[addr]; l != nil {
		w = max(w, time.Duration((1-l.TokensAt(now))*float64(addrEvery)))
	}
	return w
}

// failed counts a failed login from addr at now. Those of concurrent
// logins count too, and are waited off.
func (g *guesses) failed(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.byAddr[addr]
	if l == nil {
		if len(g.byAddr) >= maxAddrs {
			maps.DeleteFunc(g.byAddr, func(_ string, l *rate.Limiter) bool { return l.TokensAt(now) >= addrBurst })
		}
		l = rate.NewLimiter(rate.Every(addrEvery), addrBurst)
		g.byAddr[addr] = l
	}
	l.ReserveN(now, 1)
	g.all.ReserveN(now, 1)
}
