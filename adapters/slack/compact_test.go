package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nest returns an event with depth levels of objects inside it.
func nest(depth int) string {
	s := `"leaf"`
	for i := depth; i > 0; i-- {
		s = fmt.Sprintf(`{"level%d": %s}`, i, s)
	}
	return `{"type": "deep", "a": ` + s + `}`
}

func TestBoundedCopy(t *testing.T) {
	manyKeys := func(n, size int) string {
		var b strings.Builder
		b.WriteString(`{"type": "wide"`)
		for i := range n {
			fmt.Fprintf(&b, `, "k%04d": %q`, i, strings.Repeat("v", size))
		}
		b.WriteString(`}`)
		return b.String()
	}
	tests := []struct {
		name    string
		event   string
		want    string // "" skips the comparison
		wantCut bool
	}{
		{name: "small", event: `{"type": "x", "b": [1, 2.5, true, null], "a": {"c": "d"}}`, want: `{"type":"x","a":{"c":"d"},"b":[1,2.5,true,null]}`},
		{name: "numbers kept exactly", event: `{"type": "x", "n": 12345678901234567890, "f": 1e-7}`, want: `{"type":"x","f":1e-7,"n":12345678901234567890}`},
		{name: "HTML kept unescaped", event: `{"type": "x", "text": "<@U1> & <#C1>"}`, want: `{"type":"x","text":"<@U1> & <#C1>"}`},
		// The event is level 1; objects below MaxEventDepth are left out.
		{name: "as deep as allowed", event: nest(MaxEventDepth - 1), want: `{"type":"deep","a":{"level1":{"level2":{"level3":"leaf"}}}}`},
		{name: "too deep", event: nest(MaxEventDepth), want: `{"type":"deep","a":{"level1":{"level2":{}}}}`, wantCut: true},
		{name: "far too deep", event: nest(5000), want: `{"type":"deep","a":{"level1":{"level2":{}}}}`, wantCut: true},
		{name: "deep arrays", event: `{"type": "x", "a": [[[[[1]]]]]}`, want: `{"type":"x","a":[[[]]]}`, wantCut: true},
		{name: "long string", event: `{"type": "x", "s": "` + strings.Repeat("s", 2000) + `"}`, want: `{"type":"x","s":"` + strings.Repeat("s", 1021) + `…"}`, wantCut: true},
		{name: "long key", event: `{"type": "x", "` + strings.Repeat("k", 300) + `": 1}`, want: `{"type":"x","` + strings.Repeat("k", 253) + `…":1}`, wantCut: true},
		{name: "long array", event: `{"type": "x", "a": [` + strings.Repeat("0,", 99) + `0]}`, want: `{"type":"x","a":[` + strings.Repeat("0,", 31) + `0]}`, wantCut: true},
		{name: "many keys: type and subtype kept", event: strings.Replace(manyKeys(100, 1), `"type": "wide"`, `"zz": 1, "subtype": "s", "type": "wide"`, 1), wantCut: true},
		{name: "too large: tighter limits", event: manyKeys(60, 1000), wantCut: true},
		{name: "far too large", event: manyKeys(20000, 40), wantCut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.event)) {
				t.Fatalf("test event is not JSON: %.200s", tt.event)
			}
			got, cut := boundedCopy(decodeObject(json.RawMessage(tt.event)))
			if len(got) > MaxEventBytes {
				t.Fatalf("copy is %d bytes; at most %d", len(got), MaxEventBytes)
			}
			if cut != tt.wantCut {
				t.Errorf("cut = %v, want %v", cut, tt.wantCut)
			}
			if tt.want != "" {
				if diff := cmp.Diff(tt.want, string(got)); diff != "" {
					t.Errorf("copy mismatch (-want +got):\n%s", diff)
				}
			}
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("copy is not a JSON object: %v", err)
			}
			if m["type"] == nil {
				t.Errorf("copy lost the type: %.200s", got)
			}
			if depth := jsonDepth(m); depth > MaxEventDepth {
				t.Errorf("copy is %d levels deep; at most %d", depth, MaxEventDepth)
			}
		})
	}
}

// jsonDepth counts the levels of objects and arrays in v, v being 1.
func jsonDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			d = max(d, jsonDepth(c))
		}
	case []any:
		for _, c := range x {
			d = max(d, jsonDepth(c))
		}
	default:
		return 0
	}
	return d + 1
}
