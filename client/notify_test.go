package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// TestBridgeDeliversNotifications guards notify.go, the one place where the
// Client receives the MCPE notifications the go-sdk drops. A bare go-sdk
// server (not mcpe-server) writes events/event, events/batch and
// events/subscription_expired, plus a malformed and an unknown events/*
// notification, from inside a tool call: over Streamable HTTP they travel in
// that call's SSE response, over an in-memory transport in the connection.
// If a go-sdk upgrade stops them from reaching the handlers, or lets them
// break the session, this test fails.
func TestBridgeDeliversNotifications(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	type emitArgs struct {
		End string `json:"end"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "emit"}, func(ctx context.Context, req *mcp.CallToolRequest, args emitArgs) (*mcp.CallToolResult, struct{}, error) {
		sink, err := mcpserver.SessionSink(req.Session)
		if err != nil {
			return nil, struct{}{}, err
		}
		for _, n := range []struct{ method, params string }{
			{mcpe.MethodEvent, `{"subscriptionId": "s1", "cursor": "7", "event": {"id": "e1", "type": "a.b", "data": {"n": 1}, "metadata": {"timestamp": "2026-03-02T13:00:00Z", "priority": "high"}}}`},
			{mcpe.MethodEvent, `{"subscriptionId": 5}`},
			{"events/unknown", `{}`},
			{mcpe.MethodBatch, `{"subscriptionId": "s2", "cursor": "8", "events": [{"id": "e2", "type": "c.d", "data": {}}, {"id": "e3", "type": "c.e", "data": {}}], "remaining": 4}`},
			{mcpe.MethodSubscriptionExpired, `{"subscriptionId": "s3", "cursor": "9"}`},
			{mcpe.MethodSubscriptionExpired, `{"subscriptionId": "` + args.End + `"}`},
		} {
			if err := sink.Notify(ctx, n.method, json.RawMessage(n.params)); err != nil {
				return nil, struct{}{}, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, struct{}{}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(hs.Close)

	transports := map[string]func() mcp.Transport{
		"memory": func() mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := server.Connect(context.Background(), st, nil); err != nil {
				t.Fatal(err)
			}
			return ct
		},
		"http": func() mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: hs.URL} },
	}
	for name, transport := range transports {
		for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(name+"/"+protocol, func(t *testing.T) {
				rec := newRecorder()
				c, err := client.New(&client.Options{ProtocolVersion: protocol})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var events []mcpe.Event
				if _, err := c.OnEvent("*", func(ctx context.Context, sub string, ev mcpe.Event) {
					events = append(events, ev)
					rec.event("event")(ctx, sub, ev)
				}); err != nil {
					t.Fatal(err)
				}
				c.OnBatch(rec.batch)
				c.OnExpired(rec.expired)
				if err := c.Connect(ctxT(t), transport()); err != nil {
					t.Fatal(err)
				}
				if c.SupportsEvents() {
					t.Error("SupportsEvents() = true for a server without the capability")
				}
				cs := c.Session()
				res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "emit", Arguments: map[string]any{"end": "end1"}})
				if err != nil || res.IsError {
					t.Fatalf("emit = %+v, %v", res, err)
				}
				rec.expect(t,
					received{Handler: "event", SubscriptionID: "s1", Type: "a.b", ID: "e1"},
					received{Handler: "batch", SubscriptionID: "s2", Events: []string{"e2", "e3"}, Remaining: 4},
					received{Handler: "expired", SubscriptionID: "s3"},
					received{Handler: "expired", SubscriptionID: "end1"},
				)
				if diff := cmp.Diff(`{"n":1}`, string(events[0].Data)); diff != "" || events[0].Metadata.Priority != mcpe.PriorityHigh {
					t.Errorf("event decoded as %+v", events[0])
				}
				if got := c.Cursor(); got != "9" {
					t.Errorf("Cursor() = %q, want 9", got)
				}
				// The session is still usable, and repeats are dropped: the
				// same deliveries again reach no handler, only the new end.
				if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "emit", Arguments: map[string]any{"end": "end2"}}); err != nil {
					t.Fatalf("second call: %v", err)
				}
				rec.expect(t, received{Handler: "expired", SubscriptionID: "end2"})
			})
		}
	}
}
