package client

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// ToolError is a tool call the server refused. Message is the server's
// explanation, written to say what was wrong and what would be accepted.
type ToolError struct {
	Tool    string
	Message string
}

func (e *ToolError) Error() string { return e.Tool + ": " + e.Message }

// Subscribe creates a subscription (events_subscribe).
func (c *Client) Subscribe(ctx context.Context, req mcpe.SubscribeRequest) (*mcpe.Subscription, error) {
	return call[*mcpe.Subscription](ctx, c, mcpe.ToolSubscribe, req)
}

// Unsubscribe removes a subscription for good (events_unsubscribe).
func (c *Client) Unsubscribe(ctx context.Context, subscriptionID string) error {
	_, err := call[mcpe.UnsubscribeResult](ctx, c, mcpe.ToolUnsubscribe, mcpe.SubscriptionRef{SubscriptionID: subscriptionID})
	return err
}

// Update changes a subscription's filter, delivery, expiry or handler
// (events_update); the fields left out are kept.
func (c *Client) Update(ctx context.Context, req mcpe.UpdateRequest) (*mcpe.Subscription, error) {
	return call[*mcpe.Subscription](ctx, c, mcpe.ToolUpdate, req)
}

// Pause stops a subscription's deliveries until Resume (events_pause).
func (c *Client) Pause(ctx context.Context, subscriptionID string) (*mcpe.Subscription, error) {
	return call[*mcpe.Subscription](ctx, c, mcpe.ToolPause, mcpe.SubscriptionRef{SubscriptionID: subscriptionID})
}

// Resume restarts a paused subscription (events_resume).
func (c *Client) Resume(ctx context.Context, subscriptionID string) (*mcpe.Subscription, error) {
	return call[*mcpe.Subscription](ctx, c, mcpe.ToolResume, mcpe.SubscriptionRef{SubscriptionID: subscriptionID})
}

// List returns the caller's subscriptions with the given status, or all of
// them when status is empty (events_list).
func (c *Client) List(ctx context.Context, status mcpe.Status) ([]*mcpe.Subscription, error) {
	res, err := call[mcpe.ListResult](ctx, c, mcpe.ToolList, mcpe.ListRequest{Status: status})
	if err != nil {
		return nil, err
	}
	subs := make([]*mcpe.Subscription, len(res.Subscriptions))
	for i, item := range res.Subscriptions {
		subs[i] = cmp.Or(item.Subscription, new(mcpe.Subscription))
		subs[i].ID = item.ID
	}
	return subs, nil
}

// Poll reads the caller's inbox (events_poll). It does not call the
// handlers, and does not move the position Client catch-ups start from.
func (c *Client) Poll(ctx context.Context, req mcpe.PollRequest) (mcpe.PollResult, error) {
	return call[mcpe.PollResult](ctx, c, mcpe.ToolPoll, req)
}

// Catalog returns the event types the server can deliver, keeping those
// that match pattern; empty keeps all (events_catalog).
func (c *Client) Catalog(ctx context.Context, pattern string) (*mcpe.Catalog, error) {
	return call[*mcpe.Catalog](ctx, c, mcpe.ToolCatalog, mcpe.CatalogRequest{Pattern: pattern})
}

// call calls a tool on the live session, waiting for a reconnection in
// progress.
func call[Out any](ctx context.Context, c *Client, tool string, args any) (Out, error) {
	cs, err := c.current(ctx)
	if err != nil {
		var zero Out
		return zero, fmt.Errorf("%s: %w", tool, err)
	}
	return callTool[Out](ctx, cs, tool, args)
}

// callTool calls a tool and decodes its structured result into Out.
func callTool[Out any](ctx context.Context, cs *mcp.ClientSession, tool string, args any) (Out, error) {
	var out Out
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return out, fmt.Errorf("%s: %w", tool, err)
	}
	var text strings.Builder
	for _, content := range res.Content {
		if tc, ok := content.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return out, &ToolError{Tool: tool, Message: text.String()}
	}
	// The result is the structured content; a server that sends only the
	// JSON text of it is read too.
	b := []byte(text.String())
	if res.StructuredContent != nil {
		if b, err = json.Marshal(res.StructuredContent); err != nil {
			return out, fmt.Errorf("%s: encode result: %w", tool, err)
		}
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("%s: decode result %.200s: %w", tool, b, err)
	}
	return out, nil
}
