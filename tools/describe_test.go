package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var testDescriber = newDescriber(mcpe.Capability{
	MaxSubscriptions: 100,
	DeliveryChannels: []mcpe.Channel{mcpe.ChannelRealtime, mcpe.ChannelCron, mcpe.ChannelScheduled},
	Features:         mcpe.Features{Pause: true, Wildcards: true, CronSchedule: true, ScheduledDelivery: true},
	Handlers:         []mcpe.HandlerType{mcpe.HandlerBash, mcpe.HandlerWebhook, mcpe.HandlerAgent},
}, subscriptions.DefaultRetention, []string{"notify"}, []string{mcpe.ToolList, mcpe.ToolPoll})

// handlerOnly describes a server that runs handlers of type t alone.
func handlerOnly(t mcpe.HandlerType) describer {
	return newDescriber(mcpe.Capability{
		MaxSubscriptions: 100,
		DeliveryChannels: []mcpe.Channel{mcpe.ChannelRealtime},
		Handlers:         []mcpe.HandlerType{t},
	}, subscriptions.DefaultRetention, nil, []string{mcpe.ToolList})
}

// realtimeOnly describes a server that offers the realtime channel alone.
var realtimeOnly = newDescriber(mcpe.Capability{
	MaxSubscriptions: 100,
	DeliveryChannels: []mcpe.Channel{mcpe.ChannelRealtime},
	Features:         mcpe.Features{Pause: true, Wildcards: true},
}, subscriptions.DefaultRetention, nil, nil)

// toolCases pairs each tool with the argument type its handler decodes into.
var toolCases = []struct {
	tool *mcp.Tool
	in   func() any
}{
	{testDescriber.subscribeTool(), func() any { return new(mcpe.SubscribeRequest) }},
	{testDescriber.unsubscribeTool(), func() any { return new(mcpe.SubscriptionRef) }},
	{testDescriber.listTool(), func() any { return new(mcpe.ListRequest) }},
	{testDescriber.pauseTool(), func() any { return new(mcpe.SubscriptionRef) }},
	{testDescriber.resumeTool(), func() any { return new(mcpe.SubscriptionRef) }},
	{testDescriber.updateTool(), func() any { return new(mcpe.UpdateRequest) }},
	{testDescriber.pollTool(), func() any { return new(mcpe.PollRequest) }},
	{testDescriber.catalogTool(), func() any { return new(mcpe.CatalogRequest) }},
}

// unquoted are the tools whose descriptions need no example.
var unquoted = []string{mcpe.ToolUnsubscribe, mcpe.ToolList, mcpe.ToolPause, mcpe.ToolResume, mcpe.ToolPoll}

