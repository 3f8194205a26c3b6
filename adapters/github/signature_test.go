package github

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
)

// GitHub's own test values, from "Validating webhook deliveries"
// (docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries).
const (
	docSecret    = "It's a Secret to Everybody"
	docPayload   = "Hello, World!"
	docSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestSignatureDocVector(t *testing.T) {
	if got := Signature([]byte(docSecret), []byte(docPayload)); got != docSignature {
		t.Errorf("Signature = %s, want %s", got, docSignature)
	}
	if err := checkSignature([]byte(docSecret), []byte(docPayload), docSignature); err != nil {
		t.Errorf("checkSignature refuses GitHub's example: %v", err)
	}
	// Over HTTP the example passes the signature check; "Hello, World!"
	// is then refused as a payload, not as a forgery.
	a, pub := newTestAdapter(t, func(o *Options) { o.Secret = []byte(docSecret) })
	w := send(a, delivery{event: "push", id: "d1", body: []byte(docPayload), signature: docSignature})
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "not JSON") {
		t.Errorf("status = %d, body %s; want 400 for a payload that is not JSON", w.Code, w.Body)
	}
	if n := len(pub.Published()); n != 0 {
		t.Errorf("%d events published", n)
	}
}

func TestParseSignature(t *testing.T) {
	sum := strings.TrimPrefix(docSignature, "sha256=")
	tests := []struct {
		name, header string
		wantErr      string // part of the error; "" for none
	}{
		{name: "valid", header: docSignature},
		{name: "upper-case hex", header: "sha256=" + strings.ToUpper(sum)},
		{name: "surrounding space", header: " " + docSignature + " "},
		{name: "empty", header: "", wantErr: "has no X-Hub-Signature-256"},
		{name: "blank", header: "  ", wantErr: "has no X-Hub-Signature-256"},
		{name: "no prefix", header: sum, wantErr: `starts with "757107ea0e"`},
		{name: "sha1 prefix", header: "sha1=" + sum[:40], wantErr: `starts with "sha1=`},
		{name: "upper-case prefix", header: "SHA256=" + sum, wantErr: "starts with"},
		{name: "short", header: "sha256=" + sum[:63], wantErr: "has 63 characters"},
		{name: "long", header: docSignature + "00", wantErr: "has 66 characters"},
		{name: "not hex", header: "sha256=" + strings.Repeat("zz", 32), wantErr: "not hex"},
		{name: "prefix only", header: "sha256=", wantErr: "has 0 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSignature(tt.header)
			if tt.wantErr == "" {
				if err != nil || len(got) != 32 {
					t.Fatalf("parseSignature = %x, %v; want 32 bytes", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// Every delivery without a valid signature is refused with 401 and
// publishes nothing, whatever else is right with it.
func TestSignatureRefusals(t *testing.T) {
	body := adaptertest.ReadFixture(t, "issues.opened.json")
	tampered := bytes.Replace(body, []byte("Login fails"), []byte("Login works"), 1)
	tests := []struct {
		name      string
		body      []byte
		signature string
		headers   []string
		wantMsg   string
	}{
		{name: "tampered body", body: tampered, signature: Signature(testSecret, body), wantMsg: "does not match"},
		{name: "wrong secret", body: body, signature: Signature([]byte("another secret"), body), wantMsg: "does not match"},
		{name: "secret with a trailing newline", body: body, signature: Signature(append(append([]byte{}, testSecret...), '\n'), body), wantMsg: "does not match"},
		{name: "missing header", body: body, signature: "-", wantMsg: "has no X-Hub-Signature-256"},
		{name: "only the SHA-1 header", body: body, signature: "-", headers: []string{"X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567"}, wantMsg: "has no X-Hub-Signature-256"},
		{name: "no sha256= prefix", body: body, signature: strings.TrimPrefix(Signature(testSecret, body), "sha256="), wantMsg: "must be \"sha256=\""},
		{name: "non-hex", body: body, signature: "sha256=" + strings.Repeat("g", 64), wantMsg: "not hex"},
		{name: "truncated signature", body: body, signature: Signature(testSecret, body)[:40], wantMsg: "64 hex digits"},
		{name: "signature of the empty body", body: body, signature: Signature(testSecret, nil), wantMsg: "does not match"},
		{name: "empty body, no signature", body: nil, signature: "-", wantMsg: "has no X-Hub-Signature-256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			w := send(a, delivery{event: "issues", id: "72d3162e-cc78-11e3-81ab-4c9367dc0958", body: tt.body, signature: tt.signature, headers: tt.headers})
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401; body %s", w.Code, w.Body)
			}
			e := adaptertest.Refusal(t, w).Error
			if e.Code != httpapi.CodeUnauthorized || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("refusal = %+v; want code unauthorized and a message containing %q", e, tt.wantMsg)
			}
			if n := len(pub.Published()); n != 0 {
				t.Errorf("%d events published without a valid signature", n)
			}
		})
	}
}

// The signature is checked before the content type, event and delivery
// headers: an unsigned request learns nothing else.
func TestSignatureCheckedFirst(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	for _, d := range []delivery{
		{body: []byte(`{}`), signature: "-", contentType: "text/plain"},
		{body: []byte(`not json`), signature: "sha256=00", event: "push"},
		{body: []byte(`{}`), signature: Signature([]byte("wrong"), []byte(`{}`)), contentType: "-"},
	} {
		if w := send(a, d); w.Code != http.StatusUnauthorized {
			t.Errorf("%+v: status = %d, want 401; body %s", d, w.Code, w.Body)
		}
	}
	if n := len(pub.Published()); n != 0 {
		t.Errorf("%d events published", n)
	}
}
