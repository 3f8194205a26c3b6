package tools

import (
	"encoding/json"
	"fmt"
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

func newDescriber(caps mcpe.Capability, r subscriptions.Retention, commands, tools []string) describer {
	return describer{caps: caps, retention: r, commands: commands, tools: tools}
}

func (d describer) offers(t mcpe.HandlerType) bool {
	for _, h := range d.caps.Handlers {
		if h == t {
			return true
		}
	}
	return false
}

// handlerSchema is the handler object: one shape per handler type offered.
func (d describer) handlerSchema(nullable bool) *jsonschema.Schema {
	typ := func(t mcpe.HandlerType) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Const: ptr(any(string(t)))}
	}
	timeout := func() *jsonschema.Schema {
		return &jsonschema.Schema{Type: "integer", Minimum: ptr(float64(mcpe.MinHandlerTimeout)),
			Description: "Longest a run may take, in milliseconds (e.g. 30000); default and ceiling are the operator's."}
	}
	var shapes []*jsonschema.Schema
	var text []string
	if d.offers(mcpe.HandlerBash) {
		command := &jsonschema.Schema{Type: "string", Description: "Name of a command the operator allowed."}
		if len(d.commands) > 0 {
			command.Enum = make([]any, len(d.commands))
			for i, c := range d.commands {
				command.Enum[i] = c
			}
		}
		s := object(map[string]*jsonschema.Schema{
			"type":    typ(mcpe.HandlerBash),
			"command": command,
			"args": {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MaxItems: ptr(mcpe.MaxHandlerArgs),
				Description: "Arguments, passed as they are (no shell): only $MCPE_SUBSCRIPTION_ID and $MCPE_DELIVERY (event or batch); for an event $MCPE_EVENT_ID, $MCPE_EVENT_TYPE, $MCPE_EVENT_PRIORITY, $MCPE_EVENT_TIMESTAMP, $MCPE_EVENT_TAGS, $MCPE_EVENT_DATA; for a digest $MCPE_EVENTS, $MCPE_EVENT_COUNT, $MCPE_REMAINING (also written ${NAME}) are replaced."},
			"input": {Type: "string", Enum: []any{mcpe.InputStdin, mcpe.InputEnv, mcpe.InputArgs}, Default: json.RawMessage(`"stdin"`),
				Description: "stdin: the event JSON on standard input. env: MCPE_* environment variables. args: the event JSON as the last argument."},
			"timeout": timeout(),
		}, []string{"type", "command", "args", "input", "timeout"}, "type", "command")
		s.Title = "bash"
		shapes = append(shapes, s)
		text = append(text, "\"bash\" runs a command the operator allowed (never a shell line) with the event")
	}
	if d.offers(mcpe.HandlerWebhook) {
		s := object(map[string]*jsonschema.Schema{
			"type": typ(mcpe.HandlerWebhook),
			"url":  {Type: "string", Format: "uri", Description: "Where each delivery is POSTed as JSON, e.g. \"https://hooks.example.com/mcpe\"."},
			"headers": {Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"},
				Description: "Extra headers; ${NAME} is filled from the operator's secrets. The signature headers cannot be set."},
			"timeout": timeout(),
		}, []string{"type", "url", "headers", "timeout"}, "type", "url")
		s.Title = "webhook"
		shapes = append(shapes, s)
		text = append(text, "\"webhook\" POSTs it, signed per Standard Webhooks with a secret returned once (handler.secret), retrying on failure")
	}
	if d.offers(mcpe.HandlerAgent) {
		tools := &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}, MaxItems: ptr(mcpe.MaxHandlerTools),
			Description: "Tools of this server the LLM may call."}
		if len(d.tools) > 0 {
			tools.Items.Enum = make([]any, len(d.tools))
			for i, t := range d.tools {
				tools.Items.Enum[i] = t
			}
		}
		s := object(map[string]*jsonschema.Schema{
			"type":         typ(mcpe.HandlerAgent),
			"systemPrompt": {Type: "string", MaxLength: ptr(mcpe.MaxHandlerText), Description: "What the LLM is for, e.g. \"Summarize the alert and say whether it needs a human.\""},
			"instructions": {Type: "string", MaxLength: ptr(mcpe.MaxHandlerText), Description: "What to do with this kind of event."},
			"model":        {Type: "string", Description: "Preferred model, as a hint."},
			"tools":        tools,
			"maxTokens":    {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(mcpe.MaxHandlerTokens)), Description: "Most tokens per answer."},
		}, []string{"type", "systemPrompt", "instructions", "model", "tools", "maxTokens"}, "type")
		s.Title = "agent"
		shapes = append(shapes, s)
		text = append(text, "\"agent\" asks an LLM (through your client's sampling, or the operator's model) to handle it, the event given as untrusted data")
	}
	s := &jsonschema.Schema{OneOf: shapes}
	if nullable {
		s.OneOf = append(s.OneOf, &jsonschema.Schema{Type: "null"})
	}
	s.Description = "Optional: something the server does with every delivery (each event, or each digest), besides delivering it to you: " +
		strings.Join(text, "; ") + ". What it did shows in events_list (handlerStatus)."
	return s
}

