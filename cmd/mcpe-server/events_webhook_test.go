package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/handlers/webhook"
)

// TestEventsWebhookEndToEnd: the binary with the webhook handler on and
// loopback allowed subscribes a receiver with events/subscribe (verifying
// it with the challenge), and POSTs it an event posted to /v1/events,
// signed with the client's secret.
func TestEventsWebhookEndToEnd(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	type hit struct {
		header http.Header
		body   map[string]any
	}
	hits := make(chan hit, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var body map[string]any
		if webhook.Verify(secret, req.Header, raw, time.Now()) != nil || json.Unmarshal(raw, &body) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		hits <- hit{req.Header.Clone(), body}
		if body["type"] == "verification" {
			json.NewEncoder(w).Encode(map[string]any{"challenge": body["challenge"]})
		}
	}))
	t.Cleanup(rcv.Close)
	next := func() hit {
		t.Helper()
		select {
		case h := <-hits:
			return h
		case <-time.After(10 * time.Second):
			t.Fatal("the receiver got nothing within 10s")
		}
		return hit{}
	}
	cfg := writeConfig(t, "handlers:\n  webhook:\n    enabled: true\n    allowHTTP: true\n    allowNetworks: [\"127.0.0.1\"]\n")
	r := startRawStdio(t, filepath.Join(t.TempDir(), "mcpe.db"), "--config", cfg)

	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"events/list"}`)
	list := r.next(t, func(m map[string]any) bool { return m["id"] != nil })
	first := list["result"].(map[string]any)["events"].([]any)[0].(map[string]any)
	if modes, _ := json.Marshal(first["delivery"]); string(modes) != `["poll","push","webhook"]` {
		t.Fatalf("events/list delivery: %s", modes)
	}

	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"events/subscribe","params":{"name":"mcpe.filter","arguments":{"eventTypes":["e2e.*"]},"delivery":{"mode":"webhook","url":"`+rcv.URL+`/hook","secret":"`+secret+`"},"ttlMs":600000}}`)
	res := r.next(t, func(m map[string]any) bool { return m["id"] != nil })
	result, ok := res["result"].(map[string]any)
	if !ok {
		t.Fatalf("events/subscribe: %v", res)
	}
	id, _ := result["id"].(string)
	if v := next(); v.body["type"] != "verification" || v.header.Get("X-MCP-Subscription-Id") != id {
		t.Fatalf("verification: %v %v", v.header, v.body)
	}
	postN(t, r.base, 1, 1)
	d := next()
	data, _ := d.body["data"].(map[string]any)
	if d.header.Get("X-MCP-Subscription-Id") != id || d.body["name"] != "mcpe.filter" || data["type"] != "e2e.step" ||
		d.header.Get("webhook-id") != d.body["eventId"] {
		t.Fatalf("delivery: %v %v", d.header, d.body)
	}
}
