package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpe-server/mcpe-server/internal/mcpetest"
)

var metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)

// TestMetricsAddr checks that metrics.addr serves /metrics on a listener of
// its own, behind metrics.tokens, and that the MCP listener does not serve
// it then.
func TestMetricsAddr(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "mcpe.yaml")
	if err := os.WriteFile(config, []byte("metrics:\n  addr: 127.0.0.1:0\n  tokens:\n    - token: scrape-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--http", "127.0.0.1:0", "--config", config, "--db", filepath.Join(dir, "mcpe.db"))
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
		if m := metricsLine.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no metrics listener reported; log:\n%s", logs)
	}
	get := func(url, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("http://"+addr+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d; want 401", code)
	}
	if code, body := get("http://"+addr+"/metrics", "scrape-secret"); code != http.StatusOK || !strings.Contains(body, "mcpe_sessions{") || !strings.Contains(body, "mcpe_subscriptions{") {
		t.Errorf("GET /metrics with the token = %d; want the metrics, got:\n%.500s", code, body)
	}
	if code, _ := get(base+"/metrics", "scrape-secret"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the MCP listener = %d; want 404 with metrics.addr", code)
	}
	// The loopback listener answers only requests addressed to localhost:
	// a DNS-rebinding page names its own host.
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Host = "rebound.example.com"
	req.Header.Set("Authorization", "Bearer scrape-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /metrics on the loopback metrics listener with Host %s = %d; want 403", req.Host, resp.StatusCode)
	}
}
