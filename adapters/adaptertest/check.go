package adaptertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpe-server/mcpe-server/mcpe"
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

// placeholder is a segment such as <alertname> in a catalog type that
// stands for a family of types.
var placeholder = regexp.MustCompile(`<[A-Za-z0-9_-]+>`)

// CheckCatalog checks what a source declares in its catalog: each type (a
// placeholder segment such as <alertname> taken for any valid segment) is a
// valid event type; its description is one non-empty line; its data schema
// is a JSON Schema (draft 2020-12 or 07) of an object; and its example is an
// object that the schema accepts. The error lists every problem, each under
// its type.
func CheckCatalog(types []mcpe.EventType) error {
	if len(types) == 0 {
		return errors.New("the catalog lists no event types")
	}
	var errs []error
	seen := make(map[string]bool)
	for i, et := range types {
		name := fmt.Sprintf("types[%d] %q", i, et.Type)
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
		}
		if seen[et.Type] {
			fail("listed twice")
		}
		seen[et.Type] = true
		if err := mcpe.ValidateType(placeholder.ReplaceAllString(et.Type, "x")); err != nil {
			fail("not a valid type, even with its placeholders filled in: %v", err)
		}
		if desc := strings.TrimSpace(et.Description); desc == "" || strings.ContainsAny(desc, "\r\n") {
			fail("the description must be one non-empty line, not %q", et.Description)
		}
		if len(bytes.TrimSpace(et.DataSchema)) == 0 {
			fail("no data schema")
			continue
		}
		var schema jsonschema.Schema
		if err := json.Unmarshal(et.DataSchema, &schema); err != nil {
			fail("the data schema is not a JSON Schema: %v", err)
			continue
		}
		if schema.Type != "object" {
			fail("the data schema describes %q; event data is an object, so give \"type\": \"object\"", schema.Type)
		}
		rs, err := schema.Resolve(nil)
		if err != nil {
			fail("the data schema does not resolve: %v", err)
			continue
		}
		if len(bytes.TrimSpace(et.Example)) == 0 {
			fail("no example")
			continue
		}
		var example any
		if err := json.Unmarshal(et.Example, &example); err != nil {
			fail("the example is not JSON: %v", err)
			continue
		}
		if _, ok := example.(map[string]any); !ok {
			fail("the example is not a JSON object: %s", et.Example)
			continue
		}
		if err := rs.Validate(example); err != nil {
			fail("the example does not match the data schema: %v", err)
		}
	}
	return errors.Join(errs...)
}
