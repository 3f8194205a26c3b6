package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters"
)

// SignatureHeader is the header that carries a delivery's signature.
const SignatureHeader = "X-Hub-Signature-256"

// signaturePrefix starts every X-Hub-Signature-256 value.
const signaturePrefix = "sha256="

// Signature returns the X-Hub-Signature-256 value GitHub sends with body
// when the webhook's secret is secret: "sha256=" and the hex HMAC-SHA256 of
// the body. It is what a test or a script posting to the adapter sends.
func Signature(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// Errors of checkSignature; the messages are answered to the sender.
var (
	errNoSignature = errors.New("the request has no " + SignatureHeader + " header; set a secret in the webhook's settings on GitHub (the same as adapters.github.token or tokenEnv here) so that GitHub signs its deliveries")
	errMismatch    = errors.New(SignatureHeader + " does not match the body; the webhook's secret on GitHub differs from adapters.github.token (or tokenEnv), or the body was changed on the way")
)

// parseSignature reads an X-Hub-Signature-256 value: "sha256=" and 64 hex
// digits. The error says what is wrong with it.
func parseSignature(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, errNoSignature
	}
	hexSum, ok := strings.CutPrefix(v, signaturePrefix)
	if !ok {
		return nil, fmt.Errorf("%s must be %q followed by 64 hex digits, the HMAC-SHA256 of the body; it starts with %q", SignatureHeader, signaturePrefix, adapters.Prefix(v, 10))
	}
	if len(hexSum) != 2*sha256.Size {
		return nil, fmt.Errorf("%s must be %q followed by 64 hex digits, the HMAC-SHA256 of the body; it has %d characters after the prefix", SignatureHeader, signaturePrefix, len(hexSum))
	}
	sum, err := hex.DecodeString(hexSum)
	if err != nil {
		return nil, fmt.Errorf("%s must be %q followed by 64 hex digits, the HMAC-SHA256 of the body; what follows the prefix is not hex", SignatureHeader, signaturePrefix)
	}
	return sum, nil
}

// checkSignature reports whether header is a valid signature of body with
// secret. The comparison takes the same time wherever the two differ.
func checkSignature(secret, body []byte, header string) error {
	got, err := parseSignature(header)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errMismatch
	}
	return nil
}
