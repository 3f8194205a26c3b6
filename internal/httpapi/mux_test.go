package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stub answers with its name, so a test sees which handler was reached.
func stub(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name)
	})
}

func newServer(t *testing.T, health func() error) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewMux(MuxOptions{MCP: stub("mcp"), Ingest: stub("ingest"), Health: health}))
	t.Cleanup(srv.Close)
	return srv
}

// do sends a request to srv and returns the status and body.
func do(t *testing.T, srv *httptest.Server, method, path, host string, header http.Header) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, string(body)
}

// testTimeout bounds every request.
const testTimeout = 10 * time.Second

func TestHealthz(t *testing.T) {
	tests := []struct {
		name       string
		health     func() error
		wantStatus int
		wantBody   map[string]string
	}{
		{name: "no health check", health: nil, wantStatus: http.StatusOK, wantBody: map[string]string{"status": "ok"}},
		{name: "healthy", health: func() error { return nil }, wantStatus: http.StatusOK, wantBody: map[string]string{"status": "ok"}},
		{
			name:       "unhealthy",
			health:     func() error { return errors.New("database is closed") },
			wantStatus: http.StatusServiceUnavailable,
			wantBody:   map[string]string{"status": "unavailable", "error": "database is closed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.health)
			status, body := do(t, srv, http.MethodGet, "/healthz", "", nil)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d", status, tt.wantStatus)
			}
			var got map[string]string
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("body %q is not a JSON object of strings: %v", body, err)
			}
			if diff := cmp.Diff(tt.wantBody, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	srv := newServer(t, nil)
	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     string
	}{
		{method: http.MethodPost, path: "/mcp", wantStatus: http.StatusOK, wantBody: "mcp"},
		{method: http.MethodGet, path: "/mcp", wantStatus: http.StatusOK, wantBody: "mcp"},
		{method: http.MethodDelete, path: "/mcp", wantStatus: http.StatusOK, wantBody: "mcp"},
		{method: http.MethodPost, path: "/v1/events", wantStatus: http.StatusOK, wantBody: "ingest"},
		{method: http.MethodGet, path: "/v1/events", wantStatus: http.StatusOK, wantBody: "ingest"},
		{method: http.MethodGet, path: "/nowhere", wantStatus: http.StatusNotFound},
		{method: http.MethodGet, path: "/", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			status, body := do(t, srv, tt.method, tt.path, "", nil)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", status, tt.wantStatus, body)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestLoopbackHost(t *testing.T) {
	srv := newServer(t, nil)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host     string
		wantPass bool
	}{
		{host: "localhost", wantPass: true},
		{host: "localhost:" + port, wantPass: true},
		{host: "LocalHost:" + port, wantPass: true},
		{host: "127.0.0.1", wantPass: true},
		{host: "127.0.0.1:" + port, wantPass: true},
		{host: "127.0.0.2:" + port, wantPass: true},
		{host: "[::1]", wantPass: true},
		{host: "[::1]:" + port, wantPass: true},
		{host: "evil.example"},
		{host: "evil.example:" + port},
		{host: "localhost.evil.example"},
		{host: "127.0.0.1.nip.io:" + port},
		{host: "192.168.1.10:" + port},
		{host: "[2001:db8::1]:" + port},
		{host: "0.0.0.0:" + port},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/mcp", "/v1/events"} {
				status, body := do(t, srv, http.MethodGet, path, tt.host, nil)
				if tt.wantPass && status != http.StatusOK {
					t.Errorf("GET %s with Host %q: status %d (%q); want it to pass", path, tt.host, status, body)
				}
				if !tt.wantPass {
					if status != http.StatusForbidden {
						t.Errorf("GET %s with Host %q: status %d (%q); want 403", path, tt.host, status, body)
					}
					if !strings.Contains(body, "only answers requests addressed to localhost") {
						t.Errorf("GET %s with Host %q: body %q does not say why", path, tt.host, body)
					}
				}
			}
		})
	}
}

