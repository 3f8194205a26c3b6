package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
)

// TestSystemdUnit checks that the example unit's ExecStart parses with the
// binary's flags, and that the configuration it names loads.
func TestSystemdUnit(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "systemd")
	f, err := os.Open(filepath.Join(dir, "mcpe-server.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exec string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ExecStart="); ok {
			exec = v
		}
	}
	argv := strings.Fields(exec)
	if len(argv) < 2 || filepath.Base(argv[0]) != "mcpe-server" {
		t.Fatalf("ExecStart=%q does not run mcpe-server", exec)
	}
	flags, err := parseServeFlags(argv[1:], io.Discard)
	if err != nil {
		t.Fatalf("ExecStart's arguments %q: %v", argv[1:], err)
	}
	if flags.stdio || flags.http != "" || flags.config != "/etc/mcpe-server/config.yaml" || !strings.HasPrefix(flags.db, "/var/lib/mcpe-server/") {
		t.Errorf("ExecStart's flags = %+v; want the config in /etc/mcpe-server and the database in the state directory, HTTP from the config, no --stdio", flags)
	}
	t.Setenv("MCPE_TEAM_TOKEN", "team-token-from-env")
	t.Setenv("MCPE_INGEST_TOKEN", "ingest-token-from-env")
	cfg, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatalf("the example configuration: %v", err)
	}
	if cfg.HTTP.Addr == "" {
		t.Error("the example configuration sets no http.addr: the service would serve nothing")
	}
}

// TestClosedStdinKeepsHTTPServing starts the server as a service manager
// does: HTTP from the configuration, no --stdio, stdin /dev/null. It must
// keep serving until SIGTERM.
func TestClosedStdinKeepsHTTPServing(t *testing.T) {
	cfg := writeConfig(t, "http:\n  addr: 127.0.0.1:0\n")
	cmd := exec.Command(binary, "--config", cfg, "--db", filepath.Join(t.TempDir(), "mcpe.db"))
	cmd.Stdin = nil // /dev/null
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := watchLog(t, stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	base := "http://" + logs.waitAddr(t)
	// Long after stdin's end, it still accepts events.
	deadline := time.Now().Add(mcpetest.Wait)
	for !strings.Contains(logs.String(), "standard input closed") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the server exited when stdin closed (%v); log:\n%s", err, logs)
	case <-time.After(200 * time.Millisecond):
	}
	if code, body := post(t, base, "", `{"type":"svc.started","data":{}}`); code != 202 {
		t.Fatalf("POST after stdin closed = %d %s", code, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(mcpetest.Wait):
		t.Fatal("the server did not stop after SIGTERM")
	}
}
