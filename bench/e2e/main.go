// Command e2e measures mcpe-server the way a user meets it: it starts the
// built binary, subscribes through events_subscribe with a go-sdk client
// over stdio or Streamable HTTP, posts events to POST /v1/events over
// keep-alive HTTP, and checks every events/event it receives (each expected
// delivery once, nothing foreign). It prints one JSON line per scenario.
//
//	go build -o /tmp/mcpe-server ./cmd/mcpe-server
//	go run ./bench/e2e -bin /tmp/mcpe-server
//
// The workload is the one of shared/bench/routing-workload.md: subscription
// i belongs to group i mod 100; blocks of 100 alternate between the pattern
// svc<g>.* and the exact type svc<g>.created; event e has type
// svc<e mod 100>.created, so each matches about S/100 subscriptions.
//
// With -processes N (N > 1) it starts N servers on one database (an SQLite
// file, or the PostgreSQL database -db names): the client connects to the
// last one and subscribes through it, the posters post to all of them in
// turn, so most events reach the client from another process. CPU per event
// is then summed over the processes, and a scenario of its own measures how
// long a subscription made through one process takes to route events
// posted to another.
//
// With -principals K (K > 1) the subscriptions are spread over K
// principals, subscription i to principal i mod K, each with a bearer token
// of its own and a Streamable HTTP session on the last server; each
// notification must come on the session of its subscription's principal.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/mcpe-server/mcpe-server/bench/internal/poster"
	"github.com/mcpe-server/mcpe-server/bench/internal/proc"
	"github.com/mcpe-server/mcpe-server/bench/internal/workload"
	"github.com/mcpe-server/mcpe-server/client"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Scenario is one row of the measurements.
type Scenario struct {
	Name      string `json:"scenario"`
	Transport string `json:"transport"`
	Subs      int    `json:"subscriptions"`
	Events    int    `json:"events"`
	Posters   int    `json:"posters"`
	// Rate paces the posters, in events per second altogether; zero posts
	// as fast as the server accepts.
	Rate int `json:"rate,omitempty"`
	// SubscribeOnly measures only the subscriptions' creation.
	SubscribeOnly bool `json:"-"`
	// RouteDelay measures, with several processes, how long a subscription
	// made through one takes to route an event posted to another.
	RouteDelay bool `json:"-"`
	// Processes is how many servers share the database.
	Processes int `json:"processes,omitempty"`
	// Remote posts only to the processes the client is not connected to.
	Remote bool `json:"remote,omitempty"`
	// Principals, when more than one, own the subscriptions in turn, each
	// through a Streamable HTTP session with a bearer token of its own.
	Principals int `json:"principals,omitempty"`
}

// Result is what one scenario measured.
type Result struct {
	Scenario
	Binary            string  `json:"binary"`
	SubscribeSeconds  float64 `json:"subscribeSeconds"`
	PostSeconds       float64 `json:"postSeconds,omitempty"`
	AcceptedPerSecond float64 `json:"acceptedPerSecond,omitempty"`
	Expected          int64   `json:"expectedNotifications,omitempty"`
	Received          int64   `json:"receivedNotifications,omitempty"`
	Lost              int64   `json:"lost"`
	Duplicates        int64   `json:"duplicates"`
	Foreign           int64   `json:"foreign"`
	NotesPerSecond    float64 `json:"notificationsPerSecond,omitempty"`
	CPUMicrosPerEvent float64 `json:"serverCPUMicrosPerEvent,omitempty"`
	// BenchCPUMicrosPerEvent is this program's CPU (posters and client)
	// per event: on one machine it competes with the server's.
	BenchCPUMicrosPerEvent float64 `json:"benchCPUMicrosPerEvent,omitempty"`
	// SessionServerCPUMicrosPerEvent is, with several processes, the part
	// of CPUMicrosPerEvent spent by the server the client is connected to.
	SessionServerCPUMicrosPerEvent float64 `json:"sessionServerCPUMicrosPerEvent,omitempty"`
	// CPUWindow is when (Unix seconds) the CPU figures per event start and
	// end, from before the first post to the last notification's wait:
	// for a tool that samples another process's CPU (the database's) over
	// the same window.
	CPUWindow [2]float64 `json:"cpuWindow,omitzero"`
	// DatabaseCPUMicrosPerEvent is PostgreSQL's CPU per event over the same
	// window (its postmaster and the postmaster's children), when the
	// database is a cluster on this machine whose postmaster.pid this
	// program can read; a process that ends within the window is left out.
	DatabaseCPUMicrosPerEvent float64 `json:"databaseCPUMicrosPerEvent,omitempty"`
	LatencyP50Millis          float64 `json:"latencyP50ms,omitempty"`
	LatencyP99Millis          float64 `json:"latencyP99ms,omitempty"`
	RSSMegabytes              float64 `json:"rssMB"`
	Refused                   int64   `json:"refused,omitempty"`
	SubscribeCPUMicros        float64 `json:"subscribeCPUMicrosPerCall,omitempty"`
	// SubscribeBenchCPUMicros is this program's CPU (the go-sdk client) per
	// events_subscribe call.
	SubscribeBenchCPUMicros float64 `json:"subscribeBenchCPUMicrosPerCall,omitempty"`
	// RouteDelay*Millis: from events_subscribe returning at one process to
	// the first event posted to another that reaches it.
	RouteDelayP50Millis float64 `json:"routeDelayP50ms,omitempty"`
	RouteDelayMaxMillis float64 `json:"routeDelayMaxMs,omitempty"`
}

