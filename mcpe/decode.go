package mcpe

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"strings"
)

// DecodeOptions phrase the errors of DecodeStrict. A nil *DecodeOptions
// means all defaults.
type DecodeOptions struct {
	// Subject names the whole value in errors, such as "the body". Zero:
	// "the value".
	Subject string
	// Plural says that Subject takes a plural verb, as "the arguments"
	// does. Zero: singular.
	Plural bool
	// Example is a JSON object shown when the value is empty or not an
	// object, such as `{"type": "deploy.failed"}`. Zero: none.
	Example string
	// Accepts says which fields the object at path accepts, for the error
	// about an unknown field; path is dotted with indexes, such as
	// "filter" or "items[2].meta", and "" for the value itself. Zero, or
	// an empty answer: the JSON names of the Go type's fields, in
	// declaration order.
	Accepts func(path string) string
}

// DecodeStrict decodes data, which must hold exactly one JSON object, into
// v, a pointer to a struct, as encoding/json does but refusing fields that
// v has no place for and anything after the object. Its errors are
// sentences for the person or model that wrote data: an unknown field is
// named with the path of its object and what that object accepts, a value
// of the wrong type with its field, what was expected and what was given.
func DecodeStrict(data []byte, v any, opts *DecodeOptions) error {
	var o DecodeOptions
	if opts != nil {
		o = *opts
	}
	s := subject{name: cmp.Or(o.Subject, "the value"), plural: o.Plural}
	suchAs := "" // the example, as the errors about the object's shape end
	if o.Example != "" {
		suchAs = ", such as " + o.Example
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return fmt.Errorf("%s %s empty; send a JSON object%s", s.name, s.be(), strings.TrimPrefix(suchAs, ","))
	}
	if data[0] != '{' {
		return fmt.Errorf("%s must be a JSON object%s", s.name, suchAs)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, data, v, s, o.Accepts)
	}
	if dec.More() {
		return fmt.Errorf("%s %s more than one JSON value; send one object per request", s.name, s.verb("holds", "hold"))
	}
	// More is false before a stray '}' or ']', so look at what is left.
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("%s %s not valid JSON: unexpected %q after the object", s.name, s.be(), rest[:1])
	}
	return nil
}

// subject is the whole value as errors name it.
type subject struct {
	name   string
	plural bool
}

func (s subject) verb(singular, plural string) string {
	if s.plural {
		return plural
	}
	return singular
}

func (s subject) be() string { return s.verb("is", "are") }

// decodeError turns an error of encoding/json into a sentence.
func decodeError(err error, data []byte, v any, s subject, accepts func(string) string) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := cmp.Or(typeErr.Field, s.name)
		// encoding/json names a slice, not the entry in it, when an entry
		// has the wrong type.
		if ft := typeAt(reflect.TypeOf(v), typeErr.Field); ft != nil && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) &&
			deref(ft.Elem()) == deref(typeErr.Type) {
			field = "each entry of " + field
		}
		return fmt.Errorf("%s must be %s, not %s", field, describeType(typeErr.Type), given(typeErr.Value, deref(typeErr.Type)))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("%s %s not valid JSON: %s at byte %d", s.name, s.be(), strings.TrimPrefix(syntaxErr.Error(), "json: "), syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s %s not valid JSON: %s too early", s.name, s.be(), s.verb("it ends", "they end"))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		u, ok := findUnknown(data, reflect.TypeOf(v), "")
		if !ok { // take the name from the error, where it is quoted
			quoted := strings.TrimPrefix(err.Error(), "json: unknown field ")
			if json.Unmarshal([]byte(quoted), &u.name) != nil {
				u.name = strings.Trim(quoted, `"`)
			}
		}
		what := ""
		if accepts != nil {
			what = accepts(u.path)
		}
		if what == "" {
			what = fieldList(typeAt(reflect.TypeOf(v), u.path))
		}
		if u.path == "" {
			return fmt.Errorf("unknown field %q; %s %s %s", u.name, s.name, s.verb("accepts", "accept"), what)
		}
		return fmt.Errorf("unknown field %q in %s; %s accepts %s", u.name, u.path, u.path, what)
	}
	// An error of a type's own UnmarshalJSON, already phrased.
	return fmt.Errorf("%s %s not valid: %s", s.name, s.be(), strings.TrimPrefix(err.Error(), "json: "))
}

