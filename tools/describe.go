package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// describer builds the tools' schemas and descriptions from what the server
// supports, so that they never advertise an option that does not work.
type describer struct {
	caps      mcpe.Capability
	retention subscriptions.Retention
	// commands are the bash handler's allowed commands; tools the tools an
	// agent handler may use.
	commands, tools []string
	// catalog is true when events_catalog is offered.
	catalog bool
}

func (d describer) offers(t mcpe.HandlerType) bool { return slices.Contains(d.caps.Handlers, t) }

// enum returns values as a schema's enum; nil when there are none.
func enum[T ~string](values []T) []any {
	var out []any
	for _, v := range values {
		out = append(out, string(v))
	}
	return out
}

// handlerSchema is the handler object: one shape per handler type offered.
func (d describer) handlerSchema() *jsonschema.Schema {
	typ := func(t mcpe.HandlerType) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Const: ptr(any(string(t)))}
	}
	timeout := func() *jsonschema.Schema {
		return &jsonschema.Schema{Type: "integer", Minimum: ptr(float64(mcpe.MinHandlerTimeout)),
			Description: "Time limit of a run in milliseconds, e.g. 30000; the operator sets default and ceiling."}
	}
	var shapes []*jsonschema.Schema
	var text []string
	offer := func(title, what string, s *jsonschema.Schema) {
		s.Title = title
		shapes = append(shapes, s)
		text = append(text, what)
	}
	if d.offers(mcpe.HandlerBash) {
		command := &jsonschema.Schema{Type: "string", Description: "A command the operator allowed.", Enum: enum(d.commands)}
		s := object(map[string]*jsonschema.Schema{
			"type":    typ(mcpe.HandlerBash),
			"command": command,
			"args": {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MaxItems: ptr(mcpe.MaxHandlerArgs),
				Description: "Passed as is, no shell. Replaced: $MCPE_SUBSCRIPTION_ID, $MCPE_DELIVERY (event or batch); per event $MCPE_EVENT_ID, $MCPE_EVENT_TYPE, $MCPE_EVENT_PRIORITY, $MCPE_EVENT_TIMESTAMP, $MCPE_EVENT_TAGS, $MCPE_EVENT_DATA; per digest $MCPE_EVENTS, $MCPE_EVENT_COUNT, $MCPE_REMAINING; also as ${NAME}."},
			"input": {Type: "string", Enum: []any{mcpe.InputStdin, mcpe.InputEnv, mcpe.InputArgs}, Default: json.RawMessage(`"stdin"`),
				Description: "Where the event JSON goes: standard input, MCPE_* variables (env), or the last argument."},
			"timeout": timeout(),
		}, []string{"type", "command", "args", "input", "timeout"}, "type", "command")
		offer("bash", "\"bash\" runs an allowed command", s)
	}
	if d.offers(mcpe.HandlerWebhook) {
		s := object(map[string]*jsonschema.Schema{
			"type":    typ(mcpe.HandlerWebhook),
			"url":     {Type: "string", Format: "uri", Description: "Gets each delivery as a JSON POST."},
			"headers": {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}, Description: "Extra headers; ${NAME} is one of the operator's secrets."},
			"timeout": timeout(),
		}, []string{"type", "url", "headers", "timeout"}, "type", "url")
		offer("webhook", "\"webhook\" POSTs it, signed with a secret returned once as handler.secret", s)
	}
	if d.offers(mcpe.HandlerAgent) {
		tools := &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string", Enum: enum(d.tools)}, MaxItems: ptr(mcpe.MaxHandlerTools),
			Description: "Tools of this server the LLM may call."}
		s := object(map[string]*jsonschema.Schema{
			"type":         typ(mcpe.HandlerAgent),
			"systemPrompt": {Type: "string", MaxLength: ptr(mcpe.MaxHandlerText), Description: "What the LLM is for."},
			"instructions": {Type: "string", MaxLength: ptr(mcpe.MaxHandlerText), Description: "What to do with this kind of event."},
			"model":        {Type: "string", Description: "Preferred model, a hint."},
			"tools":        tools,
			"maxTokens":    {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(mcpe.MaxHandlerTokens)), Description: "Most tokens per answer."},
		}, []string{"type", "systemPrompt", "instructions", "model", "tools", "maxTokens"}, "type")
		offer("agent", "\"agent\" has an LLM handle it, the event given as untrusted data", s)
	}
	return &jsonschema.Schema{OneOf: shapes, Description: "Something the server does with each delivery (event or digest) while you are away: " +
		strings.Join(text, "; ") + ". Its runs show in events_list (handlerStatus)."}
}

