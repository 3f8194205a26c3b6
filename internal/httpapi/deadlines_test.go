package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTrickledBodyIsCutOff checks that a client sending its body too slowly
// loses the connection instead of holding it open, while an event stream
// (a GET) on a connection that served a POST is not cut by that POST's
// deadline.
func TestTrickledBodyIsCutOff(t *testing.T) {
	const body, write = 200 * time.Millisecond, 300 * time.Millisecond
	srv := httptest.NewServer(Deadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			// A stream that outlives the POST's write deadline.
			for range 4 {
				w.Write([]byte("data: tick\n\n"))
				w.(http.Flusher).Flush()
				time.Sleep(write / 2)
			}
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		w.Write([]byte("ok"))
	}), body, write))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // only a guard against a hang
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nsome")
	// The handler's read fails at the deadline; the connection is closed
	// rather than held for the rest of the body.
	answer, _ := io.ReadAll(conn)
	if strings.Contains(string(answer), "ok") || !strings.Contains(string(answer), "Connection: close") {
		t.Fatalf("a trickled body got %q; want the connection closed without the handler's answer", answer)
	}

	// A POST then a GET on one connection: the stream runs past the
	// POST's write deadline.
	conn2, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn2.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn2)
	io.WriteString(conn2, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	io.WriteString(conn2, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err = http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(resp.Body)
	if got := strings.Count(string(all), "tick"); got != 4 || err != nil {
		t.Errorf("the stream after a POST delivered %d of 4 ticks (%v)", got, err)
	}
}