var scenarios = []Scenario{
	{Name: "S=1000 burst, 1 poster", Subs: 1000, Events: 20000, Posters: 1},
	{Name: "S=1000 burst, 16 posters", Subs: 1000, Events: 20000, Posters: 16},
	{Name: "S=10000 burst, 16 posters", Subs: 10000, Events: 5000, Posters: 16},
	{Name: "S=1000 paced 1000/s", Subs: 1000, Events: 20000, Posters: 16, Rate: 1000},
	// Ingest: one match per event, so what bounds the rate is accepting.
	{Name: "S=100 burst, 16 posters", Subs: 100, Events: 40000, Posters: 16},
	{Name: "10000 subscribes", Subs: 10000, SubscribeOnly: true},
	{Name: "subscribe to route, across processes", Subs: 20, RouteDelay: true},
}

func main() {
	bin := flag.String("bin", "", "the mcpe-server binary to measure (required)")
	transport := flag.String("transport", "stdio", "how the client connects: stdio or http")
	only := flag.String("only", "", "run only the scenarios whose name contains this")
	quiet := flag.Duration("quiet", 20*time.Second, "after posting, how long without a notification ends the wait for the rest")
	processes := flag.Int("processes", 1, "how many servers share the database")
	remote := flag.Bool("remote", false, "with several processes, post only to those the client is not connected to")
	follow := flag.Duration("follow", 0, "delivery.followInterval for servers older than its removal (0: their default, 100ms; newer ones refuse it)")
	db := flag.String("db", "", "the database the servers share (default: a new SQLite file); a postgres:// URL must name an empty database")
	principals := flag.Int("principals", 1, "how many principals the subscriptions are spread over, each with its own bearer token and session (more than 1 implies -transport http)")
	posters := flag.Int("posters", 0, "posters in every scenario that posts (0: each scenario's own)")
	rate := flag.Int("rate", 0, "events per second altogether in every paced scenario (0: each scenario's own)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this program (the posters and the client) to this file")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "e2e: -bin is required")
		os.Exit(2)
	}
	if *processes < 1 || *principals < 1 || *rate < 0 {
		fmt.Fprintln(os.Stderr, "e2e: -processes and -principals must be at least 1, -rate at least 0")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: -cpuprofile: %v\n", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	for _, sc := range scenarios {
		if !strings.Contains(sc.Name, *only) || sc.RouteDelay && *processes < 2 {
			continue
		}
		sc.Transport, sc.Processes, sc.Remote = *transport, *processes, *remote && *processes > 1
		if *posters > 0 && sc.Posters > 0 {
			sc.Posters = *posters
		}
		if *rate > 0 && sc.Rate > 0 {
			sc.Name = strings.Replace(sc.Name, fmt.Sprintf("%d/s", sc.Rate), fmt.Sprintf("%d/s", *rate), 1)
			sc.Rate = *rate
		}
		if *principals > 1 {
			sc.Transport, sc.Principals = "http", *principals
		}
		res, err := run(*bin, sc, *quiet, *db, *follow)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s: %v\n", sc.Name, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
	}
}

