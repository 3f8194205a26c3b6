package client

import (
	"context"
	"net/http"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command returns a Dialer that starts the program name with args, such
// as ("mcpe-server", "--stdio"), and speaks MCP on its standard input and
// output. Each call starts a new process, so it serves both Client.Connect
// and Options.Reconnect; the process's standard error is the caller's.
// When the session ends, the process exits: mcpe-server stops when its
// stdio client goes.
func Command(name string, args ...string) Dialer {
	return func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(name, args...)
		cmd.Stderr = os.Stderr
		return &mcp.CommandTransport{Command: cmd}, nil
	}
}

// StreamableHTTP returns a Dialer for the Streamable HTTP endpoint of a
// server, such as "http://127.0.0.1:8765/mcp", that sends token as a bearer
// token unless it is empty. With a token, the server's principal outlives
// each session, so reconnecting finds the same subscriptions.
func StreamableHTTP(endpoint, token string) Dialer {
	return func(context.Context) (mcp.Transport, error) {
		t := &mcp.StreamableClientTransport{Endpoint: endpoint}
		if token != "" {
			t.HTTPClient = &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}}
		}
		return t, nil
	}
}

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
