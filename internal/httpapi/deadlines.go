package httpapi

import (
	"net/http"
	"time"
)

// Defaults of the request deadlines.
const (
	// DefaultBodyTimeout bounds reading a request's body: a client that
	// trickles a body cannot hold a connection open.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds writing the answer to a request that is
	// not an event stream.
	DefaultWriteTimeout = time.Minute
)

// Deadlines sets per-request read and write deadlines: a request with a
// body must arrive within body, and its answer be written within write. A
// GET (an event stream, which stays open for as long as the session lives)
// gets neither, and clears those a previous request on the same connection
// left. Zero durations take the defaults. A server-wide WriteTimeout would
// cut every event stream; these apply where they fit.
func Deadlines(next http.Handler, body, write time.Duration) http.Handler {
	if body <= 0 {
		body = DefaultBodyTimeout
	}
	if write <= 0 {
		write = DefaultWriteTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var readBy, writeBy time.Time // zero, no deadline, for a GET
		if r.Method != http.MethodGet {
			now := time.Now() // a connection deadline is wall-clock time
			readBy, writeBy = now.Add(body), now.Add(write)
		}
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(readBy)
		rc.SetWriteDeadline(writeBy)
		next.ServeHTTP(w, r)
	})
}
