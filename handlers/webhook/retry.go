package webhook

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// jitter varies d by up to frac of it either way; r in [0, 1) picks where.
// The result is at least a millisecond, since a zero RetryIn means no retry.
func jitter(d time.Duration, frac, r float64) time.Duration {
	j := time.Duration(float64(d) * frac * (2*r - 1))
	return max(d+j, time.Millisecond)
}

// retryAfter reads a Retry-After value, delay-seconds or an HTTP date, as
// a delay from now. It returns zero when the value is absent, unreadable
// or in the past; a delay too long for a Duration is the longest one.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return math.MaxInt64
			}
			return 0
		}
		if n > uint64(math.MaxInt64/int64(time.Second)) {
			return math.MaxInt64
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return max(t.Sub(now), 0)
}
