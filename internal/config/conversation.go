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
	// MaxEvents bounds the events of one answer. Default 20, at most 500.
	MaxEvents int `yaml:"maxEvents"`
	// MaxBytes bounds the text of one answer. Default 16384, from 1024 to
	// 262144.
	MaxBytes int `yaml:"maxBytes"`
	// Principals set the context of some principals ("local" is stdio's).
	Principals map[string]ConversationPrincipal `yaml:"principals"`
}

// ConversationPrincipal is the conversation setting of one principal.
type ConversationPrincipal struct {
	Context string `yaml:"context"`
}

// Options returns the server's options for the section.
func (c Conversation) Options() mcpserver.ConversationOptions {
	o := mcpserver.ConversationOptions{
		Context:   mcpserver.ContextMode(c.Context),
		MaxEvents: c.MaxEvents,
		MaxBytes:  c.MaxBytes,
	}
	if len(c.Principals) > 0 {
		o.Principals = make(map[string]mcpserver.ContextMode, len(c.Principals))
		for p, pc := range c.Principals {
			o.Principals[p] = mcpserver.ContextMode(pc.Context)
		}
	}
	return o
}
