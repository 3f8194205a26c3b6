package webhook

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"time"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// What the sender fixes: a delivery whose subscription sets no timeout
// gets defaultTimeout, one may set at most maxTimeout; userAgent is sent as
// User-Agent; maxConnsPerHost bounds the connections to one receiver;
// each retry delay varies by up to jitterFraction either way, so that the
// retries of many deliveries spread out; challengesPerHostPerMinute bounds
// the SEP-3415 challenges and receiver document lookups sent to one
// destination host, whichever principals ask (AllowChallenge).
const (
	defaultTimeout             = 10 * time.Second
	maxTimeout                 = 60 * time.Second
	userAgent                  = "mcpe-server-webhook/1"
	maxConnsPerHost            = 32
	jitterFraction             = 0.2
	challengesPerHostPerMinute = 30
)

// defaultRetrySchedule are the delays after attempts 1 to 5; the delivery
// fails after the sixth attempt.
var defaultRetrySchedule = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute}

// Options configure a Sender. A nil *Options means all defaults.
type Options struct {
	// AllowHTTP allows http:// URLs besides https://. Zero: https only.
	AllowHTTP bool
	// AllowNetworks are ranges a webhook may reach although they are
	// special-purpose (loopback, private, link-local...), e.g.
	// 127.0.0.1/32 for a receiver on the same machine. An IPv4-mapped
	// IPv6 prefix is taken as the IPv4 prefix it maps. Zero: none.
	AllowNetworks []netip.Prefix
	// Secrets are the operator's secrets, by name, filled into a
	// webhook's header values written ${NAME} when the webhook's URL is
	// under one of the secret's URLs. Names are letters, digits and '_',
	// not starting with a digit. Zero: none, and a header that uses
	// ${...} is refused.
	Secrets map[string]Secret
	// Clock tells the time of the webhook-timestamp header and of
	// Retry-After dates. Zero: the wall clock.
	Clock clock.Clock
	// Logger logs refused addresses. Zero: discard.
	Logger *slog.Logger
	// VerifiedURLs are prefixes of SEP-3415 callback URLs whose intent to
	// receive deliveries the operator vouches for, by allowlisting them
	// or having verified them out of band: events/subscribe to a URL
	// under one needs no challenge handshake (Preverified). Each is
	// https://host[:port][/path], with no user information, query or
	// fragment, at most MaxVerifiedURLLen bytes; at most MaxVerifiedURLs
	// of them. A prefix covers a URL as a Secret's URLs do. Zero: none.
	VerifiedURLs []string
	// Test is set by this module's tests only; nil changes nothing.
	Test *testhook.Webhook
}

// secretName is the form of a secret's name, as written in ${NAME}.
var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// withDefaults returns a copy of o with the zero fields set to their
// defaults, or an error naming the first field that is wrong.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if err := c.Validate(); err != nil {
		return Options{}, err
	}
	c.Clock = cmp.Or[clock.Clock](c.Clock, clock.Real{})
	c.Test = cmp.Or(c.Test, &testhook.Webhook{})
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	nets := make([]netip.Prefix, 0, len(c.AllowNetworks))
	for _, p := range c.AllowNetworks {
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		nets = append(nets, p.Masked())
	}
	c.AllowNetworks = nets
	c.VerifiedURLs = slices.Clone(c.VerifiedURLs)
	c.Secrets = maps.Clone(c.Secrets)
	for name, sec := range c.Secrets {
		sec.URLs = slices.Clone(sec.URLs)
		c.Secrets[name] = sec
	}
	return c, nil
}

// Validate checks the settings of o. An error is an *mcpe.InvalidError
// whose Field is the setting's key in the configuration file, relative to
// the webhook handler's section, such as "secrets.TOKEN.urls[0]".
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	for i, p := range o.AllowNetworks {
		if !p.IsValid() || p.Addr().Zone() != "" {
			return mcpe.Invalid(fmt.Sprintf("allowNetworks[%d]", i), "%q is not a valid prefix; give e.g. 10.0.0.0/8 or 127.0.0.1/32", p)
		}
	}
	if err := validateVerifiedURLs(o.VerifiedURLs); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(o.Secrets)) {
		field := "secrets." + name
		if !secretName.MatchString(name) {
			return mcpe.Invalid(field, "a secret name is 1 to 64 letters, digits and '_', not starting with a digit, as written in ${NAME}")
		}
		sec := o.Secrets[name]
		if !validHeaderValue(sec.Value) {
			return mcpe.Invalid(field, "the value cannot go in an HTTP header: it contains a control character such as a line break")
		}
		if len(sec.URLs) == 0 {
			return mcpe.Invalid(field+".urls", "is required: list the URL prefixes this secret may be sent to, such as urls: [\"https://hooks.example.com/\"]; ${%s} is filled in only for webhooks whose URL is under one of them", name)
		}
		for i, raw := range sec.URLs {
			if _, msg := parsePrefix(raw); msg != "" {
				return mcpe.Invalid(fmt.Sprintf("%s.urls[%d]", field, i), "%s", msg)
			}
		}
	}
	return nil
}
