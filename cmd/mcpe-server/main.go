// Command mcpe-server is an MCP server that lets an agent subscribe to events
// from the outside world (MCP Events, MCPE). With no arguments it serves MCP
// on stdio; `mcpe-server --http 127.0.0.1:8765` serves Streamable HTTP and the
// ingest endpoint; `mcpe-server publish` posts an event to a running server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/mcpe-server/mcpe-server/internal/mcpserver"
)

// tuneGC sets the collector's target to mcpserver.GCPercent and the soft
// memory limit to mcpserver.MemoryLimit, unless the operator chose a GOGC
// or a GOMEMLIMIT.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(mcpserver.GCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(mcpserver.MemoryLimit)
	}
}

func main() {
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code: 0 success, 1
// failure, 2 bad usage.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "publish":
		err = publish(ctx, args[1:], stdin, stdout, stderr)
	case len(args) > 0 && args[0] == "check":
		if err = check(ctx, args[1:], stdout, stderr); errors.Is(err, errCheckFailed) {
			return 1
		}
	case len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version"):
		fmt.Fprintln(stdout, "mcpe-server", version())
		return 0
	case len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help"):
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = serve(ctx, args, stderr)
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mcpe-server: %v\nRun 'mcpe-server help' for usage.\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "mcpe-server: %v\n", err)
		return 1
	}
}

// usageError marks a mistake on the command line. It unwraps to the
// mistake, so that a -h or --help (flag.ErrHelp) is not one.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

const usage = `mcpe-server: MCP Events server.

Usage:
  mcpe-server [--stdio] [--http ADDR] [--db PATH] [--config FILE] [--log-level LEVEL] [--pprof ADDR]
      Serve. With neither --stdio nor --http: stdio, plus HTTP if the config
      file sets http.addr. --http ADDR alone serves HTTP only: /mcp
      (Streamable HTTP), /v1/events (ingest) and /healthz. --stdio --http ADDR
      serves both. Flags override the config file. --db takes an SQLite
      file path or a postgres://user@host/db URL (PostgreSQL). --pprof ADDR
      serves Go's profiles on a loopback listener of their own.

  mcpe-server publish --url URL --type TYPE [--data JSON|@FILE|-] [--priority P]
                      [--tag TAG]... [--source-id ID] [--timestamp RFC3339] [--token TOKEN]
                      [--timeout DURATION]
      Post one event to a running server's /v1/events and print its id.
      MCPE_URL and MCPE_TOKEN may stand in for --url and --token; --timeout
      (default 30s) bounds the request. Exit 1 when the server refuses the
      event (its reason is printed), 2 on bad usage.

  mcpe-server check --config FILE [--db PATH]
      Check a configuration without starting: every key and value, the
      tokens and secrets it reads from the environment, the database path,
      the addresses it listens on (a port in use says what holds it), the
      bash handler's programs and sandbox, the upstream MCP commands.
      Prints every problem at once; exit 1 when there is one.

  mcpe-server version | --version
      Print the version: the module version, and for a build from a clone the
      commit and whether the tree was modified.
`
