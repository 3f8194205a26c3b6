package slack

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// The outer types of Events API requests.
const (
	typeEventCallback   = "event_callback"
	typeURLVerification = "url_verification"
	typeAppRateLimited  = "app_rate_limited"
)

// outerTypesText lists the outer types for error messages.
const outerTypesText = `"event_callback" (an event), "url_verification" (the Request URL check) or "app_rate_limited"`

// request is a decoded Events API body.
type request struct {
	// kind is the outer type: event_callback, url_verification or
	// app_rate_limited.
	kind string

	// challenge is the string a url_verification asks to be echoed.
	challenge string

	teamID       string
	enterpriseID string
	apiAppID     string

	// eventID identifies an event_callback across Slack's retries.
	eventID string
	// eventTime is the callback's event_time, in Unix seconds; zero when
	// it is missing or unusable.
	eventTime int64
	// event is the inner event, by field; its "type" is a non-empty
	// string.
	event map[string]json.RawMessage

	// minuteRateLimited is when an app_rate_limited period began (Unix
	// seconds), zero when unknown.
	minuteRateLimited int64
}

// decode parses an Events API body. Fields it does not use (token,
// authorizations, authed_users, event_context, is_ext_shared_channel, and
// whatever Slack adds later) are ignored, whatever their shape.
func decode(body []byte) (*request, *httpapi.RequestError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, httpapi.BadRequest("the body is empty; send an Events API request: a JSON object with \"type\": %s", outerTypesText)
	}
	if trimmed[0] != '{' {
		return nil, httpapi.BadRequest("the body must be a JSON object (an Events API request with \"type\": %s), not %s", outerTypesText, mcpe.DescribeJSON(trimmed))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, httpapi.BadRequest("the body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	var req request
	raw, ok := fields["type"]
	if !ok || adapters.IsNull(raw) {
		return nil, httpapi.BadRequest("type is missing; an Events API request has \"type\": %s", outerTypesText)
	}
	if json.Unmarshal(raw, &req.kind) != nil {
		return nil, httpapi.BadRequest("type is %s; it must be the string %s", mcpe.DescribeJSON(raw), outerTypesText)
	}

	var err *httpapi.RequestError
	switch req.kind {
	case typeURLVerification:
		req.challenge, err = challenge(fields)
	case typeAppRateLimited:
		if req.teamID, err = adapters.StringField(fields, "team_id", maxIDBytes); err != nil {
			return nil, err
		}
		if req.apiAppID, err = adapters.StringField(fields, "api_app_id", maxIDBytes); err != nil {
			return nil, err
		}
		req.minuteRateLimited, _ = unixSeconds(fields["minute_rate_limited"])
	case typeEventCallback:
		err = req.callback(fields)
	default:
		return nil, httpapi.BadRequest("type %q is not an Events API request; this endpoint receives %s. "+
			"Point only the app's Event Subscriptions Request URL here, not its Interactivity or Slash Commands URLs",
			adapters.Clip(req.kind, 64), outerTypesText)
	}
	if err != nil {
		return nil, err
	}
	return &req, nil
}

// challenge returns the challenge of a url_verification request.
func challenge(fields map[string]json.RawMessage) (string, *httpapi.RequestError) {
	raw, ok := fields["challenge"]
	if !ok || adapters.IsNull(raw) {
		return "", httpapi.BadRequest("challenge is missing; a url_verification request carries the challenge string to echo")
	}
	var c string
	if json.Unmarshal(raw, &c) != nil {
		return "", httpapi.BadRequest("challenge is %s; it must be a string", mcpe.DescribeJSON(raw))
	}
	switch {
	case c == "":
		return "", httpapi.BadRequest("challenge is empty; a url_verification request carries the challenge string to echo")
	case len(c) > maxChallengeBytes:
		return "", httpapi.BadRequest("challenge is %d bytes long; at most %d are accepted", len(c), maxChallengeBytes)
	case strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", httpapi.BadRequest("challenge contains control characters; Slack's challenges are printable text")
	}
	return c, nil
}

// callback reads the fields of an event_callback.
func (req *request) callback(fields map[string]json.RawMessage) *httpapi.RequestError {
	var err *httpapi.RequestError
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"team_id", &req.teamID},
		{"enterprise_id", &req.enterpriseID},
		{"api_app_id", &req.apiAppID},
	} {
		if *f.dst, err = adapters.StringField(fields, f.name, maxIDBytes); err != nil {
			return err
		}
	}

	raw, ok := fields["event_id"]
	if !ok || adapters.IsNull(raw) {
		return httpapi.BadRequest("event_id is missing; every event_callback carries one, such as \"Ev08MFMKH6A\", and it is what makes Slack's retries count once")
	}
	if json.Unmarshal(raw, &req.eventID) != nil {
		return httpapi.BadRequest("event_id is %s; it must be a string such as \"Ev08MFMKH6A\"", mcpe.DescribeJSON(raw))
	}
	switch {
	case strings.TrimSpace(req.eventID) == "":
		return httpapi.BadRequest("event_id is empty; every event_callback carries one, such as \"Ev08MFMKH6A\"")
	case len(req.eventID) > mcpe.MaxSourceIDLength:
		return httpapi.BadRequest("event_id is %d bytes long; at most %d are accepted", len(req.eventID), mcpe.MaxSourceIDLength)
	}
	req.eventTime, _ = unixSeconds(fields["event_time"])

	raw, ok = fields["event"]
	if !ok || adapters.IsNull(raw) {
		return httpapi.BadRequest("event is missing; an event_callback carries the event as an object, such as {\"type\": \"message\", ...}")
	}
	raw = bytes.TrimSpace(raw)
	if raw[0] != '{' || json.Unmarshal(raw, &req.event) != nil {
		return httpapi.BadRequest("event is %s; it must be an object, such as {\"type\": \"message\", ...}", mcpe.DescribeJSON(raw))
	}
	t, ok := req.event["type"]
	if !ok || adapters.IsNull(t) {
		return httpapi.BadRequest("event.type is missing; an event names its type, such as \"message\" or \"app_mention\"")
	}
	var typ string
	if json.Unmarshal(t, &typ) != nil {
		return httpapi.BadRequest("event.type is %s; it must be a string such as \"message\"", mcpe.DescribeJSON(t))
	}
	if strings.TrimSpace(typ) == "" {
		return httpapi.BadRequest("event.type is empty; an event names its type, such as \"message\" or \"app_mention\"")
	}
	return nil
}

// maxUnixSeconds is 9999-12-31T23:59:59Z, the last second RFC 3339 can
// write.
const maxUnixSeconds = 253402300799

// unixSeconds reads a JSON whole number of seconds after 1970 that RFC 3339
// can write; ok is false for anything else (a string, a fraction,
// microseconds).
func unixSeconds(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	var n json.Number
	// json.Number also takes a quoted number; Slack's times are bare.
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	v, err := n.Int64()
	if err != nil || v <= 0 || v > maxUnixSeconds {
		return 0, false
	}
	return v, true
}
