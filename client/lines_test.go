package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestLineFilter(t *testing.T) {
	const (
		response = `{"jsonrpc":"2.0","id":1,"result":{"method":"events/event"}}` + "\n"
		request  = `{"jsonrpc":"2.0","id":"a","method":"events/poll","params":{}}` + "\n"
		other    = `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"events/event"}}` + "\n"
		broken   = `{"jsonrpc":"2.0","method":"events/event","params":` + "\n"
	)
	long := `{"jsonrpc":"2.0","method":"events/event","params":{"pad":"` + strings.Repeat("p", 300) + `"}}` + "\n"
	// Nesting: the object and params' arrays, 1 + n levels; brackets in a
	// string do not count.
	nested := func(n int) string {
		return `{"jsonrpc":"2.0","method":"events/event","params":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}\n"
	}
	bracketsInString := `{"jsonrpc":"2.0","method":"events/event","params":{"s":"` + strings.Repeat("[{", 2000) + `\"]"}}` + "\n"
	upperCase := `{"jsonrpc":"2.0","METHOD":"events/event","params":{}}` + "\n"
	trailing := `{"jsonrpc":"2.0","method":"events/event","params":{}} {}` + "\n"
	tests := []struct {
		name, input, pass string
		maxLine           int
		want              []notification
	}{
		{name: "notification taken", input: eventMsg + "\n" + response, pass: response, want: []notification{{"events/event", eventWant}}},
		{name: "CRLF", input: expiredMsg + "\r\n", pass: "", want: []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}}},
		{name: "others pass", input: request + other + broken + response, pass: request + other + broken + response, want: []notification{}},
		{name: "last line without its end", input: response + eventMsg, pass: response, want: []notification{{"events/event", eventWant}}},
		{name: "long line inspected", input: long + response, pass: response, want: []notification{{"events/event", `{"pad":"` + strings.Repeat("p", 300) + `"}`}}},
		{name: "over-long line passes", maxLine: 100, input: long + expiredMsg + "\n", pass: long, want: []notification{{"events/subscription_expired", `{"subscriptionId":"s2"}`}}},
		{name: "empty", input: "", pass: "", want: []notification{}},
		{name: "as deep as the SDK decodes: taken", input: nested(999), pass: "", want: []notification{{"events/event", strings.Repeat("[", 999) + strings.Repeat("]", 999)}}},
		{name: "deeper than the SDK decodes: passes", input: nested(1000) + response, pass: nested(1000) + response, want: []notification{}},
		{name: "a million levels pass", maxLine: 4 << 20, input: nested(1000000) + response, pass: nested(1000000) + response, want: []notification{}},
		{name: "brackets in a string do not nest", input: bracketsInString, pass: "", want: []notification{{"events/event", `{"s":"` + strings.Repeat("[{", 2000) + `\"]"}`}}},
		{name: "field names matched exactly, as the SDK does", input: upperCase, pass: upperCase, want: []notification{}},
		{name: "trailing data passes", input: trailing, pass: trailing, want: []notification{}},
		{
			name:  "SEP-3415 push-stream notification taken",
			input: `{"jsonrpc":"2.0","method":"notifications/events/heartbeat","params":{"cursor":"c"}}` + "\n" + response,
			pass:  response,
			want:  []notification{{"notifications/events/heartbeat", `{"cursor":"c"}`}},
		},
	}
	for _, tt := range tests {
		for _, src := range []struct {
			how string
			r   func() io.Reader
		}{
			{"whole", func() io.Reader { return strings.NewReader(tt.input) }},
			{"byte by byte", func() io.Reader { return iotest.OneByteReader(strings.NewReader(tt.input)) }},
		} {
			t.Run(tt.name+"/"+src.how, func(t *testing.T) {
				h, got := recording()
				f := newLineFilter(io.NopCloser(src.r()), h)
				f.maxLine = tt.maxLine
				out, err := io.ReadAll(f)
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != tt.pass {
					t.Errorf("passed on %q; want %q", out, tt.pass)
				}
				if diff := cmp.Diff(tt.want, got()); diff != "" {
					t.Errorf("mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestTapCommand runs a subprocess through Tap: its MCPE notifications go
// to the handler before the SDK reads, its other messages reach the
// connection, and closing the connection ends it by closing its input.
func TestTapCommand(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := fmt.Sprintf("printf '%%s\\n' '%s' '%s'; cat >/dev/null", eventMsg, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	h, got := recording()
	tr := Tap(&mcp.CommandTransport{Command: exec.Command(sh, "-c", script), TerminateDuration: time.Second}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*jsonrpc.Response); !ok || r.ID.Raw() != int64(1) {
		t.Errorf("read %#v; want the response with id 1", m)
	}
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v; want the process to end on its input closing", err)
	}
	if diff := cmp.Diff([]notification{{"events/event", eventWant}}, got()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// BenchmarkLineFilter reads a stream of events/event notifications, each
// with its params handed to a handler that keeps nothing: the client's
// cost per notification before the go-sdk sees anything.
func BenchmarkLineFilter(b *testing.B) {
	line := `{"jsonrpc":"2.0","method":"events/event","params":{"subscriptionId":"0195f3a2-7c1d-7b3e-9a4f-2c6d8e0b1a3c","cursor":"1234567","event":{"id":"0195f3a2-7c1d-7b3e-9a4f-2c6d8e0b1a3d","type":"svc42.created","data":{"seq":12345,"sent":1764150000000000000},"metadata":{"timestamp":"2026-11-26T10:00:00Z","priority":"normal"}}}}` + "\n"
	const perRead = 1000
	stream := strings.Repeat(line, perRead)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	n := 0
	h := func(string, json.RawMessage) { n++ }
	for b.Loop() {
		f := newLineFilter(io.NopCloser(strings.NewReader(stream)), h)
		if _, err := io.Copy(io.Discard, f); err != nil {
			b.Fatal(err)
		}
	}
	if n%perRead != 0 {
		b.Fatalf("%d notifications handled; want a multiple of %d", n, perRead)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/notification")
}
