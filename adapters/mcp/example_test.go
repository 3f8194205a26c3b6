package mcp_test

import (
	"context"
	"log"
	"os"

	"github.com/mcpe-server/mcpe-server/adapters/mcp"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// publisher stands in for the subscriptions.Service that cmd/mcpe-server
// passes.
type publisher struct{}

func (publisher) Publish(context.Context, mcpe.Event) (subscriptions.PublishResult, error) {
	return subscriptions.PublishResult{}, nil
}

// An adapter listening to a stdio server and a Streamable HTTP server.
func ExampleNew() {
	a, err := mcp.New(mcp.Options{
		Upstreams: []mcp.Upstream{
			{
				Name:    "github",
				Command: []string{"npx", "-y", "@modelcontextprotocol/server-github"},
				Env:     map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": os.Getenv("GITHUB_TOKEN")},
			},
			{
				Name:    "docs",
				URL:     "https://docs.example.com/mcp",
				Headers: map[string]string{"Authorization": "Bearer " + os.Getenv("DOCS_TOKEN")},
			},
		},
		Publisher: publisher{},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer a.Stop()
	// a.States() feeds the upstreams' states to events_catalog.
}
