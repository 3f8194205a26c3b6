package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-26T06:51:34Z"}, {Key: "vcs.modified", Value: modified}}
	}
	rev := "0d20d702aa8d30f5e0d11b6ac2ab4f776a0095b0"
	for _, tt := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install at a tag", "v1.4.0", nil, "v1.4.0"},
		{"clone, clean", "v0.0.0-20261126065134-0d20d702aa8d", vcs(rev, "false"),
			"v0.0.0-20261126065134-0d20d702aa8d (commit 0d20d702aa8d, 2026-11-26T06:51:34Z)"},
		{"clone, modified", "v0.0.0-20261126065134-0d20d702aa8d+dirty", vcs(rev, "true"),
			"v0.0.0-20261126065134-0d20d702aa8d+dirty (commit 0d20d702aa8d, modified, 2026-11-26T06:51:34Z)"},
		{"devel with VCS", "(devel)", vcs(rev, "true"), "devel (commit 0d20d702aa8d, modified, 2026-11-26T06:51:34Z)"},
		{"devel without VCS", "(devel)", nil, "devel (built without version control information, e.g. with -buildvcs=false)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mcpe-server/mcpe-server", Version: tt.version}, Settings: tt.settings}
			if got := describeBuild(bi); got != tt.want {
				t.Errorf("describeBuild = %q; want %q", got, tt.want)
			}
		})
	}
}

// TestVersionOfTheBinary checks that the built binary names its commit (when
// built from a clone) on the command line and in serverInfo, never only
// "(devel)".
func TestVersionOfTheBinary(t *testing.T) {
	code, out, _ := cli(t, "--version")
	code2, out2, _ := cli(t, "version")
	if code != 0 || code2 != 0 || out != out2 || !strings.HasPrefix(out, "mcpe-server ") {
		t.Fatalf("--version = %d %q, version = %d %q; want the same line, exit 0", code, out, code2, out2)
	}
	v := strings.TrimSpace(strings.TrimPrefix(out, "mcpe-server "))
	if v == "" || v == "(devel)" || v == "dev" {
		t.Fatalf("version %q says nothing of the build", v)
	}
	// When the build stamped the commit (a clone; not a worktree Go does
	// not see as one), the version names it.
	if out, err := exec.Command("go", "version", "-m", binary).Output(); err == nil {
		if _, rest, ok := strings.Cut(string(out), "vcs.revision="); ok && len(rest) >= 12 {
			if !strings.Contains(v, "commit "+rest[:12]) {
				t.Errorf("version %q does not name the commit %s the binary was built at", v, rest[:12])
			}
			if len(builtAt) >= 12 && rest[:12] != builtAt[:12] {
				t.Errorf("the binary was stamped with commit %s; the clone was at %s", rest[:12], builtAt[:12])
			}
		}
	}
	c, _ := startStdio(t, t.TempDir()+"/mcpe.db", nil)
	res := c.Session.InitializeResult()
	if res == nil || res.ServerInfo == nil || res.ServerInfo.Version != v {
		t.Errorf("serverInfo = %+v; want version %q", res, v)
	}
}
