// Package bearer checks bearer tokens from the operator's configuration. The
// MCP endpoint maps each token to a principal; the ingest endpoint only asks
// whether a token is known.
package bearer

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Set is a fixed set of tokens, each naming a principal. The zero value and
// nil hold no tokens.
type Set struct {
	entries []entry
}

type entry struct {
	hash      [sha256.Size]byte
	principal string
}

// NewSet returns a Set from token -> principal.
func NewSet(tokens map[string]string) *Set {
	s := &Set{}
	for token, principal := range tokens {
		s.entries = append(s.entries, entry{hash: sha256.Sum256([]byte(token)), principal: principal})
	}
	return s
}

// Len returns the number of tokens.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Lookup returns the principal of token. It compares the token's hash with
// every entry in constant time, so timing reveals neither the token nor which
// entry matched.
func (s *Set) Lookup(token string) (principal string, ok bool) {
	if s == nil || token == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(token))
	for _, e := range s.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			principal, ok = e.principal, true
		}
	}
	return principal, ok
}

// FromRequest returns the token of an "Authorization: Bearer <token>" header.
func FromRequest(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
