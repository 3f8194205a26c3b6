package console

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed logins allowed, from one client address and from all together: a
// burst, then one per interval. A client past either waits before it may
// try any token again, so that tokens cannot be guessed at speed.
// maxAddrs bounds the addresses remembered.
const (
	addrBurst, addrEvery = 10, 6 * time.Second
	allBurst, allEvery   = 100, time.Second
	maxAddrs             = 1024
)

// guesses counts failed logins. The zero value is ready to use.
type guesses struct {
	mu     sync.Mutex
	all    *rate.Limiter
	byAddr map[string]*rate.Limiter
}

// clientAddr is the address r came from, without its port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// wait returns how long addr must wait at now before it may try a token:
// zero while it, and everyone, has failures left.
func (g *guesses) wait(addr string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := time.Duration(0)
	if g.all != nil {
		w = time.Duration((1 - g.all.TokensAt(now)) * float64(allEvery))
	}
	if l := g.byAddr[addr]; l != nil {
		w = max(w, time.Duration((1-l.TokensAt(now))*float64(addrEvery)))
	}
	return w
}

// failed counts a failed login from addr at now. Failures of concurrent
// tries count too, and are waited off.
func (g *guesses) failed(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.all == nil {
		g.all, g.byAddr = rate.NewLimiter(rate.Every(allEvery), allBurst), make(map[string]*rate.Limiter)
	}
	l := g.byAddr[addr]
	if l == nil {
		if len(g.byAddr) >= maxAddrs {
			for a, l := range g.byAddr {
				if l.TokensAt(now) >= addrBurst {
					delete(g.byAddr, a)
				}
			}
		}
		l = rate.NewLimiter(rate.Every(addrEvery), addrBurst)
		g.byAddr[addr] = l
	}
	l.ReserveN(now, 1)
	g.all.ReserveN(now, 1)
}
