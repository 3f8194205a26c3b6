// Command floor measures what the libraries mcpe-server is built on cost on
// this machine before the server does any work of its own, so that the
// figures of bench/e2e can be read against them. It prints one JSON line
// per measurement:
//
//   - subscribes: -calls tools/call of events_subscribe in a row through the
//     go-sdk client over stdio, to a go-sdk server (this program, run again
//     as one) whose events_subscribe answers at once with a result of the
//     size and shape of mcpe-server's, storing nothing; once for each
//     protocol version the go-sdk speaks (its client picks 2026-07-28 when
//     it may, and hosts today mostly speak 2025-11-25);
//
//   - ingest: -events POST /v1/events from -posters keep-alive connections
//     to a net/http server (this program again) that reads each body and
//     answers 202 with an ID, as mcpe-server's ingest does, without checking,
//     storing, routing or delivering the event.
//
//   - turns: the same events from -turn-posters connections spread over
//     ingest servers that answer once a commit carrying the event is done,
//     against a lock that stands for the database and takes the servers'
//     commits in turn or at once (turns.go), for each of -servers.
//
// Each line has the server processes' CPU per call or event, from /proc.
//
//	go run ./bench/floor
//
// The official TypeScript client drives the same floor server through
// bench/ts/subscribe.mjs, which runs the binary it is given with --stdio:
//
//	go build -o /tmp/floor ./bench/floor
//	cd bench/ts && node subscribe.mjs /tmp/floor 10000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/bench/internal/proc"
	"github.com/mcpe-server/mcpe-server/bench/internal/workload"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// subscription is what mcpe-server's events_subscribe answers for the
// benchmark's filters (a captured answer, 256 bytes).
const subscription = `{"subscriptionId":"01a218bf-45ba-7dcd-9fad-d4c381e33dc3","status":"active",` +
	`"filter":{"eventTypes":["svc0.*"]},"delivery":{"channels":["realtime"]},` +
	`"createdAt":"2026-11-26T16:45:18.138898025Z","updatedAt":"2026-11-26T16:45:18.138898025Z","deliveredCount":0}`

// accepted is the ingest's answer to an event.
const accepted = `{"id":"01a218bf-45ba-7dcd-9fad-d4c381e33dc4"}`

func main() {
	if serveRole(os.Args[1:]) {
		return
	}
	calls := flag.Int("calls", 10000, "events_subscribe calls in a row for each protocol version")
	events := flag.Int("events", 20000, "events posted to the ingest floor, and to the turns floor each time")
	posters := flag.String("posters", "1,16", "comma-separated poster counts for the ingest floor")
	floors := flag.String("floors", "subscribes,ingest,turns", "which floors to measure, comma-separated")
	servers := flag.String("servers", "1,3", "comma-separated server counts for the turns floor")
	turnPosters := flag.Int("turn-posters", 16, "posters spread over the turns floor's servers")
	hold := flag.Duration("hold", 800*time.Microsecond, "how long the turns floor's lock holds each commit")
	flag.Parse()
	posterCounts, serverCounts := counts("-posters", *posters), counts("-servers", *servers)
	if *calls < 1 || *events < 1 || *turnPosters < 1 || *hold < 0 {
		fail(fmt.Errorf("-calls, -events and -turn-posters must be positive, -hold not negative"))
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	chosen := strings.Split(*floors, ",")
	for _, f := range chosen {
		if !slices.Contains([]string{"subscribes", "ingest", "turns"}, f) {
			fail(fmt.Errorf("-floors: %q is not a floor (give some of subscribes,ingest,turns)", f))
		}
	}
	if slices.Contains(chosen, "subscribes") {
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			res, err := subscribes(self, version, *calls)
			if err != nil {
				fail(fmt.Errorf("subscribes (%s): %w", version, err))
			}
			emit(res)
		}
	}
	if slices.Contains(chosen, "ingest") {
		for _, n := range posterCounts {
			res, err := ingest(self, n, *events)
			if err != nil {
				fail(fmt.Errorf("ingest (%d posters): %w", n, err))
			}
			emit(res)
		}
	}
	if slices.Contains(chosen, "turns") {
		for _, mode := range commitModes {
			for _, n := range serverCounts {
				res, err := turns(self, mode, *hold, n, *turnPosters, *events)
				if err != nil {
					fail(fmt.Errorf("turns (%s, %d servers): %w", mode, n, err))
				}
				emit(res)
			}
		}
	}
}

// counts reads a comma-separated list of positive numbers given as the
// flag named name.
func counts(name, list string) []int {
	var out []int
	for _, p := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			fail(fmt.Errorf("%s: %q is not a positive number (give a comma-separated list, such as 1,16)", name, p))
		}
		out = append(out, n)
	}
	return out
}

