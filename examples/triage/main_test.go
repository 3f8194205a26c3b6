package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/examples/internal/exampletest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

const token = "triage-token"

func issueData(action string, number int, title string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"event": "issues", "action": %q, "repository": {"full_name": "octo-org/octo-repo"},
		"issue": {"number": %d, "title": %q, "user": "octocat", "labels": ["bug"], "html_url": "https://github.com/octo-org/octo-repo/issues/%d"}}`,
		action, number, title, number))
}

// TestTriage runs the example against an in-process server over Streamable
// HTTP with a token, publishes issue events, and checks what it prints.
func TestTriage(t *testing.T) {
	ctx := context.Background()
	s := exampletest.StartServer(t, &clienttest.Options{Tokens: map[string]string{token: "alice"}})

	p := exampletest.Start(t, run, "-url", s.MCPEndpoint, "-token", token)
	p.Stderr.WaitFor(t, "subscribed to github.issues.*")
	for _, ev := range []mcpe.EventInput{
		{Type: "github.issues.opened", Data: issueData("opened", 1347, "Login fails with SSO enabled")},
		{Type: "github.issues.labeled", Data: issueData("labeled", 1347, "Login fails with SSO enabled")},
		{Type: "github.push", Data: json.RawMessage(`{}`)},
		{Type: "github.issues.closed", Data: issueData("closed", 1300, "Typo in README")},
		{Type: "github.issues.opened", Data: json.RawMessage(`{"note": "not an issue"}`)},
	} {
		if _, err := s.Post(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`new issue octo-org/octo-repo#1347 "Login fails with SSO enabled" by octocat [bug] https://github.com/octo-org/octo-repo/issues/1347`,
		`closed issue octo-org/octo-repo#1300 "Typo in README" by octocat [bug] https://github.com/octo-org/octo-repo/issues/1300`,
		`new issue (unexpected data): {"note":"not an issue"}`,
	}
	var got []string
	for range want {
		got = append(got, p.Stdout.Next(t))
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("run = %v, want nil after Ctrl-C", err)
	}
	got = append(got, p.Stdout.Rest()...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
	// The subscription was removed on the way out.
	if subs, err := s.Service.List(ctx, "alice", ""); err != nil || len(subs) != 0 {
		t.Errorf("subscriptions left behind: %v, %v", subs, err)
	}
}

// TestTriageWithoutToken checks that, with no token, the example says that
// its subscription ends with the session, and stops when it does.
func TestTriageWithoutToken(t *testing.T) {
	s := exampletest.StartServer(t, nil)
	p := exampletest.Start(t, run, "-url", s.MCPEndpoint, "-token", "")
	p.Stderr.WaitFor(t, "no -token")
	p.Stderr.WaitFor(t, "subscribed to github.issues.*")
	s.CloseSessions()
	if err := p.Done(t); err == nil || !strings.Contains(err.Error(), "session ended") {
		t.Errorf("run = %v, want an error saying the session ended", err)
	}
}

// TestTriageStartsServer runs the example the default way: it starts the
// mcpe-server binary over stdio and takes events on -listen.
func TestTriageStartsServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcpe-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mcpe-server/mcpe-server/cmd/mcpe-server").CombinedOutput(); err != nil {
		t.Fatalf("build mcpe-server: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	p := exampletest.Start(t, run, "-url", "", "-server", bin, "-listen", addr)
	p.Stderr.WaitFor(t, "subscribed to github.issues.*")
	curl := p.Stderr.WaitFor(t, "curl")
	if !strings.Contains(curl, "http://"+addr+"/v1/events") {
		t.Errorf("the curl line does not name the server: %s", curl)
	}
	resp, err := http.Post("http://"+addr+"/v1/events", "application/json",
		strings.NewReader(fmt.Sprintf(`{"type": "github.issues.opened", "data": %s}`, issueData("opened", 7, "Flaky test"))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %s", resp.Status)
	}
	if got := p.Stdout.Next(t); !strings.Contains(got, `#7 "Flaky test"`) {
		t.Errorf("printed %q", got)
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("run = %v", err)
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestTriageFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "ftp://example.com/mcp"}, "is not an http or https URL"},
		{[]string{"-url", "", "-server", ""}, "-server is empty"},
		{[]string{"-url", "", "-listen", "8765"}, "is not host:port"},
		{[]string{"-nope"}, "flag provided but not defined"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), exampletest.Wait)
			defer cancel()
			err := run(ctx, tc.args, os.Stdout, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
