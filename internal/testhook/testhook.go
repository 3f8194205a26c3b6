// Package testhook carries what the tests of other packages change in a
// package that keeps it out of its Options. Being internal, it cannot be
// set from outside this module.
package testhook

import (
	"context"
	"crypto/x509"
	"net/netip"
)

// Webhook changes a webhook sender (webhook.Options.Test).
type Webhook struct {
	// RootCAs are trusted for https receivers instead of the system's.
	RootCAs *x509.CertPool
	// Resolver looks up host names instead of net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// NoJitter keeps retries exactly on the schedule.
	NoJitter bool
	// ChallengesPerHostPerMinute replaces the budget of 30.
	ChallengesPerHostPerMinute int
}
