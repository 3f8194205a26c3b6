package webhook

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Secret is one of the operator's secrets, filled into header values
// written ${NAME}, and the URLs it may be sent to.
type Secret struct {
	// Value is what ${NAME} becomes.
	Value string
	// URLs are prefixes of the webhook URLs the secret may be sent to,
	// such as "https://hooks.example.com/" or
	// "https://api.example.com:8443/hooks/"; at least one is required. A
	// webhook URL matches a prefix when it has the same scheme, the same
	// host (compared case-insensitively, IP addresses in their canonical
	// form) and the same port (no port is 443 for https and 80 for http),
	// and its path is the prefix's path or lies under it: below a prefix
	// path ending in '/', or at a '/' after one that does not
	// ("https://h/a" matches /a and /a/b, never /ab). A URL with user
	// information, an encoded '/' or '\', a '\', or a "." or ".." path
	// segment matches no prefix. A prefix is scheme://host[:port][/path]:
	// http or https, with no user information, query or fragment.
	URLs []string
}

// urlPrefix is an entry of Secret.URLs, parsed.
type urlPrefix struct {
	scheme, host string
	port         int
	path         string // decoded; "/" when empty
}

// parsePrefix parses an entry of Secret.URLs; the error says what is
// wrong with it, for an *mcpe.InvalidError.
func parsePrefix(raw string) (urlPrefix, string) {
	const example = `give scheme, host and optionally a path, such as "https://hooks.example.com/"`
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || !u.IsAbs() || u.Host == "" {
		return urlPrefix{}, fmt.Sprintf("%q is not a URL prefix; %s", raw, example)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return urlPrefix{}, fmt.Sprintf("%q uses the scheme %q; webhooks are https (or http), %s", raw, u.Scheme, example)
	}
	if u.User != nil {
		return urlPrefix{}, fmt.Sprintf("%q contains user information (user@); %s", raw, example)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return urlPrefix{}, fmt.Sprintf("%q has a query or a fragment; a prefix ends at its path, %s", raw, example)
	}
	p, ok := normalize(u)
	if !ok {
		return urlPrefix{}, fmt.Sprintf("%q has no valid host and port, or a path with . or .. segments or an encoded / or \\; %s", raw, example)
	}
	return p, ""
}

// normalize returns the scheme, host, port and path of u as prefixes
// compare them; ok is false when u cannot match a prefix: no host, a
// bad port, user information, or a path a receiver might read otherwise
// (with . or .. segments, an encoded / or \, or a \).
func normalize(u *url.URL) (urlPrefix, bool) {
	if u.User != nil || u.Opaque != "" {
		return urlPrefix{}, false
	}
	p := urlPrefix{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), path: u.Path}
	if p.host == "" {
		return urlPrefix{}, false
	}
	if a, err := netip.ParseAddr(p.host); err == nil {
		if a.Zone() != "" {
			return urlPrefix{}, false
		}
		p.host = a.String()
	}
	switch port := u.Port(); {
	case port != "":
		n, ok := parsePort(port)
		if !ok || n == 0 {
			return urlPrefix{}, false
		}
		p.port = n
	case p.scheme == "https":
		p.port = 443
	case p.scheme == "http":
		p.port = 80
	default:
		return urlPrefix{}, false
	}
	raw := strings.ToLower(u.EscapedPath())
	if strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") || strings.Contains(u.Path, `\`) {
		return urlPrefix{}, false
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return urlPrefix{}, false
		}
	}
	if p.path == "" {
		p.path = "/"
	}
	return p, true
}

// matches reports whether u is at or under p.
func (p urlPrefix) matches(u *url.URL) bool {
	n, ok := normalize(u)
	if !ok || n.scheme != p.scheme || n.host != p.host || n.port != p.port {
		return false
	}
	if n.path == p.path {
		return true
	}
	if strings.HasSuffix(p.path, "/") {
		return strings.HasPrefix(n.path, p.path)
	}
	return strings.HasPrefix(n.path, p.path+"/")
}

// covers reports whether u is at or under one of prefixes.
func covers(prefixes []urlPrefix, u *url.URL) bool {
	return slices.ContainsFunc(prefixes, func(p urlPrefix) bool { return p.matches(u) })
}

// secret is a Secret with its URLs parsed.
type secret struct {
	value string
	urls  []urlPrefix
}

// parseSecrets parses the URLs of secrets, which Validate checked.
func parseSecrets(secrets map[string]Secret) map[string]secret {
	out := make(map[string]secret, len(secrets))
	for name, s := range secrets {
		c := secret{value: s.Value}
		for _, raw := range s.URLs {
			if p, msg := parsePrefix(raw); msg == "" {
				c.urls = append(c.urls, p)
			}
		}
		out[name] = c
	}
	return out
}

// secretsFor returns the secrets that may be sent to u, by name.
func (s *Sender) secretsFor(u *url.URL) map[string]string {
	out := make(map[string]string)
	for name, sec := range s.secrets {
		if covers(sec.urls, u) {
			out[name] = sec.value
		}
	}
	return out
}

// expandError says why a header value cannot be expanded.
type expandError struct {
	ref     string // the ${...} at fault, shown up to 40 bytes when malformed
	unknown bool   // a well-formed name with no secret for this URL
}

func (e *expandError) Error() string { return e.msg(nil) }

// msg says what is wrong. allowed are the secrets that may be sent to the
// webhook's URL: the only names it gives, so that a model learns nothing of
// secrets meant for other receivers, nor whether one of that name exists.
func (e *expandError) msg(allowed map[string]string) string {
	if !e.unknown {
		ref := e.ref
		if len(ref) > 40 {
			ref = ref[:40] + "..."
		}
		return fmt.Sprintf("has %q, which is not a secret reference: write ${NAME} with a name of letters, digits and '_' (nothing else is expanded)", ref)
	}
	msg := fmt.Sprintf("uses %s, which cannot be filled in for this URL: the operator allows no secret of that name to be sent to it", e.ref)
	if len(allowed) == 0 {
		return msg + "; write the value itself"
	}
	names := slices.Sorted(maps.Keys(allowed))
	for i, n := range names {
		names[i] = "${" + n + "}"
	}
	return msg + "; secrets allowed for this URL: " + strings.Join(names, ", ")
}

// expand fills each ${NAME} of v from secrets. Nothing else is expanded: a
// $ not followed by { is kept as it is.
func expand(v string, secrets map[string]string) (string, *expandError) {
	i := strings.Index(v, "${")
	if i < 0 {
		return v, nil
	}
	var b strings.Builder
	for i >= 0 {
		b.WriteString(v[:i])
		rest := v[i+2:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", &expandError{ref: v[i:]}
		}
		name := rest[:end]
		ref := "${" + name + "}"
		if !secretName.MatchString(name) {
			return "", &expandError{ref: ref}
		}
		val, ok := secrets[name]
		if !ok {
			return "", &expandError{ref: ref, unknown: true}
		}
		b.WriteString(val)
		v = rest[end+1:]
		i = strings.Index(v, "${")
	}
	b.WriteString(v)
	return b.String(), nil
}
