package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Bounds on what is read of a receiver's answer.
const (
	// maxRead is how much of the body is read for the outcome.
	maxRead = 4 << 10
	// maxDrain is how much more is read and dropped so that the
	// connection can be reused; a longer body closes the connection.
	maxDrain = 64 << 10
	// maxOutput is how much of the body is shown in an outcome.
	maxOutput = 200
)

// Sender runs webhook handlers. It is safe for concurrent use; Close it
// when done.
type Sender struct {
	opts Options
	// secrets are Options.Secrets with their URLs parsed.
	secrets map[string]secret
	// verified are Options.VerifiedURLs parsed; docs caches the
	// receiver documents.
	verified []urlPrefix
	docs     receiverDocs
	// challenges are the verification budgets of the destination hosts.
	challenges challengeLimits
	transport  *http.Transport
	client     *http.Client
	// lookup resolves host names before each connection.
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	// dial connects to a checked address; a net.Dialer whose Control
	// checks the address again. Tests replace it.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	// rand returns a number in [0, 1) for the jitter. Tests replace it.
	rand func() float64
	// The delays after attempts 1, 2, ...; the cap on a Retry-After. Tests
	// set their own.
	retrySchedule []time.Duration
	maxRetryAfter time.Duration
}

var _ subscriptions.Handler = (*Sender)(nil)

// New checks opts and returns a Sender. A nil opts means all defaults.
func New(opts *Options) (*Sender, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	s := &Sender{opts: o, secrets: parseSecrets(o.Secrets), lookup: net.DefaultResolver.LookupNetIP, rand: rand.Float64, retrySchedule: defaultRetrySchedule, maxRetryAfter: time.Hour}
	if r := o.Test.Resolver; r != nil {
		s.lookup = r.LookupNetIP
	}
	if o.Test.NoJitter {
		s.rand = func() float64 { return 0.5 } // the middle: no jitter
	}
	s.challenges.per = cmp.Or(o.Test.ChallengesPerHostPerMinute, challengesPerHostPerMinute)
	for _, raw := range o.VerifiedURLs {
		if p, msg := parseVerifiedURL(raw); msg == "" { // Validate checked
			s.verified = append(s.verified, p)
		}
	}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second, Control: s.control}
	s.dial = dialer.DialContext
	s.transport = &http.Transport{
		Proxy:                  nil, // a proxy would dial addresses we never checked
		DialContext:            s.dialContext,
		TLSClientConfig:        &tls.Config{RootCAs: o.Test.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    maxConnsPerHost,
		MaxConnsPerHost:        maxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
	}
	s.client = &http.Client{
		Transport: s.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return s, nil
}

// Close closes the idle connections. The Sender stays usable.
func (s *Sender) Close() {
	s.transport.CloseIdleConnections()
}

// Handle POSTs inv's payload to its handler's URL, signed, and tells from
// the answer whether the delivery is done, is to be retried, or failed for
// good. See the package documentation for the rules.
func (s *Sender) Handle(ctx context.Context, inv *subscriptions.Invocation) subscriptions.Outcome {
	if inv == nil || inv.Spec == nil {
		return subscriptions.Outcome{Err: errors.New("the delivery has no handler")}
	}
	spec := inv.Spec
	// Checked again at every send: the URL or the operator's secrets may
	// have changed since the subscription was made.
	u, err := s.check(spec)
	if err != nil {
		return subscriptions.Outcome{Err: fmt.Errorf("the handler cannot run: %w", err)}
	}
	if inv.JobID == "" || !validHeaderName(inv.JobID) || strings.Contains(inv.JobID, ".") {
		return subscriptions.Outcome{Err: fmt.Errorf("the delivery's id %q cannot be a webhook-id", inv.JobID)}
	}
	body := inv.Payload()
	if len(body) == 0 {
		return subscriptions.Outcome{Err: errors.New("the delivery has no payload to send")}
	}
	now := s.opts.Clock.Now()
	msgID := messageID(inv)
	secrets := inv.Secrets.Signing(now)
	if len(secrets) == 0 || secrets[0] == "" {
		return subscriptions.Outcome{Err: errors.New("the handler has no signing secret; set the handler again with events_update")}
	}
	sig, err := signatures(secrets, msgID, now, body, false)
	if err != nil {
		return subscriptions.Outcome{Err: err}
	}

	timeout := defaultTimeout
	if spec.Timeout > 0 {
		timeout = time.Duration(spec.Timeout) * time.Millisecond
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, spec.URL, bytes.NewReader(body))
	if err != nil {
		return subscriptions.Outcome{Err: fmt.Errorf("handler.url: %w", err)}
	}
	h := req.Header
	h["User-Agent"] = []string{userAgent} // a subscription may set its own
	allowed := s.secretsFor(u)
	for name, v := range spec.Headers {
		val, xerr := expand(v, allowed)
		if xerr != nil { // check ran, but be safe
			return subscriptions.Outcome{Err: fmt.Errorf("handler.headers.%s: %w", name, xerr)}
		}
		h[http.CanonicalHeaderKey(name)] = []string{val}
	}
	h["Content-Type"] = []string{"application/json"}
	h["Webhook-Id"] = []string{msgID}
	h["Webhook-Timestamp"] = []string{strconv.FormatInt(now.Unix(), 10)}
	h["Webhook-Signature"] = []string{sig}

	attempt := max(inv.Attempt, 1)
	resp, err := s.client.Do(req)
	if err != nil {
		if ae, ok := isRefused(err); ok {
			return subscriptions.Outcome{Err: fmt.Errorf("not sent: %w", ae)}
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("the receiver did not answer within %v (handler.timeout)", timeout)
		}
		return s.retry(attempt, err, 0)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxRead))
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))

	code := resp.StatusCode
	out := statusLine(code)
	if text := excerpt(head); text != "" {
		out += ": " + text
	}
	o := subscriptions.Outcome{Output: out}
	switch {
	case code >= 200 && code <= 299:
		return o
	case code >= 300 && code <= 399:
		loc := excerpt([]byte(resp.Header.Get("Location")))
		o.Err = fmt.Errorf("the receiver answered %s, a redirect to %q, which was not followed: set handler.url to the final address", statusLine(code), loc)
		return o
	case code == http.StatusGone:
		o.Err = fmt.Errorf("the receiver answered %s: the handler is turned off until events_update sets a handler again", statusLine(code))
		o.Disable = true
		return o
	}
	err = fmt.Errorf("the receiver answered %s", out)
	ra := retryAfter(resp.Header.Get("Retry-After"), s.opts.Clock.Now())
	retryable := code == http.StatusRequestTimeout || code == http.StatusTooEarly ||
		code == http.StatusTooManyRequests || code >= 500 || code < 200
	if !retryable && attempt > 1 {
		// Another 4xx: retried once, after the first attempt only.
		o.Err = fmt.Errorf("gave up after %d attempts: %w (a 4xx answer is retried once)", attempt, err)
		return o
	}
	r := s.retry(attempt, err, ra)
	r.Output = out
	return r
}

