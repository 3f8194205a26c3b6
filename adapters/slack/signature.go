package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
)

// signatureVersion is the only signature scheme Slack has published.
const signatureVersion = "v0"

// Signature returns the X-Slack-Signature of a request with body sent at
// timestamp (X-Slack-Request-Timestamp): "v0=" and the hex HMAC-SHA256 of
// "v0:<timestamp>:<body>" keyed with the signing secret. It is what Slack
// computes, so it also signs test requests.
func Signature(secret []byte, timestamp string, body []byte) string {
	return signatureVersion + "=" + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signatureVersion + ":" + timestamp + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// signed is what the headers of a request claim: when it was sent and its
// MAC.
type signed struct {
	timestamp string
	mac       []byte
}

// checkHeaders reads the signature headers and refuses a request whose
// timestamp is missing, malformed or further than the tolerance from now.
// It runs before the body is read: a request that cannot be genuine is
// refused without reading it.
func (a *Adapter) checkHeaders(h http.Header, now time.Time) (signed, *httpapi.RequestError) {
	ts, err := single(h, HeaderTimestamp)
	if err != nil {
		return signed{}, err
	}
	sig, err := single(h, HeaderSignature)
	if err != nil {
		return signed{}, err
	}
	sent, ok := parseUnix(ts)
	if !ok {
		return signed{}, unauthorized("%s %q is not a time in Unix seconds such as \"1531420618\"", HeaderTimestamp, adapters.Clip(ts, 32))
	}
	// Whole seconds, so that a timestamp of any size compares without
	// overflow.
	skew := now.Unix() - sent
	if limit := int64(a.tolerance / time.Second); skew > limit || skew < -limit {
		dir := "behind"
		if skew < 0 {
			dir, skew = "ahead of", -skew
		}
		return signed{}, unauthorized("%s %d is %s %s this server's clock (%s); requests more than %v away are refused as possible replays. "+
			"If every request from Slack is refused this way, set the server's clock right (NTP)",
			HeaderTimestamp, sent, describeSeconds(skew), dir, now.UTC().Format(time.RFC3339), a.tolerance)
	}
	version, digest, found := strings.Cut(sig, "=")
	if !found || version != signatureVersion {
		return signed{}, unauthorized("%s %q is not a %s signature; Slack sends \"v0=\" and 64 hex digits", HeaderSignature, adapters.Clip(sig, 80), signatureVersion)
	}
	sum, decodeErr := hex.DecodeString(digest)
	if decodeErr != nil || len(sum) != sha256.Size {
		return signed{}, unauthorized("%s %q is malformed; Slack sends \"v0=\" and 64 hex digits", HeaderSignature, adapters.Clip(sig, 80))
	}
	return signed{timestamp: ts, mac: sum}, nil
}

// checkSignature compares, in constant time, the MAC of body with the one
// the request claims.
func (a *Adapter) checkSignature(s signed, body []byte) *httpapi.RequestError {
	if !hmac.Equal(mac(a.secret, s.timestamp, body), s.mac) {
		return unauthorized("%s does not match the request: check that adapters.slack.signingSecret is the Signing Secret from the app's Basic Information page, "+
			"and that nothing between Slack and this server changes the body", HeaderSignature)
	}
	return nil
}

// single returns the one value of header name.
func single(h http.Header, name string) (string, *httpapi.RequestError) {
	switch vs := h.Values(name); len(vs) {
	case 0:
		return "", unauthorized("the %s header is missing; requests to this endpoint must come from Slack's Events API, which signs each with %s and %s",
			name, HeaderSignature, HeaderTimestamp)
	case 1:
		if vs[0] == "" {
			return "", unauthorized("the %s header is empty", name)
		}
		return vs[0], nil
	default:
		return "", unauthorized("the %s header is sent %d times; Slack sends it once", name, len(vs))
	}
}

// parseUnix reads a non-negative whole number of seconds written in ASCII
// digits only (no sign, space or fraction).
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// describeSeconds writes n seconds (n >= 0) for a person.
func describeSeconds(n int64) string {
	const century = 100 * 365 * 24 * 3600
	if n > century {
		return "more than a century"
	}
	return (time.Duration(n) * time.Second).String()
}

func unauthorized(format string, args ...any) *httpapi.RequestError {
	return &httpapi.RequestError{Status: http.StatusUnauthorized, Code: httpapi.CodeUnauthorized, Message: fmt.Sprintf(format, args...)}
}
