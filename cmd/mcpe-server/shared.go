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
// holds the port.
func portShared(ctx context.Context, addr string, listenErr error, storeID, dbName string) error {
	if !errors.Is(listenErr, syscall.EADDRINUSE) {
		return listenErr
	}
	h, err := probe(ctx, addr)
	if err != nil {
		return fmt.Errorf("%w; what holds it does not answer as an mcpe-server (GET /healthz: %v): give --http another address", listenErr, err)
	}
	if h.Store == "" {
		return fmt.Errorf("%w, by a server that does not say which database it keeps (an older mcpe-server?): give --http another address", listenErr)
	}
	if storeID == "" || h.Store != storeID {
		theirs := cmp.Or(h.Database, "another database")
		return fmt.Errorf("%w, by another mcpe-server with database %s (store %s), and this one has %s (store %s): give this one another --http address, or both the same --db",
			listenErr, theirs, h.Store, dbName, storeID)
	}
	return nil
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
