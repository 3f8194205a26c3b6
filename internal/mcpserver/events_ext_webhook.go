package mcpserver

// The webhook delivery mode of the SEP-3415 events extension:
// events/subscribe and events/unsubscribe. A webhook subscription, keyed
// on (principal, delivery.url, name, arguments), is an MCPE subscription
// with an ID derived from that key and a webhook handler whose URL is
// delivery.url and whose signing secret is the client's: every matching
// event is recorded as a durable handler job in the transaction that
// accepts it, and the handler runner POSTs it (WebhookHandler) as an
// EventOccurrence, with retries, across restarts. Its expiresAt is the
// granted TTL, which events/subscribe grants again on every refresh. A new
// subscription is made only once its endpoint is verified (confirm): by
// the operator's verifiedURLs, a verification cached, the receiver
// document of the URL's origin, or the challenge handshake.

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// HeaderSubscriptionID carries a webhook subscription's id on every POST.
const HeaderSubscriptionID = "X-MCP-Subscription-Id"

// The TTLs of webhook subscriptions: a suggestion is clamped into
// [MinWebhookTTL, MaxWebhookTTL]; none gets DefaultWebhookTTL; ttlMs null
// (a request for no expiry) gets MaxWebhookTTL: every subscription ends
// unless refreshed, and the SEP lets the server grant less than asked.
const (
	DefaultWebhookTTL = time.Hour
	MinWebhookTTL     = time.Minute
	MaxWebhookTTL     = 24 * time.Hour
)

// webhookRetries are the delays after attempts 1 to 4 of one delivery; it
// is abandoned after the fifth, about 12 minutes after the first, as the
// SEP asks (3 to 5 attempts within 10 to 15 minutes). A receiver's
// Retry-After is honoured up to maxWebhookRetryAfter.
var webhookRetries = []time.Duration{10 * time.Second, time.Minute, 3 * time.Minute, 8 * time.Minute}

const maxWebhookRetryAfter = 10 * time.Minute

// Bounds of the verification cache.
const (
	verifiedTTL = 24 * time.Hour
	maxVerified = 10000
	// maxVerifiedPerPrincipal bounds one principal's share of the
	// verification cache, and maxVerifying its handshakes in flight.
	maxVerifiedPerPrincipal = 100
	maxVerifying            = 4
	// controlTimeout bounds the POST of a control body sent on the side
	// (verification, gap, terminated).
	controlTimeout = 10 * time.Second
	// expiryRetry is how soon the expiry of a subscription is tried
	// again when it could not be looked up.
	expiryRetry = 30 * time.Second
)

// Prefixes of the IDs of webhook subscriptions: those of FilterEventType
// deliver whole events, the others the event's data under its type.
const (
	webhookIDPrefix       = "sepw-"
	webhookFilterIDPrefix = "sepwf-"
)

// webhookBackend is what webhook delivery needs of the subscriptions
// domain; *subscriptions.Service implements it.
type webhookBackend interface {
	KeyedWebhook(ctx context.Context, principal, id string, f mcpe.Filter, spec *mcpe.HandlerSpec, secret string, expiresAt *time.Time) (*subscriptions.Subscription, bool, error)
	Get(ctx context.Context, principal, id string) (*subscriptions.Subscription, error)
	Unsubscribe(ctx context.Context, principal, id string) error
	Expiring(ctx context.Context, prefixes ...string) ([]*subscriptions.Subscription, error)
}

// webhookState is the server's side of webhook subscriptions: the
// endpoints verified, and the timers that end subscriptions not refreshed.
type webhookState struct {
	sender  *webhook.Sender
	backend webhookBackend

	mu       sync.Mutex
	verified map[string]time.Time   // principal NUL url -> until
	timers   map[string]clock.Timer // principal NUL id -> expiry
	closed   bool
	// perPrincipal counts the entries of verified by principal, and
	// verifying the handshakes in flight by principal.
	perPrincipal map[string]int
	verifying    map[string]int
}

