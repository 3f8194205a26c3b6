package tools

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzDecodeArgs feeds arbitrary arguments to every tool's decoder: it must
// never panic, must accept exactly what a strict encoding/json decode
// accepts (one object, known fields, nothing after it), and must explain
// every refusal in its own words (never a bare "json: ..." message).
func FuzzDecodeArgs(f *testing.F) {
	for _, ex := range examples {
		f.Add(ex)
	}
	for _, seed := range []string{
		``, `null`, `[]`, `"x"`, `{"filter": {"eventTypes": [1]}}`, `{"filter": {"eventType": ["x"]}}`,
		`{"subscriptionId": "x", "handler": {"type": "webhook", "uri": "u"}}`, `{"Filter": {}}`,
		`{"delivery": {"cronSchedule": {"tz": 1}}}`, `{"filter": {"tags": [[]]}}`, `{"limit": 1e400}`, `{"limit": "5"}`,
		`{"filter": {"eventTypes": ["a"]}, "filter": 3}`, `{"expiresAt": null, "handler": null}`, `{} {}`, `{}}`, `{} x`, "{\"filter\": {\"\xff\": 1}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, tc := range toolCases {
			err := decodeArgs(json.RawMessage(args), tc.in(), tc.tool)
			raw := bytes.TrimSpace([]byte(args))
			if len(raw) == 0 || string(raw) == "null" {
				raw = []byte("{}")
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			strict := dec.Decode(tc.in())
			if strict == nil && raw[0] != '{' {
				strict = errNotObject
			}
			if _, err := dec.Token(); strict == nil && err != io.EOF {
				strict = errTrailing
			}
			if (err == nil) != (strict == nil) {
				t.Fatalf("%s %q: decodeArgs says %v, a strict decode says %v", tc.tool.Name, args, err, strict)
			}
			if err != nil && (err.Error() == "" || strings.HasPrefix(err.Error(), "json:")) {
				t.Fatalf("%s %q: untranslated error %q", tc.tool.Name, args, err)
			}
		}
	})
}

var (
	errNotObject = jsonError("not an object")
	errTrailing  = jsonError("data after the object")
)

type jsonError string

func (e jsonError) Error() string { return string(e) }
