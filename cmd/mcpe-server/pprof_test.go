package main

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
)

var pprofLine = regexp.MustCompile(`msg="pprof listening" addr=(\S+)`)

// TestPprof checks that --pprof serves the profiles on a listener of their
// own, and that the MCP listener does not serve them.
func TestPprof(t *testing.T) {
	cmd := exec.Command(binary, "--http", "127.0.0.1:0", "--pprof", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "mcpe.db"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := watchLog(t, stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + logs.waitAddr(t)
	var addr string
	for deadline := time.Now().Add(mcpetest.Wait); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := pprofLine.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no pprof listener reported; log:\n%s", logs)
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://" + addr + "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/ on the pprof listener = %d; want the index", code)
	}
	if code, _ := get(base + "/debug/pprof/"); code != 404 {
		t.Errorf("GET /debug/pprof/ on the MCP listener = %d; want 404", code)
	}
}

func TestPprofLoopbackOnly(t *testing.T) {
	code, _, stderr := cli(t, "--http", "127.0.0.1:0", "--pprof", "0.0.0.0:6060", "--db", filepath.Join(t.TempDir(), "mcpe.db"))
	if code == 0 || !strings.Contains(stderr, "not a loopback address") {
		t.Errorf("--pprof 0.0.0.0:6060 = exit %d, %q; want refused as not loopback", code, stderr)
	}
}