// TestExamplesMatchSchemas checks that each tool's example is valid for its
// advertised schema, decodes into its argument type, and is quoted in its
// description; and that the schema and the type name the same fields.
func TestExamplesMatchSchemas(t *testing.T) {
	extra := []struct {
		name string
		tool *mcp.Tool
	}{
		{webhookExample, handlerOnly(mcpe.HandlerWebhook).subscribeTool()},
		{agentExample, handlerOnly(mcpe.HandlerAgent).subscribeTool()},
	}
	if len(toolCases)+len(extra) != len(examples) {
		t.Fatalf("%d tools, %d examples", len(toolCases)+len(extra), len(examples))
	}
	type namedCase struct {
		name string
		tool *mcp.Tool
		in   func() any
	}
	var cases []namedCase
	for _, tc := range toolCases {
		cases = append(cases, namedCase{tc.tool.Name, tc.tool, tc.in})
	}
	for _, e := range extra {
		cases = append(cases, namedCase{e.name, e.tool, func() any { return new(mcpe.SubscribeRequest) }})
	}
	// The bash example names a configured command, so it is built, not
	// stored.
	examples["bash example"] = testDescriber.handlerExample()
	defer delete(examples, "bash example")
	cases = append(cases, namedCase{"bash example", testDescriber.subscribeTool(), func() any { return new(mcpe.SubscribeRequest) }})
	for _, tc := range cases {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			schema := tc.tool.InputSchema.(*jsonschema.Schema)
			resolved, err := schema.Resolve(nil)
			if err != nil {
				t.Fatalf("schema does not resolve: %v", err)
			}
			example := examples[name]
			var v any
			if err := json.Unmarshal([]byte(example), &v); err != nil {
				t.Fatalf("example is not JSON: %v", err)
			}
			if err := resolved.Validate(v); err != nil {
				t.Errorf("example %s does not validate: %v", example, err)
			}
			if err := decodeArgs(json.RawMessage(example), tc.in(), tc.tool); err != nil {
				t.Errorf("example %s does not decode: %v", example, err)
			}
			// A tool that takes a subscriptionId, or nothing required, needs
			// no example but in its errors.
			if quoted := strings.Contains(tc.tool.Description, "xample: "+example); quoted != !slices.Contains(unquoted, name) {
				t.Errorf("description quotes the example %s: %v, want %v", example, quoted, !quoted)
			}
			var props []string
			for name := range schema.Properties {
				props = append(props, name)
			}
			slices.Sort(props)
			if diff := cmp.Diff(jsonFields(reflect.TypeOf(tc.in()).Elem()), props); diff != "" {
				t.Errorf("schema properties and argument fields differ (-fields +schema):\n%s", diff)
			}
		})
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestSchemasOfferOnlyWhatWorks checks that delivery channels come from the
// capability, so the schema never offers one the server lacks.
func TestSchemasOfferOnlyWhatWorks(t *testing.T) {
	for _, tc := range []struct {
		d        describer
		channels []any
		options  []string
	}{
		{realtimeOnly, []any{"realtime"}, []string{"fields", "maxEventBytes", "throttle"}},
		{testDescriber, []any{"realtime", "cron", "scheduled"}, []string{"cronSchedule", "fields", "maxEventBytes", "scheduledDelivery", "throttle"}},
	} {
		for _, tool := range []*mcp.Tool{tc.d.subscribeTool(), tc.d.updateTool()} {
			if _, ok := tool.InputSchema.(*jsonschema.Schema).Properties["handler"]; ok != (len(tc.d.caps.Handlers) > 0) {
				t.Errorf("%s: handler offered is %v, but the server runs %v", tool.Name, ok, tc.d.caps.Handlers)
			}
		}
		{
			tool := tc.d.subscribeTool() // events_update's delivery refers to it
			delivery := tool.InputSchema.(*jsonschema.Schema).Properties["delivery"]
			if diff := cmp.Diff(tc.channels, delivery.Properties["channels"].Items.Enum); diff != "" {
				t.Errorf("%s: delivery.channels enum mismatch (-want +got):\n%s", tool.Name, diff)
			}
			var options []string
			for name := range delivery.Properties {
				if name != "channels" {
					options = append(options, name)
				}
			}
			slices.Sort(options)
			if diff := cmp.Diff(tc.options, options); diff != "" {
				t.Errorf("%s: delivery options mismatch (-want +got):\n%s", tool.Name, diff)
			}
		}
	}
	if d := realtimeOnly.subscribeTool().Description; strings.Contains(d, "Digest") {
		t.Errorf("a realtime-only server describes digests: %s", d)
	}
	if d := testDescriber.pollTool().Description; !strings.Contains(d, "The inbox keeps your latest 1000 items for up to 7 days.") {
		t.Errorf("events_poll description does not state the retention: %s", d)
	}
}

