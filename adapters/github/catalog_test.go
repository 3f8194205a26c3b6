package github

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// catalogEntry returns the first entry of cat whose type or pattern
// matches typ, a placeholder such as <action> standing for one segment.
func catalogEntry(cat []mcpe.EventType, typ string) (mcpe.EventType, bool) {
	segs := strings.Split(typ, ".")
	for _, et := range cat {
		pat := strings.Split(et.Type, ".")
		if len(pat) != len(segs) {
			continue
		}
		ok := true
		for i := range pat {
			if pat[i] != segs[i] && !strings.HasPrefix(pat[i], "<") {
				ok = false
				break
			}
		}
		if ok {
			return et, true
		}
	}
	return mcpe.EventType{}, false
}

// checkAgainstCatalog checks that ev has a catalog entry and that its data
// validates against the entry's schema.
func checkAgainstCatalog(t testing.TB, cat []mcpe.EventType, ev mcpe.Event) {
	t.Helper()
	et, ok := catalogEntry(cat, ev.Type)
	if !ok {
		t.Fatalf("type %q has no catalog entry", ev.Type)
	}
	if err := adaptertest.Validate(t, et.DataSchema, ev.Data); err != nil {
		t.Fatalf("the data of %s does not validate against the schema of %s: %v\ndata: %s", ev.Type, et.Type, err, ev.Data)
	}
}

func TestCatalog(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	cat := a.Catalog()
	var types []string
	for _, et := range cat {
		types = append(types, et.Type)
	}
	want := []string{
		"github.issues.<action>", "github.pull_request.<action>", "github.issue_comment.<action>",
		"github.pull_request_review.<action>", "github.pull_request_review_comment.<action>", "github.commit_comment.<action>",
		"github.push", "github.create", "github.delete",
		"github.workflow_run.<action>", "github.workflow_job.<action>", "github.check_run.<action>", "github.check_suite.<action>",
		"github.release.<action>", "github.fork", "github.star.<action>", "github.watch.<action>",
		"github.deployment.<action>", "github.deployment_status.<action>", "github.status",
		"github.<event>.<action>", "github.<event>",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("types mismatch (-want +got):\n%s", diff)
	}
	for i, et := range cat {
		f := families[i]
		t.Run(et.Type, func(t *testing.T) {
			concrete := strings.NewReplacer("<action>", "opened", "<event>", "discussion").Replace(et.Type)
			if err := mcpe.ValidateType(concrete); err != nil {
				t.Error(err)
			}
			if et.Description == "" || et.Priority == "" || !strings.HasPrefix(et.Tags, commonTags) {
				t.Errorf("description, priority or tags missing: %+v", et)
			}
			if err := adaptertest.Validate(t, et.DataSchema, et.Example); err != nil {
				t.Errorf("the example does not validate against the schema: %v\nexample: %s", err, et.Example)
			}
			// The example is what the adapter makes of an event of this
			// entry's kind.
			body := strings.NewReplacer("$REPO", exampleRepo, "$ORG", exampleOrg, "$SENDER", exampleSender).Replace(f.example)
			p, reqErr := decode([]byte(body))
			if reqErr != nil {
				t.Fatal(reqErr)
			}
			ev, err := a.event(f.event, "example", p, []byte(body), t0)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := catalogEntry(cat, ev.Type); !ok || got.Type != et.Type {
				t.Errorf("the example's type %s is listed under %q, not %q", ev.Type, got.Type, et.Type)
			}
			// The schema describes exactly the Go type of the data.
			data, err := makeData(&conv{}, f.event, p, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			var schema jsonschema.Schema
			if err := json.Unmarshal(et.DataSchema, &schema); err != nil {
				t.Fatal(err)
			}
			checkShape(t, "data", &schema, reflect.TypeOf(data))
		})
	}
	// Callers get a copy.
	cat[0].Type = "changed"
	if a.Catalog()[0].Type == "changed" {
		t.Error("Catalog returns the adapter's own slice")
	}
}

// checkShape checks that schema describes the JSON encoding of typ: the
// same properties, required exactly when not omitempty, of matching types,
// and closed objects.
func checkShape(t *testing.T, path string, s *jsonschema.Schema, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Struct:
		if s.Type != "object" || s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil {
			t.Errorf("%s: schema %q, want a closed object for %s", path, s.Type, typ)
			return
		}
		fields := jsonFields(typ)
		for name, f := range fields {
			ps, ok := s.Properties[name]
			if !ok {
				t.Errorf("%s.%s: in %s, not in the schema", path, name, typ)
				continue
			}
			if required := slices.Contains(s.Required, name); required == f.omitempty {
				t.Errorf("%s.%s: required %v in the schema, omitempty %v in %s", path, name, required, f.omitempty, typ)
			}
			checkShape(t, path+"."+name, ps, f.typ)
		}
		for name := range s.Properties {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s.%s: in the schema, not in %s", path, name, typ)
			}
		}
	case reflect.Slice:
		if s.Type != "array" || s.Items == nil {
			t.Errorf("%s: schema %q, want an array", path, s.Type)
			return
		}
		checkShape(t, path+"[]", s.Items, typ.Elem())
	case reflect.String:
		if s.Type != "string" {
			t.Errorf("%s: schema %q, want string", path, s.Type)
		}
	case reflect.Int, reflect.Int64:
		if s.Type != "integer" {
			t.Errorf("%s: schema %q, want integer", path, s.Type)
		}
	case reflect.Bool:
		if s.Type != "boolean" && (s.Const == nil || *s.Const != true) {
			t.Errorf("%s: schema %q, want boolean or const true", path, s.Type)
		}
	default:
		t.Errorf("%s: unexpected Go kind %s", path, typ.Kind())
	}
}

