package adaptertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
)

// Request returns a request for a handler (not a client) to target with
// body. Method "" is POST; contentType "" is application/json, and "-"
// sends no Content-Type. Headers are name, value pairs set after those, in
// order; an empty value deletes the header.
func Request(method, target, contentType string, body []byte, headers ...string) *http.Request {
	if method == "" {
		method = http.MethodPost
	}
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	switch contentType {
	case "":
		r.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		r.Header.Set("Content-Type", contentType)
	}
	setHeaders(r.Header, headers)
	return r
}

func setHeaders(h http.Header, pairs []string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			h.Del(pairs[i])
			continue
		}
		h.Set(pairs[i], pairs[i+1])
	}
}

// Serve serves r with h and returns the answer.
func Serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Post sends body to url as JSON through client, with headers (name, value
// pairs) set on top, and returns the answer's status and body.
func Post(t testing.TB, client *http.Client, url string, body []byte, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	setHeaders(req.Header, headers)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, answer
}

// Refusal decodes a JSON refusal, failing t when w is not one.
func Refusal(t testing.TB, w *httptest.ResponseRecorder) httpapi.ErrorBody {
	t.Helper()
	var body httpapi.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("answer %q is not a JSON refusal: %v", w.Body.String(), err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return body
}

// CheckRefusal checks that w is a JSON refusal with code and a message that
// contains message, and that a 405 answer allows POST.
func CheckRefusal(t testing.TB, w *httptest.ResponseRecorder, code, message string) {
	t.Helper()
	body := Refusal(t, w)
	if body.Error.Code != code || !strings.Contains(body.Error.Message, message) {
		t.Errorf("refusal = %+v; want code %q and a message containing %q", body.Error, code, message)
	}
	if w.Code == http.StatusMethodNotAllowed && w.Header().Get("Allow") != http.MethodPost {
		t.Errorf("Allow = %q, want POST", w.Header().Get("Allow"))
	}
}
