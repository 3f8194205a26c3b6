package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// publishOne posts an event_callback with the inner event and returns the
// event published.
func publishOne(t *testing.T, body []byte) mcpe.Event {
	t.Helper()
	a, pub, _ := newTestAdapter(t, nil)
	w := post(a, body)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d; body %s", w.Code, w.Body)
	}
	evs := pub.Published()
	if len(evs) != 1 {
		t.Fatalf("%d events published, want 1", len(evs))
	}
	return evs[0]
}

// dataOf decodes an event's data.
func dataOf(t *testing.T, ev mcpe.Event) Data {
	t.Helper()
	var d Data
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEventType(t *testing.T) {
	tests := []struct {
		event string
		want  string
	}{
		{`{"type": "message", "text": "hi"}`, "slack.message"},
		{`{"type": "message", "subtype": ""}`, "slack.message"},
		{`{"type": "message", "subtype": null}`, "slack.message"},
		{`{"type": "message", "subtype": "message_changed"}`, "slack.message.message_changed"},
		{`{"type": "message", "subtype": "bot_message"}`, "slack.message.bot_message"},
		{`{"type": "message", "subtype": "thread_broadcast"}`, "slack.message.thread_broadcast"},
		{`{"type": "message", "subtype": "odd sub.type!"}`, "slack.message.odd_sub_type"},
		{`{"type": "message", "subtype": 7}`, "slack.message"},
		{`{"type": "app_mention"}`, "slack.app_mention"},
		// Only messages take their subtype into the type.
		{`{"type": "emoji_changed", "subtype": "add"}`, "slack.emoji_changed"},
		{`{"type": "reaction_added"}`, "slack.reaction_added"},
		{`{"type": "member_joined_channel"}`, "slack.member_joined_channel"},
		{`{"type": "channel_created"}`, "slack.channel_created"},
		{`{"type": "function_executed"}`, "slack.function_executed"},
		{`{"type": "a.b c"}`, "slack.a_b_c"},
		{`{"type": "ünïcödé"}`, "slack.n_c_d"},
		{`{"type": "` + strings.Repeat("x", 300) + `", "subtype": "` + strings.Repeat("y", 300) + `"}`, "slack." + strings.Repeat("x", 64)},
		{`{"type": "message", "subtype": "` + strings.Repeat("y", 300) + `"}`, "slack.message." + strings.Repeat("y", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := publishOne(t, callback(tt.event)).Type; got != tt.want {
				t.Errorf("type of %s = %q, want %q", tt.event, got, tt.want)
			}
		})
	}
}

func TestPriority(t *testing.T) {
	tests := []struct {
		name  string
		event string
		want  mcpe.Priority
	}{
		{"mention", `{"type": "app_mention", "user": "U1", "channel": "C1", "text": "<@U0APP> hi"}`, "high"},
		{"mention by a bot", `{"type": "app_mention", "bot_id": "B1", "channel": "C1", "text": "<@U0APP> hi"}`, "normal"},
		{"direct message", `{"type": "message", "user": "U1", "channel": "D1", "channel_type": "im", "text": "hi"}`, "high"},
		{"direct message with a file", `{"type": "message", "subtype": "file_share", "user": "U1", "channel": "D1", "channel_type": "im", "files": [{"id": "F1"}]}`, "high"},
		{"direct message from a bot", `{"type": "message", "user": "U0APP", "bot_id": "B1", "channel": "D1", "channel_type": "im", "text": "hi"}`, "normal"},
		{"bot_message in a DM", `{"type": "message", "subtype": "bot_message", "bot_id": "B1", "channel": "D1", "channel_type": "im"}`, "normal"},
		{"edit in a DM", `{"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im", "message": {"user": "U1", "text": "hi!"}}`, "normal"},
		{"deletion in a DM", `{"type": "message", "subtype": "message_deleted", "channel": "D1", "channel_type": "im", "previous_message": {"user": "U1"}}`, "normal"},
		{"edit in a DM of a bot's message", `{"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im", "message": {"bot_id": "B1", "text": "hi!"}}`, "normal"},
		{"channel message", `{"type": "message", "user": "U1", "channel": "C1", "channel_type": "channel", "text": "hi"}`, "normal"},
		{"group DM", `{"type": "message", "user": "U1", "channel": "G1", "channel_type": "mpim", "text": "hi"}`, "normal"},
		{"private channel", `{"type": "message", "user": "U1", "channel": "G1", "channel_type": "group", "text": "hi"}`, "normal"},
		{"app home message", `{"type": "message", "user": "U1", "channel": "D1", "channel_type": "app_home", "text": "hi"}`, "normal"},
		{"reaction in a DM", `{"type": "reaction_added", "user": "U1", "reaction": "eyes", "item": {"type": "message", "channel": "D1", "ts": "1.2"}}`, "normal"},
		{"other event", `{"type": "team_join", "user": {"id": "U1"}}`, "normal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := publishOne(t, callback(tt.event)).Metadata.Priority; got != tt.want {
				t.Errorf("priority = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTimestamp(t *testing.T) {
	tests := []struct {
		eventTime string
		want      time.Time
	}{
		{`1748865600`, time.Unix(1748865600, 0)},
		{`1`, time.Unix(1, 0)},
		{`253402300799`, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		// Unusable: the time of receipt.
		{`253402300800`, t0},
		{`1515449522000016`, t0}, // microseconds, as in Slack's app_mention example
		{`0`, t0},
		{`-1748865600`, t0},
		{`1748865600.5`, t0},
		{`1.7488656e9`, t0},
		{`"1748865600"`, t0},
		{`null`, t0},
		{`true`, t0},
		{`{}`, t0},
		{`99999999999999999999999`, t0},
	}
	for _, tt := range tests {
		t.Run(tt.eventTime, func(t *testing.T) {
			body := []byte(`{"type": "event_callback", "event_id": "Ev1", "event_time": ` + tt.eventTime + `, "event": {"type": "message"}}`)
			if got := publishOne(t, body).Metadata.Timestamp; !got.Equal(tt.want) {
				t.Errorf("timestamp = %v, want %v", got, tt.want)
			}
		})
	}
	// No event_time at all.
	if got := publishOne(t, []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}}`)).Metadata.Timestamp; !got.Equal(t0) {
		t.Errorf("timestamp without event_time = %v, want %v", got, t0)
	}
}

func TestTags(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		want  []string
		check func(t *testing.T, d Data)
	}{
		{
			name: "message",
			body: callback(`{"type": "message", "user": "U1", "channel": "C1", "channel_type": "channel"}`),
			want: []string{"channel:C1", "user:U1", "team:T0C0ACME01", "channel_type:channel"},
		},
		{
			name: "reaction: the item's channel",
			body: callback(`{"type": "reaction_added", "user": "U1", "reaction": "eyes", "item": {"type": "message", "channel": "C9", "ts": "1.2"}}`),
			want: []string{"channel:C9", "user:U1", "team:T0C0ACME01"},
		},
		{
			name: "member_joined_channel: C is a channel",
			body: callback(`{"type": "member_joined_channel", "user": "U1", "channel": "C1", "channel_type": "C"}`),
			want: []string{"channel:C1", "user:U1", "team:T0C0ACME01", "channel_type:channel"},
		},
		{
			name: "member_left_channel: G is a group",
			body: callback(`{"type": "member_left_channel", "user": "U1", "channel": "G1", "channel_type": "G"}`),
			want: []string{"channel:G1", "user:U1", "team:T0C0ACME01", "channel_type:group"},
		},
		{
			name: "pin: channel_id",
			body: callback(`{"type": "pin_added", "user": "U1", "channel_id": "C2", "item": {"type": "message", "message": {"ts": "1.2"}}}`),
			want: []string{"channel:C2", "user:U1", "team:T0C0ACME01"},
			check: func(t *testing.T, d Data) {
				if d.Item == nil || d.Item.TS != "1.2" {
					t.Errorf("item = %+v; want the pinned message's ts", d.Item)
				}
			},
		},
		{
			name: "file_shared: channel_id and user_id",
			body: callback(`{"type": "file_shared", "channel_id": "C3", "user_id": "U3", "file_id": "F3", "file": {"id": "F3"}}`),
			want: []string{"channel:C3", "user:U3", "team:T0C0ACME01"},
		},
		{
			name: "team_join: the user object",
			body: callback(`{"type": "team_join", "user": {"id": "U4", "name": "dana"}}`),
			want: []string{"user:U4", "team:T0C0ACME01"},
		},
		{
			name: "channel_created: the creator",
			body: callback(`{"type": "channel_created", "channel": {"id": "C5", "name": "x", "creator": "U5"}}`),
			want: []string{"channel:C5", "user:U5", "team:T0C0ACME01"},
		},
		{
			name: "no team",
			body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message", "channel": "C1"}}`),
			want: []string{"channel:C1"},
		},
		{
			name: "control characters and long IDs",
			body: callback(`{"type": "message", "user": "U1\u0000\n", "channel": "` + strings.Repeat("C", 300) + `"}`),
			want: []string{"channel:" + strings.Repeat("C", mcpe.MaxTagLength-len("channel:")), "user:U1", "team:T0C0ACME01"},
			check: func(t *testing.T, d Data) {
				if len(d.Channel) > maxIDBytes {
					t.Errorf("channel kept %d bytes; at most %d", len(d.Channel), maxIDBytes)
				}
			},
		},
		{
			name: "nothing to tag",
			body: []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "tokens_revoked"}}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := publishOne(t, tt.body)
			if diff := cmp.Diff(tt.want, ev.Metadata.Tags); diff != "" {
				t.Errorf("tags mismatch (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, dataOf(t, ev))
			}
		})
	}
}

