package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// decodeArgs decodes tool arguments into in with mcpe.DecodeStrict: absent
// or null arguments are an empty object, and an unknown field is answered
// with what the tool's input schema accepts there, or the others' schemas
// at the same path (events_update's filter is events_subscribe's).
func decodeArgs(raw json.RawMessage, in any, t *mcp.Tool, others ...*mcp.Tool) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	return mcpe.DecodeStrict(raw, in, &mcpe.DecodeOptions{
		Subject: "the arguments",
		Plural:  true,
		Example: examples[t.Name],
		Accepts: func(path string) string {
			if path == "" {
				return acceptedFields(t)
			}
			return acceptedAt(append([]*mcp.Tool{t}, others...), path)
		},
	})
}

// acceptedFields lists the top-level properties of the tool's input schema.
func acceptedFields(t *mcp.Tool) string {
	s, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok || len(s.Properties) == 0 {
		return fmt.Sprintf("none: %s takes no arguments", t.Name)
	}
	return fieldNames([]*jsonschema.Schema{s}) + fmt.Sprintf(" (see the input schema of %s; nested objects accept only the fields listed there)", t.Name)
}

// acceptedAt lists the properties the input schemas of tools allow in the
// object at path (a dotted path; array indexes are skipped), or "" when
// they list none: then DecodeStrict names the fields of the Go type.
func acceptedAt(tools []*mcp.Tool, path string) string {
	var schemas []*jsonschema.Schema
	for _, t := range tools {
		if s, ok := t.InputSchema.(*jsonschema.Schema); ok {
			schemas = append(schemas, s)
		}
	}
	for _, seg := range strings.Split(path, ".") {
		name, _, _ := strings.Cut(seg, "[")
		var next []*jsonschema.Schema
		for _, s := range expand(schemas) {
			if p := s.Properties[name]; p != nil {
				next = append(next, p)
			}
		}
		schemas = next
		if strings.Contains(seg, "[") {
			var items []*jsonschema.Schema
			for _, s := range expand(schemas) {
				if s.Items != nil {
					items = append(items, s.Items)
				}
			}
			schemas = items
		}
	}
	return fieldNames(expand(schemas))
}

// fieldNames lists the properties of schemas, quoted, sorted and each once.
func fieldNames(schemas []*jsonschema.Schema) string {
	var names []string
	for _, s := range schemas {
		for name := range s.Properties {
			names = append(names, fmt.Sprintf("%q", name))
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ", ")
}

// expand replaces each schema by the alternatives of its oneOf or anyOf,
// if it has some.
func expand(schemas []*jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range schemas {
		switch {
		case len(s.OneOf) > 0:
			out = append(out, s.OneOf...)
		case len(s.AnyOf) > 0:
			out = append(out, s.AnyOf...)
		default:
			out = append(out, s)
		}
	}
	return out
}
