// Command wire measures what mcpe-server costs a model on the wire: the
// bytes of tools/list, of one events/event notification for each adapter's
// common event (with and without delivery.fields), and of a 20-event
// events_poll page. It starts the built binary over stdio, speaks JSON-RPC
// to it line by line (so the bytes counted are the bytes a client reads),
// and posts the events to the adapters and /v1/events over HTTP.
// Approximate tokens are bytes/4. A tool's answer is counted whole and as
// the text content a host shows the model (the answer also carries it as
// structuredContent).
//
//	go build -o /tmp/mcpe-server ./cmd/mcpe-server
//	go run ./bench/wire -bin /tmp/mcpe-server
//
// -fields=false leaves fields out (for a binary that has none).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters/github"
	"github.com/mcpe-server/mcpe-server/adapters/slack"
)

const secret = "wire-bench-secret"

// source is one adapter's common event and the subscription for it.
type source struct {
	name, eventType, path string
	fields                []string
	body                  func() []byte
	headers               func(body []byte) map[string]string
}

func main() {
	bin := flag.String("bin", "/tmp/mcpe-server", "the built mcpe-server")
	repo := flag.String("repo", ".", "the repository (for adapters' testdata)")
	withFields := flag.Bool("fields", true, "also measure subscriptions with delivery.fields")
	flag.Parse()
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(*repo, p))
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	deploy := `{"type": "deploy.succeeded", "data": {"service": "payments-api", "version": "1.4.3", "environment": "prod", "commit": "9f2c4e1b7a3d", "author": "alice", "url": "https://ci.example.com/deploys/8812", "durationSeconds": 184, "rollback": null, "annotations": {}, "log_tail": "` + strings.Repeat(`step ok\n`, 60) + `"}, "metadata": {"priority": "normal", "tags": ["service:payments-api", "env:prod"]}}`
	sources := []source{
		{"GitHub issue opened", "github.issues.opened", "/adapters/github", []string{"issue.title", "issue.html_url"},
			func() []byte { return read("adapters/github/testdata/issues.opened.json") },
			func(b []byte) map[string]string {
				return map[string]string{github.EventHeader: "issues", github.DeliveryHeader: strconv.FormatInt(time.Now().UnixNano(), 10), github.SignatureHeader: github.Signature([]byte(secret), b)}
			}},
		{"Slack message", "slack.message", "/adapters/slack", []string{"text", "channel", "user"},
			func() []byte {
				b := read("adapters/slack/testdata/message_channel.json")
				return bytes.Replace(b, []byte(`"Ev08X1CHAN01"`), []byte(fmt.Sprintf(`"Ev%d"`, time.Now().UnixNano())), 1)
			},
			func(b []byte) map[string]string {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				return map[string]string{"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": slack.Signature([]byte(secret), ts, b)}
			}},
		{"Alertmanager alert", "alert.*.firing", "/adapters/alertmanager", []string{"alertname", "annotations.summary", "labels.severity"},
			func() []byte {
				b := read("adapters/alertmanager/testdata/firing_group.json")
				return bytes.ReplaceAll(b, []byte(`"2025-06-02T08:14:05.402Z"`), []byte(`"`+time.Now().UTC().Format(time.RFC3339Nano)+`"`))
			},
			func([]byte) map[string]string { return nil }},
		{"deploy event (POST /v1/events)", "deploy.*", "/v1/events", []string{"service", "version", "environment", "url"},
			func() []byte { return []byte(deploy) }, func([]byte) map[string]string { return nil }},
	}
	modes := []bool{false}
	if *withFields {
		modes = append(modes, true)
	}
	fmt.Println("| what | bytes on the wire | ~tokens (bytes/4) | a tool's text content |\n|---|---:|---:|---:|")
	row := func(what string, line []byte) {
		text := ""
		var r struct {
			Result struct{ Content []struct{ Text string } }
		}
		if json.Unmarshal(line, &r) == nil && len(r.Result.Content) > 0 {
			text = fmt.Sprintf("%d (~%d tokens)", len(r.Result.Content[0].Text), (len(r.Result.Content[0].Text)+2)/4)
		}
		fmt.Printf("| %s | %d | %d | %s |\n", what, len(line), (len(line)+2)/4, text)
	}
	for _, handlers := range []bool{false, true} {
		s := start(*bin, handlers)
		row(map[bool]string{false: "tools/list, handlers off", true: "tools/list, bash and webhook handlers on"}[handlers], s.call("tools/list", `{}`))
		s.stop()
	}
	// The catalog, with every adapter configured (an upstream MCP server
	// included) and three types posted to /v1/events.
	s := start(*bin, false)
	for _, t := range []string{"deploy.started", "deploy.failed", "build.done"} {
		s.post(source{path: "/v1/events", body: func() []byte { return []byte(`{"type": "` + t + `", "data": {}}`) }, headers: func([]byte) map[string]string { return nil }})
	}
	for _, c := range []struct{ what, pattern string }{{"events_catalog overview", ""}, {"events_catalog *deploy*", "*deploy*"}, {"events_catalog *", "*"}, {"events_catalog github.issues.opened", "github.issues.opened"}} {
		args := `{}`
		if c.pattern != "" {
			args = fmt.Sprintf(`{"pattern": %q}`, c.pattern)
		}
		row(c.what, s.call("tools/call", `{"name": "events_catalog", "arguments": `+args+`}`))
	}
	s.stop()
	for _, fields := range modes {
		s := start(*bin, false)
		suffix := map[bool]string{false: "", true: " with fields"}[fields]
		for _, src := range sources {
			args := map[string]any{"filter": map[string]any{"eventTypes": []string{src.eventType}}}
			if fields {
				args["delivery"] = map[string]any{"channels": []string{"realtime"}, "fields": src.fields}
			}
			a, _ := json.Marshal(map[string]any{"name": "events_subscribe", "arguments": args})
			if r := s.call("tools/call", string(a)); bytes.Contains(r, []byte(`"isError":true`)) {
				log.Fatalf("subscribe: %s", r)
			}
		}
		for _, src := range sources {
			s.post(src)
			n := s.notification()
			for s.drain() {
			}
			if os.Getenv("WIRE_SHOW") != "" {
				fmt.Fprintf(os.Stderr, "%s\n", n)
			}
			row(src.name+" notification"+suffix, n)
		}
		for i := 0; i < 4; i++ {
			for _, src := range sources {
				s.post(src)
			}
		}
		for s.drain() {
		}
		page := s.call("tools/call", `{"name": "events_poll", "arguments": {"cursor": "0", "limit": 20}}`)
		if os.Getenv("WIRE_SHOW") != "" {
			fmt.Fprintf(os.Stderr, "%s\n", page)
		}
		row("events_poll page of 20 events"+suffix, page)
		s.stop()
	}
}

