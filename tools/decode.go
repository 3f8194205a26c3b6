package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// decodeArgs decodes tool arguments into in, refusing unknown fields, and
// turns decoding errors into sentences for the model.
func decodeArgs(raw json.RawMessage, in any, t *mcp.Tool) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return fmt.Errorf("the arguments must be a JSON object, such as %s", exampleOf(t))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(in)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "the arguments"
		}
		return fmt.Errorf("%s must be %s, not %s", field, describeType(typeErr.Type), article(typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("the arguments are not valid JSON (%v)", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the arguments are not valid JSON (they end too early)")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return fmt.Errorf("unknown argument %s; %s accepts %s", name, t.Name, acceptedFields(t))
	default:
		// Errors from the types' own UnmarshalJSON, already phrased.
		return fmt.Errorf("bad arguments: %v", err)
	}
}

// acceptedFields lists the top-level properties of the tool's input schema.
func acceptedFields(t *mcp.Tool) string {
	s, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok || len(s.Properties) == 0 {
		return "no arguments"
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, fmt.Sprintf("%q", name))
	}
	slices.Sort(names)
	return strings.Join(names, ", ") + " (see its input schema; nested objects accept only the fields listed there)"
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(t.Elem())
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return t.String()
}

func plural(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "strings"
	case reflect.Struct, reflect.Map:
		return "objects"
	}
	return "values"
}

// article turns a JSON kind from UnmarshalTypeError.Value ("string",
// "number 3", "array", "object", "bool") into a phrase.
func article(v string) string {
	switch {
	case v == "array" || v == "object":
		return "an " + v
	case v == "bool":
		return "a boolean"
	case strings.HasPrefix(v, "number"):
		return "a number"
	}
	return "a " + v
}
