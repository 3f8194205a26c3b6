package webhook

// The SEP's endpoint verification sends a challenge POST to a callback URL
// a principal names. Each principal's handshakes are bounded where they are
// made (in flight, and cached per principal and URL), but principals are
// many: without a bound per destination, several of them could aim the
// server's challenges at one host. The SEP asks that they be rate-limited
// per destination host; AllowChallenge does that, whichever principal asks.

import (
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MaxChallengeHosts bounds the hosts whose challenge budget is kept at
// once. A host whose budget is whole again is forgotten first.
const MaxChallengeHosts = 10000

// challengeLimits is a token bucket per destination host:
// challengesPerHostPerMinute challenges at once, then that many per minute.
type challengeLimits struct {
	mu    sync.Mutex
	per   int // challenges per minute and per host
	hosts map[string]*rate.Limiter
}

// AllowChallenge takes one challenge POST to raw's host from the host's
// budget (30 at once, then 30 a minute): ok is false when the host
// has had its share of challenges lately, and retryIn says when the next
// one may go. The host is raw's host name in lower case, without the port
// or a final dot, or its IP address unmapped and without a zone: the ports
// and spellings of one host share its budget, which ReceiverDeclares also
// takes from. An unparsable URL is not allowed.
func (s *Sender) AllowChallenge(raw string) (retryIn time.Duration, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().WithZone("").String()
	}
	if host == "" {
		return 0, false
	}
	return s.challenges.allow(host, s.opts.Clock.Now())
}

func (c *challengeLimits) allow(host string, now time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lim := c.hosts[host]
	if lim == nil {
		if len(c.hosts) >= MaxChallengeHosts {
			c.forgetIdle(now)
		}
		if len(c.hosts) >= MaxChallengeHosts {
			// Every host kept has challenges of the last minute: one more
			// waits until a budget is whole again.
			return time.Minute / time.Duration(c.per), false
		}
		if c.hosts == nil {
			c.hosts = make(map[string]*rate.Limiter)
		}
		lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(c.per)), c.per)
		c.hosts[host] = lim
	}
	if lim.AllowN(now, 1) {
		return 0, true
	}
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return wait, false
}

// forgetIdle drops the hosts whose budget is whole: they are as good as new.
func (c *challengeLimits) forgetIdle(now time.Time) {
	for host, lim := range c.hosts {
		if lim.TokensAt(now) >= float64(c.per) {
			delete(c.hosts, host)
		}
	}
}
