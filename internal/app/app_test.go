package app

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), sqlite.Memory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func TestNewRefuses(t *testing.T) {
	if _, err := New(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "Options.Store is required") {
		t.Errorf("New without a store = %v; want Options.Store is required", err)
	}
	// A configuration the handlers refuse stops what was started.
	cfg := &config.Config{Handlers: config.Handlers{Bash: &config.BashHandler{Commands: map[string]config.BashCommand{"x": {Path: "relative/path"}}}}}
	if _, err := New(context.Background(), Options{Config: cfg, Store: openStore(t)}); err == nil || !strings.Contains(err.Error(), "handlers.bash") {
		t.Errorf("New with a relative command path = %v; want a handlers.bash error", err)
	}
	// The private paths reach the bash handler, which refuses to show one.
	dir := t.TempDir()
	cfg = &config.Config{Handlers: config.Handlers{Bash: &config.BashHandler{Sandbox: "off",
		Commands: map[string]config.BashCommand{"x": {Path: "/bin/sh", WritablePaths: []string{dir}}}}}}
	want := "handlers.bash.commands.x.writablePaths[0]: " + dir + " is private to the server"
	if _, err := New(context.Background(), Options{Config: cfg, Store: openStore(t), PrivatePaths: []string{dir}}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New with a private writable path = %v; want %q", err, want)
	}
}

func TestNewAndClose(t *testing.T) {
	a, err := New(context.Background(), Options{Store: openStore(t), HTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.HTTPHandler()
	if err != nil || h == nil {
		t.Fatalf("HTTPHandler() = %v, %v", h, err)
	}
	cat, err := a.Catalog.Get(context.Background(), mcpe.CatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range cat.Sources {
		if s.Configured {
			names = append(names, s.Name)
		}
	}
	if !slices.Equal(names, []string{"ingest", "conversation"}) {
		t.Errorf("configured sources %v; want only ingest and conversation with no adapters set up", names)
	}
	a.Close()
	a.Close() // safe twice
}

// TestSubscribeWarnsAsTheCatalogSays checks events_subscribe's warnings
// against the catalog the server really lists, GitHub configured: a
// pattern naming an event GitHub never sends is warned about, with the
// closest type and, as it speaks of the pattern's word, its description;
// GitHub's events passed through undeclared and the user messages the
// server publishes itself are not.
func TestSubscribeWarnsAsTheCatalogSays(t *testing.T) {
	cfg := &config.Config{Adapters: config.Adapters{GitHub: &config.GitHubAdapter{Secret: config.Secret{Token: "s"}}}}
	a, err := New(context.Background(), Options{Config: cfg, Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	none := " matches no event type this server has declared or seen"
	for pattern, want := range map[string]string{
		"github.pr.merged": "github.pr.merged" + none + "; did you mean github.pull_request.closed? A pull request changed: " +
			"synchronize is new commits; closed is merged or not (a merge: closed, where data.pull_request.merged == true).",
		"github.pull_request.merged": "github.pull_request.merged" + none + "; did you mean github.pull_request.closed?",
		"github.pullrequest.opened":  "github.pullrequest.opened" + none + "; did you mean github.pull_request.opened?",
		"github.discussion.created":  "",
		"github.deploy*":             "",
		"github.gollum":              "",
		"conversation.user_message":  "",
		"conversation.*":             "",
	} {
		args, _ := json.Marshal(map[string]any{"filter": map[string]any{"eventTypes": []string{pattern}}})
		res, err := a.Server.Tools().CallTool(context.Background(), "alice", mcpe.ToolSubscribe, args)
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		var got struct {
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(text), &got); err != nil || res.IsError {
			t.Fatalf("%s: %s", pattern, text)
		}
		if want == "" && len(got.Warnings) > 0 || want != "" && (len(got.Warnings) != 1 || !strings.HasPrefix(got.Warnings[0], want)) {
			t.Errorf("%s: warnings %q; want %q", pattern, got.Warnings, want)
		}
	}
}
