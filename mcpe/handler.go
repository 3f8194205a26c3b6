package mcpe

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// HandlerType names a kind of handler, as in MCPE's "Event Handlers".
type HandlerType string

// The handler types of MCPE.
const (
	// HandlerBash runs a program the operator allowed.
	HandlerBash HandlerType = "bash"
	// HandlerWebhook POSTs each delivery, signed, to a URL.
	HandlerWebhook HandlerType = "webhook"
	// HandlerAgent asks an LLM to handle each delivery.
	HandlerAgent HandlerType = "agent"
)

// The input modes of a bash handler.
const (
	InputStdin = "stdin"
	InputEnv   = "env"
	InputArgs  = "args"
)

// Bounds on handler fields.
const (
	MaxHandlerArgs     = 64
	MaxHandlerArgBytes = 4096
	MaxHandlerHeaders  = 32
	MaxHandlerText     = 16 << 10
	MaxHandlerTools    = 32
	MaxHandlerTokens   = 64000
	// MinHandlerTimeout is the shortest timeout a handler may ask for, in
	// milliseconds: a smaller number was most likely meant as seconds.
	MinHandlerTimeout = 100
	// MaxStatusOutput bounds HandlerStatus.LastOutput, in bytes: a store
	// keeps at most this much of a run's Outcome.Output, cut on a UTF-8
	// boundary and marked as cut. An agent's whole answer fits.
	MaxStatusOutput = 8 << 10
	// MaxHandlerBytes bounds a whole handler, as JSON: what one
	// subscription's handler may make the server store.
	MaxHandlerBytes = 32 << 10
)

// HandlerSpec is a subscription's handler, as in MCPE: one object whose type
// says which of the other fields apply. It runs for every delivery of the
// subscription, besides the delivery to the owner: per event for realtime,
// per digest for cron and scheduled.
type HandlerSpec struct {
	Type HandlerType `json:"type"`

	// Command names a command the operator allowed (bash).
	Command string `json:"command,omitempty"`
	// Args are passed as argv, with $MCPE_* placeholders filled in (bash).
	Args []string `json:"args,omitempty"`
	// Input is how the program gets the event: "stdin" (the default),
	// "env" or "args" (bash).
	Input string `json:"input,omitempty"`
	// Cwd and Env are MCPE fields this server refuses: a program runs in a
	// fresh directory with the environment the operator set.
	Cwd string            `json:"cwd,omitempty"`
	Env map[string]string `json:"env,omitempty"`

	// URL receives the deliveries (webhook).
	URL string `json:"url,omitempty"`
	// Headers are sent with each delivery; ${NAME} is filled from the
	// operator's secrets (webhook).
	Headers map[string]string `json:"headers,omitempty"`
	// Secret is the signing secret in whsec_ form (webhook). It is shown
	// once, in the answer of the call that created or rotated it.
	Secret string `json:"secret,omitempty"`

	// SystemPrompt, Model, Instructions, Tools and MaxTokens configure the
	// LLM (agent).
	SystemPrompt string   `json:"systemPrompt,omitempty"`
	Model        string   `json:"model,omitempty"`
	Instructions string   `json:"instructions,omitempty"`
	Tools        []string `json:"tools,omitempty"`
	MaxTokens    int      `json:"maxTokens,omitempty"`

	// Timeout bounds one run, in milliseconds (bash, webhook); zero takes
	// the operator's default.
	Timeout int `json:"timeout,omitempty"`
}

// Clone returns a deep copy of h.
func (h *HandlerSpec) Clone() *HandlerSpec {
	if h == nil {
		return nil
	}
	c := *h
	c.Args, c.Tools = slices.Clone(h.Args), slices.Clone(h.Tools)
	c.Env, c.Headers = maps.Clone(h.Env), maps.Clone(h.Headers)
	return &c
}

