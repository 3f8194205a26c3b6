package app

import (
	"context"
	"slices"
	"strings"
	"testing"

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
