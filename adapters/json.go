package adapters

import (
	"bytes"
	"encoding/json"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// IsNull reports whether raw is the JSON null, white space around it
// allowed.
func IsNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// StringField returns field name of fields cut to max bytes: "" when it is
// missing or null, a 400 refusal when it is not a string.
func StringField(fields map[string]json.RawMessage, name string, max int) (string, *httpapi.RequestError) {
	raw, ok := fields[name]
	if !ok || IsNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", httpapi.BadRequest("%s is %s; it must be a string", name, mcpe.DescribeJSON(raw))
	}
	return Clip(s, max), nil
}

// EncodeJSON encodes v as compact JSON without escaping <, > and &, which
// the texts and URLs of events are full of.
func EncodeJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
