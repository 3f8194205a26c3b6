package config

import (
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// Conversation configures conversation events: what the answer to a
// host's conversation/userMessage injects into the prompt.
type Conversation struct {
	// Context is what the answer holds for principals not listed in
	// Principals: "off" (nothing), "summary" (one line per unread event,
	// without data) or "full" (with data). Default summary.
	Context string `yaml:"context"`
	// Principals set the context of some principals ("local" is stdio's).
	Principals map[string]ConversationPrincipal `yaml:"principals"`
}

// ConversationPrincipal is the conversation setting of one principal.
type ConversationPrincipal struct {
	Context string `yaml:"context"`
}

// Options returns the server's options for the section.
func (c Conversation) Options() mcpserver.ConversationOptions {
	o := mcpserver.ConversationOptions{Context: mcpserver.ContextMode(c.Context)}
	if len(c.Principals) > 0 {
		o.Principals = make(map[string]mcpserver.ContextMode, len(c.Principals))
		for p, pc := range c.Principals {
			o.Principals[p] = mcpserver.ContextMode(pc.Context)
		}
	}
	return o
}
