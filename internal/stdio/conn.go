// Package stdio is a transport for newline-delimited JSON-RPC on a reader
// and a writer (stdio, a subprocess), as the go-sdk's mcp.IOTransport, that
// decodes each message once. The server serves stdio sessions on it, and
// the client reads its subprocesses through it.
package stdio

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// Transport serves newline-delimited JSON-RPC on a reader and a writer,
// as mcp.IOTransport does, with the same framing, limits, batches
// and errors, but decodes a message once instead of up to three times,
// and writes an answer around its result's bytes instead of copying them
// through encoding/json once more (see encodeMessage).
//
// The SDK's connection (go-sdk v1.8.0) decodes each line through its
// internal json.Unmarshal, which makes a new decoder, and so a new 32 KiB
// buffer, per call: once to see whether the line is a batch, once for the
// message and once more for its method name. Here a line that is a JSON
// object is decoded by one call of the same decoder (segmentio's, with the
// SDK's flags and depth limit) into the SDK's wire form, without a
// buffer; anything else (a batch, a value that is not an object, a message
// that fails to decode) takes the SDK's path, so that it is accepted or
// refused as before, with the same error.
//
// The SDK refuses batches once the session has negotiated 2025-06-18 or
// later, but learns the version through an unexported method that a
// connection outside the SDK cannot have: on this transport batches are
// always read, as they were on the server's stdio sessions, whose wrapper
// never passed that method on.
type Transport struct {
	r       io.ReadCloser
	w       io.Writer
	maxLine int
}

// NewTransport returns a Transport on r and w. maxLine bounds the bytes
// buffered while decoding one message, as mcp.IOTransport.MaxLineLength
// does: zero means mcp.DefaultMaxLineLength, a negative value no bound.
// Closing the connection closes r, and w when it is an io.Closer.
func NewTransport(r io.ReadCloser, w io.Writer, maxLine int) *Transport {
	return &Transport{r: r, w: w, maxLine: maxLine}
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	limiter := &lineLimitReader{r: t.r, limit: cmp.Or(t.maxLine, mcp.DefaultMaxLineLength)}
	if limiter.limit < 0 {
		limiter.limit = math.MaxInt // no bound
	}
	incoming := make(chan rawOrErr)
	closed := make(chan struct{})
	// Reads happen on a goroutine of their own, so that Read returns as
	// soon as Close is called, even when the reader does not unblock.
	go func() {
		dec := json.NewDecoder(limiter)
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if err == nil {
				// What follows a message in the buffer must end its line.
				var tr [1]byte
				if n, readErr := dec.Buffered().Read(tr[:]); n > 0 {
					if tr[0] != '\n' && tr[0] != '\r' {
						err = errors.New("invalid trailing data at the end of stream")
					}
				} else if readErr != nil && readErr != io.EOF {
					err = readErr
				}
			}
			select {
			case incoming <- rawOrErr{raw: raw, err: err}:
			case <-closed:
				return
			}
			if err != nil {
				return
			}
			limiter.count = 0
		}
	}()
	return &stdioConn{r: t.r, w: t.w, incoming: incoming, closed: closed, batches: make(map[jsonrpc.ID]*callBatch)}, nil
}

// stdioConn is the connection of a Transport. Its reading goroutine
// and its Read, Write and Close follow the SDK's ioConn.
type stdioConn struct {
	r io.ReadCloser
	w io.Writer

	writeMu sync.Mutex // keeps a batch's answer whole

	incoming <-chan rawOrErr
	// queue holds the unread messages of the last batch; reads are
	// serialized.
	queue []jsonrpc.Message

	// batches correlate the calls of a batch to its answers.
	batchMu sync.Mutex
	batches map[jsonrpc.ID]*callBatch

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type rawOrErr struct {
	raw json.RawMessage
	err error
}

// callBatch is a batch of calls read together, answered together.
type callBatch struct {
	unresolved map[jsonrpc.ID]int
	responses  []*jsonrpc.Response
}

// lineLimitReader bounds the bytes the decoder may buffer for one message.
type lineLimitReader struct {
	r     io.Reader
	limit int
	count int
}

var errLineTooLarge = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

func (r *lineLimitReader) Read(p []byte) (int, error) {
	if r.count >= r.limit {
		return 0, errLineTooLarge
	}
	if len(p) > r.limit-r.count {
		p = p[:r.limit-r.count]
	}
	n, err := r.r.Read(p)
	r.count += n
	return n, err
}

// SessionID implements mcp.Connection: stdio has no session ID.
func (c *stdioConn) SessionID() string { return "" }

// Read implements mcp.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		return next, nil
	}
	var raw json.RawMessage
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.incoming:
		if v.err != nil {
			return nil, v.err
		}
		raw = v.raw
	case <-c.closed:
		return nil, io.EOF
	}
	if len(raw) > 0 && raw[0] == '{' {
		if msg, ok := decodeObject(raw); ok {
			return msg, nil
		}
	}
	msgs, batch, err := sdkReadBatch(raw)
	if err != nil {
		return nil, err
	}
	c.queue = msgs[1:]
	if batch {
		calls := &callBatch{unresolved: make(map[jsonrpc.ID]int)}
		for _, msg := range msgs {
			if req, ok := msg.(*jsonrpc.Request); ok {
				if _, ok := calls.unresolved[req.ID]; ok {
					return nil, fmt.Errorf("duplicate message ID %q", req.ID)
				}
				calls.unresolved[req.ID] = len(calls.responses)
				calls.responses = append(calls.responses, nil)
			}
		}
		if err := c.addBatch(calls); err != nil {
			return nil, err
		}
	}
	return msgs[0], nil
}

