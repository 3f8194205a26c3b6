package main

import (
	"go/parser"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/mcpe-server/mcpe-server/"

// layers is the direction of docs/architecture.md ("Packages and their
// direction", and the exceptions it names with why): for a package, the
// packages of the module its non-test files may import. A package not
// listed (cmd/mcpe-server, internal/app, internal/config, test support,
// bench, examples) is not checked.
var layers = map[string][]string{
	"mcpe":                             {},
	"clock":                            {},
	"internal/stdio":                   {},
	"subscriptions":                    {"mcpe", "clock"},
	"subscriptions/internal/storecore": {"mcpe", "subscriptions"},
	"subscriptions/sqlite":             {"mcpe", "clock", "subscriptions", "subscriptions/internal/storecore"},
	"subscriptions/postgres":           {"mcpe", "clock", "subscriptions", "subscriptions/internal/storecore"},
	"client":                           {"mcpe", "clock", "internal/stdio"},
	"tools":                            {"mcpe", "clock", "subscriptions"},
	"delivery":                         {"mcpe", "clock", "subscriptions"},
	"delivery/cron":                    {"mcpe", "clock", "subscriptions", "delivery"},
	"delivery/scheduled":               {"mcpe", "clock", "subscriptions", "delivery"},
	"delivery/realtime":                {"mcpe", "clock", "subscriptions"},
	"handlers":                         {"mcpe", "clock", "subscriptions"},
	"handlers/bash":                    {"mcpe", "clock", "subscriptions"},
	"handlers/webhook":                 {"mcpe", "clock", "subscriptions", "internal/testhook"},
	"handlers/agent":                   {"mcpe", "clock", "subscriptions"},
	// The sources share adapters and answer with internal/httpapi's
	// refusals; adapters/mcp is an MCP client of upstream servers.
	"adapters":              {"mcpe", "clock", "subscriptions", "internal/httpapi"},
	"adapters/github":       {"mcpe", "clock", "subscriptions", "adapters", "internal/httpapi"},
	"adapters/slack":        {"mcpe", "clock", "subscriptions", "adapters", "internal/httpapi"},
	"adapters/alertmanager": {"mcpe", "clock", "subscriptions", "adapters", "internal/httpapi"},
	"adapters/mcp":          {"mcpe", "clock", "subscriptions", "adapters", "client"},
	"adapters/catalog":      {"mcpe", "clock", "subscriptions"},
	"internal/httpapi":      {"mcpe", "clock", "subscriptions"},
	"internal/console":      {"mcpe", "clock", "subscriptions", "internal/httpapi"},
	"internal/metrics":      {"mcpe", "clock", "subscriptions", "delivery/realtime", "internal/httpapi"},
	// The sessions are the live notifier's sinks; SEP-3415's webhook mode
	// sends through the webhook handler's Sender.
	"internal/mcpserver": {"mcpe", "clock", "subscriptions", "tools", "delivery/realtime", "handlers/webhook", "internal/httpapi", "internal/stdio"},
}

// onlyImportedBy are packages that only the listed ones (and test support,
// bench and examples) may import: the stores, which the command opens, and
// the Prometheus client.
var onlyImportedBy = map[string][]string{
	module + "subscriptions/sqlite":       {"cmd/mcpe-server"},
	module + "subscriptions/postgres":     {"cmd/mcpe-server"},
	"github.com/prometheus/client_golang": {"internal/metrics"},
}

// sdkFree are the packages that may not import the go-sdk: the domain and
// the delivery channels.
var sdkFree = []string{"mcpe", "subscriptions", "delivery", "delivery/cron", "delivery/scheduled", "delivery/realtime", "handlers"}

// TestLayering checks that the packages import in the direction
// docs/architecture.md says.
func TestLayering(t *testing.T) {
	_, dirs := sourceDirs(t, parser.ImportsOnly)
	root := filepath.Join("..", "..")
	for dir, files := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkg := filepath.ToSlash(rel)
		allowed, checked := layers[pkg]
		support := strings.HasSuffix(pkg, "test") || strings.HasPrefix(pkg, "bench/") || strings.HasPrefix(pkg, "examples/")
		seen := map[string]bool{}
		for _, f := range files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if seen[path] {
					continue
				}
				seen[path] = true
				if dep, ok := strings.CutPrefix(path, module); ok && checked && !slices.Contains(allowed, dep) {
					t.Errorf("%s imports %s, which docs/architecture.md does not let it", pkg, dep)
				}
				if strings.HasPrefix(path, "github.com/modelcontextprotocol/go-sdk") && slices.Contains(sdkFree, pkg) {
					t.Errorf("%s imports %s; it must not depend on the go-sdk", pkg, path)
				}
				for only, importers := range onlyImportedBy {
					if (path == only || strings.HasPrefix(path, only+"/")) && !support && !slices.Contains(importers, pkg) {
						t.Errorf("%s imports %s, which only %v may", pkg, path, importers)
					}
				}
			}
		}
	}
	var missing []string
	for pkg := range layers {
		if _, ok := dirs[filepath.Join(root, filepath.FromSlash(pkg))]; !ok {
			missing = append(missing, pkg)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("layers names packages that are gone: %v", missing)
	}
}