// startVerify takes one of principal's maxVerifying handshake slots, or
// answers ResourceExhausted when they are all in use; done gives it back.
func (w *webhookState) startVerify(principal string) (done func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.verifying == nil {
		w.verifying = make(map[string]int)
	}
	if w.verifying[principal] >= maxVerifying {
		return nil, eventsError(CodeResourceExhausted, map[string]any{"limit": "verifications",
			"reason": fmt.Sprintf("%d endpoint verifications of yours are in flight already, the most at once; try again when they end", maxVerifying)})
	}
	w.verifying[principal]++
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.verifying[principal]--; w.verifying[principal] <= 0 {
			delete(w.verifying, principal)
		}
	}, nil
}

// webhookParams is the delivery of events/subscribe and events/unsubscribe.
type webhookParams struct {
	Mode   string `json:"mode,omitempty"`
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

// optionalMs is a nullable number of milliseconds that tells absent from
// null.
type optionalMs struct {
	set, null bool
	ms        json.Number
}

func (o *optionalMs) UnmarshalJSON(b []byte) error {
	o.set = true
	if string(b) == "null" {
		o.null = true
		return nil
	}
	return json.Unmarshal(b, &o.ms)
}

// eventsSubscribeParams are the params of events/subscribe: those of
// events/unsubscribe, and more.
type eventsSubscribeParams struct {
	eventsUnsubscribeParams
	Cursor   *string    `json:"cursor,omitempty"`
	MaxAgeMs *int64     `json:"maxAgeMs,omitempty"`
	TTLMs    optionalMs `json:"ttlMs"`
}

type eventsSubscribeResult struct {
	mcp.ResultBase
	ResultType    string  `json:"resultType"`
	ID            string  `json:"id"`
	RefreshBefore *string `json:"refreshBefore"`
	Cursor        *string `json:"cursor"`
	Truncated     bool    `json:"truncated"`
}

// eventsUnsubscribeParams are the params of events/unsubscribe.
type eventsUnsubscribeParams struct {
	mcp.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Delivery  *webhookParams  `json:"delivery"`
}

type eventsUnsubscribeResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// webhookID derives the subscription ID of (principal, url, k): the id
// of the SEP, in X-MCP-Subscription-Id.
func (k subscriptionKey) webhookID(principal, url string) string {
	f, _ := json.Marshal(k.filter)
	prefix := webhookIDPrefix
	if k.name == FilterEventType {
		prefix = webhookFilterIDPrefix
	}
	return prefix + shortHash("webhook\x00"+principal+"\x00"+url+"\x00"+k.name+"\x00"+string(f), 16)
}

// grant returns the expiry granted for a ttlMs suggestion; null, a
// request for none, is granted the longest TTL.
func grant(ttl optionalMs, now time.Time) (*time.Time, error) {
	d := DefaultWebhookTTL
	switch {
	case ttl.null:
		d = MaxWebhookTTL
	case ttl.set:
		ms, err := ttl.ms.Int64()
		if err != nil {
			return nil, invalidParams("ttlMs is %s; give a whole number of milliseconds (at most %v), or leave it out for %v", ttl.ms, MaxWebhookTTL, DefaultWebhookTTL)
		}
		// The SEP has no rejection path for TTLs: a suggestion out of
		// bounds is clamped, and the grant says so.
		d = min(max(time.Duration(min(max(ms, 0), MaxWebhookTTL.Milliseconds()))*time.Millisecond, MinWebhookTTL), MaxWebhookTTL)
	}
	t := now.Add(d).UTC().Truncate(time.Millisecond)
	return &t, nil
}

// checkDelivery validates the delivery of a request; secret tells whether
// it must carry one.
func (w *webhookState) checkDelivery(d *webhookParams, secret bool) error {
	if d == nil {
		if !secret {
			return invalidParams("delivery is required: {\"url\":\"https://...\"}, the URL the subscription delivers to")
		}
		return invalidParams("delivery is required: {\"mode\":\"webhook\",\"url\":\"https://...\",\"secret\":\"whsec_...\"}")
	}
	if d.Mode != "" && d.Mode != "webhook" {
		return eventsError(CodeUnsupported, map[string]any{"feature": "deliveryMode", "value": d.Mode,
			"reason": fmt.Sprintf("delivery.mode %q does not use events/subscribe; poll with events/poll, push with events/stream", d.Mode)})
	}
	if err := w.sender.CheckURL(d.URL); err != nil {
		if inv, ok := errors.AsType[*mcpe.InvalidError](err); ok {
			return invalidParams("delivery.url: %s", inv.Message)
		}
		return invalidParams("delivery.url: %v", err)
	}
	if !secret {
		return nil
	}
	if d.Secret == "" {
		return invalidParams("delivery.secret is required: whsec_ and the base64 of %d to %d random bytes, generated by the client", webhook.MinKeyBytes, webhook.MaxKeyBytes)
	}
	if _, err := webhook.ParseSecret(d.Secret); err != nil {
		return invalidParams("delivery.secret is not whsec_ and the base64 (standard or URL-safe, padded or not) of %d to %d random bytes; generate one from a secure random source", webhook.MinKeyBytes, webhook.MaxKeyBytes)
	}
	return nil
}

// webhookPrincipal returns the principal of the request ctx belongs to
// (its bearer token's, even before its session is attached), or Forbidden
// when the caller is not authenticated: webhook subscriptions outlive the
// session, so they need a principal that does too, stdio's or a bearer
// token's (the SEP). resources/subscriptions/register applies the same
// rule.
func (s *Server) webhookPrincipal(ctx context.Context, ss *mcp.ServerSession) (string, error) {
	principal := s.requestPrincipal(ctx, ss, nil)
	if strings.HasPrefix(principal, SessionPrincipalPrefix) {
		return "", eventsError(CodeForbidden, map[string]any{"reason": "webhook subscriptions need an authenticated principal: connect with a bearer token the operator configured (auth.tokens); events/poll and events/stream need none"})
	}
	return principal, nil
}

func (s *Server) eventsSubscribe(ctx context.Context, ss *mcp.ServerSession, p *eventsSubscribeParams) (*eventsSubscribeResult, error) {
	w := s.webhooks
	if p == nil {
		return nil, invalidParams("params are required: name, arguments and delivery")
	}
	if err := w.checkDelivery(p.Delivery, true); err != nil {
		return nil, err
	}
	if _, err := s.floorOf(p.MaxAgeMs, p.Cursor); err != nil {
		return nil, err
	}
	expiresAt, err := grant(p.TTLMs, s.opts.Clock.Now())
	if err != nil {
		return nil, err
	}
	principal, err := s.webhookPrincipal(ctx, ss)
	if err != nil {
		return nil, err
	}
	k, err := s.resolve(ctx, p.Name, p.Arguments)
	if err != nil {
		return nil, err
	}
	url, secret := p.Delivery.URL, p.Delivery.Secret
	id := k.webhookID(principal, url)
	// A subscription that is stored exists only because its endpoint was
	// verified; a new one is verified first.
	if old, err := w.backend.Get(ctx, principal, id); err != nil || old.Status == mcpe.StatusExpired {
		if err := w.confirm(ctx, s.opts.Clock, principal, id, url, secret); err != nil {
			return nil, err
		}
	}
	spec := &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: url}
	sub, _, err := w.backend.KeyedWebhook(ctx, principal, id, k.filter, spec, secret, expiresAt)
	if err != nil {
		if inv, ok := errors.AsType[*mcpe.InvalidError](err); ok && strings.HasPrefix(inv.Field, "handler") {
			return nil, invalidParams("delivery: %s", inv.Message)
		}
		return nil, domainError(err)
	}
	s.armWebhookExpiry(principal, id, sub.ExpiresAt)
	res := &eventsSubscribeResult{ResultType: "complete", ID: id}
	if sub.ExpiresAt != nil {
		t := sub.ExpiresAt.UTC().Format(time.RFC3339Nano)
		res.RefreshBefore = &t
	}
	return res, nil
}