// examples holds one valid argument object per tool; descriptions quote it and
// argument errors point at it. A test checks each against its schema.
var examples = map[string]string{
	mcpe.ToolSubscribe:   `{"filter": {"eventTypes": ["github.issues.*"], "priority": ["high", "critical"]}}`,
	digest:               `{"filter": {"eventTypes": ["github.issues.opened"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "0 9 * * *", "timezone": "America/New_York"}}}`,
	mcpe.ToolUnsubscribe: `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60"}`,
	mcpe.ToolList:        `{"status": "active"}`,
	mcpe.ToolPause:       `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60"}`,
	mcpe.ToolResume:      `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60"}`,
	mcpe.ToolUpdate:      `{"subscriptionId": "3f1c2a4e-8b7d-4c6e-9f0a-1b2c3d4e5f60", "filter": {"eventTypes": ["github.issues.opened"]}, "expiresAt": null}`,
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

// digest names the second example of events_subscribe, shown when the cron
// channel is offered.
const digest = mcpe.ToolSubscribe + " digest"

func exampleOf(t *mcp.Tool) string { return examples[t.Name] }

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

func idSchema(what string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Format: "uuid", Description: "ID of the subscription to " + what + ", as returned by events_subscribe or events_list."}
}

// refSchema is the input of a tool that takes only a subscription ID.
func refSchema(what string) *jsonschema.Schema {
	return object(map[string]*jsonschema.Schema{"subscriptionId": idSchema(what)}, nil, "subscriptionId")
}

func (d describer) filterSchema() *jsonschema.Schema {
	priorities := make([]any, len(mcpe.Priorities))
	for i, p := range mcpe.Priorities {
		priorities[i] = string(p)
	}
	s := object(map[string]*jsonschema.Schema{
		"eventTypes": {
			Type:        "array",
			Items:       &jsonschema.Schema{Type: "string"},
			MinItems:    ptr(1),
			MaxItems:    ptr(mcpe.MaxFilterPatterns),
			Description: "Event types to receive; any entry may match. " + mcpe.PatternHelp,
		},
		"tags": {
			Type:        "array",
			Items:       &jsonschema.Schema{Type: "string"},
			MinItems:    ptr(1),
			MaxItems:    ptr(mcpe.MaxTags),
			Description: "Receive only events that carry at least one of these tags.",
		},
		"priority": {
			Type:        "array",
			Items:       &jsonschema.Schema{Type: "string", Enum: priorities},
			MinItems:    ptr(1),
			Description: "Receive only events whose priority is one of these.",
		},
	}, []string{"eventTypes", "tags", "priority"})
	s.Description = "Which events to receive. Every part you give must match (AND); give at least one part. " +
		"To receive every event use {\"eventTypes\": [\"*\"]}."
	return s
}

func (d describer) deliverySchema() *jsonschema.Schema {
	channels := make([]any, len(d.caps.DeliveryChannels))
	for i, c := range d.caps.DeliveryChannels {
		channels[i] = string(c)
	}
	text := "How events are delivered. \"realtime\": each event at once as an events/event notification."
	props := map[string]*jsonschema.Schema{}
	order := []string{"channels"}
	if d.caps.Features.CronSchedule {
		text += " \"cron\": events wait and go out as a digest (events/batch) on cronSchedule."
		props["cronSchedule"] = d.cronSchema()
		order = append(order, "cronSchedule")
	}
	if d.caps.Features.ScheduledDelivery {
		text += " \"scheduled\": events wait until scheduledDelivery.deliverAt, then go out together once."
		props["scheduledDelivery"] = d.scheduledSchema()
		order = append(order, "scheduledDelivery")
	}
	if d.caps.Features.CronSchedule && d.caps.Features.ScheduledDelivery {
		text += " cron and scheduled exclude each other; either may be combined with realtime."
	}
	props["channels"] = &jsonschema.Schema{
		Type:        "array",
		Items:       &jsonschema.Schema{Type: "string", Enum: channels},
		MinItems:    ptr(1),
		Description: text,
	}
	s := object(props, order, "channels")
	s.Description = "How matching events reach you. Default: {\"channels\": [\"realtime\"]}."
	return s
}

