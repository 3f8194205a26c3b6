package mcpserver

// This file serves SEP-1803's out-of-band subscriptions:
// resources/subscriptions/register creates an MCPE subscription of the
// caller's principal with a webhook handler (so the webhook handler's
// URL checks, SSRF guard, Standard Webhooks signing and durable retries
// apply), and answers with its subscription:// URI and the signing secret
// the server generated; resources/subscriptions/deregister removes it. The
// caller's subscriptions with a webhook handler, whether made here or with
// events_subscribe, are its subscription:// resources.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// The methods of out-of-band subscriptions.
const (
	MethodRegister   = "resources/subscriptions/register"
	MethodDeregister = "resources/subscriptions/deregister"
)

// SubscriptionScheme starts the URI of an out-of-band subscription:
// subscription://<subscriptionId>.
const SubscriptionScheme = "subscription://"

// RegisterParams are the params of resources/subscriptions/register.
type RegisterParams struct {
	mcp.ParamsBase
	// URIs are the event:// resources to subscribe to.
	URIs []string `json:"uris"`
	// TargetURI receives the events, signed per Standard Webhooks.
	TargetURI string `json:"targetUri"`
}

// RegisterResult is the result of resources/subscriptions/register.
type RegisterResult struct {
	mcp.ResultBase
	Subscription OutOfBand `json:"subscription"`
}

// OutOfBand is an out-of-band subscription as SEP-1803 shows it.
type OutOfBand struct {
	URI       string   `json:"uri"`
	EventURIs []string `json:"eventUris"`
	TargetURI string   `json:"targetUri"`
	// WebhookSecret is given once, when the subscription is registered.
	WebhookSecret *WebhookSecret `json:"webhookSecret,omitempty"`
}

// WebhookSecret is SEP-1803's secret configuration of a webhook; this
// server always gives a Standard Webhooks key (whsec_...).
type WebhookSecret struct {
	Type string `json:"type"`
	Key  string `json:"key"`
}

// DeregisterParams are the params of resources/subscriptions/deregister.
type DeregisterParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

// DeregisterResult is the (empty) result of
// resources/subscriptions/deregister.
type DeregisterResult struct {
	mcp.ResultBase
}

// addWebhookMethods registers register, deregister and the
// subscription:// template.
func (s *Server) addWebhookMethods() error {
	err := errors.Join(mcp.AddReceivingCustomMethod(s.mcp, MethodRegister, s.register),
		mcp.AddReceivingCustomMethod(s.mcp, MethodDeregister, s.deregister))
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: SubscriptionScheme + "{id}",
		Name:        "subscription",
		Title:       "Out-of-band event subscription",
		Description: "One of your subscriptions that delivers to a webhook (resources/subscriptions/register or " +
			"events_subscribe with a webhook handler): its event URIs, target and delivery state. The signing secret is " +
			"never shown again.",
		MIMEType: "application/json",
	}, s.readSubscriptionResource)
	return err
}

// maxRegisterURIs bounds the event URIs of one registration.
const maxRegisterURIs = mcpe.MaxFilterPatterns

func (s *Server) register(ctx context.Context, ss *mcp.ServerSession, p *RegisterParams) (*RegisterResult, error) {
	if !s.webhooksOn() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this server's operator has not turned webhook delivery on (handlers.webhook.enabled), so out-of-band subscriptions cannot be registered; subscribe in band with resources/subscribe instead"}
	}
	if p == nil || len(p.URIs) == 0 {
		return nil, paramsError("uris: give at least one event:// URI, such as [\"event://github.issues.opened\"]")
	}
	if len(p.URIs) > maxRegisterURIs {
		return nil, paramsError("uris: %d URIs given; at most %d are accepted", len(p.URIs), maxRegisterURIs)
	}
	patterns := make([]string, len(p.URIs))
	for i, uri := range p.URIs {
		pat, err := parseEventURI(fmt.Sprintf("uris[%d]", i), uri)
		if err != nil {
			return nil, err
		}
		patterns[i] = pat
	}
	if p.TargetURI == "" {
		return nil, paramsError("targetUri: give the https:// URL the server should POST events to")
	}
	// An out-of-band subscription outlives the session, as a webhook
	// subscription of events/subscribe does: the same rule applies.
	principal, err := s.webhookPrincipal(ctx, ss)
	if err != nil {
		return nil, err
	}
	sub, err := s.opts.Service.Subscribe(ctx, principal, mcpe.SubscribeRequest{
		Filter:   mcpe.Filter{EventTypes: patterns},
		Delivery: &mcpe.Delivery{Channels: []mcpe.Channel{mcpe.ChannelRealtime}},
		Handler:  &mcpe.HandlerSpec{Type: mcpe.HandlerWebhook, URL: p.TargetURI},
	})
	if err != nil {
		if inv, ok := errors.AsType[*mcpe.InvalidError](err); ok && strings.HasPrefix(inv.Field, "handler") {
			return nil, paramsError("targetUri %q is refused: %s", p.TargetURI, inv.Message)
		}
		return nil, rpcError(err)
	}
	v := sub.View()
	if v.Handler == nil || v.Handler.Secret == "" {
		return nil, fmt.Errorf("register: subscription %s came back without its webhook secret", sub.ID)
	}
	s.log.Info("out-of-band subscription registered", "principal", principal, "subscription_id", sub.ID)
	out := outOfBand(v)
	out.WebhookSecret = &WebhookSecret{Type: "standard", Key: v.Handler.Secret}
	return &RegisterResult{Subscription: out}, nil
}

