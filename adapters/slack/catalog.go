package slack

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// entry describes one catalog type: its data schema's constraints and the
// inner event its example is made from.
type entry struct {
	typ         string
	description string
	// slackType is the Slack event type ("" for any); subtype is the
	// message subtype: a name, "" for none, "*" for any.
	slackType, subtype string
	required           []string
	// priority says how the priority is set; "" is always normal.
	priority string
	// generic types carry the copy of the event (data.event).
	generic bool
	example string
}

const (
	priorityDM = "high for a person's direct message to the app (channel_type im, no subtype or file_share, no bot_id); normal otherwise"
	tagsText   = "channel:<id>, user:<id>, team:<id> and channel_type:<im|channel|group|mpim>, each when the event has it"
)

// entries are the catalog, in order. Examples are Slack's documented
// payloads with realistic IDs.
var entries = []entry{
	{
		typ:         "slack.message",
		description: "A new message in a channel, private channel, direct message or group DM the app is in (bot events message.channels, message.groups, message.im, message.mpim). Edits, deletions, bot posts and the like are slack.message.<subtype>; slack.message* matches them all.",
		slackType:   "message", subtype: "",
		required: []string{"type", "channel", "ts"},
		priority: priorityDM,
		example:  `{"type": "message", "channel": "D0C2FR9E2UA", "user": "U0C0NS9HN1B", "text": "Can you look at the failing deploy of <#C0C1RP2RJ7W|payments-api>?", "ts": "1718293845.123459", "event_ts": "1718293845.123459", "channel_type": "im"}`,
	},
	{
		typ:         "slack.message.message_changed",
		description: "A message was edited: text is the new text, previous_text the old one, ts the edited message's.",
		slackType:   "message", subtype: "message_changed",
		required: []string{"type", "subtype", "channel", "ts"},
		example:  `{"type": "message", "subtype": "message_changed", "hidden": true, "channel": "C0C1RP2RJ7W", "channel_type": "channel", "ts": "1718294001.000200", "event_ts": "1718294001.000200", "message": {"type": "message", "user": "U0C0NS9HN1B", "text": "Deploy 1.4.3 is rolled back", "ts": "1718293845.123456", "edited": {"user": "U0C0NS9HN1B", "ts": "1718294001.000000"}}, "previous_message": {"type": "message", "user": "U0C0NS9HN1B", "text": "Deploy 1.4.3 is rolling back", "ts": "1718293845.123456"}}`,
	},
	{
		typ:         "slack.message.message_deleted",
		description: "A message was deleted: previous_text is its text, ts its timestamp.",
		slackType:   "message", subtype: "message_deleted",
		required: []string{"type", "subtype", "channel", "ts"},
		example:  `{"type": "message", "subtype": "message_deleted", "hidden": true, "channel": "C0C1RP2RJ7W", "channel_type": "channel", "ts": "1718294100.000300", "deleted_ts": "1718293845.123456", "event_ts": "1718294100.000300", "previous_message": {"type": "message", "user": "U0C0NS9HN1B", "text": "Deploy 1.4.3 is rolled back", "ts": "1718293845.123456"}}`,
	},
	{
		typ:         "slack.message.bot_message",
		description: "A bot or integration posted a message (legacy bots and incoming webhooks); its content is often in attachments.",
		slackType:   "message", subtype: "bot_message",
		required: []string{"type", "subtype", "bot_id", "ts"},
		example:  `{"type": "message", "subtype": "bot_message", "channel": "C0C1RP2RJ7W", "channel_type": "channel", "bot_id": "B0C3GITHB01", "username": "GitHub", "text": "", "ts": "1718294200.000400", "event_ts": "1718294200.000400", "attachments": [{"fallback": "[acme/payments-api] Pull request opened: #42 Fix retry loop", "title": "#42 Fix retry loop", "text": "Stops the worker from retrying forever."}]}`,
	},
	{
		typ:         "slack.message.<subtype>",
		description: "Another kind of message, by Slack's subtype: file_share, thread_broadcast, channel_join, channel_leave, channel_topic, channel_purpose, me_message, ...",
		slackType:   "message", subtype: "*",
		required: []string{"type", "subtype"},
		priority: priorityDM,
		example:  `{"type": "message", "subtype": "channel_join", "channel": "C0C1RP2RJ7W", "channel_type": "channel", "user": "U0C4NEWB0B1", "text": "<@U0C4NEWB0B1> has joined the channel", "inviter": "U0C0NS9HN1B", "ts": "1718294300.000500", "event_ts": "1718294300.000500"}`,
	},
	{
		typ:         "slack.app_mention",
		description: "Someone mentioned the app (@app) in a channel it is in (bot event app_mention).",
		slackType:   "app_mention",
		required:    []string{"type", "channel", "ts"},
		priority:    "high, unless a bot posted it (bot_id); then normal",
		example:     `{"type": "app_mention", "user": "U0C0NS9HN1B", "text": "<@U0C5APPB0T1> what changed in payments-api since yesterday?", "ts": "1718294400.000600", "channel": "C0C1RP2RJ7W", "event_ts": "1718294400.000600"}`,
	},
	{
		typ:         "slack.reaction_added",
		description: "Someone added an emoji reaction to a message or file; item says which.",
		slackType:   "reaction_added",
		required:    []string{"type", "user", "reaction", "item"},
		example:     `{"type": "reaction_added", "user": "U0C0NS9HN1B", "reaction": "white_check_mark", "item_user": "U0C5APPB0T1", "item": {"type": "message", "channel": "C0C1RP2RJ7W", "ts": "1718294400.000600"}, "event_ts": "1718294500.000700"}`,
	},
	{
		typ:         "slack.reaction_removed",
		description: "Someone removed an emoji reaction from a message or file.",
		slackType:   "reaction_removed",
		required:    []string{"type", "user", "reaction", "item"},
		example:     `{"type": "reaction_removed", "user": "U0C0NS9HN1B", "reaction": "eyes", "item_user": "U0C5APPB0T1", "item": {"type": "message", "channel": "C0C1RP2RJ7W", "ts": "1718294400.000600"}, "event_ts": "1718294550.000800"}`,
	},
	{
		typ:         "slack.member_joined_channel",
		description: "Someone joined a channel the app is in; inviter is who added them.",
		slackType:   "member_joined_channel",
		required:    []string{"type", "user", "channel"},
		example:     `{"type": "member_joined_channel", "user": "U0C4NEWB0B1", "channel": "C0C1RP2RJ7W", "channel_type": "C", "team": "T0C0ACME01", "inviter": "U0C0NS9HN1B", "event_ts": "1718294300.000500"}`,
	},
	{
		typ:         "slack.member_left_channel",
		description: "Someone left a channel the app is in.",
		slackType:   "member_left_channel",
		required:    []string{"type", "user", "channel"},
		example:     `{"type": "member_left_channel", "user": "U0C4NEWB0B1", "channel": "C0C1RP2RJ7W", "channel_type": "C", "team": "T0C0ACME01", "event_ts": "1718294600.000900"}`,
	},
	{
		typ:         "slack.channel_created",
		description: "A public channel was created; user is its creator.",
		slackType:   "channel_created",
		required:    []string{"type", "channel", "channel_name"},
		example:     `{"type": "channel_created", "channel": {"id": "C0C6INC0042", "name": "inc-42-payments-latency", "created": 1718294700, "creator": "U0C0NS9HN1B"}, "event_ts": "1718294700.001000"}`,
	},
	{
		typ:         "slack.channel_rename",
		description: "A channel was renamed; channel_name is the new name.",
		slackType:   "channel_rename",
		required:    []string{"type", "channel", "channel_name"},
		example:     `{"type": "channel_rename", "channel": {"id": "C0C6INC0042", "name": "inc-42-resolved", "created": 1718294700}, "event_ts": "1718298000.001100"}`,
	},
	{
		typ:         "slack.channel_archive",
		description: "A channel was archived; user is who archived it.",
		slackType:   "channel_archive",
		required:    []string{"type", "channel"},
		example:     `{"type": "channel_archive", "channel": "C0C6INC0042", "user": "U0C0NS9HN1B", "event_ts": "1718301600.001200"}`,
	},
	{
		typ:         "slack.channel_unarchive",
		description: "A channel was unarchived; user is who unarchived it.",
		slackType:   "channel_unarchive",
		required:    []string{"type", "channel"},
		example:     `{"type": "channel_unarchive", "channel": "C0C6INC0042", "user": "U0C0NS9HN1B", "event_ts": "1718305200.001300"}`,
	},
	{
		typ:         "slack.channel_deleted",
		description: "A channel was deleted.",
		slackType:   "channel_deleted",
		required:    []string{"type", "channel"},
		example:     `{"type": "channel_deleted", "channel": "C0C6INC0042", "event_ts": "1718308800.001400"}`,
	},
	{
		typ:         "slack.pin_added",
		description: "Someone pinned a message or file to a channel; item says which.",
		slackType:   "pin_added",
		required:    []string{"type", "user", "channel", "item"},
		example:     `{"type": "pin_added", "user": "U0C0NS9HN1B", "channel_id": "C0C1RP2RJ7W", "item": {"type": "message", "channel": "C0C1RP2RJ7W", "message": {"type": "message", "user": "U0C0NS9HN1B", "text": "Runbook: https://runbooks.example.com/payments", "ts": "1718293845.123456"}, "created": 1718294800, "created_by": "U0C0NS9HN1B"}, "event_ts": "1718294800.001500"}`,
	},
	{
		typ:         "slack.pin_removed",
		description: "Someone unpinned a message or file from a channel.",
		slackType:   "pin_removed",
		required:    []string{"type", "user", "channel", "item"},
		example:     `{"type": "pin_removed", "user": "U0C0NS9HN1B", "channel_id": "C0C1RP2RJ7W", "item": {"type": "message", "channel": "C0C1RP2RJ7W", "message": {"type": "message", "user": "U0C0NS9HN1B", "text": "Runbook: https://runbooks.example.com/payments", "ts": "1718293845.123456"}}, "has_pins": false, "event_ts": "1718294900.001600"}`,
	},
	{
		typ:         "slack.file_shared",
		description: "A file was shared in a channel the app is in; file_id names it (its content stays in Slack).",
		slackType:   "file_shared",
		required:    []string{"type", "file_id"},
		example:     `{"type": "file_shared", "channel_id": "C0C1RP2RJ7W", "file_id": "F0C7LOGS001", "user_id": "U0C0NS9HN1B", "file": {"id": "F0C7LOGS001"}, "event_ts": "1718295000.001700"}`,
	},
	{
		typ:         "slack.<event_type>",
		description: "Any other event the app subscribes to (team_join, app_home_opened, emoji_changed, link_shared, ...): the common fields, and a copy of the event cut to size in data.event.",
		required:    []string{"type", "event"},
		generic:     true,
		example:     `{"type": "emoji_changed", "subtype": "add", "name": "shipit", "value": "https://emoji.slack-edge.com/T0C0ACME01/shipit/f3a1b2c4d5e6f708.png", "event_ts": "1718295100.001800"}`,
	},
}

