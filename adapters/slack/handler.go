package slack

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// ServeHTTP receives one Events API request on POST /adapters/slack. The
// signature is checked before anything else is read from the body.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpapi.WriteError(w, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, fmt.Sprintf("use POST, not %s", r.Method))
		return
	}
	now := a.shared.Clock.Now()
	retry := retryAttrs(r.Header)
	s, reqErr := a.checkHeaders(r.Header, now)
	if reqErr != nil {
		a.refuse(w, reqErr, retry)
		return
	}
	// Refusals of the body (too large, unreadable) would be the same on a
	// retry.
	w.Header().Set(HeaderNoRetry, "1")
	body, ok := adapters.ReadBody(w, r, a.maxBody)
	if !ok {
		a.shared.Logger.Warn("slack request refused: unreadable or too large body", "max_body_bytes", a.maxBody)
		return
	}
	w.Header().Del(HeaderNoRetry)
	if reqErr := a.checkSignature(s, body); reqErr != nil {
		a.refuse(w, reqErr, retry)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		a.refuse(w, &httpapi.RequestError{
			Status: http.StatusUnsupportedMediaType,
			Code:   httpapi.CodeUnsupportedMedia,
			Message: "this endpoint receives the Events API, which posts JSON with \"Content-Type: application/json\"; " +
				"slash commands and interactive components post forms and need Request URLs of their own",
		}, retry)
		return
	}
	req, reqErr := decode(body)
	if reqErr != nil {
		a.refuse(w, reqErr, retry)
		return
	}

	switch req.kind {
	case typeURLVerification:
		a.shared.Logger.Info("slack verified the Request URL")
		// Slack's documentation answers the challenge in plain text first.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, req.challenge)
	case typeAppRateLimited:
		args := []any{"team_id", req.teamID, "api_app_id", req.apiAppID, "limit", "30,000 events per workspace per hour", "effect", "the events of that minute are not sent"}
		if req.minuteRateLimited > 0 {
			args = append(args, "minute_rate_limited", time.Unix(req.minuteRateLimited, 0).UTC().Format(time.RFC3339))
		}
		a.shared.Logger.Warn("slack is rate limiting this app's events", args...)
		httpapi.WriteJSON(w, http.StatusOK, adapters.Accepted{IDs: []string{}})
	default: // typeEventCallback
		a.publish(w, r, req, now, retry)
	}
}

// publish turns an event_callback into an event and publishes it.
func (a *Adapter) publish(w http.ResponseWriter, r *http.Request, req *request, now time.Time, retry []any) {
	ev, err := a.event(req, now)
	if err != nil {
		a.shared.Logger.Error("convert slack event", "slack_event_id", req.eventID, "error", err)
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.CodeInternal, "the event could not be converted")
		return
	}
	pr, err := a.shared.Publisher.Publish(r.Context(), ev)
	if err != nil {
		var invalid *mcpe.InvalidError
		if errors.As(err, &invalid) {
			a.refuse(w, httpapi.BadRequest("event %s was refused: %v", req.eventID, err), retry)
			return
		}
		// Answer 5xx (or 429) so that Slack retries; a retry of an event
		// that was stored after all is recognised by its event_id.
		if httpapi.RetryLater(w, err) {
			a.shared.Logger.Warn("slack event not accepted now; Slack retries it", append([]any{"slack_event_id", req.eventID, "error", err}, retry...)...)
			return
		}
		a.shared.Logger.Error("publish slack event", append([]any{"slack_event_id", req.eventID, "type", ev.Type, "error", err}, retry...)...)
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.CodeInternal,
			fmt.Sprintf("event %s could not be stored; Slack retries it, and a retry of an event already stored is recognised by its event_id", req.eventID))
		return
	}
	a.shared.Logger.Debug("slack event accepted", append([]any{"slack_event_id", req.eventID, "event_id", pr.EventID, "type", ev.Type,
		"duplicate", pr.Duplicate, "deliveries", len(pr.Delivered)}, retry...)...)
	res := adapters.Accepted{IDs: []string{pr.EventID}}
	if pr.Duplicate {
		res.Duplicates = 1
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// refuse logs and writes a refusal. A 4xx other than 401 also asks Slack
// not to retry, since a retry would be refused the same way; after a 401
// a retry may succeed once the secret or the clock is set right.
func (a *Adapter) refuse(w http.ResponseWriter, e *httpapi.RequestError, retry []any) {
	a.shared.Logger.Warn("slack request refused", append([]any{"status", e.Status, "error", e.Message}, retry...)...)
	if e.Status != http.StatusUnauthorized && e.Status < 500 {
		w.Header().Set(HeaderNoRetry, "1")
	}
	e.Write(w)
}

// retryAttrs are the log attributes of a retry by Slack: its number and
// reason, when the request is one.
func retryAttrs(h http.Header) []any {
	num := h.Get(HeaderRetryNum)
	if num == "" {
		return nil
	}
	return []any{"retry_num", adapters.Clip(num, 16), "retry_reason", adapters.Clip(h.Get(HeaderRetryReason), 64)}
}
