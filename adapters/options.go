package adapters

import (
	"cmp"
	"errors"
	"log/slog"
	"maps"
	"slices"

	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// ReceiverOptions are the options every webhook receiver (github, slack,
// alertmanager) takes; each receiver's Options has these fields under the
// same names, beside its own.
type ReceiverOptions struct {
	// Publisher accepts the events; required.
	Publisher subscriptions.Publisher
	// Clock; nil is the wall clock.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
}

// Check returns o with its defaults filled in, or an error when it has no
// Publisher, such as "github: Options.Publisher is required".
func (o ReceiverOptions) Check(source string) (ReceiverOptions, error) {
	if o.Publisher == nil {
		return o, errors.New(source + ": Options.Publisher is required")
	}
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o, nil
}

// Priorities checks field, a map from names (a "label", a "severity") to
// priorities, and returns it keyed by key(name), or def when m is nil. A
// name key makes empty is refused, saying empty, and so are two names key
// makes one with different priorities, saying how names compare.
func Priorities(field, name string, m, def map[string]mcpe.Priority, key func(string) string, empty, compare string) (map[string]mcpe.Priority, error) {
	if m == nil {
		return def, nil
	}
	out := make(map[string]mcpe.Priority, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p, key := m[k], key(k)
		switch prev, dup := out[key]; {
		case !p.Valid():
			return nil, mcpe.Invalid(field+"."+k, "%q is not a priority; use %s", p, mcpe.PriorityList)
		case key == "":
			return nil, mcpe.Invalid(field, "has the %s %q, %s", name, k, empty)
		case dup && prev != p:
			return nil, mcpe.Invalid(field, "gives the %s %q both %q and %q; %s, so give it one priority", name, key, prev, p, compare)
		}
		out[key] = p
	}
	return out, nil
}
