package webhook

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestSecretsGoOnlyWhereTheOperatorSays is the exfiltration a
// prompt-injected model would try: a webhook to its own receiver with the
// operator's token in a header. Check refuses it, and Handle, which checks
// again (the subscription may predate a change of the operator's secrets, or
// its URL may have changed), sends nothing; the receiver the operator named
// gets the token.
func TestSecretsGoOnlyWhereTheOperatorSays(t *testing.T) {
	operator := newReceiver(t, false, nil)
	attacker := newReceiver(t, false, nil)
	o := httpOptions(clocktest.NewFake(t0))
	o.Secrets = map[string]Secret{"WEBHOOK_TOKEN": {Value: "operator-token", URLs: []string{operator.URL + "/hooks/"}}}
	s := newSender(t, o)

	steal := invocation(attacker.URL+"/hooks/steal", 1)
	steal.Spec.Headers = map[string]string{"Authorization": "Bearer ${WEBHOOK_TOKEN}"}
	var ie *mcpe.InvalidError
	if err := s.Check(t.Context(), "mallory", steal.Spec); !errors.As(err, &ie) || ie.Field != "handler.headers.Authorization" {
		t.Errorf("Check of a webhook to another receiver with ${WEBHOOK_TOKEN} = %v; want it refused naming handler.headers.Authorization", err)
	}
	if out := s.Handle(t.Context(), steal); out.Err == nil || out.RetryIn != 0 {
		t.Errorf("Handle of a webhook to another receiver with ${WEBHOOK_TOKEN} = %+v; want a failure without retry", out)
	}
	// Outside the path prefix, on the operator's own receiver, too.
	outside := invocation(operator.URL+"/admin", 1)
	outside.Spec.Headers = steal.Spec.Headers
	if out := s.Handle(t.Context(), outside); out.Err == nil {
		t.Errorf("Handle of a webhook outside the secret's path = %+v; want a failure", out)
	}
	if n := len(attacker.requests()) + len(operator.requests()); n != 0 {
		t.Fatalf("%d requests were sent; want none", n)
	}

	ok := invocation(operator.URL+"/hooks/mcpe", 1)
	ok.Spec.Headers = steal.Spec.Headers
	if err := s.Check(t.Context(), "alice", ok.Spec); err != nil {
		t.Fatalf("Check of a webhook under the secret's URL: %v", err)
	}
	if out := s.Handle(t.Context(), ok); out.Err != nil {
		t.Fatalf("Handle of a webhook under the secret's URL: %v", out.Err)
	}
	reqs := operator.requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer operator-token" {
		t.Errorf("the operator's receiver got %+v; want one request with the token", reqs)
	}
}

// TestSecretRefusalRevealsNoNames checks that naming a secret that does not
// exist and naming one meant for another URL are refused with the same
// words, and that a refusal lists only the secrets allowed for the URL.
func TestSecretRefusalRevealsNoNames(t *testing.T) {
	s := newSender(t, &Options{Secrets: map[string]Secret{
		"HOOKS_TOKEN": {Value: "h", URLs: []string{"https://hooks.example.com/"}},
		"API_TOKEN":   {Value: "a", URLs: []string{"https://api.example.com/v1/"}},
	}})
	refusal := func(url, name string) string {
		t.Helper()
		err := s.Check(t.Context(), "mallory", &spec{Type: mcpe.HandlerWebhook, URL: url,
			Headers: map[string]string{"Authorization": "Bearer ${" + name + "}"}})
		if err == nil {
			t.Fatalf("${%s} for %s was accepted", name, url)
		}
		return strings.ReplaceAll(err.Error(), name, "NAME")
	}
	for _, url := range []string{"https://evil.example.net/", "https://hooks.example.com/x", "https://api.example.com/v2/"} {
		unknown := refusal(url, "NO_SUCH_SECRET")
		for _, name := range []string{"HOOKS_TOKEN", "API_TOKEN"} {
			if url == "https://hooks.example.com/x" && name == "HOOKS_TOKEN" {
				continue // allowed there
			}
			if got := refusal(url, name); got != unknown {
				t.Errorf("for %s, ${%s} is refused with\n\t%s\nand an unknown name with\n\t%s\nwant the same words", url, name, got, unknown)
			}
		}
		if strings.Contains(unknown, "API_TOKEN") || url != "https://hooks.example.com/x" && strings.Contains(unknown, "HOOKS_TOKEN") {
			t.Errorf("the refusal for %s names a secret not allowed there: %s", url, unknown)
		}
	}
	want := `handler.headers.Authorization: uses ${NAME}, which cannot be filled in for this URL: the operator allows no secret of that name to be sent to it; write the value itself`
	if got := refusal("https://evil.example.net/", "HOOKS_TOKEN"); got != want {
		t.Errorf("refusal = %q, want %q", got, want)
	}
	want = `handler.headers.Authorization: uses ${NAME}, which cannot be filled in for this URL: the operator allows no secret of that name to be sent to it; secrets allowed for this URL: ${HOOKS_TOKEN}`
	if got := refusal("https://hooks.example.com/x", "API_TOKEN"); got != want {
		t.Errorf("refusal = %q, want %q", got, want)
	}
}

