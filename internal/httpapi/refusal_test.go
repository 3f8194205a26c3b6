package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequestError(t *testing.T) {
	e := BadRequest("field %s is %d", "n", 7)
	if diff := cmp.Diff(&RequestError{Status: http.StatusBadRequest, Code: CodeInvalidPayload, Message: "field n is 7"}, e); diff != "" {
		t.Errorf("BadRequest mismatch (-want +got):\n%s", diff)
	}
	var err error = e
	if err.Error() != "field n is 7" {
		t.Errorf("Error() = %q", err.Error())
	}
	w := httptest.NewRecorder()
	(&RequestError{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMedia, Message: "send JSON"}).Write(w)
	if w.Code != http.StatusUnsupportedMediaType || w.Header().Get("Content-Type") != "application/json" ||
		strings.TrimSpace(w.Body.String()) != `{"error":{"code":"unsupported_media_type","message":"send JSON"}}` {
		t.Errorf("Write: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}
