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
		// encoding/json names a slice, not the entry in it, when an entry
		// has the wrong type.
		if ft := typeAt(reflect.TypeOf(in), field); ft != nil && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) &&
			deref(ft.Elem()) == deref(typeErr.Type) {
			return fmt.Errorf("each entry of %s must be %s, not %s", field, describeType(typeErr.Type), article(typeErr.Value))
		}
		return fmt.Errorf("%s must be %s, not %s", field, describeType(typeErr.Type), article(typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("the arguments are not valid JSON (%v)", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the arguments are not valid JSON (they end too early)")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if u, ok := findUnknown(raw, reflect.TypeOf(in), ""); ok && u.path != "" {
			return fmt.Errorf("unknown field %q in %s; %s accepts %s", u.name, u.path, u.path, acceptedAt(t, u.path))
		}
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

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// unwrapOptional sees through the Optional* argument types (a Set flag and
// a Value) to the type of their value.
func unwrapOptional(t reflect.Type) reflect.Type {
	t = deref(t)
	if t.Kind() != reflect.Struct || t.NumField() != 2 {
		return t
	}
	set, ok1 := t.FieldByName("Set")
	value, ok2 := t.FieldByName("Value")
	if ok1 && ok2 && set.Type.Kind() == reflect.Bool {
		return deref(value.Type)
	}
	return t
}

// fieldTypes returns the JSON names of a struct's fields and their types.
func fieldTypes(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			if f.Anonymous && deref(f.Type).Kind() == reflect.Struct {
				for n, ft := range fieldTypes(deref(f.Type)) {
					out[n] = ft
				}
				continue
			}
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// fieldNamed finds a struct field by JSON name the way encoding/json does:
// an exact match first, then one that differs only in case.
func fieldNamed(fields map[string]reflect.Type, key string) (string, reflect.Type, bool) {
	if ft, ok := fields[key]; ok {
		return key, ft, true
	}
	for name, ft := range fields {
		if strings.EqualFold(name, key) {
			return name, ft, true
		}
	}
	return "", nil, false
}

// typeAt returns the type at a dotted field path as encoding/json writes it
// in an UnmarshalTypeError (slices are passed through without an index), or
// nil.
func typeAt(t reflect.Type, path string) reflect.Type {
	t = unwrapOptional(t)
	for _, seg := range strings.Split(path, ".") {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = unwrapOptional(t.Elem())
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		_, ft, ok := fieldNamed(fieldTypes(t), seg)
		if !ok {
			return nil
		}
		t = unwrapOptional(ft)
	}
	return t
}

// unknownField is a field that the arguments' type does not have.
type unknownField struct {
	name string
	// path is the dotted path of the object holding it; empty at the top.
	path string
}

// findUnknown finds, in document order, the first object key in raw that t
// has no field for.
func findUnknown(raw []byte, t reflect.Type, path string) (unknownField, bool) {
	t = unwrapOptional(t)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return unknownField{}, false
	}
	switch {
	case t.Kind() == reflect.Struct && raw[0] == '{':
		fields := fieldTypes(t)
		found := unknownField{}
		ok := false
		eachMember(raw, func(key string, value json.RawMessage) bool {
			name, ft, known := fieldNamed(fields, key)
			if !known {
				found, ok = unknownField{name: key, path: path}, true
				return false
			}
			found, ok = findUnknown(value, ft, join(path, name))
			return !ok
		})
		return found, ok
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && raw[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return unknownField{}, false
		}
		for i, item := range items {
			if u, ok := findUnknown(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ok {
				return u, true
			}
		}
	case t.Kind() == reflect.Map && raw[0] == '{':
		found := unknownField{}
		ok := false
		eachMember(raw, func(key string, value json.RawMessage) bool {
			found, ok = findUnknown(value, t.Elem(), join(path, key))
			return !ok
		})
		return found, ok
	}
	return unknownField{}, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// eachMember calls f with the members of a JSON object in document order
// until f returns false.
func eachMember(raw []byte, f func(key string, value json.RawMessage) bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return
		}
		if !f(key, value) {
			return
		}
	}
}

// acceptedAt lists the properties the tool's input schema allows in the
// object at path (a dotted path; array indexes are skipped).
func acceptedAt(t *mcp.Tool, path string) string {
	s, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok {
		return "only the fields its input schema lists"
	}
	schemas := []*jsonschema.Schema{s}
	for _, seg := range strings.Split(path, ".") {
		name, _, _ := strings.Cut(seg, "[")
		var next []*jsonschema.Schema
		for _, s := range expand(schemas) {
			if p := s.Properties[name]; p != nil {
				next = append(next, p)
			}
		}
		schemas = next
		if strings.Contains(seg, "[") {
			var items []*jsonschema.Schema
			for _, s := range expand(schemas) {
				if s.Items != nil {
					items = append(items, s.Items)
				}
			}
			schemas = items
		}
	}
	var names []string
	for _, s := range expand(schemas) {
		for name := range s.Properties {
			if !slices.Contains(names, fmt.Sprintf("%q", name)) {
				names = append(names, fmt.Sprintf("%q", name))
			}
		}
	}
	if len(names) == 0 {
		return "only the fields its input schema lists"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// expand replaces each schema by the alternatives of its oneOf or anyOf,
// if it has some.
func expand(schemas []*jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range schemas {
		switch {
		case len(s.OneOf) > 0:
			out = append(out, s.OneOf...)
		case len(s.AnyOf) > 0:
			out = append(out, s.AnyOf...)
		default:
			out = append(out, s)
		}
	}
	return out
}