func (s *Server) eventsUnsubscribe(ctx context.Context, ss *mcp.ServerSession, p *eventsUnsubscribeParams) (*eventsUnsubscribeResult, error) {
	w := s.webhooks
	if p == nil {
		return nil, invalidParams("params are required: name, arguments and delivery.url")
	}
	if err := w.checkDelivery(p.Delivery, false); err != nil {
		return nil, err
	}
	principal, err := s.webhookPrincipal(ctx, ss)
	if err != nil {
		return nil, err
	}
	k, err := s.resolve(ctx, p.Name, p.Arguments)
	if err != nil {
		return nil, err
	}
	id := k.webhookID(principal, p.Delivery.URL)
	if err := w.backend.Unsubscribe(ctx, principal, id); err != nil {
		if errors.Is(err, subscriptions.ErrNotFound) {
			return nil, eventsError(CodeNotFound, map[string]any{"kind": "subscription",
				"reason": "no webhook subscription for this name, arguments and delivery.url; it may have expired"})
		}
		return nil, err
	}
	s.armWebhookExpiry(principal, id, nil)
	return &eventsUnsubscribeResult{ResultType: "complete"}, nil
}

// failureCategory is the lastError category of a POST that got no answer.
func failureCategory(err error) string {
	var ne net.Error
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &cv), errors.As(err, &ua), errors.As(err, &hn), errors.As(err, &rh), strings.Contains(err.Error(), "tls:"):
		return "tls_error"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "connection_refused"
}