// examples holds one valid argument object per tool; descriptions quote it and
// argument errors point at it. A test checks each against its schema.
var examples = map[string]string{
	mcpe.ToolSubscribe:   `{"label": "new issues", "filter": {"eventTypes": ["github.issues.opened"]}, "delivery": {"channels": ["realtime"], "fields": ["issue.title", "issue.html_url"]}}`,
	mcpe.ToolUnsubscribe: `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60"}`,
	mcpe.ToolList:        `{"status": "active"}`,
	mcpe.ToolPause:       `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60"}`,
	mcpe.ToolResume:      `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60"}`,
	mcpe.ToolUpdate:      `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60", "label": "all issues", "expiresAt": null}`,
	mcpe.ToolPoll:        `{"limit": 20}`,
	mcpe.ToolCatalog:     `{"pattern": "github.*"}`,

	webhookExample: `{"filter": {"eventTypes": ["deploy.*"]}, "handler": {"type": "webhook", "url": "https://hooks.example.com/mcpe"}}`,
	agentExample:   `{"filter": {"eventTypes": ["slack.message"]}, "handler": {"type": "agent", "systemPrompt": "Summarize the message and say whether it needs action."}}`,
}

// The handler examples of events_subscribe.
const (
	webhookExample = mcpe.ToolSubscribe + " webhook"
	agentExample   = mcpe.ToolSubscribe + " agent"
)

func object(props map[string]*jsonschema.Schema, order []string, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           props,
		PropertyOrder:        order,
		Required:             required,
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func ptr[T any](v T) *T { return &v }

func idSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Format: "uuid"} }

// refTool is a tool whose only argument is a subscription ID.
func refTool(name, title, description string, annotations *mcp.ToolAnnotations) *mcp.Tool {
	input := object(map[string]*jsonschema.Schema{"subscriptionId": idSchema()}, nil, "subscriptionId")
	return &mcp.Tool{Name: name, Title: title, Description: description, InputSchema: input, Annotations: annotations}
}

// like is a property of events_update that takes what events_subscribe's
// property of that name takes (the tool's description says so); decode
// errors explain it from there.
func like(text string, types ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Types: types, Description: text}
}

func (d describer) filterSchema() *jsonschema.Schema {
	list := func(items *jsonschema.Schema, max *int, text string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", Items: items, MinItems: ptr(1), MaxItems: max, Description: text}
	}
	s := object(map[string]*jsonschema.Schema{
		"eventTypes": list(&jsonschema.Schema{Type: "string"}, ptr(mcpe.MaxFilterPatterns), "Any may match. "+mcpe.PatternHelp),
		"tags":       list(&jsonschema.Schema{Type: "string"}, ptr(mcpe.MaxTags), "Any of these tags."),
		"priority":   list(&jsonschema.Schema{Type: "string", Enum: enum(mcpe.Priorities)}, nil, "Any of these priorities."),
		"where":      {Type: "string", Description: "CEL on type, priority, tags, data: data.pr.merged == true"},
	}, []string{"eventTypes", "tags", "priority", "where"})
	s.Description = "Every part given must match."
	return s
}

func (d describer) deliverySchema() *jsonschema.Schema {
	text := "realtime: each event at once."
	props := map[string]*jsonschema.Schema{}
	order := []string{"channels"}
	if d.caps.Features.CronSchedule {
		text += " cron: a digest at each cronSchedule time."
		props["cronSchedule"] = d.cronSchema()
		order = append(order, "cronSchedule")
	}
	if d.caps.Features.ScheduledDelivery {
		text += " scheduled: one digest at scheduledDelivery.deliverAt."
		props["scheduledDelivery"] = d.scheduledSchema()
		order = append(order, "scheduledDelivery")
	}
	props["channels"] = &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string", Enum: enum(d.caps.DeliveryChannels)}, MinItems: ptr(1), Description: text}
	props["fields"] = &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}, MaxItems: ptr(mcpe.MaxFields),
		Description: "Data paths each event keeps. The whole event: events_poll {eventId}."}
	props["maxEventBytes"] = &jsonschema.Schema{Type: "integer", Minimum: ptr(float64(mcpe.MinEventBytes)), Maximum: ptr(float64(mcpe.MaxEventBytes)),
		Description: "Long strings and arrays cut to fit."}
	order = append(order, "fields", "maxEventBytes")
	props["throttle"] = &jsonschema.Schema{Type: "object", Description: `At most one realtime notification per window per group, the rest folded into one at its end: ` +
		`{"window": "1s" to "24h", "groupBy": "type", "priority", "tag:PREFIX" or "data.PATH"}.`}
	s := object(props, append(order, "throttle"), "channels")
	s.Description = "Default {\"channels\": [\"realtime\"]}."
	return s
}

