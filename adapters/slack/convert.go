package slack

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Data is the data of a slack.* event: what an agent needs to understand
// and answer it, in Slack's own field names. Fields Slack did not send are
// left out.
type Data struct {
	// TeamID is the workspace the event happened in.
	TeamID string `json:"team_id,omitempty"`
	// EnterpriseID is the Enterprise Grid organisation, if any.
	EnterpriseID string `json:"enterprise_id,omitempty"`
	// APIAppID is the Slack app the event was sent to.
	APIAppID string `json:"api_app_id,omitempty"`
	// Type is Slack's event type, such as "message" or "app_mention".
	Type string `json:"type"`
	// Subtype is the event's subtype, such as "message_changed".
	Subtype string `json:"subtype,omitempty"`
	// User is who acted: the author of a message (of the edited message
	// for message_changed, of the deleted one for message_deleted), who
	// reacted, joined, pinned or shared, who created a channel.
	User string `json:"user,omitempty"`
	// BotID is set when a bot or app posted the message.
	BotID string `json:"bot_id,omitempty"`
	// Username is the name a bot posted under.
	Username string `json:"username,omitempty"`
	// Channel is the conversation's ID (C..., G..., D...).
	Channel string `json:"channel,omitempty"`
	// ChannelName is the channel's name, for channel_created and
	// channel_rename.
	ChannelName string `json:"channel_name,omitempty"`
	// ChannelType is "channel" (public), "group" (private), "im" (direct
	// message), "mpim" (group direct message) or "app_home".
	ChannelType string `json:"channel_type,omitempty"`
	// Inviter is who added the member, for member_joined_channel.
	Inviter string `json:"inviter,omitempty"`
	// Text is the message's text in Slack's mrkdwn ("<@U123>" mentions a
	// user), at most MaxTextBytes.
	Text string `json:"text,omitempty"`
	// PreviousText is the text before an edit (message_changed) or of the
	// deleted message (message_deleted).
	PreviousText string `json:"previous_text,omitempty"`
	// TS is the message's timestamp, its ID within the channel; for
	// message_changed and message_deleted, that of the message changed or
	// deleted.
	TS string `json:"ts,omitempty"`
	// ThreadTS is the timestamp of the thread's parent message, when the
	// message is in a thread.
	ThreadTS string `json:"thread_ts,omitempty"`
	// ParentUserID is the author of the thread's parent message.
	ParentUserID string `json:"parent_user_id,omitempty"`
	// EventTS is when the event happened, as a Slack timestamp.
	EventTS string `json:"event_ts,omitempty"`
	// Edited says who last edited the message, and when.
	Edited *Edited `json:"edited,omitempty"`
	// Reaction is the emoji name, without colons, for reaction_added and
	// reaction_removed.
	Reaction string `json:"reaction,omitempty"`
	// ItemUser is the author of the item reacted to.
	ItemUser string `json:"item_user,omitempty"`
	// Item is what was reacted to or pinned.
	Item *Item `json:"item,omitempty"`
	// FileID is the file of a file_shared event.
	FileID string `json:"file_id,omitempty"`
	// Files are the files attached to a message (at most MaxFiles).
	Files []File `json:"files,omitempty"`
	// Attachments summarise a message's legacy attachments (at most
	// MaxAttachments), where bots often put their content.
	Attachments []Attachment `json:"attachments,omitempty"`
	// Event is a copy of the event, cut to MaxEventDepth levels and
	// MaxEventBytes, for event types without a mapping of their own.
	Event json.RawMessage `json:"event,omitempty"`
	// Truncated is true when a text, a list or the copy of the event was
	// cut.
	Truncated bool `json:"truncated,omitempty"`
}

// Edited says who last edited a message, and when.
type Edited struct {
	User string `json:"user,omitempty"`
	TS   string `json:"ts,omitempty"`
}

// Item is what a reaction or a pin is on: a message (channel and ts), a
// file or a file comment.
type Item struct {
	Type        string `json:"type,omitempty"`
	Channel     string `json:"channel,omitempty"`
	TS          string `json:"ts,omitempty"`
	File        string `json:"file,omitempty"`
	FileComment string `json:"file_comment,omitempty"`
}

// File is a file attached to a message; its content stays in Slack.
type File struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// Attachment is the text of a legacy message attachment.
type Attachment struct {
	Title    string `json:"title,omitempty"`
	Text     string `json:"text,omitempty"`
	Fallback string `json:"fallback,omitempty"`
}

