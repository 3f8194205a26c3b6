package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// AddressError reports a receiver address in a range webhooks may not reach.
type AddressError struct {
	// Host is the URL's host, when it is a name that resolved to Addr.
	Host string
	// Addr is the refused address, unmapped when it was IPv4-mapped IPv6.
	Addr netip.Addr
	// Range names the special-purpose range it is in, e.g.
	// "loopback 127.0.0.0/8".
	Range string
}

func (e *AddressError) Error() string {
	what := e.Addr.String()
	if e.Host != "" {
		what = fmt.Sprintf("%s (resolved from %q)", e.Addr, e.Host)
	}
	return fmt.Sprintf("address %s is %s, which webhooks may not reach; use a public address, or ask the operator to allowlist it in handlers.webhook.allowNetworks", what, e.Range)
}

// specialRange is a range refused unless allowlisted.
type specialRange struct {
	prefix netip.Prefix
	name   string
}

// specialRanges are the refused ranges, the most specific first: the
// special-purpose ranges of the IANA IPv4 and IPv6 registries that are not
// globally reachable, multicast, and the transition ranges that embed an
// IPv4 address which may be internal. IPv6 outside 2000::/3 is refused
// besides (see refusedRange).
var specialRanges = func() []specialRange {
	var out []specialRange
	for _, r := range [][2]string{
		{"0.0.0.0/8", "unspecified (\"this network\")"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (incl. cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation (TEST-NET-1)"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation (TEST-NET-2)"},
		{"203.0.113.0/24", "documentation (TEST-NET-3)"},
		{"224.0.0.0/4", "multicast"},
		{"255.255.255.255/32", "broadcast"},
		{"240.0.0.0/4", "reserved"},

		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"64:ff9b::/96", "NAT64"},
		{"64:ff9b:1::/48", "NAT64 local-use"},
		{"100::/64", "discard-only"},
		{"2001::/32", "Teredo"},
		{"2001::/23", "IETF protocol assignments"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4"},
		{"3fff::/20", "documentation"},
		{"5f00::/16", "segment routing SIDs"},
		{"fc00::/7", "unique-local"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, specialRange{netip.MustParsePrefix(r[0]), r[1]})
	}
	return out
}()

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// refusedRange returns the name and range of the special-purpose range a
// (already unmapped, without zone) is in, or "" when it is not in one.
func refusedRange(a netip.Addr) string {
	if !a.IsValid() {
		return "not a valid address"
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.name + " " + r.prefix.String()
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "reserved (outside IPv6 global unicast 2000::/3)"
	}
	return ""
}

// checkAddr returns an *AddressError when a may not be reached. An
// IPv4-mapped address is checked as IPv4; the zone is ignored.
func (s *Sender) checkAddr(host string, a netip.Addr) error {
	a = a.Unmap().WithZone("")
	for _, p := range s.opts.AllowNetworks {
		if p.Contains(a) {
			return nil
		}
	}
	if r := refusedRange(a); r != "" {
		return &AddressError{Host: host, Addr: a, Range: r}
	}
	return nil
}

// dialContext is the transport's DialContext: it resolves the host through
// s.lookup and connects only to allowed addresses, in turn.
func (s *Sender) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	name := ""
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		name = host
		// The transport dials tcp, tcp4 or tcp6: look up ip, ip4 or ip6.
		addrs, err = s.lookup(ctx, "ip"+strings.TrimPrefix(network, "tcp"), host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	var refused, last error
	allowed := addrs[:0:0]
	for _, a := range addrs {
		if err := s.checkAddr(name, a); err == nil {
			allowed = append(allowed, a)
		} else if refused == nil {
			refused = err
		}
	}
	for i, a := range allowed {
		// Dial the address we checked, never the name: a second lookup
		// could answer differently.
		c, err := s.dialOne(ctx, network, net.JoinHostPort(a.String(), port), len(allowed)-i)
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if last != nil {
		return nil, last
	}
	s.opts.Logger.Warn("webhook receiver address refused", "host", host, "error", refused)
	return nil, refused
}

// dialOne dials one of the addresses left to try, giving it its share of
// the time left, as net.Dialer does, so that one unreachable address does
// not use up the whole timeout.
func (s *Sender) dialOne(ctx context.Context, network, address string, left int) (net.Conn, error) {
	if deadline, ok := ctx.Deadline(); ok && left > 1 {
		// A context deadline is on the wall clock, not Options.Clock.
		share := time.Until(deadline) / time.Duration(left)
		if share >= minDialShare {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, share)
			defer cancel()
		}
	}
	return s.dial(ctx, network, address)
}

// minDialShare is the least time an address is given when others are left.
const minDialShare = 2 * time.Second

// control is the dialer's Control: a second guard that checks the address
// of the very socket being connected.
func (s *Sender) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: cannot check the address %q being dialled: %w", address, err)
	}
	return s.checkAddr("", ap.Addr())
}

// isRefused reports whether err is, or wraps, an *AddressError.
func isRefused(err error) (*AddressError, bool) {
	var ae *AddressError
	ok := errors.As(err, &ae)
	return ae, ok
}
