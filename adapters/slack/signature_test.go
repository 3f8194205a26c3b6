package slack

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
)

// Slack's own example, from "Verifying requests from Slack"
// (docs.slack.dev/authentication/verifying-requests-from-slack): a slash
// command's form body, signed at 1531420618.
const (
	docSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	docTimestamp = "1531420618"
	docBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	docSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func TestSignatureDocumentedExample(t *testing.T) {
	if got := Signature([]byte(docSecret), docTimestamp, []byte(docBody)); got != docSignature {
		t.Fatalf("Signature = %s, want Slack's %s", got, docSignature)
	}

	// Through the handler, with the clock at Slack's timestamp: the
	// signature passes, and the form (a slash command, not an Events API
	// request) is then refused as such, never as unauthorized.
	clk := clocktest.NewFake(time.Unix(1531420618, 0))
	pub := &adaptertest.Publisher{Clock: clk}
	a, err := New(Options{Publisher: pub, SigningSecret: []byte(docSecret), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	s, reqErr := a.checkHeaders(http.Header{HeaderTimestamp: {docTimestamp}, HeaderSignature: {docSignature}}, clk.Now())
	if reqErr != nil {
		t.Fatalf("checkHeaders: %v", reqErr)
	}
	if reqErr := a.checkSignature(s, []byte(docBody)); reqErr != nil {
		t.Fatalf("checkSignature: %v", reqErr)
	}
	for _, tt := range []struct {
		contentType string
		wantStatus  int
	}{
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/json", http.StatusBadRequest},
	} {
		r := httptest.NewRequest(http.MethodPost, Endpoint, strings.NewReader(docBody))
		r.Header.Set("Content-Type", tt.contentType)
		r.Header.Set(HeaderTimestamp, docTimestamp)
		r.Header.Set(HeaderSignature, docSignature)
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		if w.Code != tt.wantStatus {
			t.Errorf("%s: status = %d, want %d; body %s", tt.contentType, w.Code, tt.wantStatus, w.Body)
		}
	}
	if n := pub.Calls(); n != 0 {
		t.Errorf("publisher called %d times", n)
	}
}

// Every request whose signature headers are missing, malformed, stale or
// wrong is refused 401, before its body is parsed, with nothing published.
func TestSignatureRefusals(t *testing.T) {
	body := adaptertest.ReadFixture(t, "message_channel.json")
	now := strconv.FormatInt(t0.Unix(), 10)
	sig := Signature(testSecret, now, body)
	at := func(d time.Duration) string { return strconv.FormatInt(t0.Add(d).Unix(), 10) }
	signedAt := func(d time.Duration) []string {
		ts := at(d)
		return []string{HeaderTimestamp, ts, HeaderSignature, Signature(testSecret, ts, body)}
	}
	tampered := bytes.Replace(body, []byte("looking into it"), []byte("looking into iT"), 1)
	tests := []struct {
		name        string
		headers     []string // header name, value ("" deletes); several values for one name are all added
		body        []byte
		wantMessage string
	}{
		{name: "tampered body", headers: []string{HeaderTimestamp, now, HeaderSignature, sig}, body: tampered, wantMessage: "does not match"},
		{name: "wrong secret", headers: []string{HeaderTimestamp, now, HeaderSignature, Signature([]byte("another-secret-0123456789abcdef"), now, body)}, wantMessage: "does not match"},
		{name: "empty secret", headers: []string{HeaderTimestamp, now, HeaderSignature, Signature(nil, now, body)}, wantMessage: "does not match"},
		{name: "six minutes old", headers: signedAt(-6 * time.Minute), wantMessage: "6m0s behind"},
		{name: "six minutes ahead", headers: signedAt(6 * time.Minute), wantMessage: "6m0s ahead of"},
		{name: "five minutes and a second old", headers: signedAt(-5*time.Minute - time.Second), wantMessage: "replays"},
		{name: "a year old", headers: signedAt(-365 * 24 * time.Hour), wantMessage: "8760h0m0s behind"},
		{name: "zero", headers: []string{HeaderTimestamp, "0", HeaderSignature, Signature(testSecret, "0", body)}, wantMessage: "behind"},
		{name: "largest int64", headers: []string{HeaderTimestamp, "9223372036854775807", HeaderSignature, Signature(testSecret, "9223372036854775807", body)}, wantMessage: "more than a century ahead of"},
		{name: "timestamp of another request", headers: []string{HeaderTimestamp, at(time.Minute), HeaderSignature, sig}, wantMessage: "does not match"},
		{name: "no timestamp", headers: []string{HeaderTimestamp, "", HeaderSignature, sig}, wantMessage: "X-Slack-Request-Timestamp header is missing"},
		{name: "no signature", headers: []string{HeaderTimestamp, now, HeaderSignature, ""}, wantMessage: "X-Slack-Signature header is missing"},
		{name: "no headers", headers: []string{HeaderTimestamp, "", HeaderSignature, ""}, wantMessage: "is missing"},
		{name: "timestamp not a number", headers: []string{HeaderTimestamp, "yesterday", HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "timestamp with fraction", headers: []string{HeaderTimestamp, now + ".5", HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "timestamp with sign", headers: []string{HeaderTimestamp, "+" + now, HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "negative timestamp", headers: []string{HeaderTimestamp, "-" + now, HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "timestamp with space", headers: []string{HeaderTimestamp, " " + now, HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "timestamp in exponent form", headers: []string{HeaderTimestamp, "1.7488692e9", HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "timestamp over int64", headers: []string{HeaderTimestamp, "9999999999999999999", HeaderSignature, sig}, wantMessage: "not a time in Unix seconds"},
		{name: "timestamp in milliseconds", headers: []string{HeaderTimestamp, now + "000", HeaderSignature, sig}, wantMessage: "ahead of"},
		{name: "signature without version", headers: []string{HeaderTimestamp, now, HeaderSignature, strings.TrimPrefix(sig, "v0=")}, wantMessage: "not a v0 signature"},
		{name: "signature version v1", headers: []string{HeaderTimestamp, now, HeaderSignature, "v1=" + strings.TrimPrefix(sig, "v0=")}, wantMessage: "not a v0 signature"},
		{name: "signature too short", headers: []string{HeaderTimestamp, now, HeaderSignature, sig[:len(sig)-2]}, wantMessage: "malformed"},
		{name: "signature too long", headers: []string{HeaderTimestamp, now, HeaderSignature, sig + "00"}, wantMessage: "malformed"},
		{name: "signature not hex", headers: []string{HeaderTimestamp, now, HeaderSignature, "v0=" + strings.Repeat("zz", 32)}, wantMessage: "malformed"},
		{name: "signature in base64", headers: []string{HeaderTimestamp, now, HeaderSignature, "v0=ohFNV7SOrDm5rRidnYMWI1p7SNihEL0nUZZmSJxptQM="}, wantMessage: "malformed"},
		{name: "signature with space", headers: []string{HeaderTimestamp, now, HeaderSignature, sig + " "}, wantMessage: "malformed"},
		{name: "two signatures", headers: []string{HeaderTimestamp, now, HeaderSignature, sig, HeaderSignature, sig}, wantMessage: "sent 2 times"},
		{name: "two timestamps", headers: []string{HeaderTimestamp, now, HeaderTimestamp, now, HeaderSignature, sig}, wantMessage: "sent 2 times"},
		// Checked before the body is parsed: not JSON, but unauthorized.
		{name: "bad signature on a body that is not JSON", headers: []string{HeaderTimestamp, now, HeaderSignature, sig}, body: []byte("not json"), wantMessage: "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub, _ := newTestAdapter(t, nil)
			b := body
			if tt.body != nil {
				b = tt.body
			}
			r := httptest.NewRequest(http.MethodPost, Endpoint, bytes.NewReader(b))
			r.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(tt.headers); i += 2 {
				if tt.headers[i+1] != "" {
					r.Header.Add(tt.headers[i], tt.headers[i+1])
				}
			}
			w := httptest.NewRecorder()
			a.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401; body %s", w.Code, w.Body)
			}
			e := adaptertest.Refusal(t, w).Error
			if e.Code != httpapi.CodeUnauthorized || !strings.Contains(e.Message, tt.wantMessage) {
				t.Errorf("refusal = %+v; want code unauthorized and a message containing %q", e, tt.wantMessage)
			}
			if strings.Contains(e.Message, strings.TrimPrefix(sig, "v0=")) && !strings.Contains(strings.Join(tt.headers, " "), strings.TrimPrefix(sig, "v0=")) {
				t.Errorf("the refusal reveals the expected signature: %s", e.Message)
			}
			if w.Header().Get(HeaderNoRetry) != "" {
				t.Error("a 401 asks Slack not to retry; retries should pass once the secret or the clock is set right")
			}
			if n := pub.Calls(); n != 0 {
				t.Errorf("publisher called %d times for an unauthenticated request", n)
			}
		})
	}
}

// Timestamps within the tolerance, in either direction, are accepted;
// hex in upper case is the same signature.
func TestSignatureAccepted(t *testing.T) {
	body := adaptertest.ReadFixture(t, "message_channel.json")
	for _, tt := range []struct {
		name      string
		skew      time.Duration
		tolerance time.Duration
		upper     bool
		want      int
	}{
		{name: "now", want: http.StatusOK},
		{name: "five minutes old", skew: -5 * time.Minute, want: http.StatusOK},
		{name: "five minutes ahead", skew: 5 * time.Minute, want: http.StatusOK},
		{name: "upper-case hex", upper: true, want: http.StatusOK},
		{name: "two minutes old, tolerance one minute", skew: -2 * time.Minute, tolerance: time.Minute, want: http.StatusUnauthorized},
		{name: "ten minutes old, tolerance fifteen", skew: -10 * time.Minute, tolerance: 15 * time.Minute, want: http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, pub, _ := newTestAdapter(t, nil)
			if tt.tolerance > 0 {
				a.tolerance = tt.tolerance
			}
			ts := strconv.FormatInt(t0.Add(tt.skew).Unix(), 10)
			sig := Signature(testSecret, ts, body)
			if tt.upper {
				sig = "v0=" + strings.ToUpper(strings.TrimPrefix(sig, "v0="))
			}
			w := post(a, body, HeaderTimestamp, ts, HeaderSignature, sig)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.want == http.StatusOK]; len(pub.Published()) != want {
				t.Errorf("%d events published, want %d", len(pub.Published()), want)
			}
		})
	}
}

// failingReader fails the test that reads it.
type failingReader struct{ t *testing.T }

func (r failingReader) Read([]byte) (int, error) {
	r.t.Error("the body was read although the signature headers were refused")
	return 0, io.EOF
}

// Headers are checked before the body is read: an unsigned request costs
// no read, even when it announces a large body.
func TestHeadersCheckedBeforeBody(t *testing.T) {
	a, _, _ := newTestAdapter(t, nil)
	for _, h := range [][2]string{
		{},
		{HeaderTimestamp, "1"},
		{HeaderTimestamp, strconv.FormatInt(t0.Unix(), 10)},
	} {
		r := httptest.NewRequest(http.MethodPost, Endpoint, failingReader{t})
		r.ContentLength = 50 << 20
		r.Header.Set("Content-Type", "application/json")
		if h[0] != "" {
			r.Header.Set(h[0], h[1])
		}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("headers %q: status = %d, want 401", h, w.Code)
		}
	}
}
