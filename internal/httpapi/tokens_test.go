package httpapi

import (
	"net/http/httptest"
	"testing"
)

func TestLookup(t *testing.T) {
	set := NewTokens(map[string]string{
		"alpha-token": "alice",
		"beta-token":  "bob",
		"gamma-token": "alice",
	})
	if got := set.Len(); got != 3 {
		t.Fatalf("Len() = %d, want 3", got)
	}
	tests := []struct {
		name          string
		token         string
		wantPrincipal string
		wantOK        bool
	}{
		{name: "first token", token: "alpha-token", wantPrincipal: "alice", wantOK: true},
		{name: "second token", token: "beta-token", wantPrincipal: "bob", wantOK: true},
		{name: "two tokens for one principal", token: "gamma-token", wantPrincipal: "alice", wantOK: true},
		{name: "unknown token", token: "delta-token"},
		{name: "prefix of a token", token: "alpha"},
		{name: "token with a suffix", token: "alpha-token-x"},
		{name: "different case", token: "ALPHA-TOKEN"},
		{name: "empty token", token: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			principal, ok := set.Lookup(tt.token)
			if principal != tt.wantPrincipal || ok != tt.wantOK {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.token, principal, ok, tt.wantPrincipal, tt.wantOK)
			}
		})
	}
}

func TestLookupEmptySets(t *testing.T) {
	sets := []struct {
		name string
		set  *Tokens
	}{
		{name: "nil", set: nil},
		{name: "zero value", set: &Tokens{}},
		{name: "from an empty map", set: NewTokens(nil)},
	}
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			if got := s.set.Len(); got != 0 {
				t.Errorf("Len() = %d, want 0", got)
			}
			for _, token := range []string{"", "any-token"} {
				if principal, ok := s.set.Lookup(token); ok || principal != "" {
					t.Errorf("Lookup(%q) = %q, %v; want \"\", false", token, principal, ok)
				}
			}
		})
	}
}

// An empty token in the configuration must not let a request without a
// token through.
func TestLookupEmptyTokenNeverMatches(t *testing.T) {
	set := NewTokens(map[string]string{"": "nobody"})
	if principal, ok := set.Lookup(""); ok {
		t.Errorf("Lookup(\"\") = %q, true; want no match", principal)
	}
}

func TestFromRequest(t *testing.T) {
	tests := []struct {
		name      string
		header    []string // values of Authorization; none means no header
		wantToken string
		wantOK    bool
	}{
		{name: "no header"},
		{name: "empty header", header: []string{""}},
		{name: "bearer token", header: []string{"Bearer abc123"}, wantToken: "abc123", wantOK: true},
		{name: "lower-case scheme", header: []string{"bearer abc123"}, wantToken: "abc123", wantOK: true},
		{name: "upper-case scheme", header: []string{"BEARER abc123"}, wantToken: "abc123", wantOK: true},
		{name: "mixed-case scheme", header: []string{"bEaReR abc123"}, wantToken: "abc123", wantOK: true},
		{name: "extra spaces before the token", header: []string{"Bearer    abc123"}, wantToken: "abc123", wantOK: true},
		{name: "trailing spaces", header: []string{"Bearer abc123   "}, wantToken: "abc123", wantOK: true},
		{name: "tab before the token", header: []string{"Bearer \tabc123"}, wantToken: "abc123", wantOK: true},
		{name: "scheme only", header: []string{"Bearer"}},
		{name: "scheme and a space", header: []string{"Bearer "}},
		{name: "scheme and spaces", header: []string{"Bearer    "}},
		{name: "basic auth", header: []string{"Basic YWxpY2U6c2VjcmV0"}},
		{name: "token without a scheme", header: []string{"abc123"}},
		{name: "scheme glued to the token", header: []string{"Bearerabc123"}},
		{name: "leading space", header: []string{" Bearer abc123"}},
		{name: "first of two headers", header: []string{"Bearer first", "Bearer second"}, wantToken: "first", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/events", nil)
			for _, v := range tt.header {
				r.Header.Add("Authorization", v)
			}
			token, ok := BearerToken(r)
			if token != tt.wantToken || ok != tt.wantOK {
				t.Errorf("BearerToken(Authorization: %q) = %q, %v; want %q, %v", tt.header, token, ok, tt.wantToken, tt.wantOK)
			}
		})
	}
}