// statusCategory is the lastError category of a non-2xx answer.
func statusCategory(code int) string {
	if code >= 500 {
		return "http_5xx"
	}
	return "http_4xx"
}

// randomID returns n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// verify runs the challenge handshake with url: a signed verification
// body that the endpoint proves it wants by echoing the challenge in a
// 2xx answer.
func (w *webhookState) verify(ctx context.Context, id, url, secret string) error {
	nonce := make([]byte, 24)
	_, _ = rand.Read(nonce)
	challenge := base64.RawURLEncoding.EncodeToString(nonce)
	body, _ := json.Marshal(map[string]string{"type": "verification", "challenge": challenge})
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	resp, err := w.sender.Post(ctx, &webhook.Message{
		URL: url, ID: "msg_verification_" + randomID(12), Secrets: []string{secret},
		Header: http.Header{HeaderSubscriptionID: {id}}, Body: body, Timeout: controlTimeout,
	})
	var answer struct {
		Challenge string `json:"challenge"`
	}
	reason := "challenge_failed" // a redirect, or no echo of the challenge
	switch {
	case err != nil:
		reason = failureCategory(err)
	case resp.Status >= 300 && resp.Status < 400:
	case resp.Status < 200 || resp.Status > 299:
		reason = statusCategory(resp.Status)
	case json.Unmarshal(resp.Body, &answer) == nil && subtle.ConstantTimeCompare([]byte(answer.Challenge), []byte(challenge)) == 1:
		return nil
	}
	// One of the lastError categories: the endpoint's own answer is never passed on.
	return eventsError(CodeCallbackEndpointError, map[string]any{"reason": reason})
}

// confirm establishes that the endpoint url wants the deliveries of
// principal, by the first of (the SEP's endpoint verification): the
// operator's verifiedURLs (an allowlist, or a verification out of band),
// this principal's verification of url cached, a receiver document on
// url's origin that covers it, and the challenge handshake. What confirms
// it is recorded per (principal, url).
func (w *webhookState) confirm(ctx context.Context, clk clock.Clock, principal, id, url, secret string) error {
	if w.sender.Preverified(url) {
		w.markVerified(principal, url, clk.Now())
		return nil
	}
	if w.isVerified(principal, url, clk.Now()) {
		return nil
	}
	done, err := w.startVerify(principal)
	if err != nil {
		return err
	}
	defer done()
	if !w.sender.ReceiverDeclares(ctx, url) {
		// The SEP: challenges are rate-limited per destination host,
		// whichever principals ask for them.
		if wait, ok := w.sender.AllowChallenge(url); !ok {
			secs := max(1, int(math.Ceil(wait.Round(time.Millisecond).Seconds())))
			return eventsError(CodeResourceExhausted, map[string]any{"limit": "challengesPerHost", "retryAfterSeconds": secs,
				"reason": fmt.Sprintf("this server sends a limited number of verification challenges to one host per minute, and that host has had its share; try again in %d s, or have the receiver publish %s or the operator list the URL in handlers.webhook.verifiedURLs", secs, webhook.WellKnownPath)})
		}
		if err := w.verify(ctx, id, url, secret); err != nil {
			return err
		}
	}
	w.markVerified(principal, url, clk.Now())
	return nil
}

