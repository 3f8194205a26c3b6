// Package tools registers the MCPE subscription tools (events_subscribe,
// events_unsubscribe, events_list, events_pause, events_resume, events_update),
// events_poll and, given a catalog, events_catalog on an MCP server, and
// translates between tool arguments and the subscriptions domain. Arguments
// are decoded strictly and every mistake comes back as a tool error written
// for the model: what was wrong and what is accepted.
package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Service is what the tools need from the subscriptions domain.
type Service interface {
	Subscribe(ctx context.Context, principal string, req mcpe.SubscribeRequest) (*subscriptions.Subscription, error)
	Preview(ctx context.Context, principal string, req mcpe.SubscribeRequest) (mcpe.DryRunResult, error)
	Unsubscribe(ctx context.Context, principal, id string) error
	List(ctx context.Context, principal string, status mcpe.Status) ([]*subscriptions.Subscription, error)
	Pause(ctx context.Context, principal, id string) (*subscriptions.Subscription, error)
	Resume(ctx context.Context, principal, id string) (*subscriptions.Subscription, error)
	Update(ctx context.Context, principal string, req mcpe.UpdateRequest) (*subscriptions.Subscription, error)
	Poll(ctx context.Context, principal string, req mcpe.PollRequest) (mcpe.PollResult, error)
	Event(ctx context.Context, principal string, req mcpe.PollRequest) (json.RawMessage, error)
	Capability() mcpe.Capability
	Retention() subscriptions.Retention
}

// PrincipalFunc returns the principal a tool call acts for.
type PrincipalFunc func(ctx context.Context, req *mcp.CallToolRequest) (string, error)

// Options configure Register.
type Options struct {
	// Service is required.
	Service Service
	// Principal is required.
	Principal PrincipalFunc
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Commands are the bash handler's allowed command names, listed in the
	// schema.
	Commands []string
	// Catalog, when set, adds events_catalog.
	Catalog Catalog
}

// Catalog is what events_catalog reads.
type Catalog interface {
	Get(ctx context.Context, req mcpe.CatalogRequest) (*mcpe.Catalog, error)
}

// Register adds the tools to s and returns them.
func Register(s *mcp.Server, opts Options) *Set {
	if opts.Service == nil || opts.Principal == nil {
		panic("tools: Register needs Options.Service and Options.Principal")
	}
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	svc := opts.Service
	names := Names
	if opts.Catalog != nil {
		names = append(slices.Clone(Names), mcpe.ToolCatalog)
	}
	d := describer{caps: svc.Capability(), retention: svc.Retention(), commands: opts.Commands, tools: names, catalog: opts.Catalog != nil}
	set := &Set{calls: make(map[string]func(context.Context, string, json.RawMessage) (*mcp.CallToolResult, error))}
	r := registrar{set: set, server: s, principal: opts.Principal, log: opts.Logger}

	add(r, d.subscribeTool(), func(ctx context.Context, p string, in *mcpe.SubscribeRequest) (any, error) {
		if in.DryRun {
			res, err := svc.Preview(ctx, p, *in)
			if err == nil { // a refused filter's patterns are not looked up
				res.Warnings = warnings(ctx, opts.Catalog, in.Filter.EventTypes)
			}
			return res, err
		}
		sub, err := svc.Subscribe(ctx, p, *in)
		if err != nil {
			return nil, err
		}
		return subscribed{sub.View(), warnings(ctx, opts.Catalog, in.Filter.EventTypes)}, nil
	})
	add(r, d.unsubscribeTool(), func(ctx context.Context, p string, in *mcpe.SubscriptionRef) (any, error) {
		if err := svc.Unsubscribe(ctx, p, in.SubscriptionID); err != nil {
			return nil, err
		}
		return mcpe.UnsubscribeResult{SubscriptionID: in.SubscriptionID, Unsubscribed: true, Success: true}, nil
	})
	add(r, d.listTool(), func(ctx context.Context, p string, in *mcpe.ListRequest) (any, error) {
		subs, err := svc.List(ctx, p, in.Status)
		if err != nil {
			return nil, err
		}
		items := make([]mcpe.ListItem, len(subs))
		for i, sub := range subs {
			v := *sub.View()
			items[i] = mcpe.ListItem{ID: v.ID, Subscription: &v}
			v.ID = ""
		}
		return mcpe.ListResult{Subscriptions: items}, nil
	})
	add(r, d.pauseTool(), func(ctx context.Context, p string, in *mcpe.SubscriptionRef) (any, error) {
		return view(svc.Pause(ctx, p, in.SubscriptionID))
	})
	add(r, d.resumeTool(), func(ctx context.Context, p string, in *mcpe.SubscriptionRef) (any, error) {
		return view(svc.Resume(ctx, p, in.SubscriptionID))
	})
	add(r, d.updateTool(), func(ctx context.Context, p string, in *mcpe.UpdateRequest) (any, error) {
		return view(svc.Update(ctx, p, *in))
	})
	add(r, d.pollTool(), func(ctx context.Context, p string, in *mcpe.PollRequest) (any, error) {
		if in.EventID != "" {
			ev, err := svc.Event(ctx, p, *in)
			return map[string]json.RawMessage{"event": ev}, err
		}
		return svc.Poll(ctx, p, *in)
	})
	if opts.Catalog != nil {
		add(r, d.catalogTool(), func(ctx context.Context, _ string, in *mcpe.CatalogRequest) (any, error) {
			cat, err := opts.Catalog.Get(ctx, *in)
			if err != nil {
				return nil, err
			}
			return cat.Brief(in.Pattern), nil
		})
	}
	return set
}

