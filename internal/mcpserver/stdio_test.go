package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStdioBatchAndMalformed: a session that ConnectIO serves answers a
// JSON-RPC batch with one array, under 2025-11-25 as under older versions
// (as the SDK's transport did there), subscribes through a batch too, and
// ends, with the SDK's error, at a line that is not JSON.
func TestStdioBatchAndMalformed(t *testing.T) {
	e := newEnv(t, envOptions{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := e.srv.ConnectIO(context.Background(), inR, outW, "alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outW.Close() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<16), 1<<24)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the session wrote nothing more")
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no answer within 10s")
		}
		return ""
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := next(); !strings.Contains(l, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize answered %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"events_subscribe","arguments":{"filter":{"eventTypes":["a.*"]}}}}]`)
	var batch []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if l := next(); json.Unmarshal([]byte(l), &batch) != nil || len(batch) != 2 {
		t.Fatalf("the batch was answered %s; want an array of 2 answers", l)
	}
	for i, r := range batch {
		if r.ID != i+1 || r.Error != nil || r.Result == nil {
			t.Fatalf("answer %d of the batch: %+v", i, r)
		}
	}
	if !strings.Contains(string(batch[1].Result), `"status":"active"`) || strings.Contains(string(batch[1].Result), `"isError":true`) {
		t.Fatalf("events_subscribe in a batch answered %s", batch[1].Result)
	}
	if subs, err := e.svc.List(context.Background(), "alice", ""); err != nil || len(subs) != 1 {
		t.Fatalf("alice has %d subscriptions (%v) after subscribing in a batch; want 1", len(subs), err)
	}

	send(`garbage`)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		if err == nil || err.Error() != "invalid character 'g' looking for beginning of value" {
			t.Fatalf("the session ended with %v; want the SDK's JSON error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end at a line that is not JSON")
	}
}