func (w *webhookState) isVerified(principal, url string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.verified[principal+"\x00"+url]
	return ok && now.Before(until)
}

func (w *webhookState) markVerified(principal, url string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.perPrincipal == nil {
		w.perPrincipal = make(map[string]int)
	}
	key := principal + "\x00" + url
	if _, ok := w.verified[key]; ok {
		w.verified[key] = now.Add(verifiedTTL)
		return
	}
	if len(w.verified) >= maxVerified || w.perPrincipal[principal] >= maxVerifiedPerPrincipal {
		for k, until := range w.verified {
			if !now.Before(until) {
				delete(w.verified, k)
				p, _, _ := strings.Cut(k, "\x00")
				if w.perPrincipal[p]--; w.perPrincipal[p] <= 0 {
					delete(w.perPrincipal, p)
				}
			}
		}
		if len(w.verified) >= maxVerified || w.perPrincipal[principal] >= maxVerifiedPerPrincipal {
			return // verified again next time
		}
	}
	w.verified[key] = now.Add(verifiedTTL)
	w.perPrincipal[principal]++
}

// armWebhookExpiry sets the timer that ends subscription id of principal
// at expiresAt with a terminated body; nil stops it.
func (s *Server) armWebhookExpiry(principal, id string, expiresAt *time.Time) {
	w := s.webhooks
	key := principal + "\x00" + id
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.timers[key]; t != nil {
		t.Stop()
		delete(w.timers, key)
	}
	if expiresAt == nil || w.closed {
		return
	}
	d := max(expiresAt.Sub(s.opts.Clock.Now()), 0)
	w.timers[key] = s.opts.Clock.AfterFunc(d, func() {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		delete(w.timers, key)
		s.wg.Add(1)
		w.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.expireWebhook(principal, id)
		}()
	})
}

// rearmWebhooks sets the expiry timers of the webhook subscriptions a
// previous run of the server made.
func (s *Server) rearmWebhooks() {
	if s.webhooks == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subs, err := s.webhooks.backend.Expiring(ctx, webhookIDPrefix, webhookFilterIDPrefix)
	if err != nil {
		s.log.Error("find the webhook subscriptions to expire", "error", err, "effect", "those made before this start end without a terminated body")
		return
	}
	for _, sub := range subs {
		s.armWebhookExpiry(sub.Principal, sub.ID, sub.ExpiresAt)
	}
}

// closeWebhooks stops the expiry timers.
func (s *Server) closeWebhooks() {
	if s.webhooks == nil {
		return
	}
	w := s.webhooks
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for k, t := range w.timers {
		t.Stop()
		delete(w.timers, k)
	}
}

