package mcpe_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// decodeTarget has a field of each shape DecodeStrict describes.
type decodeTarget struct {
	Name  string                 `json:"name"`
	Count int                    `json:"count,omitempty"`
	Small int8                   `json:"small,omitempty"`
	On    bool                   `json:"on,omitempty"`
	Tags  []string               `json:"tags,omitempty"`
	Inner *decodeInner           `json:"inner,omitempty"`
	Items []decodeInner          `json:"items,omitempty"`
	ByKey map[string]decodeInner `json:"byKey,omitempty"`
}

type decodeInner struct {
	A string `json:"a"`
	B int    `json:"b,omitempty"`
}

func TestDecodeStrict(t *testing.T) {
	body := &mcpe.DecodeOptions{Subject: "the body", Example: `{"name": "x"}`}
	args := &mcpe.DecodeOptions{Subject: "the arguments", Plural: true, Accepts: func(path string) string {
		if path == "inner" {
			return `"a" and "b"`
		}
		return ""
	}}
	for _, tc := range []struct {
		opts *mcpe.DecodeOptions
		in   string
		want string // the whole error text; empty for success
	}{
		{body, `{"name": "x", "tags": ["a"], "inner": {"a": "b"}}`, ``},
		{nil, ` {"Name": "x"} `, ``}, // names match as encoding/json matches them
		{body, ``, `the body is empty; send a JSON object such as {"name": "x"}`},
		{nil, " \n", `the value is empty; send a JSON object`},
		{body, `[1]`, `the body must be a JSON object, such as {"name": "x"}`},
		{args, `null`, `the arguments must be a JSON object`},
		{body, `{"name": }`, `the body is not valid JSON: invalid character '}' looking for beginning of value at byte 10`},
		{body, `{"name": "x"`, `the body is not valid JSON: it ends too early`},
		{args, `{"name": "x"`, `the arguments are not valid JSON: they end too early`},
		{body, `{"name": "x"} {"name": "y"}`, `the body holds more than one JSON value; send one object per request`},
		{args, `{} 1`, `the arguments hold more than one JSON value; send one object per request`},
		{body, `{"name": "x"}}`, `the body is not valid JSON: unexpected "}" after the object`},
		{body, `{"nmae": "x"}`, `unknown field "nmae"; the body accepts "name", "count", "small", "on", "tags", "inner" (with "a", "b"), "items", "byKey"`},
		{args, `{"nmae": "x"}`, `unknown field "nmae"; the arguments accept "name", "count", "small", "on", "tags", "inner" (with "a", "b"), "items", "byKey"`},
		{args, `{"inner": {"c": 1}}`, `unknown field "c" in inner; inner accepts "a" and "b"`},
		{body, `{"items": [{"a": "x"}, {"a": "y", "z": 1}]}`, `unknown field "z" in items[1]; items[1] accepts "a", "b"`},
		{body, `{"byKey": {"k": {"zz": 1}}}`, `unknown field "zz" in byKey.k; byKey.k accepts "a", "b"`},
		{body, `{"name": 42}`, `name must be a string, not a number`},
		{body, `{"tags": "a"}`, `tags must be an array of strings, not a string`},
		{body, `{"tags": [true]}`, `each entry of tags must be a string, not a boolean`},
		{body, `{"count": 0.5}`, `count must be a whole number, not 0.5`},
		{body, `{"small": 300}`, `small must be a whole number from -128 to 127, not 300`},
		{body, `{"on": "yes"}`, `on must be true or false, not a string`},
		{body, `{"inner": []}`, `inner must be an object, not an array`},
		{body, `{"items": [{"b": "x"}]}`, `items.b must be a whole number, not a string`},
	} {
		var v decodeTarget
		err := mcpe.DecodeStrict([]byte(tc.in), &v, tc.opts)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("DecodeStrict(%s):\n got: %s\nwant: %s", tc.in, got, tc.want)
		}
	}
}

// FuzzDecodeStrict checks that DecodeStrict accepts exactly what a strict
// encoding/json decode of one object accepts, decodes it the same, and
// explains every refusal in its own words.
func FuzzDecodeStrict(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `[]`, `nul`, `{"name": "x", "inner": {"a": "b", "c": 1}}`, `{"items": [{"a": 1}]}`,
		`{"byKey": {"k": {"a": "b"}}}`, `{"count": 1e400}`, `{"small": -129}`, `{} {}`, `{}]`, "{\"\xff\": 1}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got decodeTarget
		err := mcpe.DecodeStrict(data, &got, nil)

		var want decodeTarget
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		strict := dec.Decode(&want)
		trimmed := bytes.TrimSpace(data)
		if strict == nil && (len(trimmed) == 0 || trimmed[0] != '{') {
			strict = io.ErrUnexpectedEOF
		}
		if _, tokErr := dec.Token(); strict == nil && tokErr != io.EOF {
			strict = io.ErrUnexpectedEOF
		}
		if (err == nil) != (strict == nil) {
			t.Fatalf("DecodeStrict(%q) = %v; a strict decode says %v", data, err, strict)
		}
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "json:") {
				t.Fatalf("DecodeStrict(%q): untranslated error %q", data, msg)
			}
			return
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("DecodeStrict(%q) = %s; encoding/json gives %s", data, g, w)
		}
	})
}