func TestURLPrefixMatches(t *testing.T) {
	tests := []struct {
		prefix, url string
		want        bool
	}{
		{"https://hooks.example.com/", "https://hooks.example.com/", true},
		{"https://hooks.example.com/", "https://hooks.example.com", true},
		{"https://hooks.example.com", "https://hooks.example.com/a/b?c=d", true},
		{"https://hooks.example.com/", "https://HOOKS.Example.COM/x", true},
		{"https://HOOKS.example.com/", "https://hooks.example.com/x", true},
		{"https://hooks.example.com/", "https://hooks.example.com:443/x", true},
		{"https://hooks.example.com:443/", "https://hooks.example.com/x", true},
		{"http://hooks.example.com/", "http://hooks.example.com:80/x", true},
		{"https://hooks.example.com/", "https://hooks.example.com.evil.com/", false},
		{"https://hooks.example.com/", "https://hooks.example.com@evil.com/", false},
		{"https://hooks.example.com/", "https://user@hooks.example.com/", false},
		{"https://hooks.example.com/", "https://evil.com/https://hooks.example.com/", false},
		{"https://hooks.example.com/", "https://evil.com/?u=https://hooks.example.com/", false},
		{"https://hooks.example.com/", "https://sub.hooks.example.com/", false},
		{"https://hooks.example.com/", "https://example.com/", false},
		{"https://hooks.example.com/", "https://hooks.example.com./", false},
		{"https://hooks.example.com/", "http://hooks.example.com/", false},
		{"http://hooks.example.com/", "https://hooks.example.com/", false},
		{"https://hooks.example.com/", "https://hooks.example.com:8443/", false},
		{"https://hooks.example.com:8443/", "https://hooks.example.com/", false},
		{"https://hooks.example.com/mcpe", "https://hooks.example.com/mcpe", true},
		{"https://hooks.example.com/mcpe", "https://hooks.example.com/mcpe/x", true},
		{"https://hooks.example.com/mcpe", "https://hooks.example.com/mcpe?x=1", true},
		{"https://hooks.example.com/mcpe", "https://hooks.example.com/mcpex", false},
		{"https://hooks.example.com/mcpe", "https://hooks.example.com/", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/x", true},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/MCPE/x", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/../admin", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/./x", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/%2e%2e/admin", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/..%2fadmin", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/%2F", false},
		{"https://hooks.example.com/mcpe/", "https://hooks.example.com/mcpe/..%5cadmin", false},
		{"https://hooks.example.com/mcpe/", `https://hooks.example.com/mcpe/..\admin`, false},
		{"https://hooks.example.com/a%20b/", "https://hooks.example.com/a b/x", true},
		{"https://hooks.example.com/a%41/", "https://hooks.example.com/aA/x", true},
		{"https://[2001:db8::1]/", "https://[2001:DB8:0::1]:443/x", true},
		{"https://[2001:db8::1]/", "https://[2001:db8::2]/x", false},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/x", true},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/x", false},
		{"http://127.0.0.1:8080/", "http://[::ffff:127.0.0.1]:8080/x", false},
	}
	for _, tt := range tests {
		p, msg := parsePrefix(tt.prefix)
		if msg != "" {
			t.Errorf("parsePrefix(%q): %s", tt.prefix, msg)
			continue
		}
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Errorf("url.Parse(%q): %v", tt.url, err)
			continue
		}
		if got := p.matches(u); got != tt.want {
			t.Errorf("prefix %q matches %q = %v, want %v", tt.prefix, tt.url, got, tt.want)
		}
	}
}

func TestURLPrefixRefused(t *testing.T) {
	for _, raw := range []string{
		"", "hooks.example.com/", "/hooks", "https://", "https:///path", "https:hooks.example.com", "ftp://hooks.example.com/",
		"https://user@hooks.example.com/", "https://u:p@hooks.example.com/", "https://hooks.example.com/?", "https://hooks.example.com/?a=1",
		"https://hooks.example.com/#", "https://hooks.example.com/#x", "https://hooks.example.com/a/../b", "https://hooks.example.com/./",
		"https://hooks.example.com/a%2fb/", "https://hooks.example.com:0/", "https://hooks.example.com:99999/", "https://[fe80::1%25eth0]/",
	} {
		if _, msg := parsePrefix(raw); msg == "" {
			t.Errorf("parsePrefix(%q) accepted it", raw)
		}
	}
}