// mapped reports whether the adapter has a mapping for Slack event type t:
// a catalog entry of its own. Events of other types carry a bounded copy of
// the event in data.event.
func mapped(t string) bool {
	return slices.ContainsFunc(entries, func(e entry) bool { return !e.generic && e.slackType == t })
}

// eventType returns the event type of a Slack event of type t and subtype
// sub: "slack.<t>", and "slack.message.<sub>" for a message with a
// subtype.
func eventType(t, sub string) string {
	out := "slack." + adapters.Segment(t)
	if t == "message" && sub != "" {
		out += "." + adapters.Segment(sub)
	}
	return out
}

// event turns an event_callback into an event; now stamps it when its
// event_time is unusable.
func (a *Adapter) event(req *request, now time.Time) (mcpe.Event, error) {
	ev := object(req.event)
	d := Data{
		TeamID:       req.teamID,
		EnterpriseID: req.enterpriseID,
		APIAppID:     req.apiAppID,
	}
	d.read(ev)
	if !mapped(d.Type) {
		var cut bool
		d.Event, cut = boundedCopy(ev)
		d.Truncated = d.Truncated || cut
	}
	raw, err := adapters.EncodeJSON(d)
	if err != nil {
		return mcpe.Event{}, fmt.Errorf("event could not be encoded: %v", err)
	}

	ts := now
	if req.eventTime > 0 {
		ts = time.Unix(req.eventTime, 0)
	}
	channel := d.Channel
	if channel == "" && d.Item != nil {
		channel = d.Item.Channel
	}
	var tags []string
	for _, t := range []struct{ name, value string }{
		{"channel", channel},
		{"user", d.User},
		{"team", d.TeamID},
		{"channel_type", d.ChannelType},
	} {
		if t.value != "" {
			tags = append(tags, t.name+":"+t.value)
		}
	}
	return mcpe.Event{
		Type: eventType(d.Type, d.Subtype),
		Data: raw,
		Metadata: mcpe.Metadata{
			SourceEventID: req.eventID,
			Timestamp:     ts.UTC(),
			Priority:      priority(&d),
			Tags:          adapters.Tags(tags...),
		},
	}, nil
}

// humanMessageSubtypes are the message subtypes a person posts: a plain
// message, and one with a file.
var humanMessageSubtypes = map[string]bool{"": true, "file_share": true}

// priority is high for a person mentioning the app (app_mention) and for a
// person's direct message to it (a message without subtype, or with
// file_share, in an im), and normal for everything else, including
// whatever a bot posts.
func priority(d *Data) mcpe.Priority {
	switch {
	case d.BotID != "":
		return mcpe.PriorityNormal
	case d.Type == "app_mention", d.Type == "message" && d.ChannelType == "im" && humanMessageSubtypes[d.Subtype]:
		return mcpe.PriorityHigh
	}
	return mcpe.PriorityNormal
}

// read fills d from the inner event ev.
func (d *Data) read(ev object) {
	d.Type = ev.str("type", maxNameBytes)
	d.Subtype = ev.str("subtype", maxNameBytes)
	d.User = cmp.Or(ev.id("user"), ev.str("user_id", maxIDBytes))
	d.readChannel(ev)
	d.ChannelType = channelType(ev.str("channel_type", maxIDBytes))
	d.Inviter = ev.id("inviter")
	d.EventTS = ev.str("event_ts", maxIDBytes)
	d.Reaction = ev.str("reaction", maxNameBytes)
	d.ItemUser = ev.id("item_user")
	d.Item = readItem(ev.obj("item"))
	d.FileID = ev.str("file_id", maxIDBytes)
	d.readMessage(ev)

	if d.Type != "message" {
		return
	}
	switch d.Subtype {
	case "message_changed":
		// The event is the change; the edited message is in "message".
		if m := ev.obj("message"); m != nil {
			d.User = m.id("user")
			d.readMessage(m)
		}
		if p := ev.obj("previous_message"); p != nil {
			d.PreviousText = d.cut(p.rawString("text"), MaxTextBytes)
		}
	case "message_deleted":
		p := ev.obj("previous_message")
		if p != nil {
			d.User = p.id("user")
			d.readMessage(p)
			d.PreviousText, d.Text = d.Text, ""
		}
		d.TS = cmp.Or(ev.str("deleted_ts", maxIDBytes), d.TS)
	}
}

// readChannel reads the channel, which is an ID for most events, an object
// for channel_created and channel_rename, and channel_id for pins and
// files.
func (d *Data) readChannel(ev object) {
	if c := ev.obj("channel"); c != nil {
		d.Channel = c.str("id", maxIDBytes)
		d.ChannelName = c.str("name", maxNameBytes)
		d.User = cmp.Or(d.User, c.id("creator"))
		return
	}
	d.Channel = cmp.Or(ev.str("channel", maxIDBytes), ev.str("channel_id", maxIDBytes))
}

