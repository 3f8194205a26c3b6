// Bearer tokens from the operator's configuration: the MCP endpoint maps each
// token to a principal; the ingest endpoint only asks whether a token is known.

package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Tokens is a fixed set of bearer tokens, each naming a principal. The zero value and
// nil hold no tokens.
type Tokens struct {
	entries []entry
}

type entry struct {
	hash      [sha256.Size]byte
	principal string
}

// NewTokens returns the Tokens of token -> principal.
func NewTokens(tokens map[string]string) *Tokens {
	s := &Tokens{}
	for token, principal := range tokens {
		s.entries = append(s.entries, entry{hash: sha256.Sum256([]byte(token)), principal: principal})
	}
	return s
}

// Len returns the number of tokens.
func (s *Tokens) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Lookup returns the principal of token. It compares the token's hash with
// every entry in constant time, so timing reveals neither the token nor which
// entry matched.
func (s *Tokens) Lookup(token string) (principal string, ok bool) {
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

// BearerToken returns the token of an "Authorization: Bearer <token>" header.
func BearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Authenticate checks the bearer token of r against t. It returns the
// token's principal, or refuses r itself with a 401 that carries
// WWW-Authenticate: Bearer (RFC 6750) and the JSON refusal body, and
// returns false. kind names the tokens in the refusal, such as "an ingest
// token".
func (t *Tokens) Authenticate(w http.ResponseWriter, r *http.Request, kind string) (principal string, ok bool) {
	challenge, message := `Bearer realm="mcpe-server"`, "this endpoint needs an \"Authorization: Bearer <token>\" header with "+kind+" from the server's configuration"
	if token, ok := BearerToken(r); ok {
		if principal, ok = t.Lookup(token); ok {
			return principal, true
		}
		challenge, message = `Bearer realm="mcpe-server", error="invalid_token"`, "the bearer token is not "+kind+" of this server"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	WriteError(w, http.StatusUnauthorized, CodeUnauthorized, message)
	return "", false
}