func TestDecodeArgsErrors(t *testing.T) {
	subscribe, update := testDescriber.subscribeTool(), testDescriber.updateTool()
	newSubscribe := func() any { return new(mcpe.SubscribeRequest) }
	newUpdate := func() any { return new(mcpe.UpdateRequest) }
	for _, tc := range []struct {
		tool *mcp.Tool
		in   func() any
		args string
		want string // the whole error text; empty for success
	}{
		{subscribe, newSubscribe, ``, ``},
		{subscribe, newSubscribe, `null`, ``},
		{subscribe, newSubscribe, `{"Filter": {"EventTypes": ["x"]}}`, ``}, // names match as encoding/json matches them
		{subscribe, newSubscribe, `"x"`, `the arguments must be a JSON object, such as ` + examples[mcpe.ToolSubscribe]},
		{subscribe, newSubscribe, `{"filter": {"eventTypes": [1]}}`, `each entry of filter.eventTypes must be a string, not a number`},
		{subscribe, newSubscribe, `{"filter": {"eventTypes": "github.*"}}`, `filter.eventTypes must be an array of strings, not a string`},
		{subscribe, newSubscribe, `{"filter": {"priority": [true]}}`, `each entry of filter.priority must be a string, not a boolean`},
		{subscribe, newSubscribe, `{"filter": {"tags": {}}}`, `filter.tags must be an array of strings, not an object`},
		{subscribe, newSubscribe, `{"filter": 3}`, `filter must be an object, not a number`},
		{subscribe, newSubscribe, `{"expiresAt": true}`, `expiresAt must be a string, not a boolean`},
		{subscribe, newSubscribe, `{"filter": {}, "nope": 1}`, `unknown field "nope"; the arguments accept "delivery", "dryRun", "expiresAt", "filter", "handler", "label" (see the input schema of events_subscribe; nested objects accept only the fields listed there)`},
		{subscribe, newSubscribe, `{"filter": {"eventType": ["x"]}}`, `unknown field "eventType" in filter; filter accepts "eventTypes", "priority", "tags", "where"`},
		{subscribe, newSubscribe, `{"filter": {"tags": ["a"], "priorities": ["high"], "x": 1}}`, `unknown field "priorities" in filter; filter accepts "eventTypes", "priority", "tags", "where"`},
		{subscribe, newSubscribe, `{"filter": {"tags": ["a"]}, "delivery": {"channels": ["cron"], "cronSchedule": {"expression": "@daily", "tz": "UTC"}}}`,
			`unknown field "tz" in delivery.cronSchedule; delivery.cronSchedule accepts "aggregateEvents", "expression", "maxEventsPerDelivery", "timezone"`},
		{subscribe, newSubscribe, `{"filter": {"tags": ["a"]}, "delivery": {"channel": ["realtime"]}}`,
			`unknown field "channel" in delivery; delivery accepts "channels", "cronSchedule", "fields", "maxEventBytes", "scheduledDelivery", "throttle"`},
		{subscribe, newSubscribe, `{"filter": {"tags": ["a"]}, "delivery": {"channels": ["realtime"], "throttle": {"window": "1m", "group": "type"}}}`,
			`unknown field "group" in delivery.throttle; delivery.throttle accepts "window", "groupBy"`},
		{update, newUpdate, `{"subscriptionId": "x", "delivery": {"channels": ["realtime"], "throttle": {"windows": "1m"}}}`,
			`unknown field "windows" in delivery.throttle; delivery.throttle accepts "window", "groupBy"`},
		{subscribe, newSubscribe, `{"filter": {"tags": ["a"]}, "handler": {"type": "webhook", "uri": "https://x"}}`,
			`unknown field "uri" in handler; handler accepts "args", "command", "headers", "input", "instructions", "maxTokens", "model", "systemPrompt", "timeout", "tools", "type", "url"`},
		{subscribe, newSubscribe, `{"filter": `, `the arguments are not valid JSON: they end too early`},
		{update, newUpdate, `{"subscriptionId": "x", "handler": {"type": "webhook", "uri": "https://x"}}`,
			`unknown field "uri" in handler; handler accepts "args", "command", "headers", "input", "instructions", "maxTokens", "model", "systemPrompt", "timeout", "tools", "type", "url"`},
		{update, newUpdate, `{"subscriptionId": "x", "filter": {"eventType": ["x"]}}`, `unknown field "eventType" in filter; filter accepts "eventTypes", "priority", "tags", "where"`},
		{update, newUpdate, `{"subscriptionId": "x", "delivery": {"channels": ["cron"], "cronSchedule": {"tz": "UTC"}}}`,
			`unknown field "tz" in delivery.cronSchedule; delivery.cronSchedule accepts "aggregateEvents", "expression", "maxEventsPerDelivery", "timezone"`},
		{update, newUpdate, `{"subscriptionId": "x", "handler": null}`, ``},
		{update, newUpdate, `{"subscriptionId": "x", "expiresAt": null}`, ``},
	} {
		err := decodeArgs(json.RawMessage(tc.args), tc.in(), tc.tool, subscribe, update)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s %s:\n got: %s\nwant: %s", tc.tool.Name, tc.args, got, tc.want)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour:        "1 day",
		7 * 24 * time.Hour:    "7 days",
		time.Hour:             "1 hour",
		36 * time.Hour:        "36 hours",
		90 * time.Minute:      "1h30m0s",
		2*time.Hour + 1:       "2h0m0.000000001s",
		48*time.Hour + 3600e9: "49 hours",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestToolListBudget checks that tools/list costs a conversation no more
// than the MCPE reference's tool list does (7 222 bytes): at most 8 000
// bytes on the wire with handlers off and 11 000 with bash and webhook
// handlers on, the pattern language stated once and nothing HTML-escaped.
func TestToolListBudget(t *testing.T) {
	caps := testDescriber.caps
	for _, tc := range []struct {
		name     string
		handlers []mcpe.HandlerType
		budget   int
	}{
		{"handlers off", nil, 8000},
		{"bash and webhook", []mcpe.HandlerType{mcpe.HandlerBash, mcpe.HandlerWebhook}, 11000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps.Handlers = tc.handlers
			d := newDescriber(caps, subscriptions.DefaultRetention, []string{"notify"}, append(slices.Clone(Names), mcpe.ToolCatalog))
			d.catalog = true
			res := &mcp.ListToolsResult{Tools: []*mcp.Tool{d.subscribeTool(), d.unsubscribeTool(), d.listTool(),
				d.pauseTool(), d.resumeTool(), d.updateTool(), d.pollTool(), d.catalogTool()}}
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // as the SDK's jsonrpc2 encoder writes messages
			if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 2, "result": res}); err != nil {
				t.Fatal(err)
			}
			wire := strings.TrimSpace(buf.String())
			if len(wire) > tc.budget {
				t.Errorf("tools/list is %d bytes, over the budget of %d", len(wire), tc.budget)
			}
			for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
				if strings.Contains(wire, esc) {
					t.Errorf("tools/list has %s: jsonschema-go's MarshalJSON escapes <, > and &; keep them out of schema texts", esc)
				}
			}
			if n := strings.Count(wire, `matches any run of characters`); n != 1 {
				t.Errorf("the pattern language is explained %d times, want once", n)
			}
			t.Logf("%d bytes", len(wire))
		})
	}
}

