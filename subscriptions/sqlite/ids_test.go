package sqlite

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestDecodeIDs(t *testing.T) {
	for _, in := range []string{
		`[]`, `["a"]`, `["a","b"]`, `["00000000-0000-4000-8000-000000000001","x"]`,
		`["a,b","c"]`, `["a\"b"]`, `["é","\u00e9"]`, `[ "a" , "b" ]`, `["a",1]`, `[""]`,
	} {
		var want []string
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := decodeIDs(in)
		if (err != nil) != (wantErr != nil) || !slices.Equal(got, want) {
			t.Errorf("decodeIDs(%s) = %q, %v; want %q, %v", in, got, err, want, wantErr)
		}
	}
	for _, in := range []string{``, `[`, `{"a":1}`, `["a"`, `null`} {
		if _, err := decodeIDs(in); err == nil && in != `null` {
			t.Errorf("decodeIDs(%q) succeeded; want an error", in)
		}
	}
}

func FuzzDecodeIDs(f *testing.F) {
	for _, s := range []string{`[]`, `["a","b"]`, `["a,b"]`, `["\""]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want []string
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := decodeIDs(in)
		if wantErr != nil {
			return // the store never writes it; any error will do
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("decodeIDs(%q) = %q, %v; want %q", in, got, err, want)
		}
	})
}