// retry returns the outcome of a failed attempt that may be retried: after
// the schedule's delay, or the receiver's Retry-After when later, until the
// schedule is used up.
func (s *Sender) retry(attempt int, err error, retryAfter time.Duration) subscriptions.Outcome {
	if attempt > len(s.retrySchedule) {
		return subscriptions.Outcome{Err: fmt.Errorf("gave up after %d attempts: %w", attempt, err)}
	}
	d := jitter(s.retrySchedule[attempt-1], jitterFraction, s.rand())
	d = max(d, min(retryAfter, s.maxRetryAfter))
	return subscriptions.Outcome{Err: err, RetryIn: d}
}

// statusLine is e.g. "200 OK".
func statusLine(code int) string {
	return strings.TrimSpace(strconv.Itoa(code) + " " + http.StatusText(code))
}

// excerpt returns the start of b as one line of printable text.
func excerpt(b []byte) string {
	if len(b) > maxOutput*2 {
		b = b[:maxOutput*2]
	}
	t := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, string(b))
	t = strings.Join(strings.Fields(t), " ")
	if len(t) > maxOutput {
		cut := maxOutput
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut] + "…"
	}
	return t
}

// messageID is the delivery's webhook-id: the same on every attempt, and
// unique beyond one database, since subscription IDs are random UUIDs and job
// IDs are never reused within a database.
func messageID(inv *subscriptions.Invocation) string {
	sub := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, inv.SubscriptionID)
	return "msg_" + sub + "_" + inv.JobID
}
