package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
	"github.com/mcpe-server/mcpe-server/subscriptions"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// mcpPost sends one JSON-RPC request to url's /mcp in session id ("" to
// start one) and returns the status and the session ID the answer names.
func mcpPost(t *testing.T, url, id, method string, params any) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if got := resp.Header.Get("Mcp-Session-Id"); got != "" {
		id = got
	}
	return resp.StatusCode, id
}

// TestLapsedServerSessions runs two servers on one SQLite file, each on a
// clock of its own. The first stops marking its run, as a frozen process
// does: the second deletes what the first's session without a token owns
// once the mark lapsed, and the first, back, ends that session, whose
// client then gets 404 and must start a new one.
func TestLapsedServerSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcpe.db")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	open := func(clk *clocktest.Fake) (*App, *sqlite.Store, string) {
		store, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(context.Background(), Options{Store: store, HTTP: true, Clock: clk}) // a mark every 30s, lapsed after 3m
		if err != nil {
			t.Fatal(err)
		}
		h, err := a.HTTPHandler()
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(h)
		t.Cleanup(func() { hs.Close(); a.Close(); store.Close() })
		return a, store, hs.URL
	}
	clkA, clkB := clocktest.NewFake(start), clocktest.NewFake(start)
	_, storeA, urlA := open(clkA)
	_, storeB, _ := open(clkB)

	status, id := mcpPost(t, urlA, "", "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "0"}})
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", status, id)
	}
	if status, _ = mcpPost(t, urlA, id, "tools/call", map[string]any{"name": "events_subscribe",
		"arguments": map[string]any{"filter": map[string]any{"eventTypes": []string{"x"}}}}); status != http.StatusOK {
		t.Fatalf("events_subscribe: %d", status)
	}
	count := func() int {
		subs, err := storeB.ListSubscriptions(context.Background(), subscriptions.ListQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return len(subs)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d subscriptions stored, want the session's", n)
	}
	for range 6 {
		clkB.Advance(30 * time.Second)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d subscriptions stored three minutes on, want the session's still", n)
	}
	clkB.Advance(30 * time.Second)
	if n := count(); n != 0 {
		t.Fatalf("%d subscriptions stored once the first server's mark lapsed, want none", n)
	}
	clkA.Advance(30 * time.Second)
	deadline := time.Now().Add(mcpetest.Wait)
	for {
		status, _ = mcpPost(t, urlA, id, "tools/list", map[string]any{})
		if status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a request on the session of a lapsed run: %d; want 404 Not Found", status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if runs, err := storeA.LapsedRuns(context.Background(), start.Add(time.Hour), 10); err != nil || len(runs) != 2 {
		t.Errorf("runs marked = %q, %v; want both servers' (the first marked again)", runs, err)
	}
}
