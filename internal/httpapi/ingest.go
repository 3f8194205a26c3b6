// POST /v1/events, the plain HTTP way in for events: {type, data, metadata?}.
// The body is validated, published through the same Publisher as the
// adapters, and answered 202 {"id": ...}; every refusal is a JSON error
// {"error": {"code", "message"}} and stores nothing.

package httpapi

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

// IngestOptions configure the handler.
type IngestOptions struct {
	// Publisher is required.
	Publisher subscriptions.Publisher
	// Tokens, when not empty, are the bearer tokens a publisher must send.
	Tokens *Tokens
	// Clock stamps events that come without a timestamp; nil is the wall
	// clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Refused, when set, is called with the refusal's code when a request
	// is refused before its event reaches the Publisher (a body that is not
	// JSON, too large, or not an event), for metrics. What the Publisher
	// refuses it sees itself.
	Refused func(code string)
}

// Ingest serves POST /v1/events.
type Ingest struct {
	opts    IngestOptions
	maxBody int64 // MaxBodyBytes unless a test sets less
}

// NewIngest returns the handler of POST /v1/events.
func NewIngest(opts IngestOptions) (*Ingest, error) {
	if opts.Publisher == nil {
		return nil, errors.New("httpapi: IngestOptions.Publisher is required")
	}
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	return &Ingest{opts: opts, maxBody: MaxBodyBytes}, nil
}

// IngestResponse is the body of a 202 answer.
type IngestResponse struct {
	// ID is the event's ID; for a duplicate, the ID given the first time.
	ID string `json:"id"`
	// Duplicate is true when the event had been accepted before and was not
	// routed again.
	Duplicate bool `json:"duplicate,omitempty"`
}

func (h *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		WriteError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, fmt.Sprintf("use POST, not %s", r.Method))
		return
	}
	if h.opts.Tokens.Len() > 0 {
		if _, ok := h.opts.Tokens.Authenticate(w, r, "an ingest token"); !ok {
			return
		}
	}
	ev, refusal := h.event(w, r)
	if refusal != nil {
		if h.opts.Refused != nil {
			h.opts.Refused(refusal.Code)
		}
		refusal.Write(w)
		return
	}
	res, err := h.opts.Publisher.Publish(r.Context(), ev)
	if err != nil {
		if _, ok := errors.AsType[*mcpe.InvalidError](err); ok {
			WriteError(w, http.StatusBadRequest, CodeInvalidEvent, err.Error())
			return
		}
		if RetryLater(w, err) {
			h.opts.Logger.Debug("event not accepted now", "type", ev.Type, "error", err)
			return
		}
		h.opts.Logger.Error("publish event", "type", ev.Type, "error", err)
		WriteError(w, http.StatusInternalServerError, CodeInternal, "the event could not be stored; it was not accepted, try again")
		return
	}
	h.opts.Logger.Debug("event accepted", "event_id", res.EventID, "type", ev.Type, "duplicate", res.Duplicate, "deliveries", len(res.Delivered))
	WriteJSON(w, http.StatusAccepted, IngestResponse{ID: res.EventID, Duplicate: res.Duplicate})
}

// event reads the event in r's body, or refuses a body that is not JSON, too
// large, or not an event.
func (h *Ingest) event(w http.ResponseWriter, r *http.Request) (mcpe.Event, *RequestError) {
	// Requiring JSON also makes a browser preflight the request, so a web
	// page cannot post events to a local server behind the user's back.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return mcpe.Event{}, &RequestError{http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
			"send the event as JSON with \"Content-Type: application/json\" (with curl: -H 'Content-Type: application/json')"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
		return mcpe.Event{}, &RequestError{http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			fmt.Sprintf("the body is larger than this server's limit of %d bytes; send less data", h.maxBody)}
	}
	if err != nil {
		return mcpe.Event{}, &RequestError{http.StatusBadRequest, CodeInvalidJSON, "could not read the body: " + err.Error()}
	}
	// The body must be one JSON object with known fields only.
	var in mcpe.EventInput
	if err := mcpe.DecodeStrict(body, &in, eventBody); err != nil {
		return mcpe.Event{}, &RequestError{http.StatusBadRequest, CodeInvalidJSON, err.Error()}
	}
	ev, err := subscriptions.EventFromInput(in, h.opts.Clock.Now())
	if err != nil {
		return mcpe.Event{}, &RequestError{http.StatusBadRequest, CodeInvalidEvent, err.Error()}
	}
	return ev, nil
}

// eventBody phrases the errors of decoding a POST /v1/events body.
var eventBody = &mcpe.DecodeOptions{
	Subject: "the body",
	Example: `{"type": "deploy.failed", "data": {"service": "api"}}`,
}