type jsonField struct {
	typ       reflect.Type
	omitempty bool
}

// jsonFields returns the JSON fields of a struct type, with those of
// embedded structs.
func jsonFields(typ reflect.Type) map[string]jsonField {
	out := make(map[string]jsonField)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out[name] = jsonField{typ: f.Type, omitempty: strings.Contains(opts, "omitempty")}
	}
	return out
}

func TestCatalogPriorityFollowsOptions(t *testing.T) {
	a, _ := newTestAdapter(t, func(o *Options) {
		o.PriorityLabels = map[string]mcpe.Priority{"Sev-A": mcpe.PriorityCritical, "nice to have": mcpe.PriorityLow}
	})
	byType := make(map[string]mcpe.EventType)
	for _, et := range a.Catalog() {
		byType[et.Type] = et
	}
	got := byType["github.issues.<action>"].Priority
	if !strings.Contains(got, "sev a -> critical; nice to have -> low") || strings.Contains(got, "p0") || !strings.Contains(got, "the issue") {
		t.Errorf("issues priority = %q; want the configured rule only", got)
	}
	if got := byType["github.workflow_run.<action>"].Priority; !strings.Contains(got, "failure") {
		t.Errorf("workflow_run priority = %q; want the failure rule", got)
	}
	if got := byType["github.push"].Priority; got != "normal" {
		t.Errorf("push priority = %q; want normal", got)
	}
	none, _ := newTestAdapter(t, func(o *Options) { o.PriorityLabels = map[string]mcpe.Priority{} })
	if got := none.Catalog()[0].Priority; got != "normal" {
		t.Errorf("with no label rule, issues priority = %q; want normal", got)
	}
}

// The table of the package documentation is DefaultPriorityLabels.
func TestDocListsDefaultPriorityLabels(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]mcpe.Priority)
	var current mcpe.Priority
	for _, line := range strings.Split(string(doc), "\n") {
		rest, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			continue
		}
		if p, labels, ok := strings.Cut(rest, "  "); ok && mcpe.Priority(p).Valid() {
			current, rest = mcpe.Priority(p), labels
		}
		for _, l := range strings.Split(rest, ",") {
			if l = strings.TrimSpace(l); l != "" {
				got[l] = current
			}
		}
	}
	if diff := cmp.Diff(DefaultPriorityLabels(), got); diff != "" {
		t.Errorf("doc.go's table and DefaultPriorityLabels differ (-code +doc):\n%s", diff)
	}
}

// TestPlaceholdersNameEveryEventMapped checks that <event>'s values, which
// bound what github.<event>.<action> stands for, hold every event a family
// of the catalog maps, once each, and not ping, which publishes nothing.
func TestPlaceholdersNameEveryEventMapped(t *testing.T) {
	events := Placeholders["<event>"]
	for _, f := range families {
		if !slices.Contains(events, f.event) && !strings.Contains(f.typ, "<event>") {
			t.Errorf("%s: its event %q is not among Placeholders[\"<event>\"]", f.typ, f.event)
		}
	}
	if slices.Contains(events, "ping") || len(slices.Compact(slices.Sorted(slices.Values(events)))) != len(events) {
		t.Errorf("Placeholders[\"<event>\"] holds ping or a name twice: %v", events)
	}
}