// aggregate is the aggregateEvents option of both digest channels.
func aggregate() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Default: json.RawMessage("true"), Description: "false: each event as its own events/event."}
}

func (d describer) cronSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"expression":           {Type: "string", Description: "Five cron fields, e.g. \"0 9 * * 1-5\", or @hourly, @daily, @weekly, @monthly, \"@every 30m\"."},
		"timezone":             {Type: "string", Description: "IANA zone; default UTC."},
		"aggregateEvents":      aggregate(),
		"maxEventsPerDelivery": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(10000.0), Default: json.RawMessage("100"), Description: "Most per digest; more wait for the next."},
	}, []string{"expression", "timezone", "aggregateEvents", "maxEventsPerDelivery"}, "expression")
}

func (d describer) scheduledSchema() *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{
		"deliverAt":       {Type: "string", Description: "Future RFC 3339 time; without offset, read in timezone."},
		"timezone":        {Type: "string", Description: "IANA zone of deliverAt."},
		"description":     {Type: "string", MaxLength: ptr(500), Description: "Your label."},
		"aggregateEvents": aggregate(),
		"autoExpire":      {Type: "boolean", Default: json.RawMessage("true"), Description: "false: keep collecting until a new deliverAt."},
	}, []string{"deliverAt", "timezone", "description", "aggregateEvents", "autoExpire"}, "deliverAt")
}

// withHandler adds the handler property (and, for events_update,
// rotateSecret) to an input schema when handlers are offered.
func (d describer) withHandler(s *jsonschema.Schema, update bool) *jsonschema.Schema {
	if len(d.caps.Handlers) == 0 {
		return s
	}
	s.PropertyOrder = append(s.PropertyOrder, "handler")
	if !update {
		s.Properties["handler"] = d.handlerSchema()
		return s
	}
	s.Properties["handler"] = like("null removes it; set again, turns on a webhook that got 410 Gone.", "object", "null")
	if d.offers(mcpe.HandlerWebhook) {
		s.Properties["rotateSecret"] = &jsonschema.Schema{Type: "boolean", Description: "true: a new webhook secret, returned once in handler.secret."}
		s.PropertyOrder = append(s.PropertyOrder, "rotateSecret")
	}
	return s
}

func (d describer) subscribeTool() *mcp.Tool {
	description := fmt.Sprintf("Get events from outside (GitHub, Slack, alerts, deploys...) as events/event notifications; "+
		"they also wait for events_poll. At most %d subscriptions.", d.caps.MaxSubscriptions)
	if d.catalog {
		description += " events_catalog lists the event types."
	}
	if d.caps.Features.CronSchedule || d.caps.Features.ScheduledDelivery {
		description += " Digests come as events/batch."
	}
	description += "\n\nExample: " + examples[mcpe.ToolSubscribe]
	if ex := d.handlerExample(); ex != "" {
		description += "\n\nHandler example: " + ex
	}
	return &mcp.Tool{
		Name:        mcpe.ToolSubscribe,
		Title:       "Subscribe to events",
		Description: description,
		InputSchema: d.withHandler(object(map[string]*jsonschema.Schema{
			"label":    {Type: "string", MaxLength: ptr(mcpe.MaxLabelLength), Description: "Your name for it, sent with its events."},
			"filter":   d.filterSchema(),
			"delivery": d.deliverySchema(),
			"expiresAt": {Type: "string", Format: "date-time",
				Description: "A future RFC 3339 time; then events/subscription_expired."},
			"dryRun": {Type: "boolean", Description: "true: create nothing; preview filter on your last 24h of inbox."},
		}, []string{"label", "filter", "delivery", "expiresAt", "dryRun"}, "filter"), false),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}
}