// server is the running binaries: the one the client is connected to, and
// the others on the same database.
type server struct {
	cmd  *exec.Cmd
	base string // http://host:port
	// css are the client's sessions, one per principal.
	css    []*mcp.ClientSession
	got    *tally
	others []*exec.Cmd
	// bases are every process's base URL, the client's last.
	bases []string
}

// cpu sums the CPU time of every process.
func (s *server) cpu() time.Duration {
	t := proc.CPUTime(s.cmd.Process.Pid)
	for _, o := range s.others {
		t += proc.CPUTime(o.Process.Pid)
	}
	return t
}

func run(bin string, sc Scenario, quiet time.Duration, db string, follow time.Duration) (*Result, error) {
	dir, err := os.MkdirTemp("", "mcpe-e2e")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	postmaster := 0
	switch {
	case db == "":
		db = filepath.Join(dir, "mcpe.db")
	case strings.HasPrefix(db, "postgres"):
		// A database of its own for each scenario.
		fresh, drop, pm, err := freshDatabase(db)
		if err != nil {
			return nil, err
		}
		defer drop()
		db, postmaster = fresh, pm
	}
	s, err := start(bin, dir, db, sc, follow)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	res := &Result{Scenario: sc, Binary: bin}
	ctx := context.Background()
	if sc.RouteDelay {
		return res, routeDelay(ctx, s, sc, res)
	}

	cpu0, own0 := s.cpu(), proc.CPUTime(os.Getpid())
	t0 := time.Now()
	subs, owner, err := subscribe(ctx, s.css, sc.Subs)
	if err != nil {
		return nil, err
	}
	res.SubscribeSeconds = time.Since(t0).Seconds()
	res.SubscribeCPUMicros = (s.cpu() - cpu0).Seconds() * 1e6 / float64(sc.Subs)
	res.SubscribeBenchCPUMicros = (proc.CPUTime(os.Getpid()) - own0).Seconds() * 1e6 / float64(sc.Subs)
	if sc.SubscribeOnly {
		res.RSSMegabytes = proc.RSS(s.cmd.Process.Pid)
		return res, nil
	}
	s.got.expect(subs, owner, sc.Events)
	if len(s.others) > 0 {
		// The others route by the subscriptions once they have followed
		// the database: wait for every one to deliver a probe.
		if err := s.waitRouted(ctx, subs); err != nil {
			return nil, err
		}
	}

	cpu1, own1, session1, db1 := s.cpu(), proc.CPUTime(os.Getpid()), proc.CPUTime(s.cmd.Process.Pid), proc.Family(postmaster)
	t1 := time.Now()
	bases := s.bases
	if sc.Remote {
		bases = bases[:len(bases)-1]
	}
	refused, err := post(bases, sc)
	if err != nil {
		return nil, err
	}
	res.PostSeconds = time.Since(t1).Seconds()
	res.CPUWindow[0] = float64(t1.UnixNano()) / 1e9
	res.Refused = refused
	res.AcceptedPerSecond = float64(int64(sc.Events)-refused) / res.PostSeconds
	s.got.wait(quiet)
	last := s.got.lastAt()
	cpu3, own3, session3, db3 := s.cpu(), proc.CPUTime(os.Getpid()), proc.CPUTime(s.cmd.Process.Pid), proc.Family(postmaster)
	res.CPUWindow[1] = float64(time.Now().UnixNano()) / 1e9
	res.Expected = s.got.expected
	res.Received = s.got.received.Load()
	res.Duplicates = s.got.duplicates.Load()
	res.Foreign = s.got.foreign.Load()
	res.Lost = res.Expected - (res.Received - res.Duplicates - res.Foreign)
	if span := last.Sub(t1).Seconds(); span > 0 {
		res.NotesPerSecond = float64(res.Received) / span
	}
	res.CPUMicrosPerEvent = (cpu3 - cpu1).Seconds() * 1e6 / float64(sc.Events)
	res.BenchCPUMicrosPerEvent = (own3 - own1).Seconds() * 1e6 / float64(sc.Events)
	if postmaster > 0 {
		var used time.Duration
		for pid, t := range db3 {
			used += t - db1[pid] // 0 for a process started within the window
		}
		res.DatabaseCPUMicrosPerEvent = used.Seconds() * 1e6 / float64(sc.Events)
	}
	if len(s.others) > 0 {
		res.SessionServerCPUMicrosPerEvent = (session3 - session1).Seconds() * 1e6 / float64(sc.Events)
	}
	res.LatencyP50Millis, res.LatencyP99Millis = s.got.percentiles()
	res.RSSMegabytes = proc.RSS(s.cmd.Process.Pid)
	return res, nil
}

