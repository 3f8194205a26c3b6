package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts a signing secret; the rest is its key in base64.
const SecretPrefix = "whsec_"

// Bounds on a signing key, in bytes, as Standard Webhooks recommends.
const (
	MinKeyBytes = 24
	MaxKeyBytes = 64
)

// VerifyTolerance is how far a webhook-timestamp may be from the receiver's
// clock, either way, for Verify to accept it.
const VerifyTolerance = 5 * time.Minute

// Errors of Sign and Verify.
var (
	ErrSecret         = errors.New("webhook: the secret is not in whsec_<base64 key> form (standard or URL-safe base64, padded or not) with a key of 24 to 64 bytes")
	ErrMissingHeaders = errors.New("webhook: webhook-id, webhook-timestamp or webhook-signature is missing")
	ErrTimestamp      = errors.New("webhook: webhook-timestamp is not a whole number of unix seconds")
	ErrTooOld         = errors.New("webhook: webhook-timestamp is too old")
	ErrTooNew         = errors.New("webhook: webhook-timestamp is in the future")
	ErrNoMatch        = errors.New("webhook: no v1 signature matches")
)

// ParseSecret returns the HMAC key of a secret in whsec_ form, its base64
// standard or URL-safe, padded or not (SDKs differ; both decode alike).
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrSecret
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(b64); err == nil && len(key) >= MinKeyBytes && len(key) <= MaxKeyBytes {
			return key, nil
		}
	}
	return nil, ErrSecret
}

// Sign returns the Standard Webhooks signature of a message, as it appears
// in the webhook-signature header: "v1," and the base64 HMAC-SHA256, keyed
// with the secret's key, of msgID + "." + ts in unix seconds + "." + body.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(hmac.New(sha256.New, key), msgID, ts.Unix(), body)), nil
}

// mac writes the signed content into h and returns its sum.
func mac(h hash.Hash, msgID string, unix int64, body []byte) []byte {
	var buf [32]byte
	h.Write([]byte(msgID))
	h.Write(strconv.AppendInt(append(buf[:0], '.'), unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// signatures returns the webhook-signature header for secrets, each signing.
// wholeKeys adds one per secret keyed with its whole whsec_ text, not the
// bytes it encodes, as some SEP-3415 receivers (mcpkit's events client)
// compute it; Standard Webhooks receivers pass over what is not theirs.
func signatures(secrets []string, msgID string, ts time.Time, body []byte, wholeKeys bool) (string, error) {
	var sigs []string
	for i, s := range secrets {
		sig, err := Sign(s, msgID, ts, body)
		if err != nil {
			if i == 0 {
				return "", fmt.Errorf("the subscription's signing secret: %w", err)
			}
			return "", fmt.Errorf("the subscription's previous signing secret: %w", err)
		}
		sigs = append(sigs, sig)
	}
	if wholeKeys {
		for _, s := range secrets {
			sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac(hmac.New(sha256.New, []byte(s)), msgID, ts.Unix(), body)))
		}
	}
	return strings.Join(sigs, " "), nil
}

// Verify checks a request as a receiver should, before parsing its body:
// the body must be the raw bytes received, the webhook-timestamp within
// VerifyTolerance of now, and one of the v1 signatures of webhook-signature
// that of secret (compared in constant time).
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeaders
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ts[0] == '+' {
		return ErrTimestamp
	}
	// Compare in seconds, so that huge values cannot overflow.
	tol := int64(VerifyTolerance / time.Second)
	switch {
	case unix < now.Unix()-tol:
		return ErrTooOld
	case unix > now.Unix()+tol:
		return ErrTooNew
	}
	want := mac(hmac.New(sha256.New, key), id, unix, body)
	var got [48]byte // base64.StdEncoding.DecodedLen(64)
	for _, s := range strings.Fields(sigs) {
		b64, ok := strings.CutPrefix(s, "v1,")
		if !ok || len(b64) > 64 {
			continue
		}
		n, err := base64.StdEncoding.Decode(got[:], []byte(b64))
		if err == nil && hmac.Equal(got[:n], want) {
			return nil
		}
	}
	return ErrNoMatch
}
