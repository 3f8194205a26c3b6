// Package adaptertest is the test support the event sources under
// adapters/ share: a recording Publisher, a real subscriptions.Service on a
// SQLite store with a Subscriber that records what it delivers, the fixtures
// and golden files of testdata (with the -update flag), and helpers for
// requests, refusals, constructors, catalogs, schemas and allocations.
//
// It is for tests only: only _test.go files import it, and it may change
// whenever the sources' tests do. It registers the test flag -update, which
// rewrites the golden files instead of comparing with them.
package adaptertest

import (
	"time"
)

// Wait bounds every wait of these helpers.
const Wait = 10 * time.Second
