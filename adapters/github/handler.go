package github

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// The headers of a delivery besides the signature.
const (
	// EventHeader names the event kind: issues, push, ping, ...
	EventHeader = "X-GitHub-Event"
	// DeliveryHeader identifies the delivery; a redelivery repeats it.
	DeliveryHeader = "X-GitHub-Delivery"
)

// PingResponse is the body of the 200 answer to GitHub's ping, which it
// sends when the webhook is created and when "Redeliver" or "Test" is used
// on it.
type PingResponse struct {
	// Zen is the ping's random GitHub zen saying.
	Zen string `json:"zen,omitempty"`
	// HookID is the webhook's ID.
	HookID int64 `json:"hook_id,omitempty"`
	// Events are the event kinds the webhook is subscribed to.
	Events []string `json:"events,omitempty"`
}

// ServeHTTP receives one GitHub webhook delivery on POST /adapters/github.
// The body is authenticated before anything in it or in the GitHub headers
// is looked at.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := adapters.ReadBody(w, r, a.maxBody)
	if !ok {
		return
	}
	delivery := strings.TrimSpace(r.Header.Get(DeliveryHeader))
	event := strings.TrimSpace(r.Header.Get(EventHeader))
	logger := a.shared.Logger.With("delivery_id", adapters.Clip(delivery, 64), "github_event", adapters.Clip(event, 64), "remote_addr", r.RemoteAddr)
	if err := checkSignature(a.secret, body, r.Header.Get(SignatureHeader)); err != nil {
		logger.Warn("github delivery refused", "status", http.StatusUnauthorized, "error", err)
		httpapi.WriteError(w, http.StatusUnauthorized, httpapi.CodeUnauthorized, err.Error())
		return
	}
	refuse := func(e *httpapi.RequestError) {
		logger.Warn("github delivery refused", "status", e.Status, "error", e.Message)
		e.Write(w)
	}
	raw, reqErr := payloadOf(r.Header.Get("Content-Type"), body)
	if reqErr != nil {
		refuse(reqErr)
		return
	}
	if event == "" {
		refuse(httpapi.BadRequest("the request has no " + EventHeader + " header; GitHub names the event kind in it (issues, pull_request, push, ...)"))
		return
	}
	p, reqErr := decode(raw)
	if reqErr != nil {
		refuse(reqErr)
		return
	}
	if event == "ping" {
		a.ping(w, logger, p)
		return
	}
	if delivery == "" {
		refuse(httpapi.BadRequest("the request has no " + DeliveryHeader + " header; GitHub identifies each delivery by it, and a redelivery with the same ID is accepted once"))
		return
	}
	if len(delivery) > mcpe.MaxSourceIDLength {
		refuse(httpapi.BadRequest("%s is %d bytes long; GitHub's delivery IDs are GUIDs, and at most %d bytes are accepted", DeliveryHeader, len(delivery), mcpe.MaxSourceIDLength))
		return
	}
	ev, err := a.event(event, delivery, p, raw, a.shared.Clock.Now())
	if err != nil {
		refuse(httpapi.BadRequest("%s", err))
		return
	}
	res, err := a.shared.Publisher.Publish(r.Context(), ev)
	if err != nil {
		var invalid *mcpe.InvalidError
		if errors.As(err, &invalid) {
			refuse(httpapi.BadRequest("the event made of this delivery was refused: %s", err))
			return
		}
		// A 4xx or 5xx answer marks the delivery failed on GitHub, where
		// it can be redelivered; the redelivery carries the same delivery
		// ID.
		if httpapi.RetryLater(w, err) {
			logger.Warn("github event not accepted now; redeliver it", "type", ev.Type, "error", err)
			return
		}
		logger.Error("publish github event", "type", ev.Type, "error", err)
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.CodeInternal,
			"the event could not be stored; redeliver it from the webhook's Recent Deliveries on GitHub")
		return
	}
	logger.Debug("github event accepted", "event_id", res.EventID, "type", ev.Type, "duplicate", res.Duplicate, "deliveries", len(res.Delivered))
	accepted := adapters.Accepted{IDs: []string{res.EventID}}
	if res.Duplicate {
		accepted.Duplicates = 1
	}
	httpapi.WriteJSON(w, http.StatusAccepted, accepted)
}

// ping answers GitHub's ping: 200 and nothing published.
func (a *Adapter) ping(w http.ResponseWriter, logger *slog.Logger, p *payload) {
	c := &conv{}
	res := PingResponse{Zen: c.str(p.Zen, MaxLineBytes), HookID: int64(p.HookID)}
	if p.Hook.ok {
		for _, e := range p.Hook.v.Events.items {
			if e != "" && len(res.Events) < maxListItems {
				res.Events = append(res.Events, c.name(e))
			}
		}
	}
	logger.Info("github webhook ping", "hook_id", res.HookID, "events", res.Events)
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// payloadOf returns the JSON payload of a body of the given content type:
// the body itself for application/json, its payload field for
// application/x-www-form-urlencoded (GitHub's two content types).
func payloadOf(contentType string, body []byte) ([]byte, *httpapi.RequestError) {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err == nil && mt == "application/json":
		return body, nil
	case err == nil && mt == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, httpapi.BadRequest("the body is not a valid form (application/x-www-form-urlencoded): %s", adapters.Clip(err.Error(), 200))
		}
		values, ok := form["payload"]
		if !ok {
			return nil, httpapi.BadRequest("the form has no payload field; with the content type application/x-www-form-urlencoded GitHub sends the JSON payload in the payload field")
		}
		return []byte(values[0]), nil
	}
	return nil, &httpapi.RequestError{
		Status: http.StatusUnsupportedMediaType,
		Code:   httpapi.CodeUnsupportedMedia,
		Message: fmt.Sprintf("the content type %q is not one GitHub sends; choose application/json (recommended) or application/x-www-form-urlencoded as the webhook's content type",
			adapters.Clip(contentType, 100)),
	}
}
