package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file turns the YAML decoder's "field X not found in type config.T"
// into what a user can act on: the key's path, the closest valid keys, and
// the keys its parent takes.

var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)

// explainDecodeError rewrites the unknown-key messages of te, from decoding
// body, and joins its messages.
func explainDecodeError(te *yaml.TypeError, body []byte) error {
	var root yaml.Node
	if yaml.Unmarshal(body, &root) != nil {
		return fmt.Errorf("%s", strings.Join(te.Errors, "\n  "))
	}
	types := goTypes()
	lines := make([]string, len(te.Errors))
	for i, msg := range te.Errors {
		lines[i] = msg
		m := unknownField.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		parent, found := parentOfKey(&root, line, m[2], "")
		t, known := types[m[3]]
		if !found || !known {
			continue
		}
		lines[i] = describeUnknown(line, parent, m[2], yamlKeys(t))
	}
	if len(lines) == 1 {
		return fmt.Errorf("%s", lines[0])
	}
	return fmt.Errorf("%d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// describeUnknown says that key, under parent, is not one of keys.
func describeUnknown(line int, parent, key string, keys []string) string {
	path := key
	where := "at the top level"
	if parent != "" {
		path, where = parent+"."+key, "under "+parent
	}
	msg := fmt.Sprintf("line %d: %s: unknown key", line, path)
	if near := closest(key, keys); len(near) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(quoteAll(near), " or "))
	} else {
		msg += "."
	}
	return msg + fmt.Sprintf(" The keys %s are: %s.", where, strings.Join(keys, ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// closest returns the keys nearest to key: a case-insensitive match, or
// those within an edit distance of a third of key's length (at least 1,
// at most 3).
func closest(key string, keys []string) []string {
	for _, k := range keys {
		if strings.EqualFold(k, key) {
			return []string{k}
		}
	}
	limit := min(max(len(key)/3, 1), 3)
	best, out := limit+1, []string(nil)
	for _, k := range keys {
		switch d := editDistance(strings.ToLower(key), strings.ToLower(k)); {
		case d < best:
			best, out = d, []string{k}
		case d == best:
			out = append(out, k)
		}
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parentOfKey finds the key named name on line in n and returns the dotted
// path of the mapping that holds it.
func parentOfKey(n *yaml.Node, line int, name, prefix string) (string, bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, ok := parentOfKey(c, line, name, prefix); ok {
				return p, true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Line == line && k.Value == name {
				return prefix, true
			}
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if p, ok := parentOfKey(v, line, name, path); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p, ok := parentOfKey(c, line, name, fmt.Sprintf("%s[%d]", prefix, i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// goTypes maps the names the decoder gives the configuration's struct types
// ("config.HTTP") to the types.
func goTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		name := t.String()
		if _, seen := out[name]; seen {
			return
		}
		out[name] = t
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	return out
}

// yamlKeys lists the keys a struct type takes, in order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(f.Type)...)
		case name != "":
			keys = append(keys, name)
		}
	}
	return slices.Compact(keys)
}