// readMessage reads the fields of a message object (the event itself, or
// the message inside message_changed and message_deleted).
func (d *Data) readMessage(m object) {
	d.BotID = m.str("bot_id", maxIDBytes)
	d.Username = m.str("username", maxNameBytes)
	d.Text = d.cut(m.rawString("text"), MaxTextBytes)
	d.TS = m.str("ts", maxIDBytes)
	d.ThreadTS = m.str("thread_ts", maxIDBytes)
	d.ParentUserID = m.id("parent_user_id")
	d.Edited = nil
	if e := m.obj("edited"); e != nil {
		ed := Edited{User: e.id("user"), TS: e.str("ts", maxIDBytes)}
		if ed != (Edited{}) {
			d.Edited = &ed
		}
	}
	d.Files = list(d, m["files"], MaxFiles, func(f object) File {
		return File{ID: f.str("id", maxIDBytes), Name: d.cut(f.rawString("name"), maxNameBytes)}
	})
	d.Attachments = list(d, m["attachments"], MaxAttachments, func(o object) Attachment {
		return Attachment{
			Title:    d.cut(o.rawString("title"), MaxAttachmentTextBytes),
			Text:     d.cut(o.rawString("text"), MaxAttachmentTextBytes),
			Fallback: d.cut(o.rawString("fallback"), MaxAttachmentTextBytes),
		}
	})
}

// cut cuts s to max bytes, noting a cut in d.Truncated.
func (d *Data) cut(s string, max int) string {
	out := adapters.Clip(s, max)
	d.Truncated = d.Truncated || len(out) != len(s)
	return out
}

// list reads the objects among the items of the array raw with read,
// keeping at most max of those that are not empty and noting a cut.
func list[T comparable](d *Data, raw json.RawMessage, max int, read func(object) T) []T {
	var out []T
	var empty T
	for _, it := range array(raw) {
		if len(out) == max {
			d.Truncated = true
			break
		}
		if o := decodeObject(it); o != nil {
			if v := read(o); v != empty {
				out = append(out, v)
			}
		}
	}
	return out
}

func readItem(o object) *Item {
	if o == nil {
		return nil
	}
	it := Item{
		Type:        o.str("type", maxNameBytes),
		Channel:     o.str("channel", maxIDBytes),
		TS:          o.str("ts", maxIDBytes),
		File:        o.id("file"),
		FileComment: o.id("file_comment"),
	}
	if it.TS == "" {
		// A pinned message comes whole in the item.
		it.TS = o.obj("message").str("ts", maxIDBytes)
	}
	if it == (Item{}) {
		return nil
	}
	return &it
}

// channelType spells the channel types of member_joined_channel and
// member_left_channel ("C" for public, "G" for private) as messages do.
func channelType(s string) string {
	switch s {
	case "C":
		return "channel"
	case "G":
		return "group"
	}
	return s
}

// object is a JSON object by field, read leniently: a field of an
// unexpected shape reads as missing, since Slack's fields vary by event
// type.
type object map[string]json.RawMessage

// decodeObject returns raw as an object, or nil when it is not one.
func decodeObject(raw json.RawMessage) object { return decodeAs[object](raw, '{') }

// array returns raw as the items of an array, or nil when it is not one.
func array(raw json.RawMessage) []json.RawMessage { return decodeAs[[]json.RawMessage](raw, '[') }

// decodeAs returns raw decoded as T when it starts with open ('{' or '['),
// else the zero T.
func decodeAs[T any](raw json.RawMessage, open byte) T {
	var v, zero T
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != open || json.Unmarshal(raw, &v) != nil {
		return zero
	}
	return v
}

// rawString returns field key when it is a string, else "".
func (o object) rawString(key string) string { return decodeAs[string](o[key], '"') }

// str returns field key when it is a string, cut to max bytes.
func (o object) str(key string, max int) string { return adapters.Clip(o.rawString(key), max) }

// id returns field key when it is a string, or the "id" of it when it is
// an object (team_join and user_change send the user whole).
func (o object) id(key string) string {
	if s := o.str(key, maxIDBytes); s != "" {
		return s
	}
	if inner := o.obj(key); inner != nil {
		return inner.str("id", maxIDBytes)
	}
	return ""
}

// obj returns field key when it is an object, else nil.
func (o object) obj(key string) object { return decodeObject(o[key]) }