func (d describer) cronSchema() *jsonschema.Schema {
	s := object(map[string]*jsonschema.Schema{
		"expression": {Type: "string", Description: "When the digest goes out: five cron fields (minute hour day-of-month month day-of-week), " +
			"e.g. \"0 9 * * *\" (09:00 daily) or \"0 9 * * 1-5\" (weekdays), or a descriptor: @hourly, @daily, @weekly, @monthly, @yearly, \"@every 30m\". " +
			"A time skipped by a daylight-saving change fires when the clocks have moved on; a time that occurs twice fires once."},
		"timezone":             {Type: "string", Description: "IANA time zone of the expression, e.g. \"America/New_York\". Default \"UTC\"."},
		"aggregateEvents":      {Type: "boolean", Default: json.RawMessage("true"), Description: "true: one events/batch per digest. false: each waiting event as its own events/event."},
		"maxEventsPerDelivery": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(10000.0), Default: json.RawMessage("100"), Description: "Most events in one digest; the rest lead the next one."},
	}, []string{"expression", "timezone", "aggregateEvents", "maxEventsPerDelivery"}, "expression")
	s.Description = "For the cron channel: when digests go out."
	return s
}

func (d describer) scheduledSchema() *jsonschema.Schema {
	s := object(map[string]*jsonschema.Schema{
		"deliverAt":       {Type: "string", Description: "When to deliver: an RFC 3339 time in the future, e.g. \"2026-01-15T14:00:00Z\"; without a UTC offset it is read in timezone."},
		"timezone":        {Type: "string", Description: "IANA time zone for a deliverAt without offset, e.g. \"Europe/Paris\"."},
		"description":     {Type: "string", MaxLength: ptr(500), Description: "Your own label for this delivery."},
		"aggregateEvents": {Type: "boolean", Default: json.RawMessage("true"), Description: "true: one events/batch. false: each event as its own events/event."},
		"autoExpire":      {Type: "boolean", Default: json.RawMessage("true"), Description: "true: the subscription expires after the delivery. false: it stays, collecting events, until you set a new deliverAt."},
	}, []string{"deliverAt", "timezone", "description", "aggregateEvents", "autoExpire"}, "deliverAt")
	s.Description = "For the scheduled channel: one delivery of everything collected, at deliverAt."
	return s
}

func (d describer) expiresSchema(nullable bool) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:        "string",
		Format:      "date-time",
		Description: "When the subscription ends, as an RFC 3339 time with a UTC offset, e.g. \"2026-01-15T14:00:00Z\". It must be in the future. You are sent events/subscription_expired when it ends.",
	}
	if nullable {
		s.Type, s.Types = "", []string{"string", "null"}
		s.Description += " null removes the expiry."
	}
	return s
}

// withHandler adds the handler property (and, for events_update,
// rotateSecret) to an input schema when handlers are offered.
func (d describer) withHandler(s *jsonschema.Schema, update bool) *jsonschema.Schema {
	if len(d.caps.Handlers) == 0 {
		return s
	}
	s.Properties["handler"] = d.handlerSchema(update)
	s.PropertyOrder = append(s.PropertyOrder, "handler")
	if update && d.offers(mcpe.HandlerWebhook) {
		s.Properties["rotateSecret"] = &jsonschema.Schema{Type: "boolean",
			Description: "true gives the webhook handler a new signing secret, returned once in handler.secret; the old one also signs for a grace period."}
		s.PropertyOrder = append(s.PropertyOrder, "rotateSecret")
	}
	return s
}