var listenLine = regexp.MustCompile(`msg="HTTP server listening" addr=(\S+)`)

// start runs the binaries on db, the last with stdio (or HTTP for the
// client) and each with HTTP on a free loopback port, and connects the
// client to the last, with a session per principal.
func start(bin, dir, db string, sc Scenario, follow time.Duration) (*server, error) {
	transport := sc.Transport
	// Room for the workload's subscriptions, in a file both old and new
	// binaries read.
	cfg := filepath.Join(dir, "config.yaml")
	body := "subscriptions:\n  maxPerPrincipal: 20000\n"
	tokens := []string{""} // without a token, the session is its own principal
	if sc.Principals > 1 {
		body += "auth:\n  tokens:\n"
		tokens = make([]string, sc.Principals)
		for p := range tokens {
			tokens[p] = rand.Text()
			body += fmt.Sprintf("    - {principal: p%d, token: %s}\n", p, tokens[p])
		}
	}
	if follow > 0 {
		body += fmt.Sprintf("delivery:\n  followInterval: %s\n", follow)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return nil, err
	}
	s := &server{got: newTally()}
	for range sc.Processes - 1 {
		cmd := exec.Command(bin, "--http", "127.0.0.1:0", "--db", db, "--config", cfg)
		addr, err := listenAddr(cmd)
		if err != nil {
			s.stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			s.stop()
			return nil, err
		}
		s.others = append(s.others, cmd)
		base, err := waitAddr(addr)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.bases = append(s.bases, base)
	}
	args := []string{"--http", "127.0.0.1:0", "--db", db, "--config", cfg}
	if transport == "stdio" {
		// Without it the server serves HTTP only: stdio would end at once.
		args = append(args, "--stdio")
	}
	cmd := exec.Command(bin, args...)
	s.cmd = cmd
	addr, err := listenAddr(cmd)
	if err != nil {
		s.stop()
		return nil, err
	}
	tap := func(p int) client.TapHandler {
		return func(method string, params json.RawMessage) { s.got.note(p, method, params) }
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var t mcp.Transport = &mcp.CommandTransport{Command: cmd}
	if transport == "http" {
		if err := cmd.Start(); err != nil {
			s.stop()
			return nil, err
		}
	}
	if transport == "stdio" {
		cs, err := mc.Connect(ctx, client.Tap(t, tap(0)), nil)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.css = append(s.css, cs)
	}
	if s.base, err = waitAddr(addr); err != nil {
		s.stop()
		return nil, err
	}
	s.bases = append(s.bases, s.base)
	for p, token := range tokens {
		if transport == "http" {
			t, _ := client.StreamableHTTP(s.base+"/mcp", token)(ctx)
			cs, err := mc.Connect(ctx, client.Tap(t, tap(p)), nil)
			if err != nil {
				s.stop()
				return nil, err
			}
			s.css = append(s.css, cs)
		}
	}
	return s, nil
}

// listenAddr reads cmd's log, once started, for where it listens.
func listenAddr(cmd *exec.Cmd) (<-chan string, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	return addr, nil
}

// waitAddr returns the base URL a server said it listens on.
func waitAddr(addr <-chan string) (string, error) {
	select {
	case a := <-addr:
		return "http://" + a, nil
	case <-time.After(30 * time.Second):
		return "", errors.New("the server did not say where it listens")
	}
}

func (s *server) stop() {
	for _, cs := range s.css {
		cs.Close()
	}
	for _, cmd := range append(slices.Clone(s.others), s.cmd) {
		if cmd == nil || cmd.Process == nil {
			continue
		}
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
		}
	}
}