func (s *Server) deregister(ctx context.Context, ss *mcp.ServerSession, p *DeregisterParams) (*DeregisterResult, error) {
	if p == nil {
		return nil, paramsError("uri: give the subscription:// URI that resources/subscriptions/register returned")
	}
	id, err := parseSubscriptionURI(p.URI)
	if err != nil {
		return nil, err
	}
	principal := s.requestPrincipal(ctx, ss, nil)
	if _, err := s.webhookSubscription(ctx, principal, id); err != nil {
		return nil, err
	}
	if err := s.opts.Service.Unsubscribe(ctx, principal, id); err != nil {
		return nil, rpcError(err)
	}
	s.log.Info("out-of-band subscription deregistered", "principal", principal, "subscription_id", id)
	return &DeregisterResult{}, nil
}

// parseSubscriptionURI returns the subscription ID of a subscription://
// URI.
func parseSubscriptionURI(uri string) (string, error) {
	id, ok := strings.CutPrefix(uri, SubscriptionScheme)
	if !ok || id == "" || len(id) > 64 || strings.ContainsAny(id, "/?#") {
		return "", paramsError("uri: %q is not a subscription URI; give the subscription://<id> that resources/subscriptions/register returned", uri)
	}
	return id, nil
}

// webhookSubscription returns principal's subscription id when it
// delivers to a webhook; any other answer is resource-not-found, the same
// for another principal's subscription as for none.
func (s *Server) webhookSubscription(ctx context.Context, principal, id string) (*subscriptions.Subscription, error) {
	sub, err := s.opts.Service.Get(ctx, principal, id)
	if errors.Is(err, subscriptions.ErrNotFound) || (err == nil && (sub.Handler == nil || sub.Handler.Type != mcpe.HandlerWebhook)) {
		return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("no out-of-band subscription %s%s of yours; resources/list lists them", SubscriptionScheme, id)}
	}
	return sub, err
}

// outOfBand is the SEP-1803 view of a subscription with a webhook handler.
func outOfBand(v *mcpe.Subscription) OutOfBand {
	uris := make([]string, len(v.Filter.EventTypes))
	for i, t := range v.Filter.EventTypes {
		uris[i] = EventScheme + t
	}
	out := OutOfBand{URI: SubscriptionScheme + v.ID, EventURIs: uris}
	if v.Handler != nil {
		out.TargetURI = v.Handler.URL
	}
	return out
}

// webhookResources lists principal's subscriptions that deliver to a
// webhook, as subscription:// resources.
func (s *Server) webhookResources(ctx context.Context, principal string) []*mcp.Resource {
	subs, err := s.opts.Service.List(ctx, principal, "")
	if err != nil {
		s.log.Warn("list out-of-band subscriptions", "principal", principal, "error", err)
		return nil
	}
	var out []*mcp.Resource
	for _, sub := range subs {
		if sub.Handler == nil || sub.Handler.Type != mcpe.HandlerWebhook {
			continue
		}
		out = append(out, &mcp.Resource{
			URI:         SubscriptionScheme + sub.ID,
			Name:        "subscription " + sub.ID,
			Description: fmt.Sprintf("Delivers %s to a webhook (%s).", strings.Join(sub.Filter.EventTypes, ", "), sub.Status),
			MIMEType:    "application/json",
		})
	}
	return out
}

// readSubscriptionResource returns one out-of-band subscription of the
// caller: its SEP-1803 view and the MCPE subscription (without secret).
func (s *Server) readSubscriptionResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, err := parseSubscriptionURI(req.Params.URI)
	if err != nil {
		return nil, err
	}
	principal := s.requestPrincipal(ctx, req.Session, req.Extra)
	sub, err := s.webhookSubscription(ctx, principal, id)
	if err != nil {
		return nil, err
	}
	v := sub.View()
	res, err := jsonResource(req.Params.URI, struct {
		OutOfBand
		Subscription *mcpe.Subscription `json:"mcpeSubscription"`
	}{outOfBand(v), v})
	if err != nil {
		return nil, err
	}
	res.CacheScope = "private" // the caller's own subscription
	return res, nil
}
