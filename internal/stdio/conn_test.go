package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioInputs are byte streams a client may send on stdio: well-formed
// messages, and every kind of malformed input the SDK's transport refuses
// or tolerates.
var stdioInputs = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":null}]}}}` + "\n",
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
	`{"jsonrpc":"2.0","id":3,"result":{"ok":true}}` + "\n",
	`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no","data":{"x":1}}}` + "\n",
	`{"jsonrpc":"2.0","id":4}` + "\n",
	`{"jsonrpc":"2.0"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a"}` + "\r\n" + `{"jsonrpc":"2.0","id":2,"method":"b"}` + "\r\n",
	"\n\n  " + `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n\n",
	"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"method\": \"pretty\"\n}\n",
	`{"jsonrpc":"2.0","id":1,"method":"a"}`, // no final newline
	`{"jsonrpc":"2.0","id":1,"method":"a"} x` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a"}{"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a"} ` + "\n",
	"garbage\n",
	`{"jsonrpc":"2.0","id":1,"method":"a"` + "\n",
	`"str"` + "\n", "5\n", "true\n", "null\n", "{}\n", "[]\n",
	`{"jsonrpc":"1.0","id":1,"method":"a"}` + "\n",
	`{"id":1,"method":"a"}` + "\n",
	`{"JSONRPC":"2.0","id":1,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","ID":1,"Method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":{},"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":true,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":null,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":1.5,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":12345678901234567890,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":-0,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":1e3,"method":"a"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":5}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":""}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":null}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"p\u0069ng\n"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","params":"` + "\xff\xfe" + `"}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","params":{"s":"\u2028<&>"}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + "}\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","params":{"s":"[[[["}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","error":{"code":"x"}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}` + "\n",
	`{"jsonrpc":"2.0","id":1,"result":1,"error":null}` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"2","method":"b"}]` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"a"},5]` + "\n",
	`[{"jsonrpc":"2.0","method":"n"}]` + "\n",
	`[{"jsonrpc":"2.0","id":9,"result":{}}]` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"a"}]` + "\n" + `[{"jsonrpc":"2.0","id":1,"method":"b"}]` + "\n",
	`[[{"jsonrpc":"2.0","id":1,"method":"a"}]]` + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"a","params":{"big":"` + strings.Repeat("x", 3000) + `"}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
}

// stdioLimit is the line limit the comparisons run with, small enough that
// some inputs pass it.
const stdioLimit = 2048

type connRead struct {
	msg jsonrpc.Message
	err string
}

// readAll reads c until an error or n messages, with a bound on the wait.
func readConn(t *testing.T, c mcp.Connection, n int) []connRead {
	t.Helper()
	var out []connRead
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		msg, err := c.Read(ctx)
		cancel()
		if err != nil {
			out = append(out, connRead{err: err.Error()})
			break
		}
		out = append(out, connRead{msg: msg})
	}
	return out
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// connPair connects the SDK's transport and ours to the same input, each
// writing to a buffer of its own.
func connPair(t *testing.T, input string) (sdk, ours mcp.Connection, sdkOut, ourOut *bytes.Buffer) {
	t.Helper()
	sdkOut, ourOut = new(bytes.Buffer), new(bytes.Buffer)
	sdk, err := (&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(input)), Writer: nopWriteCloser{sdkOut}, MaxLineLength: stdioLimit}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ours, err = NewTransport(io.NopCloser(strings.NewReader(input)), ourOut, stdioLimit).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdk.Close(); ours.Close() })
	return sdk, ours, sdkOut, ourOut
}

// compareStdio reads input through both transports and checks that they
// read the same messages and fail with the same error, then answers every
// call read, in reverse order, and checks that both write the same bytes.
func compareStdio(t *testing.T, input string) {
	sdk, ours, sdkOut, ourOut := connPair(t, input)
	want := readConn(t, sdk, 64)
	got := readConn(t, ours, 64)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("input %q:\nread %s\nSDK read %s", input, describe(got), describe(want))
	}
	var calls []*jsonrpc.Request
	for _, r := range want {
		if req, ok := r.msg.(*jsonrpc.Request); ok && req.IsCall() {
			calls = append(calls, req)
		}
	}
	for i := len(calls) - 1; i >= 0; i-- {
		resp := &jsonrpc.Response{ID: calls[i].ID, Result: []byte(fmt.Sprintf(`{"n":%d,"s":"<&>"}`, i))}
		if i%2 == 1 {
			resp = &jsonrpc.Response{ID: calls[i].ID, Error: &jsonrpc.Error{Code: -32000, Message: "no"}}
		}
		errSDK := sdk.Write(context.Background(), resp)
		errOurs := ours.Write(context.Background(), resp)
		if fmt.Sprint(errSDK) != fmt.Sprint(errOurs) {
			t.Fatalf("input %q: answering %v: Write error %v, SDK's %v", input, calls[i].ID, errOurs, errSDK)
		}
	}
	note := &jsonrpc.Request{Method: "notifications/message", Params: []byte(`{"level":"info"}`)}
	if err := ours.Write(context.Background(), note); err != nil {
		t.Fatal(err)
	}
	if err := sdk.Write(context.Background(), note); err != nil {
		t.Fatal(err)
	}
	if ourOut.String() != sdkOut.String() {
		t.Fatalf("input %q:\nwrote %q\nSDK wrote %q", input, ourOut, sdkOut)
	}
}

func describe(rs []connRead) string {
	var b strings.Builder
	for _, r := range rs {
		if r.err != "" {
			fmt.Fprintf(&b, "[error %q]", r.err)
			continue
		}
		fmt.Fprintf(&b, "[%T %+v]", r.msg, r.msg)
	}
	return b.String()
}

// TestStdioConnAsSDK: the Transport reads, refuses and answers
// what a client sends exactly as the SDK's mcp.IOTransport does: the same
// messages, the same errors for malformed input, lines past the limit and
// bad batches, and the same bytes written, batches answered whole.
func TestStdioConnAsSDK(t *testing.T) {
	for i, input := range stdioInputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) { compareStdio(t, input) })
	}
}

// FuzzStdioConn compares the Transport with the SDK's on any
// input.
func FuzzStdioConn(f *testing.F) {
	for _, input := range stdioInputs {
		f.Add(input)
	}
	f.Fuzz(func(t *testing.T, input string) { compareStdio(t, input) })
}

// TestStdioConnLimit: a message longer than the line limit ends the
// connection with the SDK's error, and one within it after a long one
// does not.
func TestStdioConnLimit(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"a","params":{"s":"` + strings.Repeat("x", 2*stdioLimit) + `"}}` + "\n"
	compareStdio(t, long)
	_, ours, _, _ := connPair(t, long)
	got := readConn(t, ours, 2)
	if len(got) != 1 || !strings.Contains(got[0].err, "maximum line length") {
		t.Fatalf("reading a line past the limit: %s", describe(got))
	}
}