// Fields of an unexpected shape read as missing, never as a refusal: Slack
// varies them by event type.
func TestLenientFields(t *testing.T) {
	manyFiles := make([]string, MaxFiles+3)
	for i := range manyFiles {
		manyFiles[i] = fmt.Sprintf(`{"id": "F%d", "name": "f%d.txt", "url_private": "https://files.slack.com/f%d"}`, i, i, i)
	}
	manyAttachments := make([]string, MaxAttachments+1)
	for i := range manyAttachments {
		manyAttachments[i] = fmt.Sprintf(`{"fallback": "a%d"}`, i)
	}
	tests := []struct {
		name  string
		event string
		want  Data
	}{
		{
			name:  "user as a number, channel as an array, text as an object",
			event: `{"type": "message", "user": 7, "channel": ["C1"], "text": {"a": 1}, "ts": 1.5}`,
			want:  Data{Type: "message"},
		},
		{
			name:  "files not an array, attachments not objects",
			event: `{"type": "message", "files": {"id": "F1"}, "attachments": [1, "x", null, {}], "edited": "yes", "item": []}`,
			want:  Data{Type: "message"},
		},
		{
			name:  "files: other items skipped, names and ids only",
			event: `{"type": "message", "subtype": "file_share", "files": [null, 3, {"id": "F1", "name": "a.log", "size": 12, "url_private": "https://files.slack.com/x"}, {"mode": "tombstone"}]}`,
			want:  Data{Type: "message", Subtype: "file_share", Files: []File{{ID: "F1", Name: "a.log"}}},
		},
		{
			name:  "too many files and attachments",
			event: `{"type": "message", "files": [` + strings.Join(manyFiles, ",") + `], "attachments": [` + strings.Join(manyAttachments, ",") + `]}`,
			want: func() Data {
				d := Data{Type: "message", Truncated: true}
				for i := range MaxFiles {
					d.Files = append(d.Files, File{ID: fmt.Sprintf("F%d", i), Name: fmt.Sprintf("f%d.txt", i)})
				}
				for i := range MaxAttachments {
					d.Attachments = append(d.Attachments, Attachment{Fallback: fmt.Sprintf("a%d", i)})
				}
				return d
			}(),
		},
		{
			name:  "message_changed without message",
			event: `{"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "2.0", "message": "gone"}`,
			want:  Data{Type: "message", Subtype: "message_changed", Channel: "C1", TS: "2.0"},
		},
		{
			name:  "message_deleted without previous_message",
			event: `{"type": "message", "subtype": "message_deleted", "channel": "C1", "ts": "2.0", "deleted_ts": "1.0"}`,
			want:  Data{Type: "message", Subtype: "message_deleted", Channel: "C1", TS: "1.0"},
		},
		{
			name:  "message_changed of a bot's message with attachments and files",
			event: `{"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "2.0", "event_ts": "2.0", "message": {"bot_id": "B1", "username": "ci", "text": "build passed", "ts": "1.0", "thread_ts": "0.5", "attachments": [{"title": "#42"}], "files": [{"id": "F1"}]}, "previous_message": {"text": "build running"}}`,
			want: Data{Type: "message", Subtype: "message_changed", Channel: "C1", BotID: "B1", Username: "ci", Text: "build passed",
				PreviousText: "build running", TS: "1.0", ThreadTS: "0.5", EventTS: "2.0", Attachments: []Attachment{{Title: "#42"}}, Files: []File{{ID: "F1"}}},
		},
		{
			name:  "long previous_text",
			event: `{"type": "message", "subtype": "message_changed", "message": {"text": "short"}, "previous_message": {"text": "` + strings.Repeat("é", MaxTextBytes) + `"}}`,
			want:  Data{Type: "message", Subtype: "message_changed", Text: "short", PreviousText: strings.Repeat("é", (MaxTextBytes-3)/2) + "…", Truncated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dataOf(t, publishOne(t, callback(tt.event)))
			tt.want.TeamID, tt.want.APIAppID = "T0C0ACME01", "A0C5APP0001"
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("data mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTextTruncated(t *testing.T) {
	for _, tt := range []struct {
		name      string
		text      string
		wantBytes int
		wantCut   bool
	}{
		{"at the limit", strings.Repeat("a", MaxTextBytes), MaxTextBytes, false},
		{"one byte over", strings.Repeat("a", MaxTextBytes+1), MaxTextBytes, true},
		{"multi-byte runes over", strings.Repeat("日本", MaxTextBytes), MaxTextBytes - 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, _ := json.Marshal(tt.text)
			d := dataOf(t, publishOne(t, callback(`{"type": "message", "text": `+string(text)+`}`)))
			if len(d.Text) != tt.wantBytes || d.Truncated != tt.wantCut {
				t.Errorf("text of %d bytes, truncated %v; want %d bytes, truncated %v", len(d.Text), d.Truncated, tt.wantBytes, tt.wantCut)
			}
			if tt.wantCut && !strings.HasSuffix(d.Text, "…") {
				t.Errorf("a cut text does not end in …: %q", d.Text[len(d.Text)-8:])
			}
		})
	}
}

// Only unmapped event types carry a copy of the event.
func TestEventCopy(t *testing.T) {
	for _, typ := range []string{"message", "app_mention", "reaction_added", "channel_created", "pin_added", "file_shared"} {
		if d := dataOf(t, publishOne(t, callback(`{"type": "`+typ+`", "extra": {"a": 1}}`))); d.Event != nil {
			t.Errorf("%s carries data.event %s", typ, d.Event)
		}
	}
	d := dataOf(t, publishOne(t, callback(`{"type": "link_shared", "user": "U1", "channel": "C1", "links": [{"domain": "example.com", "url": "https://example.com/a"}], "message_ts": "1.2"}`)))
	want := `{"type":"link_shared","channel":"C1","links":[{"domain":"example.com","url":"https://example.com/a"}],"message_ts":"1.2","user":"U1"}`
	if string(d.Event) != want || d.Truncated {
		t.Errorf("data.event = %s (truncated %v), want %s", d.Event, d.Truncated, want)
	}
}