// exampleEnvelope wraps an example inner event as Slack would send it.
const exampleEnvelope = `{"token": "XXYYZZ", "team_id": "T0C0ACME01", "api_app_id": "A0C5APP0001", "type": "event_callback", "event_id": "Ev0C8EXAMPLE", "event_time": 1718293845, "event": %s}`

// buildCatalog returns the adapter's event types, with examples made by
// the adapter itself from the entries' inner events.
func (a *Adapter) buildCatalog() []mcpe.EventType {
	out := make([]mcpe.EventType, 0, len(entries))
	for _, e := range entries {
		out = append(out, mcpe.EventType{
			Type:        e.typ,
			Description: e.description,
			DataSchema:  e.schema(),
			Example:     a.example(e),
			Priority:    cmp.Or(e.priority, "normal"),
			Tags:        tagsText,
		})
	}
	return out
}

// example returns the data the adapter makes of e's example.
func (a *Adapter) example(e entry) json.RawMessage {
	req, reqErr := decode(fmt.Appendf(nil, exampleEnvelope, e.example))
	if reqErr != nil {
		panic("slack: the catalog example of " + e.typ + " is not a valid request: " + reqErr.Message)
	}
	ev, err := a.event(req, time.Unix(1718293845, 0))
	if err != nil {
		panic("slack: the catalog example of " + e.typ + " cannot be converted: " + err.Error())
	}
	return ev.Data
}

