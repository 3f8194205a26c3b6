// Package slack receives the Slack Events API on POST /adapters/slack and
// publishes one event per Slack event through the same
// subscriptions.Publisher as POST /v1/events, so validation, dedup and
// routing are the same as for every other way in.
//
// # Verification
//
// Every request must carry X-Slack-Request-Timestamp (Unix seconds) and
// X-Slack-Signature: "v0=" and the hex HMAC-SHA256, keyed with the app's
// signing secret, of "v0:<timestamp>:<raw body>". The headers are checked
// before the body is read, and the MAC, compared in constant time, before
// the body is parsed. A missing, repeated or malformed header, a timestamp
// that is not whole seconds in ASCII digits or is more than
// Tolerance (5 minutes) from the clock in either direction, and a
// wrong MAC are answered 401 with a JSON refusal, and nothing is published.
//
// # Requests
//
//   - url_verification (sent when the Request URL is saved): answered 200
//     with the challenge as text/plain, the first answer Slack's
//     documentation gives.
//   - event_callback: one event, answered 200 {"ids": [id]}, or {"ids":
//     [first id], "duplicates": 1} for an event accepted before.
//   - app_rate_limited (Slack stopped sending events for a minute because
//     the app received more than 30,000 in an hour from a workspace):
//     logged as a warning, answered 200 {"ids": []}, nothing published.
//   - any other type: 400 naming the three above. Interactivity and slash
//     command requests, which are forms, are answered 415.
//
// # Mapping of event_callback
//
//   - type: "slack.<event.type>" made into a segment by adapters.Segment
//     (slack.app_mention, slack.reaction_added,
//     slack.member_joined_channel, slack.channel_created, ...). A message
//     with a subtype is "slack.message.<subtype>"
//     (slack.message.message_changed, slack.message.message_deleted,
//     slack.message.bot_message, slack.message.channel_join, ...), so that
//     slack.message is only the new messages people and apps post, which
//     is what most subscribers want; slack.message.* matches the variants
//     and slack.message* all of them.
//   - metadata.sourceEventId: event_id. Slack retries an event it got no
//     2xx for within 3 seconds (X-Slack-Retry-Num 1 to 3), with the same
//     event_id, so a retry is accepted once within the server's dedup
//     window, and answered as a duplicate. Retries are not dropped on
//     sight: the first attempt may have failed before it was stored.
//   - metadata.timestamp: event_time when it is a plausible number of Unix
//     seconds, else the time of receipt.
//   - metadata.tags: "channel:<id>", "user:<id>", "team:<team_id>" and
//     "channel_type:<type>", each when the event has it. The channel of a
//     reaction is that of the item reacted to. channel_type "C" and "G"
//     (member_joined_channel, member_left_channel) are spelled "channel"
//     and "group", as in messages.
//   - metadata.priority: high for app_mention and for a person's direct
//     message to the app (a message in channel_type "im" with no subtype
//     or file_share); normal for anything a bot posted (bot_id present)
//     and for every other event.
//   - data (type Data): team_id, enterprise_id, api_app_id, type,
//     subtype, user, bot_id, username, channel, channel_name, channel_type,
//     inviter, text, previous_text, ts, thread_ts, parent_user_id,
//     event_ts, edited, reaction, item_user, item {type, channel, ts, file,
//     file_comment}, file_id, files [{id, name}] and attachments [{title,
//     text, fallback}], each when Slack sent it. For message_changed, user,
//     text and ts are the edited message's and previous_text the old
//     text; for message_deleted, user and ts are the deleted message's and
//     previous_text its text. Events of types without a mapping of their
//     own (see Catalog) also carry data.event, a copy of Slack's event at
//     most MaxEventDepth levels deep and MaxEventBytes long.
//
// Sizes are bounded: text and previous_text are cut to MaxTextBytes,
// attachment texts to MaxAttachmentTextBytes and file names to 256 bytes,
// and at most MaxFiles files and MaxAttachments attachments are kept; a
// cut text ends in "…", and data.truncated is true. IDs and timestamps
// are cut to 128 bytes and channel names to 256, far more than Slack
// sends.
//
// # Answers
//
// Slack counts any 2xx within 3 seconds as delivered and retries anything
// else. 200 is the answer to everything accepted; 400 (a body that is not
// an Events API request), 413 (body over 1 MiB) and 415
// carry X-Slack-No-Retry: 1, since a retry would be refused the same way;
// 401 does not, so that retries pass once the secret or the clock is set
// right; 405 answers anything but POST; 500 (the event could not be
// stored) lets Slack retry.
package slack
