package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpe-server/mcpe-server/clock"
)

// Limits of HTTP sessions.
const (
	// sessionTimeout is how long a Streamable HTTP session may stay
	// idle before the server closes it. MCP hosts often go away without a
	// DELETE; an abandoned session would otherwise keep its memory, its
	// goroutines and (without tokens) its subscriptions forever.
	sessionTimeout = 5 * time.Minute
	// maxSessionsPerPrincipal bounds the live HTTP sessions of one
	// principal; past it the one idle longest is closed. Those without a
	// token count as one principal, and past it a new one is refused.
	maxSessionsPerPrincipal = 100
)

// pingWait bounds the answer to the ping that tells whether a session whose
// event stream is open but quiet is still there.
const pingWait = 10 * time.Second

// liveness keeps track of the activity of Streamable HTTP sessions: the
// requests in progress (an open event stream is one), and when the last
// began or ended. A session with nothing in progress for the timeout is
// closed; one whose event stream stays open but quiet is pinged, and closed
// if no answer comes. The go-sdk's own SessionTimeout counts POSTs only, so
// it would close a client that only listens.
type liveness struct {
	clock   clock.Clock
	timeout time.Duration
	// opened is called when a session opens its event stream.
	opened func(ss *mcp.ServerSession)

	mu       sync.Mutex
	sessions map[string]*httpSession // by Mcp-Session-Id
	timer    clock.Timer
	stopped  bool
	wg       sync.WaitGroup
}

// httpSession is what liveness knows of one session.
type httpSession struct {
	ss *mcp.ServerSession
	// principal is the one it counts toward: SessionPrincipalPrefix for
	// every session without a token.
	principal string
	// open counts requests in progress (an event stream is one).
	open    int
	last    time.Time
	pinging bool
	// stream is the writer of the event stream opened last, while open:
	// notifications reach the client only while there is one.
	stream *streamWriter
}

func newLiveness(clk clock.Clock, timeout time.Duration, opened func(*mcp.ServerSession)) *liveness {
	return &liveness{clock: clk, timeout: timeout, opened: opened, sessions: make(map[string]*httpSession)}
}

// remove stops tracking the session with the given ID.
func (l *liveness) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, id)
}

// stream returns the writer of the session's open event stream, or nil.
func (l *liveness) stream(id string) *streamWriter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.sessions[id]; st != nil {
		return st.stream
	}
	return nil
}

// handler counts the requests of tracked sessions in progress.
func (l *liveness) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		var stream *streamWriter
		if r.Method == http.MethodGet && id != "" {
			stream = &streamWriter{ResponseWriter: w}
			stream.opened = func() { l.open(id, stream) }
			w = stream
		}
		l.begin(id)
		// end runs when the handler returns: for an event stream, when it
		// closes.
		defer l.end(id, stream)
		next.ServeHTTP(w, r)
	})
}

// begin records a request of session id. A session not attached yet is
// counted too (its event stream may open before its initialized
// notification is handled); an ID that never gets attached is forgotten
// when its requests end.
func (l *liveness) begin(id string) {
	if id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.sessions[id]
	if st == nil {
		if l.stopped {
			return
		}
		st = &httpSession{}
		l.sessions[id] = st
	}
	st.open++
	st.last = l.clock.Now()
}

// open makes stream the event stream of session id once the SDK has
// written its header, never before: nothing of ours may precede it. A
// session that had none has its writer woken.
func (l *liveness) open(id string, stream *streamWriter) {
	var ss *mcp.ServerSession
	l.mu.Lock()
	if st := l.sessions[id]; st != nil {
		if st.stream == nil {
			ss = st.ss // nil until attached
		}
		st.stream = stream
	}
	l.mu.Unlock()
	if ss != nil && l.opened != nil {
		l.opened(ss)
	}
}

func (l *liveness) end(id string, stream *streamWriter) {
	if stream != nil {
		stream.finish()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.sessions[id]
	if st == nil {
		return
	}
	st.open--
	st.last = l.clock.Now()
	if st.stream == stream {
		st.stream = nil
	}
	if st.ss == nil && st.open == 0 {
		delete(l.sessions, id)
	}
}

// admit starts tracking ss, a new HTTP session of principal, under max
// sessions per principal, and returns the sessions of principal to close
// to make room: those idle longest first (nothing in progress, then the
// least recently active). Sessions without a token count as one
// principal, and past max a new one is refused (ok false) rather than
// another client's session closed.
func (l *liveness) admit(ss *mcp.ServerSession, principal string, max int) (closing []*mcp.ServerSession, ok bool) {
	tokenless := strings.HasPrefix(principal, SessionPrincipalPrefix)
	if tokenless {
		principal = SessionPrincipalPrefix
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var mine []*httpSession
	for _, st := range l.sessions {
		if st.ss != nil && st.principal == principal {
			mine = append(mine, st)
		}
	}
	if len(mine) >= max {
		if tokenless {
			return nil, false
		}
		slices.SortFunc(mine, func(a, b *httpSession) int {
			if (a.open == 0) != (b.open == 0) {
				if a.open == 0 {
					return -1
				}
				return 1
			}
			return a.last.Compare(b.last)
		})
		for _, st := range mine[:len(mine)-max+1] {
			closing = append(closing, st.ss)
			delete(l.sessions, st.ss.ID())
		}
	}
	if l.stopped {
		return closing, true
	}
	// Its ID is new: no request of it can have come yet.
	l.sessions[ss.ID()] = &httpSession{ss: ss, principal: principal, last: l.clock.Now()}
	if l.timer == nil {
		l.armLocked()
	}
	return closing, true
}

// armLocked sets the timer for the next look at the sessions.
func (l *liveness) armLocked() {
	l.timer = l.clock.AfterFunc(max(l.timeout/4, time.Second), func() {
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			return
		}
		l.wg.Add(1)
		l.mu.Unlock()
		defer l.wg.Done()
		l.sweep()
		l.mu.Lock()
		if !l.stopped {
			l.armLocked()
		}
		l.mu.Unlock()
	})
}

// sweep closes the sessions idle for the timeout, and pings those whose
// event stream has been quiet that long.
func (l *liveness) sweep() {
	now := l.clock.Now()
	var idle []*mcp.ServerSession
	var quiet []*httpSession
	l.mu.Lock()
	for id, st := range l.sessions {
		if st.ss == nil || now.Sub(st.last) < l.timeout {
			continue
		}
		switch {
		case st.open == 0:
			idle = append(idle, st.ss)
			delete(l.sessions, id)
		case st.stream != nil && !st.pinging:
			st.pinging = true
			quiet = append(quiet, st)
		}
	}
	l.mu.Unlock()
	for _, ss := range idle {
		ss.Close()
	}
	for _, st := range quiet {
		l.wg.Add(1)
		go l.ping(st)
	}
}

// ping asks a quiet session whether it is still there: any answer, even an
// error, counts as activity; a failed write or no answer closes it.
func (l *liveness) ping(st *httpSession) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), pingWait)
	defer cancel()
	err := st.ss.Ping(ctx, nil)
	var rpcErr *jsonrpc.Error
	alive := err == nil || errors.As(err, &rpcErr)
	l.mu.Lock()
	st.pinging = false
	if alive {
		st.last = l.clock.Now()
	} else {
		delete(l.sessions, st.ss.ID())
	}
	l.mu.Unlock()
	if !alive {
		st.ss.Close()
	}
}

// stop ends the sweeps and waits for a sweep or ping in progress.
func (l *liveness) stop() {
	l.mu.Lock()
	l.stopped = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
