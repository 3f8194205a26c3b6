package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// maxKeys bounds the configuration's surface: the distinct key names of the
// file (issue 30 cut 105 to at most 70). A knob an operator has no reason
// to set is a constant, or derives from a key that is here.
const maxKeys = 70

// keyNames returns the distinct key names of the file, and every key as
// "Type.key" with the type that declares it.
func keyNames() (names []string, keys map[string]bool) {
	keys = map[string]bool{}
	for _, t := range goTypes() {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.IsExported() && name != "" && !strings.Contains(opts, "inline") {
				names = append(names, name)
				keys[t.Name()+"."+name] = true
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), keys
}

func TestKeyCount(t *testing.T) {
	names, _ := keyNames()
	if len(names) > maxKeys {
		t.Errorf("the configuration has %d distinct keys; at most %d are allowed: %s", len(names), maxKeys, strings.Join(names, ", "))
	}
	t.Logf("%d distinct keys", len(names))
}

// TestRemovedKeys: a key that earlier versions took is refused, with every
// other problem of the file, saying that it was removed and what the server
// does now; and no removed key is still a key.
func TestRemovedKeys(t *testing.T) {
	_, keys := keyNames()
	types := goTypes()
	for k := range removed {
		typ, _, _ := strings.Cut(k, ".")
		if keys[k] || types["config."+typ] == nil {
			t.Errorf("removed[%q]: the key exists, or its type %s does not", k, typ)
		}
	}
	_, err := Parse(strings.NewReader(`
http:
  addr: 127.0.0.1:8765
  sessionTimeout: 5m
delivery:
  window: 1024
  backlog: {onFull: skip}
debug: {pprofAddr: "127.0.0.1:6060"}
inbox:
  maxEntries: -1
handlers:
  bash:
    commands:
      x: {path: /bin/true, readOnlyRoot: false, limits: {openFiles: 10}}
`))
	for _, want := range []string{
		"7 problems",
		"line 4: http.sessionTimeout: this key was removed: sessions idle for 5m are closed; delete it",
		"line 6: delivery.window: this key was removed: a principal's latest 1024 deliveries are kept in memory",
		"line 7: delivery.backlog: this key was removed: a live session may be owed 100000 deliveries",
		"line 8: debug: this key was removed: give --pprof ADDR on the command line",
		"line 14: handlers.bash.commands.x.readOnlyRoot: this key was removed: the file system is read-only in the sandbox; list what the program writes in writablePaths",
		"line 14: handlers.bash.commands.x.limits.openFiles: this key was removed",
		"inbox.maxEntries must be positive",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v; want an error containing %q", err, want)
		}
	}
}

// TestEveryProblemAtOnce: unknown keys, bad values and what checking finds
// are reported together, a line each.
func TestEveryProblemAtOnce(t *testing.T) {
	c, err := Parse(strings.NewReader(`
http:
  adr: 127.0.0.1:1
inbox:
  maxAge: soon
  maxEntries: -5
log:
  format: xml
`))
	for _, want := range []string{"4 problems:\n", "line 3: http.adr: unknown key", "line 5: inbox.maxAge: \"soon\" is not a duration", "inbox.maxEntries must be positive", `log.format "xml"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v; want an error containing %q", err, want)
		}
	}
	if c == nil || c.Log.Format != "xml" {
		t.Errorf("Parse returned %+v with its problems; want the configuration as far as it was read", c)
	}
}

// TestDocsListEveryKey: docs/configuration.md, the reference, shows every
// key of the file in its yaml blocks (TestDocsConfiguration checks that
// what it shows is accepted).
func TestDocsListEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(b[1]), &n); err != nil {
			t.Fatalf("a yaml block: %v", err)
		}
		shownKeys(&n, reflect.TypeFor[Config](), shown)
	}
	_, keys := keyNames()
	var missing []string
	for k := range keys {
		if !shown[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/configuration.md shows no example of %s", strings.Join(missing, ", "))
	}
}

// shownKeys adds the keys of n, a value of type t, to shown as "Type.key".
func shownKeys(n *yaml.Node, t reflect.Type, shown map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			shownKeys(c, t, shown)
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for _, c := range n.Content {
			shownKeys(c, t.Elem(), shown)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 1; i < len(n.Content); i += 2 {
			shownKeys(n.Content[i], t.Elem(), shown)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if owner, f, ok := fieldByKey(t, n.Content[i].Value); ok {
				shown[owner.Name()+"."+n.Content[i].Value] = true
				shownKeys(n.Content[i+1], f.Type, shown)
			}
		}
	}
}

// fieldByKey finds the field of struct t that key names, and the struct
// that declares it (t, or a struct inlined in it).
func fieldByKey(t reflect.Type, key string) (reflect.Type, reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			if owner, g, ok := fieldByKey(f.Type, key); ok {
				return owner, g, true
			}
		} else if name == key {
			return t, f, true
		}
	}
	return nil, reflect.StructField{}, false
}