type server struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
	addr  string
	id    int
	dir   string
}

func start(bin string, handlers bool) *server {
	dir, _ := os.MkdirTemp("", "wire")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("http:\n  addr: %q\nadapters:\n  github:\n    secret: {token: %q}\n  slack:\n    signingSecret: {token: %q}\n  alertmanager: {}\n  mcp:\n    upstreams:\n      - name: files\n        command: [%q, --stdio, --db, %q]\n",
		addr, secret, secret, bin, filepath.Join(dir, "upstream.db"))
	if handlers {
		cfg += "handlers:\n  bash:\n    sandbox: off\n    commands:\n      notify:\n        path: /bin/true\n  webhook:\n    enabled: true\n"
	}
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600)
	cmd := exec.Command(bin, "--stdio", "--db", filepath.Join(dir, "mcpe.db"), "--config", filepath.Join(dir, "config.yaml"))
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	s := &server{cmd: cmd, in: in, lines: make(chan []byte, 1024), addr: addr, dir: dir}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(s.lines)
				return
			}
			s.lines <- bytes.TrimRight(line, "\n")
		}
	}()
	s.call("initialize", `{"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "wire", "version": "1"}}`)
	fmt.Fprintln(in, `{"jsonrpc": "2.0", "method": "notifications/initialized"}`)
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		} else if i > 100 {
			log.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// call sends a request and returns its response line, as written.
func (s *server) call(method, params string) []byte {
	s.id++
	fmt.Fprintf(s.in, `{"jsonrpc": "2.0", "id": %d, "method": %q, "params": %s}`+"\n", s.id, method, params)
	want := fmt.Sprintf(`"id":%d,`, s.id)
	for line := range s.lines {
		if bytes.Contains(line, []byte(want)) && !bytes.Contains(line, []byte(`"method"`)) {
			return line
		}
	}
	log.Fatal("server exited")
	return nil
}

// notification returns the next events/event line.
func (s *server) notification() []byte {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-s.lines:
			if bytes.Contains(line, []byte(`"method":"events/event"`)) {
				return line
			}
		case <-timeout:
			log.Fatal("no notification")
		}
	}
}

// drain reads what else arrives within a moment (the other events of an
// Alertmanager group); it reports whether there was any.
func (s *server) drain() bool {
	select {
	case <-s.lines:
		return true
	case <-time.After(300 * time.Millisecond):
		return false
	}
}

func (s *server) post(src source) {
	body := src.body()
	req, _ := http.NewRequest("POST", "http://"+s.addr+src.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range src.headers(body) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		log.Fatalf("POST %s: %d %s", src.path, resp.StatusCode, b)
	}
}

func (s *server) stop() {
	s.in.Close()
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}