func (d describer) subscribeTool() *mcp.Tool {
	description := fmt.Sprintf("Subscribe to events from the outside world (GitHub, Slack, alerts, deploys: whatever "+
		"this server receives). Matching events are pushed to you as they happen (events/event "+
		"notifications) and are always kept in your inbox, which events_poll reads, so nothing is missed "+
		"while you are away. Returns the subscription with its subscriptionId. You may have up to %d "+
		"active or paused subscriptions.\n\n"+
		"filter.eventTypes takes exact types or patterns: \"*\" matches any run of characters including "+
		"dots (\"github.*\" matches \"github.push\" and \"github.issue.opened\", not \"github\"), \"?\" one "+
		"character, \"[abc]\" one of a set, \"{a,b}\" alternatives. filter.tags matches events carrying any of "+
		"the tags; filter.priority matches the listed priorities (low, normal, high, critical). All parts "+
		"given must match; to receive everything use {\"eventTypes\": [\"*\"]}.", d.caps.MaxSubscriptions)
	if d.catalog {
		description += " Call events_catalog first to see which event types this server receives, with examples."
	}
	if d.caps.Features.CronSchedule || d.caps.Features.ScheduledDelivery {
		description += "\n\nDigests: with delivery.channels [\"cron\"] (or [\"scheduled\"]) matching events wait and go " +
			"out together at each cron time (or once, at deliverAt) as events/batch {subscriptionId, events, remaining}, " +
			"oldest first: at most maxEventsPerDelivery per cron digest, any more lead the next one (remaining says how " +
			"many); nothing waiting, nothing sent. With aggregateEvents false each waiting event comes as its own " +
			"events/event instead. The response's nextDelivery says when, in the schedule's zone and in UTC; " +
			"bufferedEvents how many wait. A digest that fires while you are away is sent when you reconnect, and " +
			"is in events_poll either way."
	}
	if len(d.caps.Handlers) > 0 {
		description += "\n\nHandlers: handler makes the server act on each delivery without waking you: " +
			d.handlerSchema(false).Description
	}
	description += "\n\nExample: " + examples[mcpe.ToolSubscribe]
	if d.caps.Features.CronSchedule {
		description += "\n\nDigest example: " + examples[digest]
	}
	if ex := d.handlerExample(); ex != "" {
		description += "\n\nHandler example: " + ex
	}
	return &mcp.Tool{
		Name:        mcpe.ToolSubscribe,
		Title:       "Subscribe to events",
		Description: description,
		InputSchema: d.withHandler(object(map[string]*jsonschema.Schema{
			"filter":    d.filterSchema(),
			"delivery":  d.deliverySchema(),
			"expiresAt": d.expiresSchema(false),
		}, []string{"filter", "delivery", "expiresAt"}, "filter"), false),
		Annotations: &mcp.ToolAnnotations{Title: "Subscribe to events", OpenWorldHint: ptr(false)},
	}
}

func (d describer) unsubscribeTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolUnsubscribe,
		Title: "Remove a subscription",
		Description: "Remove one of your subscriptions for good: it receives nothing more and disappears from " +
			"events_list. What it already delivered stays readable through events_poll. To stop for a while " +
			"instead, use events_pause.\n\nExample: " + examples[mcpe.ToolUnsubscribe],
		InputSchema: refSchema("remove"),
		Annotations: &mcp.ToolAnnotations{Title: "Remove a subscription", DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}
}

