package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// The test vector published with Standard Webhooks (its libraries' "sign
// function works" test).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignVector(t *testing.T) {
	got, err := Sign(vectorSecret, vectorMsgID, time.Unix(vectorTimestamp, 0), []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorSignature {
		t.Errorf("Sign = %q, want %q", got, vectorSignature)
	}
}

func vectorHeader(sig string) http.Header {
	h := http.Header{}
	h.Set(HeaderID, vectorMsgID)
	h.Set(HeaderTimestamp, strconv.Itoa(vectorTimestamp))
	h.Set(HeaderSignature, sig)
	return h
}

func TestVerify(t *testing.T) {
	at := time.Unix(vectorTimestamp, 0)
	other := "v1," + b64(make([]byte, 32))
	tests := []struct {
		name   string
		secret string
		header http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"vector", vectorSecret, vectorHeader(vectorSignature), vectorBody, at, nil},
		{"within tolerance", vectorSecret, vectorHeader(vectorSignature), vectorBody, at.Add(VerifyTolerance), nil},
		{"among others", vectorSecret, vectorHeader(other + " v1a,xyz " + vectorSignature), vectorBody, at, nil},
		{"too old", vectorSecret, vectorHeader(vectorSignature), vectorBody, at.Add(VerifyTolerance + time.Second), ErrTooOld},
		{"too new", vectorSecret, vectorHeader(vectorSignature), vectorBody, at.Add(-VerifyTolerance - time.Second), ErrTooNew},
		{"body changed", vectorSecret, vectorHeader(vectorSignature), `{"test":2432232314}`, at, ErrNoMatch},
		{"other secret", testSecret, vectorHeader(vectorSignature), vectorBody, at, ErrNoMatch},
		{"wrong version", vectorSecret, vectorHeader(strings.Replace(vectorSignature, "v1,", "v2,", 1)), vectorBody, at, ErrNoMatch},
		{"garbage signature", vectorSecret, vectorHeader("v1,!!!! v1," + strings.Repeat("A", 200)), vectorBody, at, ErrNoMatch},
		{"no signature", vectorSecret, vectorHeader(""), vectorBody, at, ErrMissingHeaders},
		{"bad timestamp", vectorSecret, func() http.Header {
			h := vectorHeader(vectorSignature)
			h.Set(HeaderTimestamp, "1614265330.0")
			return h
		}(), vectorBody, at, ErrTimestamp},
		{"huge timestamp", vectorSecret, func() http.Header {
			h := vectorHeader(vectorSignature)
			h.Set(HeaderTimestamp, "9223372036854775807")
			return h
		}(), vectorBody, at, ErrTooNew},
		{"bad secret", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", vectorHeader(vectorSignature), vectorBody, at, ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Verify(tt.secret, tt.header, []byte(tt.body), tt.now); !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// hmacSignature computes a signature independently of Sign.
func hmacSignature(t *testing.T, secret, msgID, ts string, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msgID + "." + ts + "." + string(body)))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestSignMatchesIndependentHMAC(t *testing.T) {
	for range 20 {
		secret := subscriptions.NewWebhookSecret()
		body := []byte(`{"a":"` + secret + `"}`)
		ts := time.Unix(1700000000, 999_000_000)
		got, err := Sign(secret, "msg_7", ts, body)
		if err != nil {
			t.Fatal(err)
		}
		if want := hmacSignature(t, secret, "msg_7", "1700000000", body); got != want {
			t.Fatalf("Sign = %q, want %q", got, want)
		}
	}
}

func TestParseSecret(t *testing.T) {
	tests := []struct {
		secret string
		want   int // key length, 0 for ErrSecret
	}{
		{vectorSecret, 24},
		{testSecret, 32},
		{"whsec_" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)), 32},
		{"whsec_" + base64.RawURLEncoding.EncodeToString(make([]byte, 24)), 24},
		{"whsec_" + base64.URLEncoding.EncodeToString(make([]byte, 64)), 64},
		{"whsec_" + base64.RawURLEncoding.EncodeToString(make([]byte, 16)), 0},
		{"whsec_" + base64.RawURLEncoding.EncodeToString(make([]byte, 65)), 0},
		{"whsec_" + b64(make([]byte, 64)), 64},
		{"whsec_" + b64(make([]byte, 16)), 0},
		{"whsec_" + b64(make([]byte, 65)), 0},
		{"whsec_not base64!", 0},
		{strings.TrimPrefix(testSecret, "whsec_"), 0},
		{"", 0},
	}
	for _, tt := range tests {
		key, err := ParseSecret(tt.secret)
		if tt.want == 0 {
			if !errors.Is(err, ErrSecret) {
				t.Errorf("ParseSecret(%q) error = %v, want ErrSecret", tt.secret, err)
			}
			continue
		}
		if err != nil || len(key) != tt.want {
			t.Errorf("ParseSecret(%q) = %d bytes, %v; want %d bytes", tt.secret, len(key), err, tt.want)
		}
	}
}

func TestSignaturesRotation(t *testing.T) {
	current, previous := subscriptions.NewWebhookSecret(), subscriptions.NewWebhookSecret()
	until := t0.Add(time.Hour)
	ws := &subscriptions.WebhookSecrets{Current: current, Previous: previous, PreviousUntil: &until}
	body := []byte(`{"x":1}`)
	tests := []struct {
		name string
		now  time.Time
		want []string // secrets whose signatures the header holds, in order
	}{
		{"grace period", t0, []string{current, previous}},
		{"after it", until, []string{current}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := signatures(ws.Signing(tt.now), "msg_1", tt.now, body, false)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range tt.want {
				want = append(want, hmacSignature(t, s, "msg_1", strconv.FormatInt(tt.now.Unix(), 10), body))
			}
			if diff := cmp.Diff(want, strings.Split(h, " ")); diff != "" {
				t.Errorf("signatures mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSecretAlphabets: the SDKs disagree on the base64 of a whsec_
// secret (Standard Webhooks' standard alphabet, padded; mcpkit's Go SDK the
// URL-safe one of RFC 4648 section 5, unpadded): each spelling of a key
// gives that key, whatever bytes make the alphabets differ.
func TestParseSecretAlphabets(t *testing.T) {
	for _, n := range []int{MinKeyBytes, 32, 33, 34, MaxKeyBytes} {
		key := make([]byte, n)
		for i := range key {
			key[i] = []byte{0xfb, 0xef, 0xbe, 0xff, 0xff, 0xff}[i%6] // "++++////", or "----____"
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			secret := SecretPrefix + enc.EncodeToString(key)
			got, err := ParseSecret(secret)
			if err != nil || string(got) != string(key) {
				t.Errorf("ParseSecret(%q) = %x, %v; want %x", secret, got, err, key)
			}
		}
	}
	// The alphabets are not mixed, nor is padding where it does not belong.
	for _, bad := range []string{
		SecretPrefix + "-+" + base64.RawStdEncoding.EncodeToString(make([]byte, 30)),
		SecretPrefix + base64.RawURLEncoding.EncodeToString(make([]byte, 30)) + "=",
	} {
		if _, err := ParseSecret(bad); !errors.Is(err, ErrSecret) {
			t.Errorf("ParseSecret(%q) error = %v; want ErrSecret", bad, err)
		}
	}
}
