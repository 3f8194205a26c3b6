package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// This file is what a second server does when its HTTP port is taken: on a
// workstation, Claude Desktop and Claude Code each start their own
// "mcpe-server --stdio --http 127.0.0.1:8765" on the default database. When
// the server holding the port keeps its state in the same store, the second
// serves its stdio host alone: the events posted to the first reach its
// sessions through the store. Otherwise it stops and says why.

// probeTimeout bounds the look at the server holding the port.
const probeTimeout = 3 * time.Second

// holder is what /healthz says of the server holding a port.
type holder struct {
	Store    string `json:"store"`
	Database string `json:"database"`
}

// portShared reports, when listening on addr failed with listenErr, whether
// the port is held by a server of the same store (storeID, named dbName):
// nil when it is, and otherwise an error that names both stores, or what
// holds the port (portTaken).
func portShared(ctx context.Context, addr string, listenErr error, storeID, dbName string) error {
	if !errors.Is(listenErr, syscall.EADDRINUSE) {
		return listenErr
	}
	h, err := probe(ctx, addr)
	if err != nil || h.Store == "" {
		return portTaken(ctx, addr, listenErr, "--http")
	}
	if storeID == "" || h.Store != storeID {
		return fmt.Errorf("%w, by another mcpe-server with database %s (store %s), and this one has %s (store %s): give this one another --http address, or both the same --db",
			listenErr, cmp.Or(h.Database, "another database"), h.Store, dbName, storeID)
	}
	return nil
}

// portTaken explains listenErr, from listening on addr: when the port is
// in use, what holds it and what to do; setting names what gave addr.
func portTaken(ctx context.Context, addr string, listenErr error, setting string) error {
	if !errors.Is(listenErr, syscall.EADDRINUSE) {
		return listenErr
	}
	holder := "another process"
	if h, err := probe(ctx, addr); err == nil && h.Store != "" {
		holder = fmt.Sprintf("an mcpe-server with database %s (is it already running?)", cmp.Or(h.Database, "store "+h.Store))
	} else if p := procHolder(addr); p != "" {
		holder = p
	}
	return fmt.Errorf("%w, by %s: stop it, or give %s another address", listenErr, holder, setting)
}

// procHolder names the process listening on addr's TCP port, found in
// /proc (Linux) among this user's processes, or returns "".
func procHolder(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		return ""
	}
	sockets := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n") {
			// sl local_address rem_address st ... inode: st 0A is LISTEN.
			if f := strings.Fields(line); len(f) > 9 && f[3] == "0A" && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", n)) {
				sockets["socket:["+f[9]+"]"] = true
			}
		}
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && sockets[link] {
			pid := strings.Split(fd, "/")[2]
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			return fmt.Sprintf("process %s (%s)", pid, strings.TrimSpace(string(comm)))
		}
	}
	return ""
}

// probe asks the server at addr about itself.
func probe(ctx context.Context, addr string) (*holder, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var h holder
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h); err != nil {
		return nil, fmt.Errorf("%s: not the JSON an mcpe-server answers", resp.Status)
	}
	return &h, nil
}