func (c *stdioConn) addBatch(b *callBatch) error {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.unresolved {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("%w: batch contains previously seen request %v", errInvalidRequest, id.Raw())
		}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// errInvalidRequest is the SDK's jsonrpc2.ErrInvalidRequest, which is not
// exported: a wire error matches another of the same code.
var errInvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// updateBatch records resp in the batch of its call, if any. It reports
// whether resp belongs to a batch, and returns the batch's answers once
// resp completes it.
func (c *stdioConn) updateBatch(resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	idx, ok := b.unresolved[resp.ID]
	if !ok {
		panic("internal error: inconsistent batches")
	}
	b.responses[idx] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) == 0 {
		return b.responses, true
	}
	return nil, true
}

// Write implements mcp.Connection: msg as one line, or with the rest of
// its batch once the batch is complete.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if batch, ok := c.updateBatch(resp); ok {
			if len(batch) == 0 {
				return nil
			}
			raws := make([]json.RawMessage, 0, len(batch))
			for _, r := range batch {
				raw, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					return fmt.Errorf("encoding batch message: %w", err)
				}
				raws = append(raws, raw)
			}
			data, err := json.Marshal(raws)
			if err != nil {
				return err
			}
			_, err = c.w.Write(append(data, '\n'))
			return err
		}
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	_, err = c.w.Write(append(data, '\n'))
	return err
}

// encodeMessage is jsonrpc.EncodeMessage, except that a response with a
// result is put together around the result's bytes as they are, where
// EncodeMessage would scan and copy them once more (encoding/json compacts
// every json.RawMessage it writes): 3 % of the server's CPU per tool call.
// The SDK makes a result with encoding/json, so it is one compact JSON
// object already, and the line is the one EncodeMessage would make. A
// result that is not an object, or holds a line break or a tab (white
// space between tokens), or an ID that encoding/json would escape, takes
// EncodeMessage's way.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) < 2 ||
		resp.Result[0] != '{' || resp.Result[len(resp.Result)-1] != '}' ||
		bytes.ContainsAny(resp.Result, "\r\n\t") {
		return jsonrpc.EncodeMessage(msg)
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	// Room for the ID, the closing brace and the line's end.
	out := make([]byte, 0, len(head)+len(mid)+len(resp.Result)+32)
	out = append(out, head...)
	switch id := resp.ID.Raw().(type) {
	case int64:
		out = strconv.AppendInt(out, id, 10)
	case string:
		if !plainString(id) {
			return jsonrpc.EncodeMessage(msg)
		}
		out = append(append(append(out, '"'), id...), '"')
	default:
		return jsonrpc.EncodeMessage(msg)
	}
	out = append(append(out, mid...), resp.Result...)
	return append(out, '}'), nil
}

// plainString reports whether encoding/json writes s as it is between
// quotes: printable ASCII, with no quote or backslash.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Close implements mcp.Connection. It closes the reader, and the writer
// if it is an io.Closer.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		err := c.r.Close()
		if wc, ok := c.w.(io.Closer); ok {
			err = errors.Join(err, wc.Close())
		}
		c.closeErr = err
		close(c.closed)
	})
	return c.closeErr
}

// sdkFlags are the decoding flags of the SDK's internal json.Unmarshal:
// struct fields match their names exactly.
const sdkFlags = sjson.DontMatchCaseInsensitiveStructFields

// sdkMaxDepth is the nesting the SDK's internal json.Unmarshal accepts.
const sdkMaxDepth = 1000

// Parse decodes data, one JSON value that only white space may follow,
// into v as the SDK's internal json.Unmarshal would (segmentio's decoder,
// struct fields matched by their exact names, at most 1000 levels deep,
// checked without recursion), in one pass and without the SDK's buffer.
// What v keeps is copied out of data. The client decodes the notifications
// it takes out of a stream with it.
func Parse(data []byte, v any) error {
	if !withinDepth(data, sdkMaxDepth) {
		return errors.New("json: exceeded maximum nesting depth")
	}
	rest, err := sjson.Parse(data, v, sdkFlags)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("json: invalid data after the value")
	}
	return nil
}

// wireMessage is the SDK's decoding form of a JSON-RPC message
// (jsonrpc2.wireDecode): Method is raw so that a "method" key is told
// apart from none, even with an empty name.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeObject decodes raw, one JSON object, as jsonrpc.DecodeMessage
// does. It reports false when DecodeMessage would fail, leaving the error
// to it.
func decodeObject(raw []byte) (jsonrpc.Message, bool) {
	var w wireMessage
	if Parse(raw, &w) != nil || w.VersionTag != "2.0" {
		return nil, false
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, false
	}
	if len(w.Method) > 0 {
		var method string
		if _, err := sjson.Parse(w.Method, &method, sdkFlags); err != nil {
			return nil, false
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, true
	}
	if !id.IsValid() {
		return nil, false
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, true
}

// sdkReadBatch is the SDK's readBatch: data is a batch (a JSON array) of
// messages or one message.
func sdkReadBatch(data []byte) (msgs []jsonrpc.Message, isBatch bool, _ error) {
	var rawBatch []json.RawMessage
	if err := Parse(data, &rawBatch); err == nil {
		if len(rawBatch) == 0 {
			return nil, true, errors.New("empty batch")
		}
		for _, raw := range rawBatch {
			msg, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, msg)
		}
		return msgs, true, nil
	}
	msg, err := jsonrpc.DecodeMessage(data)
	return []jsonrpc.Message{msg}, false, err
}

// withinDepth reports whether the objects and arrays of data nest at most
// maxDepth deep, counted as the SDK counts them.
func withinDepth(data []byte, maxDepth int) bool {
	if bytes.Count(data, []byte{'{'})+bytes.Count(data, []byte{'['}) <= maxDepth {
		return true // not that many openings anywhere
	}
	var depth int
	var inString, escaped bool
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return false
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return true
}
