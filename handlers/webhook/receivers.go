package webhook

// Consent of a SEP-3415 callback URL without a challenge: the operator's
// list of verified URLs (Options.VerifiedURLs), and the document a
// receiver's origin publishes at WellKnownPath. The caller (the server's
// events/subscribe) asks these before it runs the challenge handshake.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// WellKnownPath is where the https origin of a callback URL may publish the
// path prefixes under it that accept MCP webhook deliveries (SEP-3415):
// {"receivers": ["/hooks/", ...]}.
const WellKnownPath = "/.well-known/mcp-webhook-receiver.json"

// Bounds of Options.VerifiedURLs.
const (
	MaxVerifiedURLs   = 100
	MaxVerifiedURLLen = 2048
)

// Bounds and cache lifetimes of receiver documents.
const (
	// MaxReceiverDocument is the largest document read; a longer one
	// covers nothing.
	MaxReceiverDocument = 64 << 10
	// MaxReceiverPrefixes bounds the prefixes of one document, and
	// maxReceiverPrefixLen the length of each.
	MaxReceiverPrefixes  = 100
	maxReceiverPrefixLen = 1024
	// ReceiverDocumentTimeout bounds the GET of a document.
	ReceiverDocumentTimeout = 5 * time.Second
	// A document is cached for its Cache-Control max-age, within
	// [MinReceiverDocumentCache, MaxReceiverDocumentCache], and for
	// DefaultReceiverDocumentCache without one. An origin with no valid
	// document (an error, a status other than 200, a document too large
	// or not valid) is remembered for NegativeReceiverDocumentCache.
	MinReceiverDocumentCache      = time.Minute
	MaxReceiverDocumentCache      = 24 * time.Hour
	DefaultReceiverDocumentCache  = 10 * time.Minute
	NegativeReceiverDocumentCache = time.Minute
	// maxReceiverDocuments bounds the origins cached.
	maxReceiverDocuments = 1000
)

