package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/internal/pgtest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// catalogConfig configures every adapter, an upstream MCP server among
// them.
func catalogConfig(t *testing.T) string {
	return writeConfig(t, `
adapters:
  github:
    token: gh-secret
  slack:
    signingSecret: {token: slack-secret}
  alertmanager: {}
  mcp:
    upstreams:
      - name: docs
        command: ["`+filepath.Join(t.TempDir(), "no-such-program")+`"]
`)
}

// callCatalog calls events_catalog with args and returns the text a model
// reads, decoded.
func (r *rawStdio) callCatalog(t *testing.T, id int, args string) (string, mcpe.Catalog) {
	t.Helper()
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"events_catalog","arguments":%s}}`, id, args))
	res := r.next(t, func(m map[string]any) bool { return m["id"] == float64(id) })
	result, _ := res["result"].(map[string]any)
	content, _ := result["content"].([]any)
	if len(content) != 1 || result["isError"] == true {
		t.Fatalf("events_catalog %s: %v", args, res)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	var cat mcpe.Catalog
	if err := json.Unmarshal([]byte(text), &cat); err != nil {
		t.Fatal(err)
	}
	return text, cat
}

// TestCatalogEndToEnd runs the binary with every adapter configured, on
// both stores: what a model reads of the catalog fits in a few kilobytes,
// events/list has the types of GitHub's families, and the types posted to
// /v1/events are still listed after a restart.
func TestCatalogEndToEnd(t *testing.T) {
	for name, db := range map[string]func(t testing.TB) string{
		"sqlite":   func(t testing.TB) string { return filepath.Join(t.TempDir(), "mcpe.db") },
		"postgres": pgtest.Database,
	} {
		t.Run(name, func(t *testing.T) {
			db, cfg := db(t), catalogConfig(t)
			r := startRawStdio(t, db, "--config", cfg)
			for _, typ := range []string{"deploy.finished", "build.done"} {
				if code, body := post(t, r.base, "", `{"type": "`+typ+`", "data": {}}`); code != http.StatusAccepted {
					t.Fatalf("POST %s: %d %s", typ, code, body)
				}
			}
			text, overview := r.callCatalog(t, 1, `{}`)
			if len(text) > 6000 || len(overview.SeenRecently) != 2 {
				t.Errorf("overview: %d bytes, posted types %v; want at most 6000 bytes and the 2 posted", len(text), overview.SeenRecently)
			}
			text, deploy := r.callCatalog(t, 2, `{"pattern": "*deploy*"}`)
			var names []string
			for _, ct := range deploy.Types {
				names = append(names, ct.Type)
			}
			if len(text) > 8000 || !slices.Equal(names, []string{"github.deployment.<action>", "github.deployment_status.<action>"}) {
				t.Errorf("*deploy*: %d bytes, types %v; want at most 8000 bytes and GitHub's two deployment families", len(text), names)
			}
			if text, all := r.callCatalog(t, 3, `{"pattern": "*"}`); len(text) > 10000 || !strings.Contains(all.Note, "Narrow") {
				t.Errorf("*: %d bytes, note %q; want at most 10000 bytes and how to narrow", len(text), all.Note)
			}
			if _, one := r.callCatalog(t, 4, `{"pattern": "github.issues.opened"}`); len(one.Types) != 1 || one.Types[0].DataSchema == nil {
				t.Errorf("github.issues.opened: %+v; want its family with the data's schema", one.Types)
			}

			r.send(t, `{"jsonrpc":"2.0","id":5,"method":"events/list"}`)
			list := r.next(t, func(m map[string]any) bool { return m["id"] == float64(5) })
			raw, _ := json.Marshal(list)
			for _, typ := range []string{`"github.issues.opened"`, `"github.pull_request.closed"`, `"github.deployment_status.created"`, `"deploy.finished"`} {
				if !strings.Contains(string(raw), `"name":`+typ) {
					t.Errorf("events/list does not list %s", typ)
				}
			}

			// A stdio host starts the server anew for each conversation.
			r.in.Close()
			<-r.exited
			r = startRawStdio(t, db, "--config", cfg)
			if _, overview := r.callCatalog(t, 1, `{}`); len(overview.SeenRecently) != 2 {
				t.Errorf("after a restart the overview lists %v posted; want deploy.finished and build.done", overview.SeenRecently)
			}
		})
	}
}
