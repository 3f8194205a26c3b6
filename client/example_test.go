package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Subscribe to new GitHub issues and print each one. The server here runs
// in process; a program connects to a real one with Command or
// StreamableHTTP.
func Example() {
	ctx := context.Background()
	srv, err := clienttest.Start(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := client.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	got := make(chan struct{})
	c.OnEvent("github.issues.*", func(ctx context.Context, subscriptionID string, ev mcpe.Event) {
		fmt.Printf("%s: %s\n", ev.Type, ev.Data)
		close(got)
	})
	t, err := srv.Transport(ctx, "alice")
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Connect(ctx, t); err != nil {
		log.Fatal(err)
	}
	fmt.Println("events supported:", c.SupportsEvents())
	if _, err := c.Subscribe(ctx, mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"github.issues.*"}},
	}); err != nil {
		log.Fatal(err)
	}

	// Someone opens an issue (POST /v1/events on a real server).
	if _, err := srv.Publish(ctx, mcpe.EventInput{Type: "github.issues.opened", Data: json.RawMessage(`{"title":"crash on start"}`)}); err != nil {
		log.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		fmt.Println("no event")
	}
	// Output:
	// events supported: true
	// github.issues.opened: {"title":"crash on start"}
}

// Run mcpe-server as a subprocess over stdio, start it again if it dies,
// and never miss a deploy failure.
func ExampleCommand() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New(&client.Options{Reconnect: client.Command("mcpe-server", "--stdio")})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.OnEvent("deploy.failed", func(ctx context.Context, _ string, ev mcpe.Event) {
		fmt.Printf("deploy failed: %s\n", ev.Data)
	})
	if err := c.Connect(ctx, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, mcpe.SubscribeRequest{Filter: mcpe.Filter{EventTypes: []string{"deploy.*"}}}); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
}

// Connect over Streamable HTTP with a bearer token, so that the
// subscriptions outlive each session, and print each morning's digest.
func ExampleStreamableHTTP() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New(&client.Options{Reconnect: client.StreamableHTTP("http://127.0.0.1:8765/mcp", os.Getenv("MCPE_TOKEN"))})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.OnBatch(func(ctx context.Context, b mcpe.BatchParams) {
		fmt.Printf("digest: %d new issues\n", len(b.Events))
	})
	if err := c.Connect(ctx, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: []string{"github.issues.opened"}},
		Delivery: &mcpe.Delivery{
			Channels:     []mcpe.Channel{mcpe.ChannelCron},
			CronSchedule: &mcpe.CronSchedule{Expression: "0 9 * * *", Timezone: "Europe/Paris"},
		},
	}); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
}
