package slack

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// callback wraps an inner event in an event_callback.
func callback(event string) []byte {
	return []byte(`{"token": "XXYYZZ", "team_id": "T0C0ACME01", "api_app_id": "A0C5APP0001", "type": "event_callback", "event_id": "Ev0TEST0001", "event_time": 1748865600, "event": ` + event + `}`)
}

func TestRefusals(t *testing.T) {
	valid := adaptertest.ReadFixture(t, "message_channel.json")
	tests := []struct {
		name        string
		method      string
		contentType string
		maxBody     int64
		body        []byte
		wantStatus  int
		wantCode    string
		wantMessage string // a part of the message
	}{
		{name: "GET", method: http.MethodGet, body: valid, wantStatus: http.StatusMethodNotAllowed, wantCode: httpapi.CodeMethodNotAllowed, wantMessage: "use POST"},
		{name: "PUT", method: http.MethodPut, body: valid, wantStatus: http.StatusMethodNotAllowed, wantCode: httpapi.CodeMethodNotAllowed, wantMessage: "use POST"},
		{name: "no content type", contentType: "-", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia, wantMessage: "application/json"},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia, wantMessage: "slash commands"},
		{name: "text/plain", contentType: "text/plain", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia},
		{name: "JSON with charset", contentType: "application/json; charset=utf-8", body: valid, wantStatus: http.StatusOK},
		{name: "body over the limit", maxBody: 512, body: valid, wantStatus: http.StatusRequestEntityTooLarge, wantCode: httpapi.CodeBodyTooLarge, wantMessage: "512 bytes"},
		{name: "empty body", body: []byte{}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "empty"},
		{name: "not JSON", body: []byte(`payload=%7B%7D`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "JSON object"},
		{name: "truncated JSON", body: valid[:len(valid)/2], wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not valid JSON"},
		{name: "trailing data", body: append(append([]byte{}, valid...), " {}"...), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not valid JSON"},
		{name: "array", body: []byte(`[{"type": "event_callback"}]`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not an array"},
		{name: "no type", body: []byte(`{"event_id": "Ev1", "event": {"type": "message"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "type is missing"},
		{name: "type not a string", body: []byte(`{"type": 1}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "type is a number"},
		{name: "unknown type", body: []byte(`{"type": "view_submission"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `"view_submission" is not an Events API request`},
		{name: "no event", body: []byte(`{"type": "event_callback", "event_id": "Ev1"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event is missing"},
		{name: "event not an object", body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": "message"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event is a string"},
		{name: "event without type", body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"text": "hi"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event.type is missing"},
		{name: "event type not a string", body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": ["message"]}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event.type is an array"},
		{name: "event type empty", body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": " "}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event.type is empty"},
		{name: "no event_id", body: []byte(`{"type": "event_callback", "event": {"type": "message"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event_id is missing"},
		{name: "event_id not a string", body: []byte(`{"type": "event_callback", "event_id": 7, "event": {"type": "message"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event_id is a number"},
		{name: "event_id empty", body: []byte(`{"type": "event_callback", "event_id": "", "event": {"type": "message"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "event_id is empty"},
		{name: "event_id too long", body: []byte(`{"type": "event_callback", "event_id": "` + strings.Repeat("E", 257) + `", "event": {"type": "message"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "257 bytes"},
		{name: "team_id not a string", body: []byte(`{"type": "event_callback", "team_id": {}, "event_id": "Ev1", "event": {"type": "message"}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "team_id is an object"},
		{name: "no challenge", body: []byte(`{"type": "url_verification"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "challenge is missing"},
		{name: "challenge not a string", body: []byte(`{"type": "url_verification", "challenge": 42}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "challenge is a number"},
		{name: "challenge empty", body: []byte(`{"type": "url_verification", "challenge": ""}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "challenge is empty"},
		{name: "challenge too long", body: []byte(`{"type": "url_verification", "challenge": "` + strings.Repeat("c", 1025) + `"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "1025 bytes"},
		{name: "challenge with control characters", body: []byte(`{"type": "url_verification", "challenge": "abc\r\nSet-Cookie: x=1"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "control characters"},
		{name: "odd fields are ignored", body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}, "authorizations": 7, "token": null, "event_context": []}`), wantStatus: http.StatusOK},
		{name: "null optional fields", body: []byte(`{"type": "event_callback", "team_id": null, "enterprise_id": null, "event_id": "Ev1", "event_time": null, "event": {"type": "message"}}`), wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub, _ := newTestAdapter(t, nil)
			if tt.maxBody > 0 {
				a.maxBody = tt.maxBody
			}
			w := adaptertest.Serve(a, signedRequest(tt.method, t0, tt.contentType, tt.body))
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus == http.StatusOK {
				return
			}
			adaptertest.CheckRefusal(t, w, tt.wantCode, tt.wantMessage)
			switch tt.wantStatus {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
				if w.Header().Get(HeaderNoRetry) != "1" {
					t.Errorf("%d without %s: 1; Slack would retry a request refused for good", w.Code, HeaderNoRetry)
				}
			}
			if n := pub.Calls(); n != 0 {
				t.Errorf("publisher called %d times for a refused request", n)
			}
		})
	}
}

func TestURLVerification(t *testing.T) {
	a, pub, _ := newTestAdapter(t, nil)
	const challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
	w := post(a, []byte(`{"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": "`+challenge+`", "type": "url_verification"}`))
	if w.Code != http.StatusOK || w.Body.String() != challenge {
		t.Fatalf("answer = %d %q, want 200 and the challenge", w.Code, w.Body)
	}
	for h, want := range map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"} {
		if got := w.Header().Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if n := pub.Calls(); n != 0 {
		t.Errorf("publisher called %d times", n)
	}

	// Unsigned, the challenge is not answered.
	w = post(a, []byte(`{"challenge": "`+challenge+`", "type": "url_verification"}`), HeaderSignature, "v0="+strings.Repeat("0", 64))
	if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), challenge) {
		t.Errorf("unsigned url_verification answered %d %q; want 401 without the challenge", w.Code, w.Body)
	}
}

func TestAppRateLimited(t *testing.T) {
	var logs bytes.Buffer
	a, pub, _ := newTestAdapter(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	w := post(a, adaptertest.ReadFixture(t, "app_rate_limited.json"))
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"ids":[]}` {
		t.Fatalf("answer = %d %s, want 200 {\"ids\":[]}", w.Code, w.Body)
	}
	if n := pub.Calls(); n != 0 {
		t.Errorf("publisher called %d times", n)
	}
	for _, want := range []string{"level=WARN", "rate limiting", "team_id=T0C0ACME01", "api_app_id=A0C5APP0001", "minute_rate_limited=2025-06-02T12:30:00Z"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
}

// Slack retries an event it got no 2xx for in time, with the same
// event_id and a new timestamp: the retry is answered as a duplicate of
// the first, and stored once.
func TestRetryAcceptedOnce(t *testing.T) {
	var logs bytes.Buffer
	a, pub, clk := newTestAdapter(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	body := adaptertest.ReadFixture(t, "app_mention.json")
	first := post(a, body)
	if first.Code != http.StatusOK {
		t.Fatalf("first: status %d; body %s", first.Code, first.Body)
	}
	var res1, res2 adapters.Accepted
	if err := json.Unmarshal(first.Body.Bytes(), &res1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	retry := postAt(a, clk.Now(), body, HeaderRetryNum, "1", HeaderRetryReason, "http_timeout")
	if retry.Code != http.StatusOK {
		t.Fatalf("retry: status %d; body %s", retry.Code, retry.Body)
	}
	if err := json.Unmarshal(retry.Body.Bytes(), &res2); err != nil {
		t.Fatal(err)
	}
	want := adapters.Accepted{IDs: res1.IDs, Duplicates: 1}
	if diff := cmp.Diff(want, res2); diff != "" || len(res1.IDs) != 1 || res1.Duplicates != 0 {
		t.Errorf("first answer %+v; retry answer mismatch (-want +got):\n%s", res1, diff)
	}
	if n := len(pub.Published()); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "retry_num") ||
		!strings.Contains(lines[1], "slack_event_id=Ev08X1MENT01") || !strings.Contains(lines[1], "duplicate=true") ||
		!strings.Contains(lines[1], "retry_num=1 retry_reason=http_timeout") {
		t.Errorf("logs do not show the first delivery and the retry as a duplicate:\n%s", logs.String())
	}
}

// A storage failure answers 500 without X-Slack-No-Retry, so that Slack
// retries; the retry is then stored.
func TestPublishFailureRetried(t *testing.T) {
	a, pub, clk := newTestAdapter(t, nil)
	fail := true
	pub.Fail = func(mcpe.Event) error {
		if fail {
			return errors.New("database is locked")
		}
		return nil
	}
	body := adaptertest.ReadFixture(t, "message_im.json")
	w := post(a, body)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500; body %s", w.Code, w.Body)
	}
	if e := adaptertest.Refusal(t, w).Error; e.Code != httpapi.CodeInternal || !strings.Contains(e.Message, "Ev08X1DM0001") || strings.Contains(e.Message, "database") {
		t.Errorf("refusal = %+v; want code internal naming the event and not the internal error", e)
	}
	if w.Header().Get(HeaderNoRetry) != "" {
		t.Errorf("500 with %s; Slack must retry it", HeaderNoRetry)
	}
	fail = false
	clk.Advance(time.Minute)
	if w := postAt(a, clk.Now(), body, HeaderRetryNum, "1", HeaderRetryReason, "http_error"); w.Code != http.StatusOK {
		t.Fatalf("retry: status = %d, want 200; body %s", w.Code, w.Body)
	}
	if n := len(pub.Published()); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
}

// An event the Publisher refuses as invalid is refused 400, for good.
func TestPublisherRefusesEvent(t *testing.T) {
	a, pub, _ := newTestAdapter(t, nil)
	pub.Fail = func(mcpe.Event) error {
		return &mcpe.InvalidError{Field: "type", Message: "slack events are not accepted here"}
	}
	w := post(a, adaptertest.ReadFixture(t, "message_channel.json"))
	if w.Code != http.StatusBadRequest || w.Header().Get(HeaderNoRetry) != "1" {
		t.Fatalf("answer %d (%s %q); want 400 with %s: 1", w.Code, HeaderNoRetry, w.Header().Get(HeaderNoRetry), HeaderNoRetry)
	}
	if e := adaptertest.Refusal(t, w).Error; !strings.Contains(e.Message, "type: slack events are not accepted here") || !strings.Contains(e.Message, "Ev08X1CHAN01") {
		t.Errorf("refusal = %+v", e)
	}
}

func TestNew(t *testing.T) {
	pub := &adaptertest.Publisher{}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "no publisher", opts: Options{SigningSecret: testSecret}, wantErr: "Options.Publisher is required"},
		{name: "no secret", opts: Options{Publisher: pub}, wantErr: "slack: signingSecret: is required"},
		{name: "empty secret", opts: Options{Publisher: pub, SigningSecret: []byte{}}, wantErr: "slack: signingSecret: is required"},
		{name: "secret with a line break", opts: Options{Publisher: pub, SigningSecret: []byte("8f742231b10e8888abcd99yyyzzz85a5\n")}, wantErr: "white space"},
		{name: "defaults", opts: Options{Publisher: pub, SigningSecret: testSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.opts)
			if adaptertest.CheckNew(t, a, err, tt.wantErr) && (a.tolerance != Tolerance || a.maxBody != adapters.DefaultMaxBodyBytes) {
				t.Errorf("defaults: tolerance %v, max body %d", a.tolerance, a.maxBody)
			}
		})
	}
}

// The adapter keeps its own copy of the secret.
func TestNewCopiesSecret(t *testing.T) {
	secret := append([]byte(nil), testSecret...)
	a, pub, _ := newTestAdapter(t, func(o *Options) { o.SigningSecret = secret })
	secret[0] ^= 0xff
	if w := post(a, adaptertest.ReadFixture(t, "message_channel.json")); w.Code != http.StatusOK || len(pub.Published()) != 1 {
		t.Errorf("status = %d after the caller changed its slice; body %s", w.Code, w.Body)
	}
}

func TestName(t *testing.T) {
	a, _, _ := newTestAdapter(t, nil)
	if got := a.Name(); got != "slack" {
		t.Errorf("Name() = %q, want slack", got)
	}
}