func (d describer) unsubscribeTool() *mcp.Tool {
	return refTool(mcpe.ToolUnsubscribe, "Remove a subscription", "Delete a subscription; to stop for a while, use events_pause.",
		&mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)})
}

func (d describer) listTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        mcpe.ToolList,
		Title:       "List your subscriptions",
		Description: "List your subscriptions with their settings, status and counts.",
		InputSchema: object(map[string]*jsonschema.Schema{
			"status": {Type: "string", Enum: []any{"active", "paused", "expired"}, Description: "Only this status; default all."},
		}, nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) pauseTool() *mcp.Tool {
	return refTool(mcpe.ToolPause, "Pause a subscription", "Stop a subscription until events_resume; events meanwhile are skipped, not queued.",
		&mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)})
}

func (d describer) resumeTool() *mcp.Tool {
	return refTool(mcpe.ToolResume, "Resume a subscription", "Resume a paused subscription; events from the pause are not replayed. An expired one cannot be resumed.",
		&mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)})
}

func (d describer) updateTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolUpdate,
		Title: "Change a subscription",
		Description: "Change a subscription: each field given replaces the old, as events_subscribe takes it; the rest is kept. " +
			"A paused one stays paused; an expired one cannot change.\n\nExample: " + examples[mcpe.ToolUpdate],
		InputSchema: d.withHandler(object(map[string]*jsonschema.Schema{
			"subscriptionId": idSchema(),
			"label":          like(`"" removes it.`, "string"),
			"filter":         like("", "object"),
			"delivery":       like("Leaving cron or scheduled delivers what waits at once.", "object"),
			"expiresAt":      like("null removes it.", "string", "null"),
		}, []string{"subscriptionId", "label", "filter", "delivery", "expiresAt"}, "subscriptionId"), true),
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) pollTool() *mcp.Tool {
	keep := ""
	if r := d.retention; r.InboxMaxEntries > 0 && r.InboxMaxAge > 0 {
		keep = fmt.Sprintf(" The inbox keeps your latest %d items for up to %s.", r.InboxMaxEntries, humanDuration(r.InboxMaxAge))
	}
	return &mcp.Tool{
		Name:  mcpe.ToolPoll,
		Title: "Read delivered events",
		Description: fmt.Sprintf("Read what your subscriptions delivered, oldest first. "+
			"Use it when your host does not show notifications, or to catch up. Each call continues where the "+
			"last stopped; hasMore says to call again.%s", keep),
		InputSchema: object(map[string]*jsonschema.Schema{
			"cursor": {Type: "string", Description: "A nextCursor or notification cursor to read after."},
			"limit": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(mcpe.MaxPollLimit)),
				Description: fmt.Sprintf("Default %d.", mcpe.DefaultPollLimit)},
			"eventId": {Type: "string", Description: "Alone: that event, whole."},
		}, []string{"cursor", "limit", "eventId"}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) catalogTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolCatalog,
		Title: "What you can subscribe to",
		Description: "List the event types this server delivers, so that your filters match real events: with " +
			"pattern (as filter.eventTypes) the matching ones, described; with one type, its data's JSON Schema and " +
			"an example.\n\nExample: " + examples[mcpe.ToolCatalog],
		InputSchema: object(map[string]*jsonschema.Schema{"pattern": {Type: "string"}}, nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
}

// handlerExample is an events_subscribe example with a handler of the first
// type offered.
func (d describer) handlerExample() string {
	switch {
	case d.offers(mcpe.HandlerBash) && len(d.commands) > 0:
		return fmt.Sprintf(`{"filter": {"eventTypes": ["alert.*"], "priority": ["critical"]}, "handler": {"type": "bash", "command": %q, "args": ["Critical alert", "$MCPE_EVENT_TYPE"], "input": "env"}}`, d.commands[0])
	case d.offers(mcpe.HandlerWebhook):
		return examples[webhookExample]
	case d.offers(mcpe.HandlerAgent):
		return examples[agentExample]
	}
	return ""
}

// humanDuration writes d in whole days or hours when it is one.
func humanDuration(d time.Duration) string {
	count := func(n time.Duration, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	switch {
	case d%(24*time.Hour) == 0:
		return count(d/(24*time.Hour), "day")
	case d%time.Hour == 0:
		return count(d/time.Hour, "hour")
	}
	return d.String()
}