// TestStdioConnClose: Close ends a Read that waits for input, as the SDK's
// does, even though the reader itself never returns.
func TestStdioConnClose(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c, err := NewTransport(blockingCloser{r}, io.Discard, 0).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var readErr error
	go func() {
		defer wg.Done()
		_, readErr = c.Read(context.Background())
	}()
	time.Sleep(10 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if readErr != io.EOF {
		t.Fatalf("Read after Close = %v, want io.EOF", readErr)
	}
}

// blockingCloser is a reader whose Close does not unblock its Read, as
// with a terminal's standard input.
type blockingCloser struct{ io.Reader }

func (blockingCloser) Close() error { return nil }

// toolResult is an events_subscribe answer as the SDK encodes it.
const toolResult = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpe-server","version":"devel"}},` +
	`"content":[{"type":"text","text":"{\"subscriptionId\":\"01a218bf-45ba-7dcd-9fad-d4c381e33dc3\",\"status\":\"active\",` +
	`\"filter\":{\"eventTypes\":[\"svc0.*\"]},\"delivery\":{\"channels\":[\"realtime\"]},` +
	`\"createdAt\":\"2026-11-26T16:45:18.138898025Z\",\"updatedAt\":\"2026-11-26T16:45:18.138898025Z\",\"deliveredCount\":0}"}],` +
	`"structuredContent":{"createdAt":"2026-11-26T16:45:18.138898025Z","deliveredCount":0,"delivery":{"channels":["realtime"]},` +
	`"filter":{"eventTypes":["svc0.*"]},"status":"active","subscriptionId":"01a218bf-45ba-7dcd-9fad-d4c381e33dc3",` +
	`"updatedAt":"2026-11-26T16:45:18.138898025Z"},"resultType":"complete"}`

// TestEncodeMessageAsSDK: a message is written as jsonrpc.EncodeMessage
// writes it, byte for byte, whatever its ID and result, and refused when
// EncodeMessage refuses it. Results are JSON, as the SDK makes them
// (encodeMessage does not check an object's syntax again).
func TestEncodeMessageAsSDK(t *testing.T) {
	ids := []any{nil, float64(1), float64(0), float64(-7), float64(1 << 53), "a", "", "req-42", "~ok~",
		`x"y`, `a\b`, "<&>", "é", "\u2028", "t\tab", "\x7f"}
	results := []string{`{}`, toolResult, `{"s":"<&>\u00e9\"\\ \u2028"}`, "{\n  \"a\": 1\n}", "{\"a\":\t1}",
		"{\"a\":1\r}", "{\"s\":\"\u2028\"}", `[1,2]`, `5`, `"s"`, `null`, `{`, `}`, "", "[}"}
	var msgs []jsonrpc.Message
	for _, raw := range ids {
		id, err := jsonrpc.MakeID(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			msgs = append(msgs, &jsonrpc.Response{ID: id, Result: json.RawMessage(r)})
		}
		msgs = append(msgs,
			&jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`), Error: &jsonrpc.Error{Code: -32000, Message: "no"}},
			&jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)})
	}
	for _, msg := range msgs {
		got, gotErr := encodeMessage(msg)
		want, wantErr := jsonrpc.EncodeMessage(msg)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !bytes.Equal(got, want) {
			t.Errorf("%+v:\nencoded %s (error %v)\nSDK: %s (error %v)", msg, got, gotErr, want, wantErr)
		}
	}
}

// BenchmarkEncodeResponse encodes an events_subscribe answer as the SDK
// does and as Write does.
func BenchmarkEncodeResponse(b *testing.B) {
	id, err := jsonrpc.MakeID(float64(42))
	if err != nil {
		b.Fatal(err)
	}
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(toolResult)}
	for _, enc := range []struct {
		name   string
		encode func(jsonrpc.Message) ([]byte, error)
	}{{"EncodeMessage", jsonrpc.EncodeMessage}, {"encodeMessage", encodeMessage}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.encode(resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
