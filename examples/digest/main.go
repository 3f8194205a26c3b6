// Digest subscribes to events for a daily digest: the server keeps the
// matching events and delivers them together at 09:00 in the chosen time
// zone, and this program prints each digest as it arrives.
//
//	go run ./examples/digest -zone Europe/Paris
//
// -cron changes the schedule ("0 9 * * MON-FRI", "@hourly"; a started server
// accepts "@every 1m" at the shortest), -types the event types ("*" for all,
// default github.issues.opened) and -max the most events per digest. With no
// -url it starts mcpe-server over stdio, with a throwaway database and HTTP
// on 127.0.0.1:8765 (-listen), and prints a curl command that publishes an
// event; the events wait on the server until the digest fires. To use a
// server that is already running, give its MCP endpoint and a bearer token
// that names a principal in its auth.tokens, so that the subscription, and
// the digest, outlive the connection:
//
//	go run ./examples/digest -url http://127.0.0.1:8765/mcp -token "$MCPE_TOKEN"
//
// A digest that fires while this program is not connected waits in the
// server's inbox and comes when it connects again. Stop it with Ctrl-C; it
// removes its subscription on the way out.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/examples/internal/setup"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func main() { setup.Main("digest", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, flags := setup.NewFlagSet("digest", stderr)
	expr := fs.String("cron", "0 9 * * *", "cron `expression` of the digest: five fields or a descriptor such as @daily")
	zone := fs.String("zone", "America/New_York", "IANA time `zone` of the schedule")
	types := fs.String("types", "github.issues.opened", "comma-separated event `types` or patterns to collect")
	maxEvents := fs.Int("max", 100, "most `events` per digest; the rest lead the next one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; quote a cron expression given with -cron", fs.Arg(0))
	}
	if _, err := time.LoadLocation(*zone); err != nil || *zone == "" || *zone == "Local" {
		return fmt.Errorf("-zone %q is not an IANA time zone; use e.g. Europe/Paris or America/New_York", *zone)
	}

	conn, err := setup.Connect(ctx, flags, setup.Options{
		Name:   "digest",
		Stderr: stderr,
		Register: func(c *client.Client) error {
			c.OnBatch(func(_ context.Context, b mcpe.BatchParams) { printDigest(stdout, b) })
			return nil
		},
	})
	if err != nil {
		return err
	}
	defer conn.Close()

	sub, err := conn.Subscribe(ctx, mcpe.SubscribeRequest{
		Filter: mcpe.Filter{EventTypes: strings.Split(*types, ",")},
		Delivery: &mcpe.Delivery{
			Channels: []mcpe.Channel{mcpe.ChannelCron},
			CronSchedule: &mcpe.CronSchedule{
				Expression:           *expr,
				Timezone:             *zone,
				MaxEventsPerDelivery: *maxEvents,
			},
		},
	})
	if err != nil {
		return err // the server says what was wrong with the schedule
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := conn.Unsubscribe(ctx, sub.ID); err != nil {
			fmt.Fprintln(stderr, "digest: remove the subscription:", err)
		}
	}()
	next := "unknown"
	if sub.NextDelivery != nil {
		next = sub.NextDelivery.At
	}
	fmt.Fprintf(stderr, "subscribed to %s (%s); the first digest comes at %s\n", *types, sub.ID, next)
	// An example type that the first entry of -types matches.
	example := strings.NewReplacer("*", "example", "?", "x").Replace(strings.Split(*types, ",")[0])
	if mcpe.ValidateType(example) == nil {
		fmt.Fprintf(stderr, "publish an event with:\n  %s\n", conn.Curl(example, `{"issue": {"number": 1347, "title": "Login fails with SSO enabled"}}`, ""))
	}
	return conn.Wait(ctx)
}

// printDigest prints one digest: a heading, then one line per event.
func printDigest(w io.Writer, b mcpe.BatchParams) {
	fmt.Fprintf(w, "digest: %s", count(len(b.Events), "event"))
	if b.Remaining > 0 {
		fmt.Fprintf(w, ", %d more in the next one", b.Remaining)
	}
	fmt.Fprintln(w)
	for _, raw := range b.Events {
		var ev mcpe.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			fmt.Fprintf(w, "  (an event that does not decode: %v)\n", err)
			continue
		}
		fmt.Fprintf(w, "  %s %s %s %s\n", ev.Metadata.Timestamp.UTC().Format(time.RFC3339), ev.Metadata.Priority, ev.Type, summary(ev.Data))
	}
}

// count is "1 event" or "n events".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// summary is a title found in the data, or the data itself.
func summary(data json.RawMessage) string {
	var d struct {
		Title string `json:"title"`
		Issue struct {
			Number int64  `json:"number"`
			Title  string `json:"title"`
		} `json:"issue"`
	}
	switch _ = json.Unmarshal(data, &d); {
	case d.Issue.Title != "":
		return fmt.Sprintf("#%d %q", d.Issue.Number, d.Issue.Title)
	case d.Title != "":
		return fmt.Sprintf("%q", d.Title)
	}
	return string(data)
}