func (d describer) listTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolList,
		Title: "List your subscriptions",
		Description: "List your subscriptions, oldest first, with their filter, delivery, status (active, " +
			"paused or expired), expiry, and how many events each has delivered and when the last one was; " +
			"for a subscription with a handler, handlerStatus says how many runs succeeded, failed or wait, " +
			"and the latest output, error and tool calls. " +
			"Give status to list only those with that status; leave it out to list all.\n\nExample: " + examples[mcpe.ToolList],
		InputSchema: object(map[string]*jsonschema.Schema{
			"status": {Type: "string", Enum: []any{"active", "paused", "expired"}, Description: "List only subscriptions with this status."},
		}, nil),
		Annotations: &mcp.ToolAnnotations{Title: "List your subscriptions", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) pauseTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolPause,
		Title: "Pause a subscription",
		Description: "Pause one of your subscriptions. While paused it receives nothing: events that arrive " +
			"meanwhile are skipped for it, not queued, and are not delivered when you resume; a digest does " +
			"not go out while paused and keeps what it had collected. Its filter, delivery, expiry and counts " +
			"are kept; events_resume turns it back on. Pausing a paused subscription changes nothing." +
			"\n\nExample: " + examples[mcpe.ToolPause],
		InputSchema: refSchema("pause"),
		Annotations: &mcp.ToolAnnotations{Title: "Pause a subscription", IdempotentHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) resumeTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolResume,
		Title: "Resume a subscription",
		Description: "Resume a paused subscription: it receives matching events again from now on (events " +
			"that arrived while it was paused are not replayed). Resuming an active subscription changes " +
			"nothing; an expired one cannot be resumed (subscribe again instead).\n\nExample: " + examples[mcpe.ToolResume],
		InputSchema: refSchema("resume"),
		Annotations: &mcp.ToolAnnotations{Title: "Resume a subscription", IdempotentHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) updateTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolUpdate,
		Title: "Change a subscription",
		Description: "Change the filter, delivery or expiry of one of your subscriptions; what you leave out " +
			"is kept. A new filter or delivery replaces the old one whole (same rules as events_subscribe); a new " +
			"schedule keeps the events already waiting, and leaving the cron or scheduled channel delivers them at " +
			"once. expiresAt sets a new end time, or null removes it. handler replaces the handler (and turns it " +
			"back on after a webhook receiver answered 410 Gone), or null removes it. A paused subscription stays paused; an " +
			"expired one cannot be changed.\n\nExample: " + examples[mcpe.ToolUpdate],
		InputSchema: d.withHandler(object(map[string]*jsonschema.Schema{
			"subscriptionId": idSchema("change"),
			"filter":         d.filterSchema(),
			"delivery":       d.deliverySchema(),
			"expiresAt":      d.expiresSchema(true),
		}, []string{"subscriptionId", "filter", "delivery", "expiresAt"}, "subscriptionId"), true),
		Annotations: &mcp.ToolAnnotations{Title: "Change a subscription", IdempotentHint: true, OpenWorldHint: ptr(false)},
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
		Description: fmt.Sprintf("Read what your subscriptions delivered, oldest first: events (kind \"event\", "+
			"with the event's id, type, data and metadata, and the subscriptionIds it matched: an event that "+
			"matches several of your subscriptions comes once), digests (kind \"batch\", with events and "+
			"remaining) and expiry notices (kind \"subscription_expired\"). Without cursor it continues after the last page it gave you, so "+
			"calling it again returns only what is new. Pass nextCursor (or the cursor of a notification) to "+
			"read from that point; the same cursor gives the same items. hasMore says whether to call again "+
			"right away.%s Use this when your host does not show event notifications, or to catch up "+
			"after being away.\n\nExample: %s", keep, examples[mcpe.ToolPoll]),
		InputSchema: object(map[string]*jsonschema.Schema{
			"cursor": {Type: "string", Description: "Continue after this cursor: a nextCursor from an earlier events_poll, or a notification's cursor. Leave it out to continue where the last call stopped."},
			"limit": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(mcpe.MaxPollLimit)),
				Description: fmt.Sprintf("Most items to return, 1 to %d; default %d.", mcpe.MaxPollLimit, mcpe.DefaultPollLimit)},
		}, []string{"cursor", "limit"}),
		Annotations: &mcp.ToolAnnotations{Title: "Read delivered events", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}
}

func (d describer) catalogTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  mcpe.ToolCatalog,
		Title: "What you can subscribe to",
		Description: "List the event types this server can deliver, so you can write filters that match real events: " +
			"the sources (GitHub, Slack, Alertmanager, upstream MCP servers, plain HTTP posts) and whether the " +
			"operator set each up, the types each emits with a description, how priority and tags are set, the " +
			"state of upstream MCP servers, and the types recently posted to the server directly. Without pattern " +
			"you get that overview; give pattern (same language as filter.eventTypes) to see only the types it " +
			"matches, each with the JSON Schema of its data and an example. The whole catalog, schemas included, is " +
			"the resource events://catalog.\n\nExample: " + examples[mcpe.ToolCatalog],
		InputSchema: object(map[string]*jsonschema.Schema{
			"pattern": {Type: "string", Description: "Keep only the types this pattern matches, e.g. \"github.*\" or \"alert.*\"."},
		}, nil),
		Annotations: &mcp.ToolAnnotations{Title: "What you can subscribe to", ReadOnlyHint: true, OpenWorldHint: ptr(false)},
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