// parseVerifiedURL parses an entry of Options.VerifiedURLs; the error says
// what is wrong with it and what is accepted.
func parseVerifiedURL(raw string) (urlPrefix, string) {
	const example = `give an https URL prefix such as "https://hooks.example.com/mcp/"`
	if len(raw) > MaxVerifiedURLLen {
		return urlPrefix{}, fmt.Sprintf("is %d bytes long; at most %d are accepted", len(raw), MaxVerifiedURLLen)
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Scheme != "https" {
		return urlPrefix{}, fmt.Sprintf("%q uses the scheme %q; SEP-3415 callback URLs are https only, %s", raw, u.Scheme, example)
	}
	return parsePrefix(raw) // any scheme but https was refused above (url.Parse lowercases it)
}

// validateVerifiedURLs checks Options.VerifiedURLs.
func validateVerifiedURLs(urls []string) error {
	if len(urls) > MaxVerifiedURLs {
		return mcpe.Invalid("verifiedURLs", "has %d entries; at most %d are accepted (each is a URL prefix, such as \"https://hooks.example.com/mcp/\", that covers every callback URL under it)", len(urls), MaxVerifiedURLs)
	}
	for i, raw := range urls {
		if _, msg := parseVerifiedURL(raw); msg != "" {
			return mcpe.Invalid(fmt.Sprintf("verifiedURLs[%d]", i), "%s", msg)
		}
	}
	return nil
}

// Preverified reports whether raw is under one of the operator's
// Options.VerifiedURLs: its endpoint counts as verified (allowlisted, or
// verified out of band) with no challenge. A prefix covers a URL as a
// Secret's URLs do: the same origin, and a path at or under the prefix's
// at a '/'.
func (s *Sender) Preverified(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && covers(s.verified, u)
}

// receiverDocs caches the receiver documents by origin, and makes one
// lookup of an origin at a time: those who ask meanwhile wait for it.
type receiverDocs struct {
	mu       sync.Mutex
	entries  map[string]receiverDoc   // "host:port" of an https origin
	inflight map[string]chan struct{} // closed when the lookup ends
}

// receiverDoc is an origin's document: its prefixes (none when it has no
// valid document), and until when it is used.
type receiverDoc struct {
	prefixes []urlPrefix
	until    time.Time
}

// ReceiverDeclares reports whether the https origin of raw publishes, at
// WellKnownPath, a path prefix that raw's path is at or under (the same
// rule as Preverified's). The document is fetched with GET through the
// same guard as deliveries (the address checked when dialled against the
// special-purpose ranges and AllowNetworks, TLS, no proxy, no redirects),
// within ReceiverDocumentTimeout, at most MaxReceiverDocument bytes, one
// lookup of an origin at a time, and cached per origin (see
// MinReceiverDocumentCache). Anything else (an http URL, the lookup
// refused by the host's budget of AllowChallenge, no answer, a status
// other than 200, a document too large or not valid, no prefix covering
// raw) is false, and the caller falls back to the challenge.
func (s *Sender) ReceiverDeclares(ctx context.Context, raw string) bool {
	u, err := s.checkURL(raw)
	if err != nil || u.Scheme != "https" {
		return false
	}
	origin, ok := normalize(u)
	if !ok {
		return false
	}
	doc, ok := s.receiverDoc(ctx, u, origin)
	return ok && covers(doc.prefixes, u)
}

// receiverDoc returns the document of u's origin, cached or fetched; ok is
// false when ctx ended first.
func (s *Sender) receiverDoc(ctx context.Context, u *url.URL, origin urlPrefix) (receiverDoc, bool) {
	key := fmt.Sprintf("%s:%d", origin.host, origin.port)
	d := &s.docs
	for {
		now := s.opts.Clock.Now()
		d.mu.Lock()
		doc, cached := d.entries[key]
		if cached && now.Before(doc.until) {
			d.mu.Unlock()
			return doc, true
		}
		wait, busy := d.inflight[key]
		if !busy {
			if _, ok := s.AllowChallenge(u.String()); !ok {
				d.mu.Unlock()
				return receiverDoc{}, false // not sent, and nothing learnt of the origin
			}
			if d.inflight == nil {
				d.inflight = make(map[string]chan struct{})
			}
			done := make(chan struct{})
			d.inflight[key] = done
			d.mu.Unlock()
			doc, ok := s.lookupReceiverDoc(ctx, u, key, origin, now)
			d.mu.Lock()
			delete(d.inflight, key)
			close(done)
			d.mu.Unlock()
			return doc, ok
		}
		d.mu.Unlock()
		select {
		case <-wait: // cached now, unless its caller gave up: look again
		case <-ctx.Done():
			return receiverDoc{}, false
		}
	}
}

// lookupReceiverDoc fetches the document of u's origin and caches it
// under key; a failure is cached as a document with no prefixes.
func (s *Sender) lookupReceiverDoc(ctx context.Context, u *url.URL, key string, origin urlPrefix, now time.Time) (receiverDoc, bool) {
	prefixes, ttl, err := s.fetchReceiverDoc(ctx, u, origin)
	if err != nil {
		s.opts.Logger.Debug("no receiver document; the challenge decides", "origin", "https://"+u.Host, "error", err)
		if ctx.Err() != nil {
			return receiverDoc{}, false // the caller gave up: nothing learnt of the origin
		}
		ttl = NegativeReceiverDocumentCache
	}
	doc := receiverDoc{prefixes: prefixes, until: now.Add(ttl)}
	s.docs.put(key, doc, now)
	return doc, true
}

// put caches doc for key, making room when the cache is full: the entries
// that ended go first, then any one.
func (d *receiverDocs) put(key string, doc receiverDoc, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries == nil {
		d.entries = make(map[string]receiverDoc)
	}
	if _, ok := d.entries[key]; !ok && len(d.entries) >= maxReceiverDocuments {
		for k, e := range d.entries {
			if !now.Before(e.until) {
				delete(d.entries, k)
			}
		}
		for k := range d.entries {
			if len(d.entries) < maxReceiverDocuments {
				break
			}
			delete(d.entries, k)
		}
	}
	d.entries[key] = doc
}

// errReceiverDocument starts the errors of a document that is not valid.
var errReceiverDocument = errors.New("receiver document")

// fetchReceiverDoc GETs the receiver document of u's origin and returns
// its prefixes and how long to cache them.
func (s *Sender) fetchReceiverDoc(ctx context.Context, u *url.URL, origin urlPrefix) ([]urlPrefix, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, ReceiverDocumentTimeout)
	defer cancel()
	doc := &url.URL{Scheme: "https", Host: u.Host, Path: WellKnownPath}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, doc.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header["User-Agent"] = []string{userAgent}
	req.Header["Accept"] = []string{"application/json"}
	resp, err := s.client.Do(req)
	if err != nil {
		if ae, ok := isRefused(err); ok {
			return nil, 0, ae
		}
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// A redirect is not followed, as for deliveries.
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		return nil, 0, fmt.Errorf("%w: the origin answered %s", errReceiverDocument, statusLine(resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxReceiverDocument+1))
	if err != nil {
		return nil, 0, err
	}
	if len(body) > MaxReceiverDocument {
		return nil, 0, fmt.Errorf("%w: longer than %d bytes", errReceiverDocument, MaxReceiverDocument)
	}
	prefixes, err := parseReceiverDoc(body, u.Host, origin)
	if err != nil {
		return nil, 0, err
	}
	return prefixes, cacheLifetime(resp.Header.Get("Cache-Control")), nil
}

// parseReceiverDoc parses a receiver document of the origin whose URL host
// is host: an object whose "receivers" is an array of at most
// MaxReceiverPrefixes absolute paths ("/hooks/"), each without a query,
// a fragment, a "." or ".." segment, a '\' or an encoded '/' or '\'.
// Other members are ignored.
func parseReceiverDoc(body []byte, host string, origin urlPrefix) ([]urlPrefix, error) {
	var doc struct {
		Receivers *[]string `json:"receivers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object with a receivers array of strings: %v", errReceiverDocument, err)
	}
	if doc.Receivers == nil {
		return nil, fmt.Errorf("%w: no receivers array", errReceiverDocument)
	}
	paths := *doc.Receivers
	if len(paths) > MaxReceiverPrefixes {
		return nil, fmt.Errorf("%w: %d receivers; at most %d are read", errReceiverDocument, len(paths), MaxReceiverPrefixes)
	}
	out := make([]urlPrefix, 0, len(paths))
	for i, raw := range paths {
		p, ok := receiverPrefix(raw, host, origin)
		if !ok {
			return nil, fmt.Errorf("%w: receivers[%d] is not an absolute path prefix such as \"/hooks/\"", errReceiverDocument, i)
		}
		out = append(out, p)
	}
	return out, nil
}

// receiverPrefix parses one path of a receiver document as a prefix of
// origin.
func receiverPrefix(raw, host string, origin urlPrefix) (urlPrefix, bool) {
	if len(raw) > maxReceiverPrefixLen || !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") || strings.ContainsAny(raw, "?#") {
		return urlPrefix{}, false
	}
	u, err := url.Parse("https://" + host + raw)
	if err != nil || u.Host != host || u.RawQuery != "" || u.Fragment != "" {
		return urlPrefix{}, false
	}
	p, ok := normalize(u)
	if !ok || p.scheme != origin.scheme || p.host != origin.host || p.port != origin.port {
		return urlPrefix{}, false
	}
	return p, true
}

// cacheLifetime is how long a document answered with the Cache-Control
// header cc is used: its max-age within [MinReceiverDocumentCache,
// MaxReceiverDocumentCache]; no-store and no-cache count as 0, and no
// max-age as DefaultReceiverDocumentCache.
func cacheLifetime(cc string) time.Duration {
	d, found := time.Duration(0), false
	for dir := range strings.SplitSeq(cc, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(dir), "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "no-store", "no-cache":
			return MinReceiverDocumentCache
		case "max-age":
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(value), `"`), 10, 64)
			if err != nil || n < 0 {
				return MinReceiverDocumentCache
			}
			d, found = time.Duration(min(n, int64(MaxReceiverDocumentCache/time.Second)))*time.Second, true
		}
	}
	if !found {
		return DefaultReceiverDocumentCache
	}
	return min(max(d, MinReceiverDocumentCache), MaxReceiverDocumentCache)
}
