// Package setup connects the examples to an mcpe-server, the same way for
// each: over Streamable HTTP when given a URL, else by starting the server
// as a subprocess over stdio, with its own database in a temporary
// directory and HTTP on a loopback address for publishing events.
package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/client"
)

// DefaultServer is the command that starts mcpe-server when no -url is
// given: it builds and runs the server of the module the example runs in,
// so it works from a clone. Pass -server mcpe-server to use an installed
// binary instead.
const DefaultServer = "go run github.com/mcpe-server/mcpe-server/cmd/mcpe-server"

// DefaultListen is where a started server takes events over HTTP.
const DefaultListen = "127.0.0.1:8765"

// Flags say how to reach the server.
type Flags struct {
	// URL is the Streamable HTTP endpoint of a running server, such as
	// http://127.0.0.1:8765/mcp. Empty: start one.
	URL string
	// Token is the bearer token for URL.
	Token string
	// Server is the command that starts mcpe-server, split at spaces.
	Server string
	// Listen is the HTTP address of the started server.
	Listen string
}

// Register adds -url, -token, -server and -listen to fs. -url and -token
// default to $MCPE_URL and $MCPE_TOKEN.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.URL, "url", os.Getenv("MCPE_URL"), "Streamable HTTP `endpoint` of a running mcpe-server, such as http://127.0.0.1:8765/mcp (default $MCPE_URL; empty: start one over stdio)")
	fs.StringVar(&f.Token, "token", os.Getenv("MCPE_TOKEN"), "bearer `token` for -url (default $MCPE_TOKEN)")
	fs.StringVar(&f.Server, "server", DefaultServer, "`command` that starts mcpe-server over stdio when -url is empty")
	fs.StringVar(&f.Listen, "listen", DefaultListen, "`address` where the started server takes events (POST /v1/events)")
	return f
}

// NewFlagSet returns the flag set of the example called name, which
// writes its usage and errors to stderr, with the flags of Register.
func NewFlagSet(name string, stderr io.Writer) (*flag.FlagSet, *Flags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs, Register(fs)
}

// Main is the main function of the example called name: it calls run with
// the command line and the process's output until Ctrl-C or SIGTERM, and
// when run fails, says why on standard error and exits with status 1.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Options configure Connect.
type Options struct {
	// Name names the example to the server.
	Name string
	// ServerConfig is YAML for a started server (ignored with a URL).
	ServerConfig string
	// Register adds the handlers before the client connects.
	Register func(c *client.Client) error
	// Stderr receives the started server's warnings and the messages
	// for the user.
	Stderr io.Writer
}

// Conn is a connected client.
type Conn struct {
	*client.Client
	// Ingest is the server's POST /v1/events URL.
	Ingest string
	dir    string
}

// Connect connects to the server the flags name.
func Connect(ctx context.Context, f *Flags, opts Options) (*Conn, error) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	conn := &Conn{}
	copts := &client.Options{Implementation: &mcp.Implementation{Name: opts.Name, Version: "dev"}}
	if f.URL != "" {
		u, err := url.Parse(f.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("-url %q is not an http or https URL; give the server's MCP endpoint, such as http://127.0.0.1:8765/mcp", f.URL)
		}
		conn.Ingest = u.Scheme + "://" + u.Host + "/v1/events"
		dial := client.StreamableHTTP(f.URL, f.Token)
		if f.Token != "" {
			copts.Reconnect = dial
		} else {
			// Without a token the session is the principal: its
			// subscriptions end with it, so there is nothing to go back to.
			fmt.Fprintln(opts.Stderr, "no -token: this session's subscriptions end when the connection does, and the example stops then")
		}
		return conn.connect(ctx, copts, opts, dial)
	}

	args := strings.Fields(f.Server)
	if len(args) == 0 {
		return nil, errors.New("-server is empty; give the command that starts mcpe-server, such as \"mcpe-server\"")
	}
	host, port, err := net.SplitHostPort(f.Listen)
	if err != nil || host == "" || port == "" || port == "0" {
		return nil, fmt.Errorf("-listen %q is not host:port; give a loopback address such as %s", f.Listen, DefaultListen)
	}
	if conn.dir, err = os.MkdirTemp("", "mcpe-example-"); err != nil {
		return nil, err
	}
	args = append(args, "--stdio", "--http", f.Listen, "--db", filepath.Join(conn.dir, "mcpe.db"), "--log-level", "warn")
	if opts.ServerConfig != "" {
		cfg := filepath.Join(conn.dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte(opts.ServerConfig), 0o600); err != nil {
			conn.Close()
			return nil, err
		}
		args = append(args, "--config", cfg)
	}
	conn.Ingest = "http://" + f.Listen + "/v1/events"
	dial := func(context.Context) (mcp.Transport, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = opts.Stderr
		detach(cmd)
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	// A server that dies is started again on the same database, where the
	// subscriptions are.
	copts.Reconnect = dial
	fmt.Fprintf(opts.Stderr, "starting %s (a first build takes a while)\n", f.Server)
	return conn.connect(ctx, copts, opts, dial)
}

func (c *Conn) connect(ctx context.Context, copts *client.Options, opts Options, dial client.Dialer) (*Conn, error) {
	cl, err := client.New(copts)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Client = cl
	if opts.Register != nil {
		if err := opts.Register(cl); err != nil {
			c.Close()
			return nil, err
		}
	}
	t, err := dial(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	if err := cl.Connect(ctx, t); err != nil {
		c.Close()
		return nil, err
	}
	if !cl.SupportsEvents() {
		c.Close()
		return nil, errors.New("the server does not advertise the MCPE events capability; is it an mcpe-server?")
	}
	return c, nil
}

// Close closes the client, which stops a started server, and removes the
// started server's database.
func (c *Conn) Close() {
	if c.Client != nil {
		c.Client.Close()
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// Wait blocks until ctx ends (nil) or the client stops for good (its
// error).
func (c *Conn) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-c.Done():
		return c.Err()
	}
}

// Curl returns a command that publishes an event of type typ with data
// and the given priority ("" for normal) to the server.
func (c *Conn) Curl(typ, data, priority string) string {
	body := fmt.Sprintf(`{"type": %q, "data": %s`, typ, data)
	if priority != "" {
		body += fmt.Sprintf(`, "metadata": {"priority": %q}`, priority)
	}
	body += "}"
	return fmt.Sprintf("curl -s %s -H 'Content-Type: application/json' -d '%s'", c.Ingest, body)
}