// subscribed is events_subscribe's result: the subscription, and what may
// be wrong with its filter.
type subscribed struct {
	*mcpe.Subscription
	Warnings []string `json:"warnings,omitempty"`
}

// Names are the names of the tools Register always adds, in order;
// events_catalog follows when a catalog is given.
var Names = []string{mcpe.ToolSubscribe, mcpe.ToolUnsubscribe, mcpe.ToolList, mcpe.ToolPause, mcpe.ToolResume, mcpe.ToolUpdate, mcpe.ToolPoll}

type registrar struct {
	set       *Set
	server    *mcp.Server
	principal PrincipalFunc
	log       *slog.Logger
}

// Set is the registered tools, callable in process for a principal: what an
// agent handler's LLM may use.
type Set struct {
	tools []*mcp.Tool
	calls map[string]func(ctx context.Context, principal string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// Tools returns the tools' definitions, in registration order.
func (s *Set) Tools() []*mcp.Tool { return s.tools }

// CallTool calls a tool for principal, exactly as a client of principal
// would: a mistake in args is an error result, not an error.
func (s *Set) CallTool(ctx context.Context, principal, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	call := s.calls[name]
	if call == nil {
		return nil, fmt.Errorf("no tool %q", name)
	}
	return call(ctx, principal, args)
}

// add registers a tool whose arguments decode strictly into In.
func add[In any](r registrar, t *mcp.Tool, h func(ctx context.Context, principal string, in *In) (any, error)) {
	call := func(ctx context.Context, principal string, args json.RawMessage) (*mcp.CallToolResult, error) {
		in := new(In)
		if err := decodeArgs(args, in, t, r.set.tools...); err != nil {
			return errorResult(err), nil
		}
		out, err := h(ctx, principal, in)
		if err != nil {
			if !isCallerError(err) {
				r.log.Error("tool failed", "tool", t.Name, "principal", principal, "error", err)
				err = errors.New("the server could not complete this call because of an internal error; try again, and if it persists tell the operator (details are in the server log)")
			}
			return errorResult(err), nil
		}
		body, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
			StructuredContent: json.RawMessage(body),
		}, nil
	}
	r.set.tools = append(r.set.tools, t)
	r.set.calls[t.Name] = call
	r.server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		principal, err := r.principal(ctx, req)
		if err != nil {
			return errorResult(err), nil
		}
		return call(ctx, principal, req.Params.Arguments)
	})
}

func errorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// isCallerError reports whether err is about the caller's input or
// subscriptions, and so safe and useful to show as is.
func isCallerError(err error) bool {
	var inv *mcpe.InvalidError
	return errors.As(err, &inv) ||
		errors.Is(err, subscriptions.ErrNotFound) ||
		errors.Is(err, subscriptions.ErrLimitReached) ||
		errors.Is(err, subscriptions.ErrExpired)
}

// view returns what the owner of sub sees of it.
func view(sub *subscriptions.Subscription, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return sub.View(), nil
}
