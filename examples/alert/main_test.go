package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/client/clienttest"
	"github.com/mcpe-server/mcpe-server/examples/internal/exampletest"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

const token = "alert-token"

func alert(name, priority, summary string) mcpe.EventInput {
	data, _ := json.Marshal(map[string]any{
		"alertname":   name,
		"status":      "firing",
		"labels":      map[string]string{"alertname": name, "instance": "db-1"},
		"annotations": map[string]string{"summary": summary},
	})
	return mcpe.EventInput{Type: "alert." + name + ".firing", Data: data, Metadata: &mcpe.MetadataInput{Priority: mcpe.Priority(priority)}}
}

// startServer starts a server with the test's token and the commands
// allowed.
func startServer(t *testing.T, commands map[string]string) *clienttest.Server {
	t.Helper()
	return exampletest.StartServer(t, &clienttest.Options{Tokens: map[string]string{token: "alice"}, Commands: commands})
}

// TestAlert runs the example against an in-process server that allows
// record-alert (tee): critical alerts are printed and appended to the file
// by the server's handler; others are not.
func TestAlert(t *testing.T) {
	tee, err := exec.LookPath("tee")
	if err != nil {
		t.Skip("tee is not in PATH")
	}
	s := startServer(t, map[string]string{recordAlert: tee})
	file := filepath.Join(t.TempDir(), "alerts.jsonl")
	p := exampletest.Start(t, run, "-url", s.MCPEndpoint, "-token", token, "-alerts", file, "-status-every", "20ms")
	p.Stderr.WaitFor(t, "subscribed to critical alert.* events")

	ctx := context.Background()
	for _, in := range []mcpe.EventInput{
		alert("DiskFull", "critical", "Disk /var is 97% full on db-1"),
		alert("HighCPU", "high", "CPU above 90%"),
		{Type: "deploy.failed", Metadata: &mcpe.MetadataInput{Priority: mcpe.PriorityCritical}},
		alert("DbDown", "critical", "Postgres is down"),
	} {
		if _, err := s.Post(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"CRITICAL alert.DbDown.firing: Postgres is down alertname=DbDown instance=db-1",
		"CRITICAL alert.DiskFull.firing: Disk /var is 97% full on db-1 alertname=DiskFull instance=db-1",
		"handler: 2 succeeded, 0 failed",
	}
	var got []string
	for !slices.Contains(got, want[2]) {
		line := p.Stdout.Next(t)
		if !strings.HasPrefix(line, "handler: 1 succeeded") {
			got = append(got, line)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
	if err := p.Stop(t); err != nil {
		t.Errorf("run = %v", err)
	}

	// The handler appended each critical alert's JSON to the file, in the
	// order its runs ended.
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var types []string
	for d := json.NewDecoder(f); ; {
		var ev mcpe.Event
		if err := d.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the file does not hold JSON events: %v", err)
		}
		types = append(types, ev.Type)
	}
	slices.Sort(types)
	if diff := cmp.Diff([]string{"alert.DbDown.firing", "alert.DiskFull.firing"}, types); diff != "" {
		t.Errorf("alerts recorded mismatch (-want +got):\n%s", diff)
	}
	if subs, err := s.Service.List(ctx, "alice", ""); err != nil || len(subs) != 0 {
		t.Errorf("subscriptions left behind: %v, %v", subs, err)
	}
}

func TestAlertErrors(t *testing.T) {
	without := startServer(t, nil)
	with := startServer(t, map[string]string{recordAlert: "/usr/bin/tee"})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no bash handler", []string{"-url", without.MCPEndpoint}, "does not run bash handlers"},
		{"command not allowed", []string{"-url", with.MCPEndpoint, "-command", "notify"}, recordAlert},
		{"bad placeholder", []string{"-url", with.MCPEndpoint, "-args", "-a $MCPE_NOPE"}, "not a variable"},
		{"status too often", []string{"-status-every", "1ms"}, "-status-every 1ms is too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), exampletest.Wait)
			defer cancel()
			err := run(ctx, append(tc.args, "-token", token), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
