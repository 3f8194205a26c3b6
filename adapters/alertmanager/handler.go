package alertmanager

import (
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Response is the body of a 202 answer.
type Response struct {
	adapters.Accepted
	// Errors are the alerts that were refused; a retry would refuse them
	// again.
	Errors []AlertError `json:"errors,omitempty"`
}

// AlertError says why one alert of a notification was refused.
type AlertError struct {
	// Index is the alert's position in the notification's alerts.
	Index int `json:"index"`
	// Alertname is the alert's alertname label, when it has one.
	Alertname string `json:"alertname,omitempty"`
	// Message says what was wrong.
	Message string `json:"message"`
}

// errorResponse is a 400 answer when every alert was refused: the usual
// refusal and the alerts' errors.
type errorResponse struct {
	httpapi.ErrorBody
	Errors []AlertError `json:"errors"`
}

// ServeHTTP receives one Alertmanager notification on POST
// /adapters/alertmanager.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpapi.WriteError(w, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, fmt.Sprintf("use POST, not %s", r.Method))
		return
	}
	if !a.authorized(w, r) {
		return
	}
	// Requiring JSON also makes a browser preflight the request, so a web
	// page cannot post alerts to a local server behind the user's back.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpapi.WriteError(w, http.StatusUnsupportedMediaType, httpapi.CodeUnsupportedMedia,
			"send the notification as JSON with \"Content-Type: application/json\", as Alertmanager's webhook_config does")
		return
	}
	body, ok := adapters.ReadBody(w, r, a.maxBody)
	if !ok {
		return
	}
	n, reqErr := decode(body)
	if reqErr != nil {
		a.shared.Logger.Warn("alertmanager notification refused", "status", reqErr.Status, "error", reqErr.Message)
		reqErr.Write(w)
		return
	}
	if n.truncatedAlerts > 0 {
		a.shared.Logger.Warn("alertmanager left alerts out of a notification", "receiver", n.receiver, "group_key", n.groupKey,
			"truncated_alerts", n.truncatedAlerts, "hint", "raise max_alerts in its webhook_config to receive them")
	}

	res := Response{Accepted: adapters.Accepted{IDs: []string{}}}
	results := a.convert(n)
	for _, c := range results {
		if c.err == nil {
			pr, err := a.shared.Publisher.Publish(r.Context(), c.event)
			if err == nil {
				res.IDs = append(res.IDs, pr.EventID)
				if pr.Duplicate {
					res.Duplicates++
				}
				a.shared.Logger.Debug("alert accepted", "event_id", pr.EventID, "type", c.event.Type, "duplicate", pr.Duplicate, "deliveries", len(pr.Delivered))
				continue
			}
			var invalid *mcpe.InvalidError
			if !errors.As(err, &invalid) {
				// Answer 5xx (or 429) so that Alertmanager retries the
				// whole notification: what was accepted so far is then
				// a duplicate and is not delivered twice.
				if httpapi.RetryLater(w, err) {
					a.shared.Logger.Warn("alert not accepted now; Alertmanager retries", "type", c.event.Type, "index", c.index, "error", err)
					return
				}
				a.shared.Logger.Error("publish alert", "type", c.event.Type, "index", c.index, "error", err)
				httpapi.WriteError(w, http.StatusInternalServerError, httpapi.CodeInternal,
					fmt.Sprintf("alerts[%d] of %d could not be stored, so the notification was not accepted; Alertmanager retries it, and the %d alerts accepted before it are then recognised as repeats",
						c.index, len(results), len(res.IDs)))
				return
			}
			c.err = err
		}
		a.shared.Logger.Warn("alert refused", "index", c.index, "alertname", c.alertname, "error", c.err)
		res.Errors = append(res.Errors, AlertError{Index: c.index, Alertname: c.alertname, Message: fmt.Sprintf("alerts[%d]: %v", c.index, c.err)})
	}
	if len(res.IDs) == 0 && len(res.Errors) > 0 {
		body := errorResponse{Errors: res.Errors}
		body.Error.Code = httpapi.CodeInvalidPayload
		body.Error.Message = fmt.Sprintf("none of the %d alerts could be turned into an event; the first: %s", len(results), res.Errors[0].Message)
		httpapi.WriteJSON(w, http.StatusBadRequest, body)
		return
	}
	httpapi.WriteJSON(w, http.StatusAccepted, res)
}

// authorized checks the bearer token when tokens are configured, and
// writes the refusal itself.
func (a *Adapter) authorized(w http.ResponseWriter, r *http.Request) bool {
	if a.tokens.Len() == 0 {
		return true
	}
	token, ok := httpapi.BearerToken(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpe-server"`)
		httpapi.WriteError(w, http.StatusUnauthorized, httpapi.CodeUnauthorized,
			"this endpoint needs an \"Authorization: Bearer <token>\" header with one of adapters.alertmanager.tokens; set http_config.authorization.credentials in Alertmanager's webhook_config")
		return false
	}
	if _, ok := a.tokens.Lookup(token); !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpe-server", error="invalid_token"`)
		httpapi.WriteError(w, http.StatusUnauthorized, httpapi.CodeUnauthorized, "the bearer token is not one of adapters.alertmanager.tokens")
		return false
	}
	return true
}
