package webhook

import (
	"context"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// reservedHeaders cannot be set by a subscription: the server writes them,
// or they are hop-by-hop and belong to the connection. Any webhook-* name
// is reserved too.
var reservedHeaders = map[string]bool{
	"content-type":        true,
	"content-length":      true,
	"content-encoding":    true,
	"host":                true,
	"expect":              true,
	"connection":          true,
	"keep-alive":          true,
	"proxy-authenticate":  true,
	"proxy-authorization": true,
	"proxy-connection":    true,
	"te":                  true,
	"trailer":             true,
	"transfer-encoding":   true,
	"upgrade":             true,
}

// Bounds on a subscription's headers.
const (
	maxHeaderName  = 256
	maxHeaderValue = 8 << 10
)

// Check tells whether spec may run: its URL, timeout and headers. A host
// name is checked when it is dialled; a literal address now.
func (s *Sender) Check(_ context.Context, _ string, spec *mcpe.HandlerSpec) error {
	_, err := s.check(spec)
	return err
}

// check validates spec and returns its parsed URL.
func (s *Sender) check(spec *mcpe.HandlerSpec) (*url.URL, error) {
	if spec == nil {
		return nil, mcpe.Invalid("handler", "is required")
	}
	u, err := s.checkURL(spec.URL)
	if err != nil {
		return nil, err
	}
	if spec.Timeout < 0 {
		return nil, mcpe.Invalid("handler.timeout", "is %d; give milliseconds from %d to %d, or leave it out for the default %v",
			spec.Timeout, mcpe.MinHandlerTimeout, maxTimeout.Milliseconds(), defaultTimeout)
	}
	if maxMS := maxTimeout.Milliseconds(); int64(spec.Timeout) > maxMS {
		return nil, mcpe.Invalid("handler.timeout", "is %d ms; at most %d (%v) is allowed; give a smaller number, or leave it out for the default %v",
			spec.Timeout, maxMS, maxTimeout, defaultTimeout)
	}
	if len(spec.Headers) > mcpe.MaxHandlerHeaders {
		return nil, mcpe.Invalid("handler.headers", "has %d entries; at most %d are accepted", len(spec.Headers), mcpe.MaxHandlerHeaders)
	}
	seen := make(map[string]string, len(spec.Headers))
	allowed := s.secretsFor(u)
	for _, name := range slices.Sorted(maps.Keys(spec.Headers)) {
		if err := s.checkHeader(name, spec.Headers[name], allowed); err != nil {
			return nil, err
		}
		lower := strings.ToLower(name)
		if other, ok := seen[lower]; ok {
			return nil, mcpe.Invalid("handler.headers", "names %q and %q are the same header (names are case-insensitive); keep one", other, name)
		}
		seen[lower] = name
	}
	return u, nil
}

func (s *Sender) checkURL(raw string) (*url.URL, error) {
	const field = "handler.url"
	if raw == "" {
		return nil, mcpe.Invalid(field, "is required, e.g. \"https://hooks.example.com/mcpe\"")
	}
	if len(raw) > 2048 {
		return nil, mcpe.Invalid(field, "is %d bytes long; at most 2048 are accepted", len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, mcpe.Invalid(field, "%q is not a valid URL; give an absolute https URL such as \"https://hooks.example.com/mcpe\"", raw)
	}
	if !u.IsAbs() {
		return nil, mcpe.Invalid(field, "%q is not an absolute URL; give one with scheme and host, such as \"https://hooks.example.com/mcpe\"", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !s.opts.AllowHTTP {
			return nil, mcpe.Invalid(field, "uses http; https is required (the operator can allow http with handlers.webhook.allowHTTP)")
		}
	default:
		if s.opts.AllowHTTP {
			return nil, mcpe.Invalid(field, "uses the scheme %q; use https or http", u.Scheme)
		}
		return nil, mcpe.Invalid(field, "uses the scheme %q; https is required", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, mcpe.Invalid(field, "%q has no host; write it as %s://host/path", raw, u.Scheme)
	}
	if u.User != nil {
		return nil, mcpe.Invalid(field, "contains user information (user:password@); leave it out, and send credentials in a header, e.g. \"Authorization\": \"Bearer ${TOKEN}\" with a secret the operator configured")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, mcpe.Invalid(field, "contains a fragment (#...), which is never sent; leave it out")
	}
	host := u.Hostname()
	if host == "" {
		return nil, mcpe.Invalid(field, "%q has no host; give e.g. \"https://hooks.example.com/mcpe\"", raw)
	}
	if p := u.Port(); p != "" {
		if n, ok := parsePort(p); !ok || n == 0 {
			return nil, mcpe.Invalid(field, "has the port %q; give a port from 1 to 65535, or none", p)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := s.checkAddr("", a); err != nil {
			ae, _ := isRefused(err)
			return nil, mcpe.Invalid(field, "host %s is %s, which webhooks may not reach; use a public address, or ask the operator to allowlist it in handlers.webhook.allowNetworks", ae.Addr, ae.Range)
		}
	}
	return u, nil
}

func parsePort(p string) (int, bool) {
	if len(p) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= 65535
}

// checkHeader checks a header of a webhook that may carry the secrets
// allowed.
func (s *Sender) checkHeader(name, value string, allowed map[string]string) error {
	if !validHeaderName(name) || len(name) > maxHeaderName {
		return mcpe.Invalid("handler.headers", "%q is not a valid header name; use up to %d letters, digits and -, e.g. \"Authorization\" or \"X-Api-Key\"", name, maxHeaderName)
	}
	field := "handler.headers." + name
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "webhook-") {
		return mcpe.Invalid(field, "cannot be set: webhook-* headers are the Standard Webhooks headers the server signs and sends itself; leave it out")
	}
	if reservedHeaders[lower] {
		return mcpe.Invalid(field, "cannot be set: the server sets %s itself; leave it out", name)
	}
	if len(value) > maxHeaderValue {
		return mcpe.Invalid(field, "is %d bytes long; at most %d are accepted", len(value), maxHeaderValue)
	}
	if !validHeaderValue(value) {
		return mcpe.Invalid(field, "contains a line break or another control character; give a single-line value")
	}
	if _, err := expand(value, allowed); err != nil {
		return mcpe.Invalid(field, "%s", err.msg(allowed))
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v has no control character but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
