package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/delivery/realtime"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// TestLineWriterKeepsLinesWhole writes the SDK's messages and batches of
// notifications at once from several goroutines: every line that comes out
// is one whole JSON-RPC message.
func TestLineWriterKeepsLinesWhole(t *testing.T) {
	var out bytes.Buffer
	lw := newLineWriter(&out)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 50 {
				fmt.Fprintf(lw, `{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", g*1000+i)
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 50 {
				msgs := []realtime.Message{
					{Method: mcpe.MethodEvent, Params: json.RawMessage(fmt.Sprintf(`{"subscriptionId":"s%d","event":{"n":%d}}`, g, i))},
					{Method: mcpe.MethodEvent, Params: json.RawMessage(fmt.Sprintf(`{"subscriptionId":"t%d","event":{"n":%d}}`, g, i))},
				}
				if err := lw.WriteMessages(context.Background(), msgs); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4*(50+100) {
		t.Fatalf("%d lines; want %d", len(lines), 4*150)
	}
	for _, l := range lines {
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("line %q is not a JSON-RPC message: %v", l, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lw.WriteMessages(ctx, []realtime.Message{{Method: "x", Params: json.RawMessage(`{}`)}}); err == nil {
		t.Error("WriteMessages with a cancelled context succeeded")
	}
}

// TestStreamWriterWritesABatchAtOnce checks that a batch of notifications
// goes out as server-sent events in one write and one flush, beside the
// SDK's own events, and that nothing is written once the stream's handler
// has returned.
func TestStreamWriterWritesABatchAtOnce(t *testing.T) {
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	h := &streamWriter{ResponseWriter: rec}
	// The SDK writes an event and flushes through the same writer.
	io.WriteString(h, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n")
	if err := http.NewResponseController(h).Flush(); err != nil {
		t.Fatal(err)
	}
	msgs := []realtime.Message{
		{Method: mcpe.MethodEvent, Params: json.RawMessage(`{"subscriptionId":"s","event":{"n":1}}`)},
		{Method: mcpe.MethodEvent, Params: json.RawMessage(`{"subscriptionId":"s","event":{"n":2}}`)},
	}
	if err := h.writeEvents(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if rec.flushes != 2 {
		t.Errorf("%d flushes; want 2 (the SDK's event, then the batch)", rec.flushes)
	}
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"events/event\",\"params\":{\"subscriptionId\":\"s\",\"event\":{\"n\":1}}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"events/event\",\"params\":{\"subscriptionId\":\"s\",\"event\":{\"n\":2}}}\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream:\n%s\nwant:\n%s", got, want)
	}
	h.finish()
	if err := h.writeEvents(context.Background(), msgs); err == nil {
		t.Error("writeEvents after the handler returned succeeded")
	}
	if _, err := io.WriteString(h, "late"); err == nil || strings.Contains(rec.Body.String(), "late") {
		t.Error("a write after the handler returned went through")
	}
}

type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

// BenchmarkSessionWriter measures one stdio session's writer: deliveries of
// 10 notifications each (an event matching 10 subscriptions of the
// principal) written by the registry into a pipe that a reader empties as
// fast as it can, through a lineWriter (batched, pre-encoded: what the
// server does) and, for comparison, through the go-sdk's connection one
// message at a time (sdk). It reports notifications/s.
func BenchmarkSessionWriter(b *testing.B) {
	b.Run("lines", func(b *testing.B) {
		benchWriter(b, func(w io.WriteCloser) realtime.Sink { return lineSink{newLineWriter(w)} })
	})
	b.Run("sdk", func(b *testing.B) {
		benchWriter(b, func(w io.WriteCloser) realtime.Sink {
			in, inW, err := os.Pipe() // nothing is ever sent to the server
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { in.Close(); inW.Close() })
			srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			ss, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: in, Writer: w}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { ss.Close() })
			sink, err := SessionSink(ss)
			if err != nil {
				b.Fatal(err)
			}
			return sink
		})
	})
}

func benchWriter(b *testing.B, sinkOf func(io.WriteCloser) realtime.Sink) {
	const perEntry, chunk = 10, 2048
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	lines := make(chan int, 64)
	go func() {
		br := bufio.NewReaderSize(r, 1<<16)
		n := 0
		for {
			_, err := br.ReadSlice('\n')
			if err != nil && err != bufio.ErrBufferFull {
				close(lines)
				return
			}
			if err == nil {
				if n++; n%perEntry == 0 {
					lines <- n
				}
			}
		}
	}()
	// The window holds two chunks: the writer never falls behind it.
	reg := realtime.NewRegistry(&realtime.Options{WindowEntries: 2 * chunk, WindowBytes: 64 << 20})
	defer reg.Close()
	defer reg.Attach("p", sinkOf(w))()
	ids := make([]string, perEntry)
	for i := range ids {
		ids[i] = fmt.Sprintf("0198a3c2-7a6e-7000-8000-%012d", i)
	}
	event := json.RawMessage(`{"id":"0198a3c2-7a6e-7000-9000-000000000001","type":"svc1.created","data":{"seq":1,"sent":1764086400000000000},"metadata":{"timestamp":"2026-11-25T16:00:00Z","priority":"normal"}}`)
	b.ResetTimer()
	seq := int64(0)
	for done := 0; done < b.N; {
		n := min(chunk, b.N-done)
		entries := make([]subscriptions.InboxEntry, n)
		for i := range entries {
			seq++
			entries[i] = subscriptions.InboxEntry{Seq: seq, Principal: "p", SubscriptionIDs: ids, Kind: mcpe.InboxEvent, Event: event}
		}
		reg.Deliver(entries)
		done += n
		for got := 0; got != done*perEntry; {
			select {
			case got = <-lines:
			case <-time.After(time.Minute):
				b.Fatalf("the reader got %d notifications of %d in a minute (%+v)", got, done*perEntry, reg.Stats())
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*perEntry)/b.Elapsed().Seconds(), "notifications/s")
}

// TestEventStreamOpensWithItsHeader checks that liveness counts a
// session's event stream open, and hands its writer to the session's
// sink, only once the SDK has written the stream's header; and that a GET
// the SDK refuses (a second stream of the session) is never counted and
// does not take the place of the stream that is open.
func TestEventStreamOpensWithItsHeader(t *testing.T) {
	l := newLiveness(clocktest.NewFake(time.Unix(0, 0)), time.Minute, nil)
	const id = "S"
	sink := &streamSink{id: id, live: l}
	type call struct {
		w       *streamWriter
		hold    chan struct{} // closed: write the header
		release chan struct{} // closed: return
	}
	calls := make(chan call)
	h := l.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Refuse") != "" {
			http.Error(w, "stream ID conflicts with ongoing stream", http.StatusConflict)
			return
		}
		c := call{w: w.(*streamWriter), hold: make(chan struct{}), release: make(chan struct{})}
		calls <- c
		<-c.hold
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		calls <- c
		<-c.release
	}))
	get := func(refuse bool) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Mcp-Session-Id", id)
		if refuse {
			r.Header.Set("X-Refuse", "1")
		}
		return r
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.ServeHTTP(httptest.NewRecorder(), get(false))
	}()
	first := <-calls
	if sink.Live() || l.stream(id) != nil {
		t.Fatal("the event stream counts as open before the SDK wrote its header")
	}
	close(first.hold)
	<-calls
	if !sink.Live() || l.stream(id) != first.w {
		t.Fatal("the event stream does not count as open once the SDK wrote its header")
	}
	refused := httptest.NewRecorder()
	h.ServeHTTP(refused, get(true))
	if refused.Code != http.StatusConflict {
		t.Fatalf("the second GET was answered %d; want the SDK's 409", refused.Code)
	}
	if !sink.Live() || l.stream(id) != first.w {
		t.Error("a refused GET took the place of the open event stream")
	}
	close(first.release)
	<-served
	if sink.Live() || l.stream(id) != nil {
		t.Error("the event stream still counts as open once its handler returned")
	}
}
