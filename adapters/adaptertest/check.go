package adaptertest

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// CheckNew checks what a constructor New returned: with wantErr "" an
// adapter and no error, else an error containing wantErr. It reports
// whether the test has an adapter to go on with.
func CheckNew[A any](t testing.TB, a *A, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil || a == nil {
			t.Fatalf("New = %v, %v; want an adapter", a, err)
		}
		return true
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("New error = %v, want one containing %q", err, wantErr)
	}
	return false
}

// resolved caches the resolved data schemas by their text.
var resolved sync.Map

// Validate checks data against a catalog type's data schema, failing t when
// the schema or the data is not JSON.
func Validate(t testing.TB, schema, data json.RawMessage) error {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	return resolve(t, schema).Validate(v)
}

func resolve(t testing.TB, raw json.RawMessage) *jsonschema.Resolved {
	t.Helper()
	if rs, ok := resolved.Load(string(raw)); ok {
		return rs.(*jsonschema.Resolved)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema %s: %v", raw, err)
	}
	resolved.Store(string(raw), rs)
	return rs
}

// Allocated returns the bytes the process allocated while f ran.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
