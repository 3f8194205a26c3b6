package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is the webhook delivery mode of SEP-3415 for Go callers:
// events/subscribe asks the server to POST an event type's occurrences to a
// URL, signed with a secret the caller chose; the subscription lasts a TTL
// and is kept by subscribing again before refreshBefore (RunWebhook).

// WebhookSubscription asks for webhook delivery of an event type.
type WebhookSubscription struct {
	// Name is an event type from events/list; Arguments, when not nil,
	// are its arguments (a JSON object).
	Name      string
	Arguments json.RawMessage
	// URL receives the deliveries (https, unless the server's operator
	// allows http); Secret signs them (a whsec_ secret of 24 to 64 random
	// bytes, Standard Webhooks).
	URL, Secret string
	// TTL is how long the subscription lasts unless refreshed; zero asks
	// for the server's default. The server may grant less.
	TTL time.Duration
}

// WebhookGrant is what events/subscribe granted.
type WebhookGrant struct {
	// ID names the subscription; deliveries carry it as
	// X-MCP-Subscription-Id.
	ID string
	// RefreshBefore is when the subscription ends unless subscribed again;
	// zero when it does not expire.
	RefreshBefore time.Time
}

func (w *WebhookSubscription) validate() error {
	switch {
	case w.Name == "":
		return errors.New("client: WebhookSubscription.Name is required: an event type from events/list")
	case w.URL == "":
		return errors.New("client: WebhookSubscription.URL is required: where deliveries are POSTed")
	case !strings.HasPrefix(w.Secret, "whsec_"):
		return errors.New("client: WebhookSubscription.Secret must be a whsec_ secret (Standard Webhooks: whsec_ and the base64 of 24 to 64 random bytes)")
	case w.TTL < 0:
		return fmt.Errorf("client: WebhookSubscription.TTL is %v; give a positive duration, or zero for the server's default", w.TTL)
	}
	return validArguments(w.Arguments)
}

type webhookDelivery struct {
	Mode   string `json:"mode"`
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

// webhookParams are the params of events/subscribe, and, without the
// secret and the TTL, of events/unsubscribe.
type webhookParams struct {
	mcp.ParamsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Delivery  webhookDelivery `json:"delivery"`
	TTLMs     *int64          `json:"ttlMs,omitempty"`
}

type subscribeResult struct {
	mcp.ResultBase
	ID            string  `json:"id"`
	RefreshBefore *string `json:"refreshBefore"`
}

// SubscribeWebhook makes (or, for the same name, arguments and URL,
// refreshes) a webhook subscription.
func (c *Client) SubscribeWebhook(ctx context.Context, w WebhookSubscription) (*WebhookGrant, error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	cs, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	p := &webhookParams{Name: w.Name, Arguments: w.Arguments, Delivery: webhookDelivery{Mode: "webhook", URL: w.URL, Secret: w.Secret}}
	if w.TTL > 0 {
		ms := w.TTL.Milliseconds()
		p.TTLMs = &ms
	}
	res, err := mcp.CallCustomMethod[*webhookParams, *subscribeResult](ctx, cs, MethodEventsSubscribe, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MethodEventsSubscribe, err)
	}
	if res.ID == "" {
		return nil, fmt.Errorf("%s: the server answered without an id", MethodEventsSubscribe)
	}
	g := &WebhookGrant{ID: res.ID}
	if res.RefreshBefore != nil {
		if g.RefreshBefore, err = time.Parse(time.RFC3339Nano, *res.RefreshBefore); err != nil {
			return nil, fmt.Errorf("%s: refreshBefore %q: %w", MethodEventsSubscribe, *res.RefreshBefore, err)
		}
	}
	return g, nil
}

// UnsubscribeWebhook ends the webhook subscription of w's name, arguments
// and URL.
func (c *Client) UnsubscribeWebhook(ctx context.Context, w WebhookSubscription) error {
	if w.Name == "" || w.URL == "" {
		return errors.New("client: UnsubscribeWebhook needs the Name and URL the subscription was made with")
	}
	if err := validArguments(w.Arguments); err != nil {
		return err
	}
	cs, err := c.current(ctx)
	if err != nil {
		return err
	}
	_, err = mcp.CallCustomMethod[*webhookParams, *emptyResult](ctx, cs, MethodEventsUnsubscribe,
		&webhookParams{Name: w.Name, Arguments: w.Arguments, Delivery: webhookDelivery{Mode: "webhook", URL: w.URL}})
	if err != nil {
		return fmt.Errorf("%s: %w", MethodEventsUnsubscribe, err)
	}
	return nil
}

// WebhookLoop keeps a webhook subscription alive.
type WebhookLoop struct {
	WebhookSubscription
	// Early is how long before refreshBefore the subscription is renewed;
	// zero means a third of the time left.
	Early time.Duration
	// OnGrant, when set, is told each grant.
	OnGrant func(WebhookGrant)
}

// RunWebhook subscribes, then subscribes again before each refreshBefore,
// until ctx ends; then it leaves the subscription to expire (call
// UnsubscribeWebhook to end it at once). A failed renewal is tried again
// with the client's back-off over a reconnected session; a refusal by the
// server (a JSON-RPC error) ends the loop with it.
func (c *Client) RunWebhook(ctx context.Context, l WebhookLoop) error {
	if err := l.validate(); err != nil {
		return err
	}
	backoff := c.opts.BackoffMin
	for {
		g, err := c.SubscribeWebhook(ctx, l.WebhookSubscription)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && isRefusal(err):
			return err
		case err != nil:
			wait = backoff
			backoff = min(2*backoff, c.opts.BackoffMax)
		default:
			backoff = c.opts.BackoffMin
			if l.OnGrant != nil {
				l.OnGrant(*g)
			}
			if g.RefreshBefore.IsZero() {
				<-ctx.Done()
				return ctx.Err()
			}
			left := g.RefreshBefore.Sub(c.opts.Clock.Now())
			early := l.Early
			if early <= 0 || early >= left {
				early = left / 3
			}
			wait = max(left-early, 0)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
	}
}