// serveRole runs this program as one of its servers when args say so (as
// this program, or bench/ts/subscribe.mjs, runs it), and tells whether it
// did.
func serveRole(args []string) bool {
	switch {
	case len(args) > 0 && args[0] == "--stdio":
		serveStdio()
	case len(args) > 0 && args[0] == "--ingest":
		serveIngest(args[1:])
	case len(args) == 3 && args[0] == "--lock":
		hold, err := time.ParseDuration(args[2])
		if err != nil {
			fail(err)
		}
		serveLock(args[1], hold)
	default:
		return false
	}
	return true
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}

func emit(v any) {
	out, _ := json.Marshal(v)
	fmt.Println(string(out))
}

// serveStdio is the subscribes floor's server: the go-sdk over stdio with
// an events_subscribe that answers at once.
func serveStdio() {
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: mcpe.ToolSubscribe, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// As mcpe-server answers: the subscription as text and as
			// structured content.
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: subscription}},
				StructuredContent: json.RawMessage(subscription),
			}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fail(err)
	}
}

// Subscribes is the subscribes floor's line.
type Subscribes struct {
	Floor          string  `json:"floor"`
	Client         string  `json:"client"`
	Protocol       string  `json:"protocol"`
	Calls          int     `json:"calls"`
	Seconds        float64 `json:"seconds"`
	ServerCPUMicro float64 `json:"serverCPUMicrosPerCall"`
	ClientCPUMicro float64 `json:"clientCPUMicrosPerCall"`
}

// subscribes makes calls events_subscribe calls in a row through the go-sdk
// client, speaking version, to the stdio floor server run from self.
func subscribes(self, version string, calls int) (*Subscribes, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.Command(self, "--stdio")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		return nil, fmt.Errorf("the session speaks %s", got)
	}
	server0, client0 := proc.CPUTime(cmd.Process.Pid), proc.CPUTime(os.Getpid())
	start := time.Now()
	for i := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpe.ToolSubscribe,
			Arguments: map[string]any{"filter": map[string]any{"eventTypes": []string{workload.Pattern(i)}}}})
		if err != nil {
			return nil, err
		}
		if res.IsError || res.StructuredContent == nil {
			return nil, fmt.Errorf("call %d: unexpected answer", i)
		}
	}
	elapsed := time.Since(start)
	perCall := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(calls) }
	return &Subscribes{
		Floor: "subscribes", Client: "go-sdk", Protocol: version, Calls: calls, Seconds: elapsed.Seconds(),
		ServerCPUMicro: perCall(proc.CPUTime(cmd.Process.Pid) - server0),
		ClientCPUMicro: perCall(proc.CPUTime(os.Getpid()) - client0),
	}, nil
}

// serveIngest is the ingest floor's server: it prints its base URL and
// serves until its standard input closes. Given a lock's address (the
// turns floor), it answers each event once a commit carrying it is done,
// and prints how many commits carried how many events as it ends.
func serveIngest(args []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	var commits *committer
	if len(args) == 2 {
		conn, err := net.Dial("tcp", args[0])
		if err != nil {
			fail(err)
		}
		commits = &committer{conn: conn, gather: args[1] == "true"}
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/v1/events" {
				http.NotFound(w, r)
				return
			}
			if _, err := io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if commits != nil {
				if err := commits.commit(); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, accepted+"\n")
		}),
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fail(err)
	}
	if commits != nil {
		fmt.Println(commits.commits.Load(), commits.events.Load())
	}
}

// Ingest is the ingest floor's line.
type Ingest struct {
	Floor          string  `json:"floor"`
	Posters        int     `json:"posters"`
	Events         int     `json:"events"`
	Seconds        float64 `json:"seconds"`
	PerSecond      float64 `json:"acceptedPerSecond"`
	ServerCPUMicro float64 `json:"serverCPUMicrosPerEvent"`
}

// ingest posts events to the ingest floor server run from self, from
// posters keep-alive connections, with the requests bench/e2e sends.
func ingest(self string, posters, events int) (*Ingest, error) {
	s, err := start(self, "--ingest")
	if err != nil {
		return nil, err
	}
	defer s.stop()
	server0 := proc.CPUTime(s.cmd.Process.Pid)
	elapsed, err := post([]string{s.first}, posters, events)
	if err != nil {
		return nil, err
	}
	cpu := proc.CPUTime(s.cmd.Process.Pid) - server0
	return &Ingest{
		Floor: "ingest", Posters: posters, Events: events, Seconds: elapsed.Seconds(),
		PerSecond:      float64(events) / elapsed.Seconds(),
		ServerCPUMicro: float64(cpu.Microseconds()) / float64(events),
	}, nil
}
