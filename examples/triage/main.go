// Triage is an agent's first step: it subscribes to GitHub issue events and
// prints each new issue as it is opened, and each closed or reopened one.
//
//	go run ./examples/triage
//
// With no flags it starts mcpe-server over stdio (with "go run", from this
// clone; -server mcpe-server uses an installed binary), with a throwaway
// database and HTTP on 127.0.0.1:8765 (-listen), and prints a curl command
// that publishes an issue. The github adapter of a real server publishes the
// same events from GitHub webhooks.
//
// To use a server that is already running, give its MCP endpoint and a
// bearer token that names a principal in its auth.tokens, so that the
// subscription outlives each connection:
//
//	go run ./examples/triage -url http://127.0.0.1:8765/mcp -token "$MCPE_TOKEN"
//
// Stop it with Ctrl-C; it removes its subscription on the way out.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/examples/internal/setup"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func main() { setup.Main("triage", run) }

// issue is the part of a github.issues.* event's data this agent reads.
type issue struct {
	Action     string `json:"action"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Issue struct {
		Number  int64    `json:"number"`
		Title   string   `json:"title"`
		HTMLURL string   `json:"html_url"`
		User    string   `json:"user"`
		Labels  []string `json:"labels"`
	} `json:"issue"`
}

func (is issue) String() string {
	var b strings.Builder
	if is.Repository != nil {
		b.WriteString(is.Repository.FullName)
	}
	fmt.Fprintf(&b, "#%d %q", is.Issue.Number, is.Issue.Title)
	if is.Issue.User != "" {
		fmt.Fprintf(&b, " by %s", is.Issue.User)
	}
	if len(is.Issue.Labels) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(is.Issue.Labels, ", "))
	}
	if is.Issue.HTMLURL != "" {
		fmt.Fprintf(&b, " %s", is.Issue.HTMLURL)
	}
	return b.String()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, flags := setup.NewFlagSet("triage", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}

	// Each handler gets the events whose type matches its pattern.
	show := func(verb string) client.EventHandler {
		return func(_ context.Context, _ string, ev mcpe.Event) {
			var is issue
			if err := json.Unmarshal(ev.Data, &is); err != nil || is.Issue.Number == 0 {
				fmt.Fprintf(stdout, "%s issue (unexpected data): %s\n", verb, ev.Data)
				return
			}
			fmt.Fprintf(stdout, "%s issue %s\n", verb, is)
		}
	}
	conn, err := setup.Connect(ctx, flags, setup.Options{
		Name:   "triage",
		Stderr: stderr,
		Register: func(c *client.Client) error {
			if _, err := c.OnEvent("github.issues.opened", show("new")); err != nil {
				return err
			}
			_, err := c.OnEvent("github.issues.{closed,reopened}", func(ctx context.Context, id string, ev mcpe.Event) {
				show(strings.TrimPrefix(ev.Type, "github.issues."))(ctx, id, ev)
			})
			return err
		},
	})
	if err != nil {
		return err
	}
	defer conn.Close()

	sub, err := conn.Subscribe(ctx, mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"github.issues.*"}},
	})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := conn.Unsubscribe(ctx, sub.ID); err != nil {
			fmt.Fprintln(stderr, "triage: remove the subscription:", err)
		}
	}()
	fmt.Fprintf(stderr, "subscribed to github.issues.* (%s); waiting for issues. Open one with:\n  %s\n", sub.ID,
		conn.Curl("github.issues.opened", `{"action": "opened", "issue": {"number": 1347, "title": "Login fails with SSO enabled", "user": "octocat", "labels": ["bug"], "html_url": "https://github.com/octo-org/octo-repo/issues/1347"}, "repository": {"full_name": "octo-org/octo-repo"}}`, ""))
	return conn.Wait(ctx)
}
