package config

import (
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// maxKeys bounds the configuration's surface: its keys counted as issue 30
// counts them, one per yaml tag of a struct field (an inlined struct's tag
// aside), so that a name two sections take counts twice (issue 30 cut 105
// to at most 70). A knob an operator has no reason to set is a constant, or
// derives from a key that is here; a section with one key is flattened.
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
	_, keys := keyNames()
	if len(keys) > maxKeys {
		list := slices.Sorted(maps.Keys(keys))
		t.Errorf("the configuration has %d keys (yaml tags in internal/config); at most %d are allowed: %s", len(keys), maxKeys, strings.Join(list, ", "))
	}
	t.Logf("%d keys", len(keys))
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
  minEvery: 1s
debug: {pprofAddr: "127.0.0.1:6060"}
inbox:
  maxEntries: -1
handlers:
  bash:
    commands:
      x: {path: /bin/true, readOnlyRoot: false, limits: {openFiles: 10}}
`))
	for _, want := range []string{
		"6 problems",
		"line 4: http.sessionTimeout: this key was removed: sessions idle for 5m are closed; delete it",
		"line 5: delivery: this key moved: write minEvery and heartbeatInterval under subscriptions",
		"line 8: debug: this key was removed: give --pprof ADDR on the command line",
		"line 14: handlers.bash.commands.x.readOnlyRoot: this key was removed: the file system is read-only in the sandbox; list what the program writes in writablePaths",
		"line 14: handlers.bash.commands.x.limits: this key moved: write memoryBytes on the command itself",
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

// TestMovedKeys: a key of an earlier version that this one takes elsewhere
// (issue 30 flattened sections of one key and one-field structs) is refused
// with every other problem of the file, a line each, saying where it went.
func TestMovedKeys(t *testing.T) {
	_, err := Parse(strings.NewReader(`
ingest:
  tokens: [{token: x}]
console:
  adminTokenEnv: MCPE_CONSOLE_ADMIN_TOKEN
  adminToken: a-long-admin-token-123
adapters:
  github:
    secret: {tokenEnv: GITHUB_WEBHOOK_SECRET}
handlers:
  agent:
    enabled: true
    endpoint: {url: "https://llm.example.com/v1/chat/completions", model: m, apiKey: {token: k}}
conversation:
  principals:
    alice: {context: full}
log:
  format: xml
`))
	for _, want := range []string{
		"8 problems", // the seven, and adapters.github's missing secret
		"line 2: ingest: this key moved: write its tokens as auth.ingestTokens",
		"line 5: console.adminTokenEnv: this key moved: write console.tokenEnv",
		"line 6: console.adminToken: this key moved: write console.token",
		"line 9: adapters.github.secret: this key moved: write the secret as adapters.github.token or tokenEnv",
		"line 13: handlers.agent.endpoint: this key moved: write url and model on handlers.agent itself, and apiKey as its token or tokenEnv",
		"line 16: conversation.principals.alice: this form moved: write the mode itself, e.g. alice: full",
		`log.format "xml"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse = %v; want an error containing %q", err, want)
		}
	}
	// What the old keys say to write is accepted.
	t.Setenv("MCPE_TEST_ADMIN", "a-long-admin-token-123")
	c, err := Parse(strings.NewReader(`
auth:
  ingestTokens: [{token: x}]
subscriptions: {minEvery: 1s, heartbeatInterval: 1s}
console: {tokenEnv: MCPE_TEST_ADMIN}
adapters:
  github: {token: s}
handlers:
  bash:
    commands:
      x: {path: /bin/true, memoryBytes: 1024}
  agent: {enabled: true, url: "https://llm.example.com/v1/chat/completions", model: m, token: k}
conversation:
  principals: {alice: full}
`))
	if err != nil {
		t.Fatalf("Parse of the keys written as the messages say: %v", err)
	}
	if admin, _ := c.ConsoleAdminToken(); admin != "a-long-admin-token-123" || c.Handlers.Agent.Token != "k" ||
		c.Conversation.Principals["alice"] != "full" || c.Handlers.Bash.Commands["x"].MemoryBytes != 1024 {
		t.Errorf("parsed %+v", c)
	}
}
