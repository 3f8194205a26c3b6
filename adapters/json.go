package adapters

import (
	"bytes"
	"encoding/json"
)

// DescribeJSON names the kind of a JSON value for error messages: "an
// object", "an array", "a string", "a number", "a boolean", "null", and
// "empty" or "invalid JSON" for what is no value.
func DescribeJSON(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "empty"
	}
	if !json.Valid(data) {
		return "invalid JSON"
	}
	switch data[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// IsNull reports whether raw is the JSON null, white space around it
// allowed.
func IsNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

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
