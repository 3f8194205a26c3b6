package webhook

import (
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
)

// FuzzCheck feeds Check hostile URLs and headers: it must not panic, and a
// URL it accepts must be absolute http(s) with a host and no user
// information, whose literal address (if any) is not refused.
func FuzzCheck(f *testing.F) {
	for _, u := range []string{
		"https://hooks.example.com/mcpe", "https://127.0.0.1/", "https://[::ffff:127.0.0.1]:443/",
		"https://[fe80::1%25eth0]/", "http://0x7f.1/", "https://user@h/", "https:opaque", "//h/p", "https://h/#f",
		"https://2130706433/", "https://[::1%25]/", "https://h:99999/",
	} {
		f.Add(u, "Authorization", "Bearer ${TOKEN}")
	}
	f.Add("https://h/", "X-A", "${")
	f.Add("https://h/", "Webhook-Id", "x")
	s, err := New(&Options{Secrets: map[string]Secret{"TOKEN": {Value: "t", URLs: []string{"https://h/"}}}, Clock: clocktest.NewFake(t0)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rawURL, name, value string) {
		sp := &spec{URL: rawURL, Headers: map[string]string{name: value}}
		u, err := s.check(sp)
		if err != nil {
			return
		}
		if u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Errorf("accepted %q", rawURL)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && refusedRange(a.Unmap().WithZone("")) != "" {
			t.Errorf("accepted %q, whose address is refused", rawURL)
		}
		got, xerr := expand(value, s.secretsFor(u))
		if xerr != nil || strings.ContainsAny(got, "\r\n\x00") {
			t.Errorf("accepted the header value %q", value)
		}
		if _, err := http.NewRequest(http.MethodPost, rawURL, nil); err != nil {
			t.Errorf("accepted %q, which net/http refuses: %v", rawURL, err)
		}
	})
}

// FuzzSecretURLs feeds the prefix match hostile URLs: one that matches
// "https://hooks.example.com/mcpe/" must reach that host and port, with no
// user information, at a path that stays under /mcpe/ whatever a receiver
// decodes or cleans.
func FuzzSecretURLs(f *testing.F) {
	for _, u := range []string{
		"https://hooks.example.com/mcpe/x", "https://hooks.example.com.evil.com/mcpe/", "https://hooks.example.com@evil.com/mcpe/",
		"https://hooks.example.com/mcpe/../admin", "https://hooks.example.com/mcpe/%2e%2e/admin", "https://hooks.example.com/mcpe%2f..%2fadmin",
		"https://HOOKS.example.com:443/mcpe/x?y#z", "https://hooks.example.com:0443/mcpe/", `https://hooks.example.com/mcpe/..\admin`,
	} {
		f.Add(u)
	}
	p, msg := parsePrefix("https://hooks.example.com/mcpe/")
	if msg != "" {
		f.Fatal(msg)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || !p.matches(u) {
			return
		}
		req, err := http.NewRequest(http.MethodPost, raw, nil)
		if err != nil {
			return
		}
		host, port := strings.ToLower(req.URL.Hostname()), req.URL.Port()
		if host != "hooks.example.com" || (port != "" && strings.TrimLeft(port, "0") != "443") || req.URL.User != nil || req.URL.Scheme != "https" {
			t.Errorf("%q matched, but goes to %s://%s port %q", raw, req.URL.Scheme, req.URL.Host, port)
		}
		decoded, err := url.PathUnescape(req.URL.EscapedPath())
		if err != nil {
			t.Fatalf("%q matched, with a path that does not decode: %v", raw, err)
		}
		decoded = strings.ReplaceAll(decoded, `\`, "/")
		if clean := path.Clean(decoded); !strings.HasPrefix(clean+"/", "/mcpe/") {
			t.Errorf("%q matched, but its path %q cleans to %q", raw, decoded, clean)
		}
	})
}

// FuzzVerify feeds Verify hostile headers: it must not panic, nor accept a
// signature Sign did not make.
func FuzzVerify(f *testing.F) {
	f.Add("msg_1", "1614265330", vectorSignature, []byte(vectorBody))
	f.Add("msg_1", "-9223372036854775808", "v1,"+strings.Repeat("=", 64), []byte{})
	f.Add("", "+1", "v1, v1,,", []byte("x"))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		if Verify(testSecret, h, body, time.Unix(1614265330, 0)) == nil {
			t.Errorf("accepted id %q ts %q sig %q", id, ts, sig)
		}
	})
}

// FuzzRetryAfter must not panic nor return a negative delay.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "", "Wed, 04 Mar 2026 05:36:07 GMT", "-1", "99999999999999999999", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if d := retryAfter(v, t0); d < 0 {
			t.Errorf("retryAfter(%q) = %v", v, d)
		}
	})
}