// describeType says what a JSON value for t looks like.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t.Bits() < 64 {
			return fmt.Sprintf("a whole number from %d to %d", -1<<(t.Bits()-1), 1<<(t.Bits()-1)-1)
		}
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t.Bits() < 64 {
			return fmt.Sprintf("a whole number from 0 to %d", 1<<t.Bits()-1)
		}
		return "a whole number from 0 up"
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
	switch deref(t).Kind() {
	case reflect.String:
		return "strings"
	case reflect.Struct, reflect.Map:
		return "objects"
	}
	return "values"
}

// given turns a JSON kind from UnmarshalTypeError.Value ("string",
// "number 3", "array", "object", "bool") into a phrase. A number given for
// a number that cannot hold it is quoted, so that "not 0.5" or "not 1e400"
// says what is wrong with it.
func given(v string, want reflect.Type) string {
	switch {
	case v == "array" || v == "object":
		return "an " + v
	case v == "bool":
		return "a boolean"
	case strings.HasPrefix(v, "number"):
		if n, ok := strings.CutPrefix(v, "number "); ok && want.Kind() >= reflect.Int && want.Kind() <= reflect.Float64 {
			return n
		}
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

// unwrapOptional sees through the Optional* types (a Set flag and a Value)
// to the type of their value.
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

// jsonField is a struct field as encoding/json names it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// fieldsOf returns the JSON fields of a struct type, in declaration order,
// with those of embedded structs in their place.
func fieldsOf(t reflect.Type) []jsonField {
	var out []jsonField
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
				out = append(out, fieldsOf(deref(f.Type))...)
				continue
			}
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

// fieldNamed finds a struct field by JSON name the way encoding/json does:
// an exact match first, then one that differs only in case.
func fieldNamed(fields []jsonField, key string) (jsonField, bool) {
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return jsonField{}, false
}

// typeAt returns the type at a dotted path, or nil: a path as
// encoding/json writes it in an UnmarshalTypeError (slices passed through
// without an index), or as findUnknown writes it (with indexes, and map
// keys as segments).
func typeAt(t reflect.Type, path string) reflect.Type {
	t = unwrapOptional(t)
	if path == "" {
		return t
	}
	for seg := range strings.SplitSeq(path, ".") {
		name, index, _ := strings.Cut(seg, "[")
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = unwrapOptional(t.Elem())
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldNamed(fieldsOf(t), name)
			if !ok {
				return nil
			}
			t = unwrapOptional(f.typ)
		case reflect.Map:
			t = unwrapOptional(t.Elem())
		default:
			return nil
		}
		for range strings.Count(index, "]") {
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			t = unwrapOptional(t.Elem())
		}
	}
	return t
}

// fieldList lists the JSON names of the fields of struct type t, quoted;
// a field that is itself an object lists its own fields after it.
func fieldList(t reflect.Type) string {
	if t == nil || t.Kind() != reflect.Struct {
		return "only the fields it documents"
	}
	names := quotedFields(t)
	if len(names) == 0 {
		return "no fields"
	}
	for i, f := range fieldsOf(t) {
		if ft := unwrapOptional(f.typ); ft.Kind() == reflect.Struct {
			if sub := quotedFields(ft); len(sub) > 0 {
				names[i] += " (with " + strings.Join(sub, ", ") + ")"
			}
		}
	}
	return strings.Join(names, ", ")
}

func quotedFields(t reflect.Type) []string {
	var out []string
	for _, f := range fieldsOf(t) {
		out = append(out, fmt.Sprintf("%q", f.name))
	}
	return out
}

// unknownField is a field that the type decoded into does not have.
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
		fields := fieldsOf(t)
		for key, value := range members(raw) {
			f, known := fieldNamed(fields, key)
			if !known {
				return unknownField{name: key, path: path}, true
			}
			if u, ok := findUnknown(value, f.typ, join(path, f.name)); ok {
				return u, true
			}
		}
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
		for key, value := range members(raw) {
			if u, ok := findUnknown(value, t.Elem(), join(path, key)); ok {
				return u, true
			}
		}
	}
	return unknownField{}, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// members yields the members of a JSON object in document order.
func members(raw []byte) iter.Seq2[string, json.RawMessage] {
	return func(yield func(key string, value json.RawMessage) bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return
		}
		for dec.More() {
			tok, err := dec.Token()
			key, _ := tok.(string)
			var value json.RawMessage
			if err != nil || dec.Decode(&value) != nil || !yield(key, value) {
				return
			}
		}
	}
}