// subscribe makes n subscriptions of the workload, subscription i through
// session i mod len(css), and returns, by group, the IDs of the
// subscriptions an event of that group reaches, and each ID's session.
func subscribe(ctx context.Context, css []*mcp.ClientSession, n int) (map[int][]string, map[string]int, error) {
	byGroup := make(map[int][]string)
	owner := make(map[string]int)
	for i := range n {
		g := workload.Group(i)
		res, err := css[i%len(css)].CallTool(ctx, &mcp.CallToolParams{Name: mcpe.ToolSubscribe,
			Arguments: map[string]any{"filter": map[string]any{"eventTypes": []string{workload.Pattern(i)}}}})
		if err != nil {
			return nil, nil, err
		}
		if res.IsError {
			var text strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			return nil, nil, fmt.Errorf("events_subscribe %d: %s", i, text.String())
		}
		b, _ := json.Marshal(res.StructuredContent)
		var sub mcpe.Subscription
		if err := json.Unmarshal(b, &sub); err != nil {
			return nil, nil, err
		}
		byGroup[g] = append(byGroup[g], sub.ID)
		owner[sub.ID] = i % len(css)
	}
	return byGroup, owner, nil
}

// databases counts the PostgreSQL databases made for scenarios.
var databases atomic.Int64

// freshDatabase creates a new database on the server of the PostgreSQL URL
// db and returns its URL, a function that drops it, and the pid of the
// cluster's postmaster when it runs on this machine (else 0).
func freshDatabase(db string) (string, func(), int, error) {
	u, err := url.Parse(db)
	if err != nil {
		return "", nil, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", nil, 0, err
	}
	name := fmt.Sprintf("e2e_%d_%d", os.Getpid(), databases.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, 0, err
	}
	// The postmaster, when the cluster runs here: the first line of its
	// postmaster.pid.
	postmaster := 0
	var dataDir string
	if conn.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir) == nil {
		if b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid")); err == nil {
			postmaster, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		}
	}
	u.Path = "/" + name
	return u.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
		conn.Close(ctx)
	}, postmaster, nil
}

// settle is how long the other processes get to route by subscriptions
// just made: several follow intervals (100ms by default).
const settle = time.Second

// waitRouted gives the other processes time to follow the subscriptions.
func (s *server) waitRouted(context.Context, map[int][]string) error {
	time.Sleep(settle)
	return nil
}

