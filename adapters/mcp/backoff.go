package mcp

import (
	"math"
	"time"
)

// stableAfter is how long a session must stay up for the backoff to start
// over: a server that accepts and then drops every connection is retried
// ever more slowly, one that ran for a while is retried at once.
const stableAfter = time.Minute

// backoff computes the wait before a retry: min doubled per consecutive
// failure up to max, varied by up to ±jitter, and kept within [min, max].
type backoff struct {
	min, max time.Duration
	jitter   float64
	// rand returns a number in [0, 1).
	rand func() float64
}

// delay returns the wait before retry n, 1 for the first.
func (b backoff) delay(n int) time.Duration {
	d := b.min
	for i := 1; i < n && d < b.max; i++ {
		if d > b.max/2 {
			d = b.max
			break
		}
		d *= 2
	}
	if b.jitter > 0 && b.rand != nil {
		d = time.Duration(math.Round(float64(d) * (1 + b.jitter*(2*b.rand()-1))))
	}
	return max(b.min, min(d, b.max))
}

// retrier counts consecutive failures of one upstream.
type retrier struct {
	backoff  backoff
	failures int
}

// failed records a failed connection, or the end of a session that was up
// for upFor (zero if it never came up), and returns the wait before the
// next attempt.
func (r *retrier) failed(upFor time.Duration) time.Duration {
	if upFor >= stableAfter {
		r.failures = 0
	}
	r.failures++
	return r.backoff.delay(r.failures)
}