// Validate checks the shape of h against the handler types a server runs: a
// known type, its required fields, no field of another type, and the bounds
// above. What the operator allows (commands, URLs) is checked by the
// handler itself.
func (h *HandlerSpec) Validate(types []HandlerType) error {
	list := quoteAll(types)
	if len(types) == 0 {
		return Invalid("handler", "this server runs no handlers (the operator enabled none); leave handler out")
	}
	if !slices.Contains(types, h.Type) {
		if h.Type == "" {
			return Invalid("handler.type", "is required; use one of %s", list)
		}
		return Invalid("handler.type", "%q is not a handler type this server runs; use one of %s", h.Type, list)
	}
	type field struct {
		name string
		set  bool
		of   HandlerType
	}
	fields := []field{
		{"command", h.Command != "", HandlerBash},
		{"args", h.Args != nil, HandlerBash},
		{"input", h.Input != "", HandlerBash},
		{"url", h.URL != "", HandlerWebhook},
		{"headers", h.Headers != nil, HandlerWebhook},
		{"secret", h.Secret != "", ""},
		{"systemPrompt", h.SystemPrompt != "", HandlerAgent},
		{"model", h.Model != "", HandlerAgent},
		{"instructions", h.Instructions != "", HandlerAgent},
		{"tools", h.Tools != nil, HandlerAgent},
		{"maxTokens", h.MaxTokens != 0, HandlerAgent},
	}
	for _, f := range fields {
		if !f.set || f.of == h.Type {
			continue
		}
		if f.of == "" {
			return Invalid("handler."+f.name, "is chosen by the server and returned once; leave it out")
		}
		return Invalid("handler."+f.name, "belongs to %q handlers, not %q; leave it out", f.of, h.Type)
	}
	switch {
	case h.Cwd != "":
		return Invalid("handler.cwd", "cannot be chosen: every run gets a fresh, empty working directory; leave it out")
	case h.Env != nil:
		return Invalid("handler.env", "cannot be chosen: a program gets only the MCPE_* variables, PATH and what the operator configured; leave it out")
	case h.Timeout != 0 && h.Type == HandlerAgent:
		return Invalid("handler.timeout", "does not apply to agent handlers, which the operator bounds; leave it out")
	case h.Timeout != 0 && h.Timeout < MinHandlerTimeout:
		return Invalid("handler.timeout", "is %d; it is in milliseconds and must be at least %d (e.g. 30000 for 30 seconds), or left out for the operator's default", h.Timeout, MinHandlerTimeout)
	}
	switch h.Type {
	case HandlerBash:
		if h.Command == "" {
			return Invalid("handler.command", "is required: the name of a command the operator allowed")
		}
		if len(h.Args) > MaxHandlerArgs {
			return Invalid("handler.args", "has %d entries; at most %d are accepted", len(h.Args), MaxHandlerArgs)
		}
		for i, a := range h.Args {
			if len(a) > MaxHandlerArgBytes || strings.ContainsRune(a, 0) {
				return Invalid(fmt.Sprintf("handler.args[%d]", i), "must be at most %d bytes with no NUL character", MaxHandlerArgBytes)
			}
		}
		if !slices.Contains([]string{"", InputStdin, InputEnv, InputArgs}, h.Input) {
			return Invalid("handler.input", "%q is not an input mode; use \"stdin\" (the event JSON on standard input, the default), \"env\" (MCPE_* variables) or \"args\" (the event JSON as the last argument)", h.Input)
		}
	case HandlerWebhook:
		if h.URL == "" {
			return Invalid("handler.url", "is required, e.g. \"https://hooks.example.com/mcpe\"")
		}
		if len(h.URL) > 2048 {
			return Invalid("handler.url", "is %d bytes long; at most 2048 are accepted", len(h.URL))
		}
		if len(h.Headers) > MaxHandlerHeaders {
			return Invalid("handler.headers", "has %d entries; at most %d are accepted", len(h.Headers), MaxHandlerHeaders)
		}
	case HandlerAgent:
		for _, f := range []struct{ name, v string }{{"systemPrompt", h.SystemPrompt}, {"instructions", h.Instructions}, {"model", h.Model}} {
			if len(f.v) > MaxHandlerText {
				return Invalid("handler."+f.name, "is %d bytes long; at most %d are accepted", len(f.v), MaxHandlerText)
			}
		}
		if len(h.Tools) > MaxHandlerTools {
			return Invalid("handler.tools", "has %d entries; at most %d are accepted", len(h.Tools), MaxHandlerTools)
		}
		for i, t := range h.Tools {
			if slices.Index(h.Tools, t) != i {
				return Invalid(fmt.Sprintf("handler.tools[%d]", i), "%q is listed twice", t)
			}
		}
		if h.MaxTokens < 0 || h.MaxTokens > MaxHandlerTokens {
			return Invalid("handler.maxTokens", "is %d; give a number from 1 to %d, or leave it out for the operator's default", h.MaxTokens, MaxHandlerTokens)
		}
	}
	if b, err := json.Marshal(h); err != nil || len(b) > MaxHandlerBytes {
		return Invalid("handler", "is %d bytes as JSON; at most %d are accepted", len(b), MaxHandlerBytes)
	}
	return nil
}

// HandlerStatus is what a subscription's handler has done, as events_list
// shows it.
type HandlerStatus struct {
	// Succeeded and Failed count finished deliveries; Pending counts those
	// waiting for a first attempt or a retry.
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Pending   int64 `json:"pending"`
	// LastRunAt is when the latest attempt ended.
	LastRunAt *time.Time `json:"lastRunAt,omitempty"`
	// LastError is the error of the latest failed attempt.
	LastError string `json:"lastError,omitempty"`
	// LastOutput and LastToolCalls are those of the latest attempt; the
	// output is cut at MaxStatusOutput bytes.
	LastOutput    string   `json:"lastOutput,omitempty"`
	LastToolCalls []string `json:"lastToolCalls,omitempty"`
	// Disabled says why the handler stopped running, when it did.
	Disabled string `json:"disabled,omitempty"`
}