// expireWebhook ends subscription id of principal when its TTL is over and
// no refresh moved it: it is removed, and its endpoint is told with a
// signed terminated body.
func (s *Server) expireWebhook(principal, id string) {
	w := s.webhooks
	ctx, cancel := context.WithTimeout(context.Background(), 2*controlTimeout)
	defer cancel()
	sub, err := w.backend.Get(ctx, principal, id)
	if errors.Is(err, subscriptions.ErrNotFound) {
		return // removed already
	}
	if err != nil {
		// Its timer is gone: without another, the subscription would
		// never end.
		s.log.Warn("look up a webhook subscription whose TTL is over; trying again shortly", "subscription_id", id, "retry_in", expiryRetry, "error", err)
		t := s.opts.Clock.Now().Add(expiryRetry)
		s.armWebhookExpiry(principal, id, &t)
		return
	}
	now := s.opts.Clock.Now()
	if sub.ExpiresAt == nil {
		return
	}
	if sub.ExpiresAt.After(now) {
		s.armWebhookExpiry(principal, id, sub.ExpiresAt)
		return
	}
	if err := w.backend.Unsubscribe(ctx, principal, id); err != nil && !errors.Is(err, subscriptions.ErrNotFound) {
		s.log.Warn("remove an expired webhook subscription", "subscription_id", id, "error", err)
	}
	if sub.Handler == nil || sub.Secrets == nil {
		return
	}
	e := eventsError(CodeNotFound, map[string]any{"kind": "subscription",
		"reason": "the subscription expired: it was not refreshed before refreshBefore; events/subscribe makes it again"})
	body, _ := json.Marshal(map[string]any{"type": "terminated", "error": errorObject(e, "")})
	if err := postControl(ctx, w.sender, sub.Handler.URL, "terminated", id, sub.Secrets.Signing(now), body); err != nil {
		s.log.Info("tell a webhook endpoint its subscription expired", "subscription_id", id, "error", err)
	}
}

// postControl POSTs a control body once; a non-2xx answer is an error.
func postControl(ctx context.Context, sender *webhook.Sender, url, typ, id string, secrets []string, body []byte) error {
	resp, err := sender.Post(ctx, &webhook.Message{
		URL: url, ID: "msg_" + typ + "_" + randomID(12), Secrets: secrets,
		Header: http.Header{HeaderSubscriptionID: {id}}, Body: body, Timeout: controlTimeout,
	})
	if err != nil {
		return err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return fmt.Errorf("the endpoint answered %d", resp.Status)
	}
	return nil
}

// WebhookHandler returns the handler of webhook jobs. The jobs of SEP-3415
// webhook subscriptions (events/subscribe) are POSTed as the SEP says: an
// EventOccurrence per event, webhook-id the eventId, X-MCP-Subscription-Id,
// at most five attempts within about 12 minutes, 410 and 413 never retried,
// and a gap body when a delivery is abandoned. The jobs of other
// subscriptions go to sender's own Handle. clk tells the time of secret
// rotations; nil is the wall clock. log receives what cannot be delivered;
// nil discards it.
func WebhookHandler(sender *webhook.Sender, clk clock.Clock, log *slog.Logger) subscriptions.Handler {
	clk = cmp.Or[clock.Clock](clk, clock.Real{})
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	return &webhookJobs{sender: sender, clock: clk, log: log}
}

type webhookJobs struct {
	sender *webhook.Sender
	clock  clock.Clock
	log    *slog.Logger
}

func (h *webhookJobs) Check(ctx context.Context, principal string, spec *mcpe.HandlerSpec) error {
	return h.sender.Check(ctx, principal, spec)
}