// capsOnly is a Service that describes testDescriber's server; a call that
// gets past decoding panics.
type capsOnly struct{ Service }

func (capsOnly) Capability() mcpe.Capability        { return testDescriber.caps }
func (capsOnly) Retention() subscriptions.Retention { return subscriptions.DefaultRetention }

// TestUpdateErrorsExplainSubscribeShapes checks that a registered
// events_update, whose filter and handler refer to events_subscribe's,
// still lists the fields accepted there.
func TestUpdateErrorsExplainSubscribeShapes(t *testing.T) {
	set := Register(mcp.NewServer(&mcp.Implementation{Name: "test"}, nil), Options{Service: capsOnly{},
		Principal: func(context.Context, *mcp.CallToolRequest) (string, error) { return "alice", nil }})
	for args, want := range map[string]string{
		`{"subscriptionId": "x", "filter": {"eventType": ["x"]}}`:             `unknown field "eventType" in filter; filter accepts "eventTypes", "priority", "tags", "where"`,
		`{"subscriptionId": "x", "handler": {"type": "webhook", "uri": "u"}}`: `unknown field "uri" in handler; handler accepts "args", "command", "headers", "input", "instructions", "maxTokens", "model", "systemPrompt", "timeout", "tools", "type", "url"`,
	} {
		res, err := set.CallTool(context.Background(), "alice", mcpe.ToolUpdate, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; !res.IsError || got != want {
			t.Errorf("%s:\n got: %s\nwant: %s", args, got, want)
		}
	}
}

// newDescriber is the describer Register builds, without events_catalog.
func newDescriber(caps mcpe.Capability, r subscriptions.Retention, commands, tools []string) describer {
	return describer{caps: caps, retention: r, commands: commands, tools: tools}
}
