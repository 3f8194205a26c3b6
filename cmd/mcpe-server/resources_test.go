package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// TestWebhookRegistrationEndToEnd registers an out-of-band subscription
// (SEP-1803) with the binary and receives its events, signed with the key
// the registration returned; deregistering removes it.
func TestWebhookRegistrationEndToEnd(t *testing.T) {
	rcv := newReceiver(t)
	cfg := writeConfig(t, `
handlers:
  webhook:
    enabled: true
    allowHTTP: true
    allowNetworks: ["127.0.0.1"]
`)
	cmd := exec.Command(binary, "--stdio", "--http", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "mcpe.db"), "--config", cfg)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	logs := watchLog(t, pr)
	t.Cleanup(func() { pw.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "register-test", Version: "1"}, nil)
	if err := mcp.AddSendingCustomMethod[*mcpserver.RegisterParams, *mcpserver.RegisterResult](client, mcpserver.MethodRegister); err != nil {
		t.Fatal(err)
	}
	if err := mcp.AddSendingCustomMethod[*mcpserver.DeregisterParams, *mcpserver.DeregisterResult](client, mcpserver.MethodDeregister); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpetest.Wait)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	base := "http://" + logs.waitAddr(t)

	// Another network than the allowed one is refused.
	if _, err := mcp.CallCustomMethod[*mcpserver.RegisterParams, *mcpserver.RegisterResult](ctx, cs, mcpserver.MethodRegister,
		&mcpserver.RegisterParams{URIs: []string{"event://deploy.*"}, TargetURI: "http://10.0.0.1/hook"}); err == nil || !strings.Contains(err.Error(), "10.0.0.1") {
		t.Errorf("a private target was accepted, or the error does not name it: %v", err)
	}
	res, err := mcp.CallCustomMethod[*mcpserver.RegisterParams, *mcpserver.RegisterResult](ctx, cs, mcpserver.MethodRegister,
		&mcpserver.RegisterParams{URIs: []string{"event://deploy.*"}, TargetURI: rcv.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	sub := res.Subscription
	if sub.WebhookSecret == nil || sub.WebhookSecret.Type != "standard" || !strings.HasPrefix(sub.WebhookSecret.Key, "whsec_") || !strings.HasPrefix(sub.URI, mcpserver.SubscriptionScheme) {
		t.Fatalf("register returned %+v", sub)
	}
	rcv.mu.Lock()
	rcv.secret = sub.WebhookSecret.Key
	rcv.mu.Unlock()

	post(t, base, "", `{"type": "deploy.failed", "data": {"service": "api"}}`)
	rcv.wait(t)
	rcv.mu.Lock()
	if len(rcv.got) != 1 || len(rcv.bad) != 0 || !strings.Contains(rcv.got[0], `"deploy.failed"`) {
		t.Errorf("receiver got %q, refused %q", rcv.got, rcv.bad)
	}
	rcv.mu.Unlock()

	if _, err := mcp.CallCustomMethod[*mcpserver.DeregisterParams, *mcpserver.DeregisterResult](ctx, cs, mcpserver.MethodDeregister,
		&mcpserver.DeregisterParams{URI: sub.URI}); err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Resources {
		if r.URI == sub.URI {
			t.Errorf("%s still listed after deregistering", sub.URI)
		}
	}
}
