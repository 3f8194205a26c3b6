package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/mcpe-server/mcpe-server/internal/config"
	"github.com/mcpe-server/mcpe-server/subscriptions/postgres"
	"github.com/mcpe-server/mcpe-server/subscriptions/sqlite"
)

// check validates a configuration without starting the server: the file
// (every key and value, tokens and secrets read from the environment), the
// database path, the HTTP and metrics addresses (listened on and closed),
// the bash handler's programs and sandbox, and the upstream MCP servers'
// commands. It prints every problem at once, and what would only be a
// warning at start.
func check(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpe-server check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML configuration `FILE` to check")
	dbPath := fs.String("db", "", "database the server would use (overrides db: in the file)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *cfgPath == "" {
		return usageError{errors.New("check needs --config FILE")}
	}
	var problems, warnings []string
	cfg, err := config.Load(*cfgPath)
	var ps config.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			problems = append(problems, p.Error())
		}
	} else if err != nil {
		problems = append(problems, err.Error())
	}
	if cfg == nil {
		return report(stdout, *cfgPath, problems, warnings)
	}
	db := cmp.Or(*dbPath, cfg.DB)
	if db == "" {
		if db, err = defaultDBPath(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if db != "" {
		if postgres.IsURL(db) {
			if err := postgres.CheckURL(db); err != nil {
				problems = append(problems, err.Error())
			}
		} else if err := sqlite.CheckPath(db); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, key := range []struct{ name, addr string }{{"http.addr", cfg.HTTP.Addr}, {"metrics.addr", cfg.Metrics.Addr}} {
		if key.addr == "" {
			continue
		}
		if ln, err := net.Listen("tcp", key.addr); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key.name, portTaken(ctx, key.addr, err, key.name)))
		} else {
			ln.Close()
		}
	}
	p, w := checkBash(cfg)
	problems, warnings = append(problems, p...), append(warnings, w...)
	problems = append(problems, checkUpstreams(cfg)...)
	return report(stdout, *cfgPath, problems, warnings)
}

// checkBash checks the bash handler's programs and its sandbox.
func checkBash(cfg *config.Config) (problems, warnings []string) {
	b := cfg.Handlers.Bash
	if b == nil || len(b.Commands) == 0 {
		return nil, nil
	}
	for _, name := range slices.Sorted(maps.Keys(b.Commands)) {
		path := b.Commands[name].Path
		info, err := os.Stat(path)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("handlers.bash.commands.%s.path: %v", name, err))
		case info.IsDir() || info.Mode().Perm()&0o111 == 0:
			problems = append(problems, fmt.Sprintf("handlers.bash.commands.%s.path: %q is not an executable file", name, path))
		}
	}
	_, err := exec.LookPath("bwrap")
	switch sandbox := b.Sandbox; {
	case sandbox == "off":
		warnings = append(warnings, "handlers.bash.sandbox is off: allowed programs run as the server's user, with its files and network")
	case err != nil && sandbox == "bwrap":
		problems = append(problems, `handlers.bash.sandbox is "bwrap" but bwrap is not in PATH: install bubblewrap (apt-get install bubblewrap)`)
	case err != nil:
		warnings = append(warnings, "bubblewrap (bwrap) is not in PATH: allowed programs would run without a sandbox; install bubblewrap (apt-get install bubblewrap)")
	}
	return problems, warnings
}

// checkUpstreams checks that the upstream MCP servers' commands can be
// found.
func checkUpstreams(cfg *config.Config) []string {
	m := cfg.Adapters.MCP
	if m == nil {
		return nil
	}
	var problems []string
	for i, u := range m.Upstreams {
		if len(u.Command) == 0 {
			continue
		}
		if _, err := exec.LookPath(u.Command[0]); err != nil {
			problems = append(problems, fmt.Sprintf("adapters.mcp.upstreams[%d] (%s).command: %q cannot be run: %v", i, u.Name, u.Command[0], err))
		}
	}
	return problems
}

// errCheckFailed is check's verdict when it found problems: exit 1, and the
// report already said why.
var errCheckFailed = errors.New("the configuration has problems")

// report prints the outcome of check and returns errCheckFailed when there
// are problems.
func report(w io.Writer, path string, problems, warnings []string) error {
	name := filepath.Base(path)
	for _, warn := range warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if len(problems) == 0 {
		fmt.Fprintf(w, "%s: ok\n", name)
		return nil
	}
	fmt.Fprintf(w, "%s: %d problem(s):\n", name, len(problems))
	for _, p := range problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	return errCheckFailed
}