// properties are the JSON Schemas of the fields of Data.
func properties() map[string]any {
	str := func(description string) map[string]any {
		return map[string]any{"type": "string", "description": description}
	}
	return map[string]any{
		"team_id":        str("The workspace (T...)."),
		"enterprise_id":  str("The Enterprise Grid organisation (E...), if any."),
		"api_app_id":     str("The Slack app the event was sent to (A...)."),
		"type":           str("Slack's event type, such as \"message\"."),
		"subtype":        str("The event's subtype, such as \"message_changed\"."),
		"user":           str("Who acted (U... or W...): the author of the message (edited or deleted), who reacted, joined, pinned, shared or created."),
		"bot_id":         str("The bot or app that posted the message (B...)."),
		"username":       str("The name a bot posted under."),
		"channel":        str("The conversation (C... public, G... private, D... direct message)."),
		"channel_name":   str("The channel's name, for channel_created and channel_rename."),
		"channel_type":   str("\"channel\" (public), \"group\" (private), \"im\" (direct message), \"mpim\" (group DM) or \"app_home\"."),
		"inviter":        str("Who added the member."),
		"text":           map[string]any{"type": "string", "description": fmt.Sprintf("The message in Slack's mrkdwn (\"<@U123>\" mentions a user), at most %d bytes.", MaxTextBytes)},
		"previous_text":  str("The text before the edit, or of the deleted message."),
		"ts":             str("The message's timestamp, its ID in the channel (of the message edited or deleted, for those)."),
		"thread_ts":      str("The thread's parent message, for a message in a thread."),
		"parent_user_id": str("The author of the thread's parent message."),
		"event_ts":       str("When the event happened, as a Slack timestamp."),
		"edited": map[string]any{
			"type": "object", "additionalProperties": false, "description": "Who last edited the message, and when.",
			"properties": map[string]any{"user": map[string]any{"type": "string"}, "ts": map[string]any{"type": "string"}},
		},
		"reaction":  str("The emoji's name, without colons, such as \"thumbsup\"."),
		"item_user": str("The author of the item reacted to."),
		"item": map[string]any{
			"type": "object", "additionalProperties": false, "description": "What was reacted to or pinned: a message (channel and ts), a file or a file comment.",
			"properties": map[string]any{
				"type":    map[string]any{"type": "string", "description": "\"message\", \"file\" or \"file_comment\"."},
				"channel": map[string]any{"type": "string"}, "ts": map[string]any{"type": "string"},
				"file": map[string]any{"type": "string"}, "file_comment": map[string]any{"type": "string"},
			},
		},
		"file_id": str("The file shared (F...)."),
		"files": map[string]any{
			"type": "array", "maxItems": MaxFiles, "description": "The files attached to the message; their content stays in Slack.",
			"items": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{"id": map[string]any{"type": "string"}, "name": map[string]any{"type": "string"}},
			},
		},
		"attachments": map[string]any{
			"type": "array", "maxItems": MaxAttachments, "description": "The texts of the message's legacy attachments, where bots often put their content.",
			"items": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{
					"title": map[string]any{"type": "string"}, "text": map[string]any{"type": "string"}, "fallback": map[string]any{"type": "string"},
				},
			},
		},
		"event": map[string]any{
			"type":        "object",
			"description": fmt.Sprintf("A copy of Slack's event, at most %d levels deep and %d bytes; deeper and longer parts are cut.", MaxEventDepth, MaxEventBytes),
		},
		"truncated": map[string]any{"const": true, "description": "Present when a text, a list or the copy of the event was cut."},
	}
}

// schema returns the JSON Schema of e's data.
func (e entry) schema() json.RawMessage {
	props := properties()
	if e.slackType != "" {
		props["type"] = map[string]any{"const": e.slackType, "description": "Slack's event type."}
	}
	if !e.generic {
		delete(props, "event")
	}
	switch e.subtype {
	case "":
		if e.slackType == "message" {
			// A message without subtype is slack.message.
			delete(props, "subtype")
		}
	case "*":
		props["subtype"] = map[string]any{"type": "string", "minLength": 1, "description": "The message's subtype; the event type ends with it."}
	default:
		props["subtype"] = map[string]any{"const": e.subtype}
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"required":             e.required,
		"properties":           props,
		"additionalProperties": false,
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic("slack: schema of " + e.typ + ": " + err.Error())
	}
	return raw
}

// Catalog lists the event types the adapter emits: slack.message and
// slack.message.<subtype>, the mapped event types, and slack.<event_type>
// for the others.
func (a *Adapter) Catalog() []mcpe.EventType { return slices.Clone(a.catalog) }
