package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Error codes of the JSON refusals, shared by POST /v1/events and the
// adapters' receivers.
const (
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidEvent     = "invalid_event"
	CodeInvalidPayload   = "invalid_payload"
	CodeBodyTooLarge     = "body_too_large"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeUnauthorized     = "unauthorized"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeInternal         = "internal"
	CodeUnavailable      = "unavailable"
	CodeBusy             = "busy"
)

// ErrorBody is the body of every refusal: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// WriteError writes a JSON refusal.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	var body ErrorBody
	body.Error.Code, body.Error.Message = code, message
	WriteJSON(w, status, body)
}

// WriteJSON writes v as a JSON answer with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// RequestError refuses a whole request: the status and the JSON refusal
// (code and message) to answer it with.
type RequestError struct {
	Status  int
	Code    string
	Message string
}

// BadRequest returns a 400 invalid_payload refusal whose message is
// fmt.Sprintf(format, args...).
func BadRequest(format string, args ...any) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: CodeInvalidPayload, Message: fmt.Sprintf(format, args...)}
}

func (e *RequestError) Error() string { return e.Message }

// Write writes the refusal to w.
func (e *RequestError) Write(w http.ResponseWriter) { WriteError(w, e.Status, e.Code, e.Message) }

// RetryLater answers, with Retry-After, a publish error after which the
// sender should send the same event again: a subscriber's live session too
// far behind (429) or a store that cannot keep events now (503). It reports
// whether err was one of those. The event was not accepted either way.
func RetryLater(w http.ResponseWriter, err error) bool {
	switch {
	case errors.Is(err, subscriptions.ErrBusy):
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusTooManyRequests, CodeBusy, "a live session this event is for is too far behind; the event was not accepted, send it again in a second")
	case errors.Is(err, subscriptions.ErrUnavailable):
		w.Header().Set("Retry-After", "60")
		WriteError(w, http.StatusServiceUnavailable, CodeUnavailable, "the server cannot keep events now (its database is gone); the event was not accepted, send it again later")
	default:
		return false
	}
	return true
}
