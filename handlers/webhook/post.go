package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Message is one signed POST that the caller composes itself, outside a
// subscription's handler: the SEP-3415 webhook deliveries and control
// bodies. It goes through the same URL checks, address guard (no special
// ranges unless allowlisted, checked when dialled), transport and signing
// as Handle, and redirects are not followed.
type Message struct {
	// URL receives the POST; it is checked as a handler's URL is.
	URL string
	// ID is the webhook-id.
	ID string
	// Secrets sign the body (signatures), whsec_ secrets, the current first.
	Secrets []string
	// Header holds further headers, such as X-MCP-Subscription-Id; the
	// Standard Webhooks headers and Content-Type are set by Post.
	Header http.Header
	// Body is sent byte for byte as signed.
	Body []byte
	// Timeout bounds the request; zero: 10s.
	Timeout time.Duration
}

// Response is what a receiver answered.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Body is the start of the answer's body (at most 4 KiB).
	Body []byte
	// RetryAfter is the answer's Retry-After as a delay, capped at an
	// hour; zero when absent.
	RetryAfter time.Duration
}

// CheckURL tells whether raw may receive webhooks: https unless the
// operator allows http, no user information or fragment, and a literal
// address outside the refused ranges. The error is an *mcpe.InvalidError.
func (s *Sender) CheckURL(raw string) error {
	_, err := s.checkURL(raw)
	return err
}

// Post signs m and POSTs it. An error means no answer came: the URL was
// refused (an error that IsRefused), or the request failed on the network
// or timed out.
func (s *Sender) Post(ctx context.Context, m *Message) (*Response, error) {
	if _, err := s.checkURL(m.URL); err != nil {
		return nil, err
	}
	if m.ID == "" || !validHeaderValue(m.ID) {
		return nil, fmt.Errorf("webhook: the message id %q cannot be a webhook-id", m.ID)
	}
	if len(m.Secrets) == 0 {
		return nil, errors.New("webhook: the message has no signing secret")
	}
	now := s.opts.Clock.Now()
	sig, err := signatures(m.Secrets, m.ID, now, m.Body, true)
	if err != nil {
		return nil, err
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	for name, v := range m.Header {
		h[http.CanonicalHeaderKey(name)] = v
	}
	h["User-Agent"] = []string{userAgent}
	h["Content-Type"] = []string{"application/json"}
	h["Webhook-Id"] = []string{m.ID}
	h["Webhook-Timestamp"] = []string{strconv.FormatInt(now.Unix(), 10)}
	h["Webhook-Signature"] = []string{sig}
	resp, err := s.client.Do(req)
	if err != nil {
		if ae, ok := isRefused(err); ok {
			return nil, ae
		}
		return nil, err
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxRead))
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	ra := min(retryAfter(resp.Header.Get("Retry-After"), s.opts.Clock.Now()), s.maxRetryAfter)
	return &Response{Status: resp.StatusCode, Body: head, RetryAfter: ra}, nil
}

// IsRefused reports whether err is, or wraps, the refusal of a receiver
// address in a range webhooks may not reach (an *AddressError).
func IsRefused(err error) bool {
	_, ok := isRefused(err)
	return ok
}
