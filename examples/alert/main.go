// Alert wires critical alerts to a command: it subscribes to alert.* events
// of priority critical with a bash handler, so that the server runs a
// command the operator allowed for every such alert, even while no agent is
// connected. It prints each critical alert it receives, and what the
// handler did.
//
//	go run ./examples/alert
//
// With no -url it starts mcpe-server over stdio, with a throwaway database,
// HTTP on 127.0.0.1:8765 (-listen), and a configuration that allows one
// command, record-alert, which appends each alert's JSON to a file (-alerts,
// by default mcpe-alerts.json in the temporary directory):
//
//	handlers:
//	  bash:
//	    commands:
//	      record-alert:
//	        path: /usr/bin/tee          # found in PATH
//	        writablePaths: [/tmp]       # the directory of -alerts
//
// The handler is {"type": "bash", "command": "record-alert", "args": ["-a",
// FILE]}: the event JSON goes to tee's standard input. It prints a curl
// command that publishes a critical alert; the alertmanager adapter of a real
// server publishes the same events from Prometheus Alertmanager.
//
// To use a server that is already running, give its MCP endpoint and a
// bearer token that names a principal in its auth.tokens; its operator must
// allow the command (-command, with -args for its arguments, where the
// server fills in $MCPE_EVENT_TYPE and the other placeholders):
//
//	go run ./examples/alert -url http://127.0.0.1:8765/mcp -token "$MCPE_TOKEN" \
//	    -command notify -args 'Critical alert: $MCPE_EVENT_TYPE'
//
// Stop it with Ctrl-C; it removes its subscription on the way out.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/examples/internal/setup"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func main() { setup.Main("alert", run) }

// recordAlert is the command a started server allows.
const recordAlert = "record-alert"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, flags := setup.NewFlagSet("alert", stderr)
	command := fs.String("command", recordAlert, "`name` of a command the server's operator allowed for the bash handler")
	alerts := fs.String("alerts", filepath.Join(os.TempDir(), "mcpe-alerts.json"), "`file` that record-alert appends each alert to")
	cmdArgs := fs.String("args", "", "space-separated `arguments` of -command (default for record-alert: -a FILE)")
	every := fs.Duration("status-every", 2*time.Second, "how often to check what the handler did")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *every < 10*time.Millisecond {
		return fmt.Errorf("-status-every %v is too short; give at least 10ms", *every)
	}
	handler := &mcpe.HandlerSpec{Type: mcpe.HandlerBash, Command: *command, Input: mcpe.InputStdin}
	switch {
	case *cmdArgs != "":
		handler.Args = strings.Fields(*cmdArgs)
	case *command == recordAlert:
		abs, err := filepath.Abs(*alerts)
		if err != nil {
			return err
		}
		*alerts = abs
		handler.Args = []string{"-a", abs}
	}
	serverConfig := ""
	if flags.URL == "" {
		tee, err := exec.LookPath("tee")
		if err != nil {
			return errors.New("tee is not in PATH; record-alert needs it (or give -url and a server whose operator allowed another command)")
		}
		serverConfig = fmt.Sprintf("handlers:\n  bash:\n    commands:\n      %s:\n        path: %q\n        writablePaths: [%q]\n",
			recordAlert, tee, filepath.Dir(*alerts))
	}

	conn, err := setup.Connect(ctx, flags, setup.Options{
		Name:         "alert",
		Stderr:       stderr,
		ServerConfig: serverConfig,
		Register: func(c *client.Client) error {
			_, err := c.OnEvent("alert.*", func(_ context.Context, _ string, ev mcpe.Event) {
				fmt.Fprintf(stdout, "%s %s\n", strings.ToUpper(string(ev.Metadata.Priority)), describe(ev))
			})
			return err
		},
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	if caps, _ := conn.Capability(); !slices.Contains(caps.Handlers, mcpe.HandlerBash) {
		return errors.New("the server does not run bash handlers; its operator turns them on with handlers.bash in its configuration")
	}

	sub, err := conn.Subscribe(ctx, mcpe.SubscribeRequest{
		Filter: mcpe.Filter{
			EventTypes: []string{"alert.*"},
			Priority:   []mcpe.Priority{mcpe.PriorityCritical},
		},
		Handler: handler,
	})
	if err != nil {
		return err // the server lists the commands it allows
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := conn.Unsubscribe(ctx, sub.ID); err != nil {
			fmt.Fprintln(stderr, "alert: remove the subscription:", err)
		}
	}()
	fmt.Fprintf(stderr, "subscribed to critical alert.* events (%s); the server runs %q %q for each\n", sub.ID, *command, handler.Args)
	if *command == recordAlert && *cmdArgs == "" {
		fmt.Fprintf(stderr, "alerts are appended to %s\n", *alerts)
	}
	fmt.Fprintf(stderr, "raise one with:\n  %s\n", conn.Curl("alert.DiskFull.firing",
		`{"alertname": "DiskFull", "status": "firing", "labels": {"instance": "db-1", "severity": "critical"}, "annotations": {"summary": "Disk /var is 97% full on db-1"}}`, "critical"))

	ticker := time.NewTicker(*every)
	defer ticker.Stop()
	var last mcpe.HandlerStatus
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-conn.Done():
			return conn.Err()
		case <-ticker.C:
		}
		st, err := handlerStatus(ctx, conn.Client, sub.ID)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintln(stderr, "alert: read the handler's status:", err)
			continue
		}
		if st.Succeeded != last.Succeeded || st.Failed != last.Failed || st.Disabled != last.Disabled {
			fmt.Fprintf(stdout, "handler: %d succeeded, %d failed", st.Succeeded, st.Failed)
			if st.Failed > last.Failed && st.LastError != "" {
				fmt.Fprintf(stdout, "; last error: %s", st.LastError)
			}
			if st.Disabled != "" {
				fmt.Fprintf(stdout, "; turned off: %s", st.Disabled)
			}
			fmt.Fprintln(stdout)
			last = st
		}
	}
}

// handlerStatus reads what the subscription's handler has done.
func handlerStatus(ctx context.Context, c *client.Client, id string) (mcpe.HandlerStatus, error) {
	subs, err := c.List(ctx, "")
	if err != nil {
		return mcpe.HandlerStatus{}, err
	}
	for _, s := range subs {
		if s.ID == id && s.HandlerStatus != nil {
			return *s.HandlerStatus, nil
		}
	}
	return mcpe.HandlerStatus{}, fmt.Errorf("subscription %s is gone", id)
}

// describe is one line about an alert: its type, summary and labels.
func describe(ev mcpe.Event) string {
	var d struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	var b strings.Builder
	b.WriteString(ev.Type)
	if json.Unmarshal(ev.Data, &d) == nil {
		if s := d.Annotations["summary"]; s != "" {
			fmt.Fprintf(&b, ": %s", s)
		}
		for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
			fmt.Fprintf(&b, " %s=%s", k, d.Labels[k])
		}
	}
	return b.String()
}
