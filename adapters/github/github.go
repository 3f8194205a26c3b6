package github

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/clock"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// Endpoint is the path GitHub posts to: the Payload URL of the webhook is
// the server's address followed by it.
const Endpoint = "/adapters/github"

// Limits on what one delivery turns into. Longer strings are cut and end in
// "…", and data.truncated is then true.
const (
	// MaxTextBytes bounds the body of an issue, pull request, comment,
	// review or release.
	MaxTextBytes = 4096
	// MaxLineBytes bounds titles, commit messages, descriptions and
	// check run summaries.
	MaxLineBytes = 1024
	// MaxNameBytes bounds names, logins, refs, states and other short
	// strings.
	MaxNameBytes = 256
	// MaxURLBytes bounds URLs.
	MaxURLBytes = 2048
	// MaxLabels is the most labels kept of an issue or pull request.
	MaxLabels = 32
	// MaxUsers is the most assignees or requested reviewers kept.
	MaxUsers = 16
	// MaxCommits is the most commits of a push kept; data.commit_count
	// says how many the push had.
	MaxCommits = 20
	// MaxPullRequests is the most pull request numbers kept of a workflow
	// run or check.
	MaxPullRequests = 16
)

// maxListItems bounds the elements decoded of any JSON array of a payload;
// the others are counted and skipped. It is at least every Max above, and
// the 100 labels GitHub allows on an issue, which all count for the
// priority.
const maxListItems = 100

// DefaultPriorityLabels returns the built-in rule that sets an event's
// priority from the labels of its issue or pull request. Keys are label
// names in their normalized form (see NormalizeLabel): "P0", "priority:
// critical" and "Priority/Critical" all match the keys "p0" and "priority
// critical".
func DefaultPriorityLabels() map[string]mcpe.Priority {
	m := make(map[string]mcpe.Priority)
	for p, labels := range map[mcpe.Priority][]string{
		mcpe.PriorityCritical: {
			"p0", "priority p0", "critical", "priority critical", "severity critical",
			"sev0", "sev1", "blocker", "priority blocker", "priority critical urgent",
		},
		mcpe.PriorityHigh: {
			"p1", "priority p1", "high", "priority high", "high priority", "severity high",
			"urgent", "priority urgent", "sev2", "priority important soon",
		},
		mcpe.PriorityLow: {
			"p3", "p4", "priority p3", "priority p4", "low", "priority low", "low priority",
			"severity low", "priority backlog", "priority awaiting more evidence",
		},
	} {
		for _, l := range labels {
			m[l] = p
		}
	}
	return m
}

// NormalizeLabel is the form in which label names are compared with the
// keys of the priority rule: lower case, every run of characters other
// than letters and digits made one space, and no leading or trailing space.
// "Priority: P1", "priority/p1" and "priority-p1" are all "priority p1".
func NormalizeLabel(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return strings.ToLower(strings.Join(words, " "))
}

// Options configure an Adapter.
type Options struct {
	// Publisher accepts the events; required.
	Publisher subscriptions.Publisher
	// Secret is the webhook's secret, as entered in its settings on
	// GitHub; required. Every delivery must carry X-Hub-Signature-256, the
	// HMAC-SHA256 of its body with this secret.
	Secret []byte
	// PriorityLabels maps label names of issues and pull requests to
	// priorities; names are compared in their NormalizeLabel form, so case
	// and punctuation do not matter. Nil means DefaultPriorityLabels; a map
	// given replaces it, and an empty map gives every labelled event normal
	// priority. When several labels match, the highest priority wins.
	PriorityLabels map[string]mcpe.Priority
	// Clock stamps events whose payload carries no time; nil is the wall
	// clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Adapter is the GitHub webhook receiver: an adapters.Source and the
// http.Handler of POST /adapters/github. It is safe for concurrent use.
type Adapter struct {
	shared  adapters.ReceiverOptions
	secret  []byte
	labels  map[string]mcpe.Priority
	maxBody int64
	catalog []mcpe.EventType
}

var _ adapters.Source = (*Adapter)(nil)

// Validate checks the settings of o; New also requires a Publisher. An
// error is an *mcpe.InvalidError whose Field is the setting's key in the
// configuration file, relative to the adapter's section, such as "secret"
// or "priorityLabels.P1".
func (o *Options) Validate() error {
	if len(o.Secret) == 0 {
		return mcpe.Invalid("secret", "is required: the secret entered in the webhook's settings on GitHub, which signs every delivery")
	}
	_, err := priorityLabels(o.PriorityLabels)
	return err
}

// New checks opts and returns an Adapter.
func New(opts Options) (*Adapter, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	ro, err := adapters.ReceiverOptions{Publisher: opts.Publisher, Clock: opts.Clock, Logger: opts.Logger}.Check("github")
	if err != nil {
		return nil, err
	}
	labels, _ := priorityLabels(opts.PriorityLabels)
	a := &Adapter{
		shared:  ro,
		secret:  slices.Clone(opts.Secret),
		labels:  labels,
		maxBody: 25 << 20, // the most GitHub sends
	}
	a.catalog = a.buildCatalog()
	return a, nil
}

// priorityLabels checks m and returns it with normalized keys.
func priorityLabels(m map[string]mcpe.Priority) (map[string]mcpe.Priority, error) {
	return adapters.Priorities("priorityLabels", "label", m, DefaultPriorityLabels(), NormalizeLabel,
		`which has no letter or digit; labels are compared by their letters and digits, so give a label name such as "P1" or "priority: high"`,
		"labels are compared ignoring case and punctuation")
}

// labelPriority returns the highest priority the rule gives one of labels,
// or "" when none matched.
func (a *Adapter) labelPriority(labels []string) mcpe.Priority {
	var best mcpe.Priority
	for _, l := range labels {
		if p, ok := a.labels[NormalizeLabel(l)]; ok && rank(p) > rank(best) {
			best = p
		}
	}
	return best
}

// rank orders priorities, lowest first; "" ranks below them all.
func rank(p mcpe.Priority) int { return slices.Index(mcpe.Priorities, p) }

// priorityText says how the labels of what (such as "the issue") set the
// priority.
func (a *Adapter) priorityText(what string) string {
	if len(a.labels) == 0 {
		return "normal"
	}
	var parts []string
	for _, p := range slices.Backward(mcpe.Priorities) {
		var names []string
		for _, l := range slices.Sorted(maps.Keys(a.labels)) {
			if a.labels[l] == p {
				names = append(names, l)
			}
		}
		if len(names) > 0 {
			parts = append(parts, strings.Join(names, ", ")+" -> "+string(p))
		}
	}
	return "from the labels of " + what + ", compared ignoring case and punctuation (\"Priority: High\" is \"priority high\"): " +
		strings.Join(parts, "; ") + "; the highest matching label wins; no matching label -> normal"
}

// Name returns "github".
func (a *Adapter) Name() string { return "github" }
