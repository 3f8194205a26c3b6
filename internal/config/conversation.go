package config

import (
	"fmt"

	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"go.yaml.in/yaml/v3"
)

// Conversation configures conversation events: what the answer to a
// host's conversation/userMessage injects into the prompt.
type Conversation struct {
	// Context is what the answer holds for principals not listed in
	// Principals: "off" (nothing), "summary" (one line per unread event,
	// without data) or "full" (with data). Default summary.
	Context string `yaml:"context"`
	// Principals set the context of some principals ("local" is stdio's).
	Principals map[string]ContextMode `yaml:"principals"`
}

// ContextMode is the context of one principal, written as the mode itself.
type ContextMode string

// UnmarshalYAML reads the mode, and refuses the {context: MODE} that
// earlier versions took with a message saying what to write (a TypeError,
// as Duration's is).
func (m *ContextMode) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d column %d: this form moved: write the mode itself, e.g. alice: full, not alice: {context: full}", n.Line, n.Column)}}
	}
	return n.Decode((*string)(m))
}

// Options returns the server's options for the section.
func (c Conversation) Options() mcpserver.ConversationOptions {
	return mcpserver.ConversationOptions{
		Context:    mcpserver.ContextMode(c.Context),
		Principals: mapValues(c.Principals, func(m ContextMode) mcpserver.ContextMode { return mcpserver.ContextMode(m) }),
	}
}
