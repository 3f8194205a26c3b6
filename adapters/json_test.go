package adapters

import (
	"encoding/json"
	"testing"
)

func TestIsNull(t *testing.T) {
	for in, want := range map[string]bool{
		`null`: true, " null\n": true, ``: false, `"null"`: false, `nullx`: false, `{}`: false, `0`: false,
	} {
		if got := IsNull([]byte(in)); got != want {
			t.Errorf("IsNull(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestEncodeJSON(t *testing.T) {
	v := map[string]any{"url": "https://example.com/?a=1&b=<2>", "n": 1}
	got, err := EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":1,"url":"https://example.com/?a=1&b=<2>"}`; string(got) != want {
		t.Errorf("EncodeJSON = %s, want %s", got, want)
	}
	if _, err := EncodeJSON(func() {}); err == nil {
		t.Error("EncodeJSON of a func: no error")
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil || back["url"] != v["url"] {
		t.Errorf("EncodeJSON output %s does not decode to the input: %v", got, err)
	}
}
