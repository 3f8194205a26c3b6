// Package poster posts events to mcpe-server's ingest (POST /v1/events)
// the way the benchmarks do: one keep-alive connection per poster, each
// request written and its answer read on the caller's goroutine.
package poster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Poster is one keep-alive HTTP/1.1 connection to a server's ingest. It
// writes each request and reads its response on the calling goroutine:
// net/http's client runs two goroutines per connection and hands every
// request between them, which on a shared 2-core machine took as much CPU
// per event as a third of the server's.
type Poster struct {
	Base string // http://host:port
	conn net.Conn
	br   *bufio.Reader
	req  []byte
	// used is whether conn has carried a request: one the server closed
	// while idle fails the next, which is then sent once more on a new
	// connection (as net/http's client does).
	used bool
}

// Post sends body as one event and returns the response's status and its
// Retry-After in seconds.
func (p *Poster) Post(body []byte) (status, retryAfter int, err error) {
	reused := p.used
	status, retryAfter, err = p.try(body)
	if err != nil && reused {
		p.Close()
		status, retryAfter, err = p.try(body)
	}
	if err != nil {
		p.Close()
	}
	return status, retryAfter, err
}

func (p *Poster) try(body []byte) (int, int, error) {
	host := strings.TrimPrefix(p.Base, "http://")
	if p.conn == nil {
		c, err := net.DialTimeout("tcp", host, 10*time.Second)
		if err != nil {
			return 0, 0, err
		}
		p.conn, p.br, p.used = c, bufio.NewReader(c), false
	}
	p.req = fmt.Appendf(p.req[:0], "POST /v1/events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, len(body))
	p.req = append(p.req, body...)
	p.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := p.conn.Write(p.req); err != nil {
		return 0, 0, err
	}
	p.used = true
	resp, err := http.ReadResponse(p.br, nil)
	if err != nil {
		return 0, 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, 0, err
	}
	if resp.Close {
		p.Close()
	}
	wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, wait, nil
}

func (p *Poster) Close() {
	if p.conn != nil {
		p.conn.Close()
		p.conn, p.br, p.used = nil, nil, false
	}
}
