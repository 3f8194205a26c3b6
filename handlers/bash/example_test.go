package bash_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/mcpe-server/mcpe-server/handlers/bash"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// A subscription's arguments reach the program as argv: placeholders are
// filled in, and shell syntax is plain text.
func ExampleRunner() {
	r, err := bash.New(&bash.Options{
		Sandbox:  bash.SandboxOff,
		Commands: map[string]bash.Command{"echo": {Path: "/bin/echo"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	spec := &mcpe.HandlerSpec{
		Type:    mcpe.HandlerBash,
		Command: "echo",
		Input:   mcpe.InputEnv,
		Args:    []string{"new", "${MCPE_EVENT_TYPE}:", "$MCPE_EVENT_DATA", "$(rm -rf /)"},
	}
	if err := r.Check(ctx, "alice", spec); err != nil {
		log.Fatal(err)
	}
	out := r.Handle(ctx, &subscriptions.Invocation{
		SubscriptionID: "sub-1",
		Spec:           spec,
		Kind:           mcpe.InboxEvent,
		Event:          json.RawMessage(`{"id":"0b6f2a4e-2f4c-4d59-9a0e-6a4b0f7f3c11","type":"github.issue.opened","data":{"number":42},"metadata":{"timestamp":"2025-01-15T10:30:00Z","priority":"normal"}}`),
	})
	fmt.Print(out.Output)
	fmt.Println(out.Err)

	fmt.Println(r.Check(ctx, "alice", &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: "rm"}))
	// Output:
	// new github.issue.opened: {"number":42} $(rm -rf /)
	// <nil>
	// handler.command: "rm" is not a command the operator allowed; use one of "echo" (a name, not a path or a shell line)
}