// A listener on another interface serves any Host: the guard only protects
// loopback listeners. The local address is set the way net/http sets it.
func TestNonLoopbackListenerAnyHost(t *testing.T) {
	h := NewMux(MuxOptions{MCP: stub("mcp"), Ingest: stub("ingest")})
	for _, local := range []net.Addr{
		&net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8765},
		nil, // no local address at all, as when the handler is called directly
	} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.Host = "events.example.com"
		if local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("local address %v, Host %q: status %d; want 200", local, req.Host, rec.Code)
		}
	}
}

func TestCrossOrigin(t *testing.T) {
	srv := newServer(t, nil)
	tests := []struct {
		name     string
		method   string
		header   http.Header
		wantPass bool
	}{
		{name: "cross-site POST", method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		{name: "same-site POST", method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"same-site"}}},
		{name: "POST with a foreign Origin", method: http.MethodPost, header: http.Header{"Origin": {"https://evil.example"}}},
		{name: "same-origin POST", method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"same-origin"}}, wantPass: true},
		{name: "POST typed by the user", method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"none"}}, wantPass: true},
		{name: "POST without browser headers", method: http.MethodPost, wantPass: true},
		{name: "cross-site GET is safe", method: http.MethodGet, header: http.Header{"Sec-Fetch-Site": {"cross-site"}}, wantPass: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/mcp", "/v1/events"} {
				status, body := do(t, srv, tt.method, path, "", tt.header)
				if tt.wantPass && status != http.StatusOK {
					t.Errorf("%s %s: status %d (%q); want it to pass", tt.method, path, status, body)
				}
				if !tt.wantPass && status != http.StatusForbidden {
					t.Errorf("%s %s: status %d (%q); want 403", tt.method, path, status, body)
				}
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		hostport string
		want     bool
	}{
		{"localhost", true},
		{"LOCALHOST:80", true},
		{"127.0.0.1", true},
		{"127.255.255.254:1", true},
		{"[::1]", true},
		{"[::1]:8765", true},
		{"::1", true},
		{"", false},
		{"example.com", false},
		{"10.0.0.1:80", false},
		{"[::]:80", false},
	}
	for _, tt := range tests {
		if got := IsLoopbackHost(tt.hostport); got != tt.want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", tt.hostport, got, tt.want)
		}
	}
}

// Adapters are routed; those that verify a signature answer whatever the
// Host (a tunnel to a loopback server names itself there), the others are
// guarded like every other route.
func TestAdapterRoutes(t *testing.T) {
	srv := httptest.NewServer(NewMux(MuxOptions{MCP: stub("mcp"), Ingest: stub("ingest"),
		Adapters:       map[string]http.Handler{"/adapters/alertmanager": stub("alertmanager")},
		SignedAdapters: map[string]http.Handler{"/adapters/github": stub("github")},
	}))
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		path, host string
		wantStatus int
		wantBody   string
	}{
		{"/adapters/github", "", http.StatusOK, "github"},
		{"/adapters/github", "abc.tunnel.example", http.StatusOK, "github"},
		{"/adapters/alertmanager", "", http.StatusOK, "alertmanager"},
		{"/adapters/alertmanager", "abc.tunnel.example", http.StatusForbidden, ""},
		{"/mcp", "abc.tunnel.example", http.StatusForbidden, ""},
		{"/adapters/slack", "", http.StatusNotFound, ""},
	} {
		status, body := do(t, srv, http.MethodPost, tt.path, tt.host, nil)
		if status != tt.wantStatus || tt.wantBody != "" && body != tt.wantBody {
			t.Errorf("POST %s (Host %q): %d %q; want %d %q", tt.path, tt.host, status, body, tt.wantStatus, tt.wantBody)
		}
	}
	// Browsers still cannot post cross-origin to a signed adapter.
	status, _ := do(t, srv, http.MethodPost, "/adapters/github", "", http.Header{"Sec-Fetch-Site": {"cross-site"}})
	if status != http.StatusForbidden {
		t.Errorf("cross-site POST to a signed adapter: %d, want 403", status)
	}
}
