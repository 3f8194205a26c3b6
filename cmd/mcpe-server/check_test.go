package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckGoodConfig(t *testing.T) {
	cfg := writeConfig(t, "http:\n  addr: 127.0.0.1:0\nauth:\n  tokens:\n    - principal: team\n      tokenEnv: MCPE_CHECK_TOKEN\n")
	t.Setenv("MCPE_CHECK_TOKEN", "from-the-environment")
	code, out, stderr := cli(t, "check", "--config", cfg, "--db", filepath.Join(t.TempDir(), "new", "mcpe.db"))
	if code != 0 || !strings.Contains(out, "config.yaml: ok") {
		t.Fatalf("check = %d, %q, %q; want ok", code, out, stderr)
	}
}

// TestCheckListsEveryProblem checks that check reports every problem of a
// configuration at once, in the configuration's words, and exits 1.
func TestCheckListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script.sh")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	cfg := writeConfig(t, `
auth:
  tokens:
    - principal: team
      tokenEnv: MCPE_CHECK_UNSET_TOKEN
log:
  format: xml
handlers:
  bash:
    commands:
      script: {path: `+notExec+`}
      gone: {path: /nonexistent/bin/tool}
adapters:
  mcp:
    upstreams:
      - name: files
        command: ["no-such-mcp-server-binary"]
`)
	code, out, _ := cli(t, "check", "--config", cfg, "--db", dir)
	if code != 1 {
		t.Fatalf("check = exit %d; want 1\n%s", code, out)
	}
	for _, want := range []string{
		"MCPE_CHECK_UNSET_TOKEN is not set",
		`log.format "xml"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
	// The stages beyond the file report their problems too.
	cfg = writeConfig(t, `
handlers:
  bash:
    sandbox: bwrap
    commands:
      script: {path: `+notExec+`}
      gone: {path: /nonexistent/bin/tool}
adapters:
  mcp:
    upstreams:
      - name: files
        command: ["no-such-mcp-server-binary"]
`)
	t.Setenv("PATH", dir) // no bwrap either
	code, out, _ = cli(t, "check", "--config", cfg, "--db", dir)
	if code != 1 {
		t.Fatalf("check = exit %d; want 1\n%s", code, out)
	}
	for _, want := range []string{
		"is a directory",
		"handlers.bash.commands.script.path",
		"not an executable file",
		"handlers.bash.commands.gone.path",
		`sandbox is "bwrap" but bwrap is not in PATH`,
		"adapters.mcp.upstreams[0] (files).command",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
}

func TestCheckUnknownKey(t *testing.T) {
	cfg := writeConfig(t, "http:\n  adr: 127.0.0.1:8765\n")
	code, out, _ := cli(t, "check", "--config", cfg)
	if code != 1 || !strings.Contains(out, `http.adr: unknown key; did you mean "addr"?`) {
		t.Errorf("check = %d %q; want the key named with the one meant", code, out)
	}
}

// TestCheckEveryStageAtOnce: a configuration with four problems, each found
// by another stage (decoding, checking values, the bash programs on disk,
// listening on http.addr), is reported with all four in one run.
func TestCheckEveryStageAtOnce(t *testing.T) {
	cfg := writeConfig(t, `
http:
  addr: localhost:99999
inbx: {}
log:
  format: xml
handlers:
  bash:
    sandbox: "off"
    commands:
      gone: {path: /nonexistent/bin/tool}
`)
	code, out, _ := cli(t, "check", "--config", cfg, "--db", filepath.Join(t.TempDir(), "mcpe.db"))
	if code != 1 {
		t.Fatalf("check = exit %d; want 1\n%s", code, out)
	}
	for _, want := range []string{
		"4 problem(s)",
		`inbx: unknown key; did you mean "inbox"?`,
		`log.format "xml"`,
		"handlers.bash.commands.gone.path",
		"http.addr: listen tcp: address 99999: invalid port",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
}

// TestCheckPortInUse: an http.addr whose port another process holds is a
// problem that names the process and says what to do.
func TestCheckPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := writeConfig(t, "http:\n  addr: "+ln.Addr().String()+"\n")
	code, out, _ := cli(t, "check", "--config", cfg, "--db", filepath.Join(t.TempDir(), "mcpe.db"))
	if code != 1 {
		t.Fatalf("check = exit %d; want 1\n%s", code, out)
	}
	for _, want := range []string{"1 problem(s)", "http.addr: listen tcp " + ln.Addr().String(), "address already in use, by " + thisProcess(), "stop it, or give http.addr another address"} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
}

// thisProcess is how a port clash names the test process where /proc
// tells, as on Linux; elsewhere "another process".
func thisProcess() string {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		return "another process"
	}
	return fmt.Sprintf("process %d (%s)", os.Getpid(), strings.TrimSpace(string(comm)))
}
