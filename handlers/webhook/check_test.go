package webhook

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// checkResult is what a test compares of a Check error.
type checkResult struct {
	Field string
	// Says holds the parts of the message that matter.
	Says []string
}

func checkOf(err error) *checkResult {
	if err == nil {
		return nil
	}
	var ie *mcpe.InvalidError
	if !errors.As(err, &ie) {
		return &checkResult{Field: "<not an InvalidError>", Says: []string{err.Error()}}
	}
	return &checkResult{Field: ie.Field, Says: []string{ie.Message}}
}

// keepSaid keeps, of got's message, the parts want names, so that a diff
// shows which are missing.
func keepSaid(want, got *checkResult) *checkResult {
	if want == nil || got == nil {
		return got
	}
	msg := strings.Join(got.Says, " ")
	out := &checkResult{Field: got.Field}
	for _, s := range want.Says {
		if strings.Contains(msg, s) {
			out.Says = append(out.Says, s)
		} else {
			out.Says = append(out.Says, "<missing from: "+msg+">")
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	s := newSender(t, &Options{
		Secrets: map[string]Secret{
			"TOKEN":     {Value: "s3cr3t", URLs: []string{"https://hooks.example.com/"}},
			"OTHER":     {Value: "x", URLs: []string{"https://hooks.example.com/"}},
			"ELSEWHERE": {Value: "y", URLs: []string{"https://api.example.com/"}},
		},
	})
	noSecrets := newSender(t, nil)
	withHTTP := newSender(t, &Options{AllowHTTP: true})

	ok := "https://hooks.example.com/mcpe"
	tests := []struct {
		name   string
		sender *Sender
		spec   spec
		want   *checkResult
	}{
		{"valid", s, spec{URL: ok}, nil},
		{"port and query", s, spec{URL: "https://hooks.example.com:8443/a/b?c=d"}, nil},
		{"public IPv4", s, spec{URL: "https://93.184.216.34/x"}, nil},
		{"public IPv6", s, spec{URL: "https://[2606:4700::1111]/x"}, nil},
		{"empty", s, spec{}, &checkResult{"handler.url", []string{"required"}}},
		{"unparsable", s, spec{URL: "https://exa mple.com/"}, &checkResult{"handler.url", []string{"not a valid URL"}}},
		{"relative", s, spec{URL: "/hooks"}, &checkResult{"handler.url", []string{"not an absolute URL"}}},
		{"http", s, spec{URL: "http://hooks.example.com/"}, &checkResult{"handler.url", []string{"https is required", "the operator can allow http", "allowHTTP"}}},
		{"http allowed", withHTTP, spec{URL: "http://hooks.example.com/"}, nil},
		{"ftp", s, spec{URL: "ftp://hooks.example.com/"}, &checkResult{"handler.url", []string{`"ftp"`, "https is required"}}},
		{"ftp with http allowed", withHTTP, spec{URL: "ftp://hooks.example.com/"}, &checkResult{"handler.url", []string{"https or http"}}},
		{"opaque", s, spec{URL: "https:hooks.example.com"}, &checkResult{"handler.url", []string{"no host"}}},
		{"userinfo", s, spec{URL: "https://user:pw@hooks.example.com/"}, &checkResult{"handler.url", []string{"user information", "header"}}},
		{"user only", s, spec{URL: "https://user@hooks.example.com/"}, &checkResult{"handler.url", []string{"user information"}}},
		{"no host", s, spec{URL: "https:///path"}, &checkResult{"handler.url", []string{"no host"}}},
		{"port only", s, spec{URL: "https://:443/path"}, &checkResult{"handler.url", []string{"no host"}}},
		{"fragment", s, spec{URL: "https://hooks.example.com/#frag"}, &checkResult{"handler.url", []string{"fragment"}}},
		{"empty fragment", s, spec{URL: "https://hooks.example.com/#"}, &checkResult{"handler.url", []string{"fragment"}}},
		{"port zero", s, spec{URL: "https://hooks.example.com:0/"}, &checkResult{"handler.url", []string{"port"}}},
		{"port too big", s, spec{URL: "https://hooks.example.com:65536/"}, &checkResult{"handler.url", []string{"port"}}},
		{"loopback literal", s, spec{URL: "https://127.0.0.1/"}, &checkResult{"handler.url", []string{"127.0.0.1", "loopback", "allowNetworks"}}},
		{"too long", s, spec{URL: ok + "?" + strings.Repeat("a", 2048)}, &checkResult{"handler.url", []string{"at most 2048"}}},

		{"timeout at max", s, spec{URL: ok, Timeout: 60000}, nil},
		{"timeout over max", s, spec{URL: ok, Timeout: 60001}, &checkResult{"handler.timeout", []string{"60001", "at most 60000"}}},
		{"timeout negative", s, spec{URL: ok, Timeout: -5}, &checkResult{"handler.timeout", []string{"milliseconds"}}},

		{"header", s, spec{URL: ok, Headers: map[string]string{"X-Api-Key": "abc", "Authorization": "Bearer ${TOKEN}"}}, nil},
		{"two secrets", s, spec{URL: ok, Headers: map[string]string{"X-A": "${TOKEN}:${OTHER}"}}, nil},
		{"dollar kept", s, spec{URL: ok, Headers: map[string]string{"X-A": "$TOKEN $ {TOKEN} $$"}}, nil},
		{"user-agent", s, spec{URL: ok, Headers: map[string]string{"User-Agent": "mine"}}, nil},
		{"unknown secret", s, spec{URL: ok, Headers: map[string]string{"Authorization": "Bearer ${NOPE}"}},
			&checkResult{"handler.headers.Authorization", []string{"${NOPE}", "cannot be filled in for this URL", "allowed for this URL: ${OTHER}, ${TOKEN}"}}},
		{"secret for another URL", s, spec{URL: ok, Headers: map[string]string{"Authorization": "Bearer ${ELSEWHERE}"}},
			&checkResult{"handler.headers.Authorization", []string{"${ELSEWHERE}", "cannot be filled in for this URL", "allowed for this URL: ${OTHER}, ${TOKEN}"}}},
		{"no secret for this URL", s, spec{URL: "https://evil.example.net/", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
			&checkResult{"handler.headers.Authorization", []string{"${TOKEN}", "cannot be filled in for this URL", "write the value itself"}}},
		{"no secrets configured", noSecrets, spec{URL: ok, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
			&checkResult{"handler.headers.Authorization", []string{"${TOKEN}", "cannot be filled in for this URL", "write the value itself"}}},
		{"unterminated", s, spec{URL: ok, Headers: map[string]string{"X-A": "${TOKEN"}}, &checkResult{"handler.headers.X-A", []string{"not a secret reference"}}},
		{"not a name", s, spec{URL: ok, Headers: map[string]string{"X-A": "${env:HOME}"}}, &checkResult{"handler.headers.X-A", []string{"${env:HOME}", "not a secret reference"}}},
		{"empty name", s, spec{URL: ok, Headers: map[string]string{"X-A": "${}"}}, &checkResult{"handler.headers.X-A", []string{"not a secret reference"}}},
		{"CRLF", s, spec{URL: ok, Headers: map[string]string{"X-A": "a\r\nX-Injected: 1"}}, &checkResult{"handler.headers.X-A", []string{"line break"}}},
		{"LF", s, spec{URL: ok, Headers: map[string]string{"X-A": "a\nb"}}, &checkResult{"handler.headers.X-A", []string{"line break"}}},
		{"NUL", s, spec{URL: ok, Headers: map[string]string{"X-A": "a\x00b"}}, &checkResult{"handler.headers.X-A", []string{"control character"}}},
		{"bad name", s, spec{URL: ok, Headers: map[string]string{"X A": "1"}}, &checkResult{"handler.headers", []string{`"X A"`, "not a valid header name"}}},
		{"empty name header", s, spec{URL: ok, Headers: map[string]string{"": "1"}}, &checkResult{"handler.headers", []string{"not a valid header name"}}},
		{"colon in name", s, spec{URL: ok, Headers: map[string]string{"X-A:": "1"}}, &checkResult{"handler.headers", []string{"not a valid header name"}}},
		{"same name twice", s, spec{URL: ok, Headers: map[string]string{"X-A": "1", "x-a": "2"}}, &checkResult{"handler.headers", []string{"same header"}}},
		{"too many", s, spec{URL: ok, Headers: func() map[string]string {
			m := map[string]string{}
			for i := range mcpe.MaxHandlerHeaders + 1 {
				m["X-"+strings.Repeat("a", i+1)] = "1"
			}
			return m
		}()}, &checkResult{"handler.headers", []string{"at most 32"}}},
	}
	for _, name := range []string{
		"webhook-signature", "Webhook-Signature", "webhook-id", "WEBHOOK-TIMESTAMP", "webhook-anything",
		"Content-Type", "content-length", "Content-Encoding", "Host", "Expect",
		"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
		"TE", "Trailer", "Transfer-Encoding", "Upgrade",
	} {
		tests = append(tests, struct {
			name   string
			sender *Sender
			spec   spec
			want   *checkResult
		}{"reserved " + name, s, spec{URL: ok, Headers: map[string]string{name: "x"}},
			&checkResult{"handler.headers." + name, []string{"cannot be set"}}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := tt.spec
			sp.Type = mcpe.HandlerWebhook
			got := checkOf(tt.sender.Check(t.Context(), "alice", &sp))
			if diff := cmp.Diff(tt.want, keepSaid(tt.want, got)); diff != "" {
				t.Errorf("Check mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckNil(t *testing.T) {
	s := newSender(t, nil)
	if err := s.Check(t.Context(), "alice", nil); err == nil {
		t.Error("Check(nil) = nil, want an error")
	}
}

func TestExpand(t *testing.T) {
	secrets := map[string]string{"A": "1", "B_2": "two", "EMPTY": ""}
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"plain", "plain"},
		{"${A}", "1"},
		{"x${A}y${B_2}z", "x1ytwoz"},
		{"${EMPTY}!", "!"},
		{"$A ${A} $${A} {A}", "$A 1 $1 {A}"},
		{"${A}${A}", "11"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, secrets)
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// A secret's value is not expanded again.
	got, err := expand("${A}", map[string]string{"A": "${B}", "B": "no"})
	if err != nil || got != "${B}" {
		t.Errorf("expand of a value holding ${B} = %q, %v; want it verbatim", got, err)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string // a part of the error
	}{
		{"secret name", Options{Secrets: map[string]Secret{"1X": {Value: "v", URLs: []string{"https://h/"}}}}, "webhook: secrets.1X: "},
		{"secret value", Options{Secrets: map[string]Secret{"X": {Value: "a\nb", URLs: []string{"https://h/"}}}}, "webhook: secrets.X: "},
		{"secret without urls", Options{Secrets: map[string]Secret{"X": {Value: "v"}}}, "webhook: secrets.X.urls: is required: list the URL prefixes"},
		{"secret url without host", Options{Secrets: map[string]Secret{"X": {Value: "v", URLs: []string{"https://h/", "hooks.example.com/"}}}}, "webhook: secrets.X.urls[1]: "},
		{"invalid prefix", Options{AllowNetworks: []netip.Prefix{{}}}, "webhook: allowNetworks[0]: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(&tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	s := newSender(t, nil)
	got := struct {
		AllowHTTP                   bool
		RetrySchedule               []time.Duration
		MaxRetryAfter               time.Duration
		MaxConnsPerHost             int
		ChallengesPerHost           int
		HasClock, HasResolver, HasL bool
	}{s.opts.AllowHTTP, s.retrySchedule, s.maxRetryAfter, s.transport.MaxConnsPerHost, s.challenges.per,
		s.opts.Clock != nil, s.lookup != nil, s.opts.Logger != nil}
	want := got
	want.AllowHTTP = false
	want.RetrySchedule = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute}
	want.MaxRetryAfter, want.MaxConnsPerHost, want.ChallengesPerHost = time.Hour, 32, 30
	want.HasClock, want.HasResolver, want.HasL = true, true, true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
	if s.transport.Proxy != nil {
		t.Error("the transport uses a proxy")
	}
}
