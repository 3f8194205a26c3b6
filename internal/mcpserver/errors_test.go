package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/handlers/webhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestErrorWire pins the bytes a client reads of the package's JSON-RPC
// errors: as a response's error, and as the error object of a
// notification or webhook body.
func TestErrorWire(t *testing.T) {
	limit := &subscriptions.LimitError{Max: 2}
	tests := []struct {
		name string
		got  any
		want string
	}{
		{"invalidParams", invalidParams("maxEvents is %d", 0),
			`{"code":-32602,"message":"InvalidParams: maxEvents is 0","data":{"reason":"maxEvents is 0"}}`},
		{"eventsError", eventsError(CodeNotFound, map[string]any{"kind": "subscription", "reason": "gone"}),
			`{"code":-32023,"message":"NotFound","data":{"kind":"subscription","reason":"gone"}}`},
		{"paramsError", paramsError("uri: %q is not absolute", "x"), `{"code":-32602,"message":"uri: \"x\" is not absolute"}`},
		{"domainError invalid", domainError(&mcpe.InvalidError{Field: "filter.tags", Message: "is empty"}),
			`{"code":-32602,"message":"InvalidParams: arguments.tags: is empty","data":{"reason":"arguments.tags: is empty"}}`},
		{"domainError limit", domainError(limit), `{"code":-32025,"message":"ResourceExhausted","data":{"limit":"subscriptions","reason":` + jsonString(t, limit.Error()) + `}}`},
		{"rpcError limit", rpcError(limit), `{"code":-32602,"message":` + jsonString(t, limit.Error()) + `}`},
		{"rpcError not found", rpcError(fmt.Errorf("sub x: %w", subscriptions.ErrNotFound)), `{"code":-32602,"message":"sub x: ` + subscriptions.ErrNotFound.Error() + `"}`},
		{"rpcError nil", rpcError(nil), `null`},
		{"errorObject with data", errorObject(eventsError(CodeNotFound, map[string]any{"kind": "subscription", "reason": "gone"}), ""),
			`{"code":-32023,"data":{"kind":"subscription","reason":"gone"},"message":"NotFound"}`},
		{"errorObject without data", errorObject(paramsError("bad"), "unused"), `{"code":-32602,"message":"bad"}`},
		{"errorObject internal", errorObject(errors.New("disk full"), "reading the inbox failed; the server retries"),
			`{"code":-32603,"data":{"reason":"reading the inbox failed; the server retries"},"message":"InternalError"}`},
		{"errorObject domain", errorObject(domainError(limit), "kept"),
			`{"code":-32025,"data":{"limit":"subscriptions","reason":` + jsonString(t, limit.Error()) + `},"message":"ResourceExhausted"}`},
	}
	if err := domainError(io.EOF); err != io.EOF || rpcError(err) != io.EOF {
		t.Errorf("an error of no domain became %v; want it as it is", err)
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.got)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, string(b)); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func jsonString(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVerifyCategories: a failed challenge handshake is a
// CallbackEndpointError whose reason is one of the lastError categories,
// never the endpoint's own answer; an echo of the challenge passes.
func TestVerifyCategories(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Challenge string `json:"challenge"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/echo", http.StatusFound)
		case "/gone":
			http.Error(w, "secret detail", http.StatusNotFound)
		case "/down":
			http.Error(w, "secret detail", http.StatusServiceUnavailable)
		case "/wrong":
			_, _ = io.WriteString(w, `{"challenge":"nope"}`)
		case "/echo":
			_ = json.NewEncoder(w).Encode(body)
		}
	}))
	t.Cleanup(srv.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String() + "/"
	closed.Close()
	sender, err := webhook.New(&webhook.Options{AllowHTTP: true, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)
	w := &webhookState{sender: sender}
	for url, want := range map[string]string{
		srv.URL + "/redirect": `{"code":-32027,"message":"CallbackEndpointError","data":{"reason":"challenge_failed"}}`,
		srv.URL + "/gone":     `{"code":-32027,"message":"CallbackEndpointError","data":{"reason":"http_4xx"}}`,
		srv.URL + "/down":     `{"code":-32027,"message":"CallbackEndpointError","data":{"reason":"http_5xx"}}`,
		srv.URL + "/wrong":    `{"code":-32027,"message":"CallbackEndpointError","data":{"reason":"challenge_failed"}}`,
		refused:               `{"code":-32027,"message":"CallbackEndpointError","data":{"reason":"connection_refused"}}`,
		srv.URL + "/echo":     `null`,
	} {
		err := w.verify(context.Background(), "sub", url, "whsec_"+"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=")
		b, _ := json.Marshal(err)
		if diff := cmp.Diff(want, string(b)); diff != "" {
			t.Errorf("verify %s: mismatch (-want +got):\n%s", url, diff)
		}
	}
}