// routeDelay makes sc.Subs subscriptions through the client's process,
// one at a time, and for each posts a matching event to the first process
// every 2ms until one reaches the client: the time from the subscription
// to that event's arrival is how late the first process routes by it.
func routeDelay(ctx context.Context, s *server, sc Scenario, res *Result) error {
	var delays []time.Duration
	for i := range sc.Subs {
		typ := fmt.Sprintf("route%d.created", i)
		r, err := s.css[0].CallTool(ctx, &mcp.CallToolParams{Name: mcpe.ToolSubscribe,
			Arguments: map[string]any{"filter": map[string]any{"eventTypes": []string{typ}}}})
		if err != nil || r.IsError {
			return fmt.Errorf("events_subscribe: %v %+v", err, r)
		}
		t0 := time.Now()
		deadline := t0.Add(30 * time.Second)
		got := false
		for !got {
			if time.Now().After(deadline) {
				return fmt.Errorf("no event of %s posted to another process arrived within 30s", typ)
			}
			body := fmt.Sprintf(`{"type":%q,"data":{}}`, typ)
			resp, err := http.Post(s.bases[0]+"/v1/events", "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			wait := time.After(2 * time.Millisecond)
		drain:
			for {
				select {
				case t := <-s.got.routed:
					if t == typ {
						got = true
						delays = append(delays, time.Since(t0))
						break drain
					}
				case <-wait:
					break drain
				}
			}
		}
		// The rest of this type's probes are still on their way.
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(delays)
	res.RouteDelayP50Millis = float64(delays[len(delays)/2]) / 1e6
	res.RouteDelayMaxMillis = float64(delays[len(delays)-1]) / 1e6
	res.RSSMegabytes = proc.RSS(s.cmd.Process.Pid)
	return nil
}

// post sends the scenario's events from its posters and returns how many
// were refused (429 or 5xx after retries are not expected; they count).
func post(bases []string, sc Scenario) (int64, error) {
	var next atomic.Int64
	var refused atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range sc.Posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns := make(map[string]*poster.Poster, len(bases))
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			var body []byte
			for {
				e := int(next.Add(1)) - 1
				if e >= sc.Events {
					return
				}
				if sc.Rate > 0 {
					due := start.Add(time.Duration(e) * time.Second / time.Duration(sc.Rate))
					time.Sleep(time.Until(due))
				}
				body = workload.AppendEvent(body[:0], e)
				base := bases[e%len(bases)]
				c := conns[base]
				if c == nil {
					c = &poster.Poster{Base: base}
					conns[base] = c
				}
				for attempt := 0; ; attempt++ {
					status, retryAfter, err := c.Post(body)
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						refused.Add(1)
						break
					}
					if status == http.StatusTooManyRequests && attempt < 100 {
						time.Sleep(time.Duration(max(retryAfter, 1)) * 100 * time.Millisecond)
						continue
					}
					if status != http.StatusAccepted {
						refused.Add(1)
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return refused.Load(), err
	}
	return refused.Load(), nil
}

// tally checks and counts the events/event notifications received.
type tally struct {
	mu       sync.Mutex
	want     map[string]map[int]bool // subscription -> seq -> received
	groupOf  map[string]int
	ownerOf  map[string]int // subscription -> the session it must come on
	expected int64
	lat      []time.Duration
	last     time.Time
	arrived  chan struct{}
	// routed gets the types of the events of routeDelay.
	routed chan string

	received, duplicates, foreign atomic.Int64
}

func newTally() *tally {
	return &tally{arrived: make(chan struct{}, 1), routed: make(chan string, 1024)}
}

func (t *tally) expect(byGroup map[int][]string, owner map[string]int, events int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.want = make(map[string]map[int]bool)
	t.groupOf = make(map[string]int)
	t.ownerOf = owner
	for g, ids := range byGroup {
		for _, id := range ids {
			t.want[id] = make(map[int]bool)
			t.groupOf[id] = g
		}
	}
	for e := range events {
		t.expected += int64(len(byGroup[workload.Group(e)]))
	}
}

// note checks a notification that came on session p.
func (t *tally) note(p int, method string, params json.RawMessage) {
	now := time.Now()
	if method != mcpe.MethodEvent {
		return
	}
	var n struct {
		SubscriptionID string `json:"subscriptionId"`
		Event          struct {
			Type string `json:"type"`
			Data struct {
				Seq  int   `json:"seq"`
				Sent int64 `json:"sent"`
			} `json:"data"`
		} `json:"event"`
	}
	// segmentio's decoder, as the go-sdk and client.Tap use: the check
	// runs on the server's cores, and encoding/json's took as long as
	// reading the notification.
	if sjson.Unmarshal(params, &n) != nil {
		t.foreign.Add(1)
		return
	}
	if strings.HasPrefix(n.Event.Type, "route") {
		select {
		case t.routed <- n.Event.Type:
		default:
		}
		return
	}
	t.received.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = now
	seen, ok := t.want[n.SubscriptionID]
	switch {
	case !ok || workload.Group(n.Event.Data.Seq) != t.groupOf[n.SubscriptionID] || t.ownerOf[n.SubscriptionID] != p:
		t.foreign.Add(1)
	case seen[n.Event.Data.Seq]:
		t.duplicates.Add(1)
	default:
		seen[n.Event.Data.Seq] = true
		t.lat = append(t.lat, now.Sub(time.Unix(0, n.Event.Data.Sent)))
	}
	select {
	case t.arrived <- struct{}{}:
	default:
	}
}

// wait returns once every expected notification came, or none came for
// quiet.
func (t *tally) wait(quiet time.Duration) {
	for {
		t.mu.Lock()
		done := int64(len(t.lat)) >= t.expected
		t.mu.Unlock()
		if done {
			return
		}
		select {
		case <-t.arrived:
		case <-time.After(quiet):
			return
		}
	}
}

func (t *tally) lastAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *tally) percentiles() (p50, p99 float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lat) == 0 {
		return 0, 0
	}
	s := slices.Clone(t.lat)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))]) / 1e6 }
	return at(0.50), at(0.99)
}
