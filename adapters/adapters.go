// Package adapters holds what the event sources under adapters/ share:
// the Source every adapter is, and the HTTP plumbing of the webhook
// receivers (a bounded body, the 202 answer; the JSON refusals are those of
// internal/httpapi, the same as POST /v1/events). Each source is a package
// of its own (adapters/github, adapters/slack, adapters/alertmanager,
// adapters/mcp); each publishes through the same subscriptions.Publisher as
// POST /v1/events, so validation, dedup, limits and routing are the same
// for every way in.
package adapters

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Source is an adapter: a named source of events that says which event
// types it emits.
type Source interface {
	// Name is the source's name, such as "github".
	Name() string
	// Catalog lists the event types the source emits.
	Catalog() []mcpe.EventType
}

// DefaultMaxBodyBytes is the usual bound on a webhook body (GitHub needs more).
const DefaultMaxBodyBytes = 1 << 20

// Accepted is the body of a 202 answer: the IDs of the events published
// (for a duplicate, the ID given the first time) and how many were
// duplicates.
type Accepted struct {
	IDs        []string `json:"ids"`
	Duplicates int      `json:"duplicates,omitempty"`
}

// ReadBody reads a POST body of at most max bytes (give a positive max:
// with zero every body that is not empty is refused as too large). It
// writes the refusal itself and returns ok false on a wrong method or an
// oversized or unreadable body.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) (body []byte, ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpapi.WriteError(w, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, fmt.Sprintf("use POST, not %s", r.Method))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpapi.WriteError(w, http.StatusRequestEntityTooLarge, httpapi.CodeBodyTooLarge, fmt.Sprintf("the body is larger than this endpoint's limit of %d bytes", max))
			return nil, false
		}
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.CodeInvalidPayload, "could not read the body: "+err.Error())
		return nil, false
	}
	return body, true
}

// Segment turns a provider's name (an alert name, a GitHub event or action,
// an upstream server's name) into one event-type segment: letters, digits,
// '_' and '-' are kept, runs of anything else become one '_', and an empty
// result becomes "unknown". It is at most 64 bytes long and never starts with
// '-' (a leading one is dropped like any other character that is not kept),
// which mcpe.ValidateType refuses.
func Segment(s string) string {
	var b strings.Builder
	underscore := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		ok = ok && (b.Len() > 0 || r != '-')
		switch {
		case ok:
			b.WriteRune(r)
			underscore = false
		case !underscore && b.Len() > 0:
			b.WriteByte('_')
			underscore = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	// Only ASCII is kept, so the loop stops at exactly 64 bytes.
	out := strings.TrimRight(b.String(), "_")
	if out == "" {
		return "unknown"
	}
	return out
}

// Tag cuts s to a valid tag (at most mcpe.MaxTagLength bytes, no
// control characters), or returns "" when nothing is left.
func Tag(s string) string {
	// Control characters go first, so that what they hid ("\x01 ") is
	// trimmed too.
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s))
	return Prefix(s, mcpe.MaxTagLength)
}

// Clip cuts s to at most max bytes on a rune boundary, ending a cut string
// with "…". A max too small to hold "…" (3 bytes) cuts without it.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	if max < len(ellipsis) {
		if max <= 0 {
			return ""
		}
		return Prefix(s, max)
	}
	return Prefix(s, max-len(ellipsis)) + ellipsis
}

// Prefix returns at most the first n bytes of s, cut on a rune boundary.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Tags returns the valid, distinct tags among ts, in order, at most
// mcpe.MaxTags of them.
func Tags(ts ...string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, t := range ts {
		t = Tag(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		if len(out) == mcpe.MaxTags {
			break
		}
	}
	return out
}