func (h *webhookJobs) Handle(ctx context.Context, inv *subscriptions.Invocation) subscriptions.Outcome {
	if inv == nil || inv.Spec == nil || !strings.HasPrefix(inv.SubscriptionID, webhookIDPrefix) && !strings.HasPrefix(inv.SubscriptionID, webhookFilterIDPrefix) {
		return h.sender.Handle(ctx, inv)
	}
	raws := inv.Events
	if inv.Kind != mcpe.InboxBatch {
		raws = []json.RawMessage{inv.Event}
	}
	secrets := inv.Secrets.Signing(h.clock.Now())
	if len(secrets) == 0 {
		return subscriptions.Outcome{Err: errors.New("the subscription has no signing secret; events/subscribe sets it")}
	}
	attempt := max(inv.Attempt, 1)
	sent := 0
	var gone []string // events the receiver declined with 410
	for i, raw := range raws {
		var ev mcpe.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			h.log.Error("a webhook delivery holds an event that cannot be decoded; it is not sent", "subscription_id", inv.SubscriptionID, "job_id", inv.JobID, "index", i, "error", err)
			continue
		}
		k := subscriptionKey{name: ev.Type}
		if strings.HasPrefix(inv.SubscriptionID, webhookFilterIDPrefix) {
			k.name = FilterEventType
		}
		occ, skipped := occurrences(k, subscriptions.InboxEntry{Kind: mcpe.InboxEvent, Event: raw}, time.Time{})
		if skipped > 0 {
			h.log.Error("a webhook delivery holds an event that cannot be made an EventOccurrence; it is not sent", "subscription_id", inv.SubscriptionID, "job_id", inv.JobID, "event_id", ev.ID, "skipped", skipped)
		}
		for _, o := range occ {
			body, _ := json.Marshal(o)
			msgID := o.EventID
			if msgID == "" || strings.ContainsAny(msgID, " \t\r\n") {
				msgID = "msg_" + inv.JobID
			}
			resp, err := h.sender.Post(ctx, &webhook.Message{
				URL: inv.Spec.URL, ID: msgID, Secrets: secrets,
				Header: http.Header{HeaderSubscriptionID: {inv.SubscriptionID}}, Body: body,
				Timeout: time.Duration(inv.Spec.Timeout) * time.Millisecond,
			})
			switch {
			case err != nil && (webhook.IsRefused(err) || ctx.Err() == nil && isInvalid(err)):
				return h.abandon(ctx, inv, secrets, subscriptions.Outcome{Err: fmt.Errorf("not sent: %w", err)})
			case err != nil:
				return h.retry(ctx, inv, secrets, attempt, fmt.Errorf("%s: %w", failureCategory(err), err), 0, "")
			}
			out := fmt.Sprintf("%d %s", resp.Status, http.StatusText(resp.Status))
			switch code := resp.Status; {
			case code >= 200 && code <= 299:
				sent++
				continue
			case code == http.StatusGone:
				// The receiver declined this event; the subscription, and
				// the rest of the delivery, go on.
				gone = append(gone, o.EventID)
				continue
			case code == http.StatusRequestEntityTooLarge, code >= 300 && code <= 399:
				return h.abandon(ctx, inv, secrets, subscriptions.Outcome{Output: out, Err: fmt.Errorf("the receiver answered %s, which is not retried", out)})
			default:
				return h.retry(ctx, inv, secrets, attempt, fmt.Errorf("the receiver answered %s", out), resp.RetryAfter, out)
			}
		}
	}
	out := fmt.Sprintf("%d delivered", sent)
	if len(gone) > 0 {
		return subscriptions.Outcome{Output: out, Err: fmt.Errorf("the receiver answered 410 Gone for event(s) %s: not sent again", strings.Join(gone, ", "))}
	}
	return subscriptions.Outcome{Output: out}
}

// retry asks for another attempt, or abandons the delivery after the last.
func (h *webhookJobs) retry(ctx context.Context, inv *subscriptions.Invocation, secrets []string, attempt int, err error, retryAfter time.Duration, out string) subscriptions.Outcome {
	if attempt > len(webhookRetries) {
		return h.abandon(ctx, inv, secrets, subscriptions.Outcome{Output: out, Err: fmt.Errorf("gave up after %d attempts: %w", attempt, err)})
	}
	d := max(webhookRetries[attempt-1], min(retryAfter, maxWebhookRetryAfter))
	return subscriptions.Outcome{Output: out, Err: err, RetryIn: d}
}

// abandon ends a delivery that failed for good and tells the endpoint with
// a gap body (best effort, once): webhook deliveries have no replay, so
// its cursor is null.
func (h *webhookJobs) abandon(ctx context.Context, inv *subscriptions.Invocation, secrets []string, o subscriptions.Outcome) subscriptions.Outcome {
	if webhook.IsRefused(o.Err) || isInvalid(o.Err) {
		return o
	}
	if err := postControl(ctx, h.sender, inv.Spec.URL, "gap", inv.SubscriptionID, secrets, []byte(`{"type":"gap","cursor":null}`)); err != nil {
		o.Err = fmt.Errorf("%w (and the gap body was not taken: %v)", o.Err, err)
	}
	return o
}
