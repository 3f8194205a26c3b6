package mcpe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Bounds of a subscription's label and of its delivery's shape.
const (
	MaxLabelLength               = 100
	MaxFields, MaxFieldLength    = 32, 256
	MinEventBytes, MaxEventBytes = 512, 1 << 20
)

// ValidateLabel checks a subscription's label: at most MaxLabelLength
// characters, on one line.
func ValidateLabel(label string) error {
	if n := utf8.RuneCountInString(label); n > MaxLabelLength || strings.ContainsFunc(label, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Invalid("label", "is %d characters long, or holds control characters; give a name of at most %d characters on one line, such as \"merged PRs in acme/api\"", n, MaxLabelLength)
	}
	return nil
}

// Shape returns event (an event's JSON) as d delivers it: its data holding
// only the paths d.Fields name, nested as they were, without nulls and
// empty objects; then, while it is longer than d.MaxEventBytes, its long
// strings and arrays cut shorter, each ending with a note that says
// "truncated" and how much was cut. A shaped one says "shaped": true, and
// events_poll with its eventId gives it whole. An event d leaves whole, or
// that does not decode, is returned as it is.
func (d Delivery) Shape(event json.RawMessage) json.RawMessage {
	if len(d.Fields) == 0 && (d.MaxEventBytes == 0 || len(event) <= d.MaxEventBytes) {
		return event
	}
	var ev struct {
		ID       string          `json:"id"`
		Type     string          `json:"type"`
		Data     any             `json:"data"`
		Metadata json.RawMessage `json:"metadata"`
		Shaped   bool            `json:"shaped"`
	}
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.UseNumber()
	if dec.Decode(&ev) != nil {
		return event
	}
	if len(d.Fields) > 0 {
		ev.Data = pick(ev.Data, d.Fields)
	}
	whole := ev.Data
	ev.Shaped = true
	for n := math.MaxInt; ; n = min(n, 1<<15) / 4 {
		ev.Data = trim(whole, n)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(&ev) // what decoded encodes
		if out := bytes.TrimSpace(b.Bytes()); d.MaxEventBytes == 0 || len(out) <= d.MaxEventBytes || n < 8 {
			return out
		}
	}
}

// ShapeAll returns events, each shaped by Shape.
func (d Delivery) ShapeAll(events []json.RawMessage) []json.RawMessage {
	if len(events) == 0 || len(d.Fields) == 0 && d.MaxEventBytes == 0 {
		return events
	}
	out := make([]json.RawMessage, len(events))
	for i, ev := range events {
		out[i] = d.Shape(ev)
	}
	return out
}

// pick returns the values of data at dotted paths, nested as they were
// (a path through something other than an object gives an empty object).
func pick(data any, paths []string) map[string]any {
	m, _ := data.(map[string]any)
	out, deeper := map[string]any{}, map[string][]string{}
	for _, p := range paths {
		if head, rest, nested := strings.Cut(p, "."); nested {
			deeper[head] = append(deeper[head], rest)
		} else if v, ok := m[p]; ok {
			out[p] = v
		}
	}
	for head, rest := range deeper {
		if _, whole := out[head]; !whole {
			out[head] = pick(m[head], rest)
		}
	}
	return out
}

// trim returns a copy of v without the nulls and empty objects of its
// objects, and with strings longer than n bytes and arrays of more than
// n/64 (at least 1) items cut, each ending with a note of what was cut.
func trim(v any, n int) any {
	switch t := v.(type) {
	case string:
		keep := min(n, len(t))
		for keep < len(t) && !utf8.RuneStart(t[keep]) {
			keep--
		}
		if keep < len(t) {
			return fmt.Sprintf("%s…[truncated %d bytes]", t[:keep], len(t)-keep)
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if x = trim(x, n); x != nil && !isEmptyObject(x) {
				out[k] = x
			}
		}
		return out
	case []any:
		keep := min(len(t), max(n/64, 1))
		out := make([]any, keep, keep+1)
		for i, x := range t[:keep] {
			out[i] = trim(x, n)
		}
		if keep < len(t) {
			out = append(out, fmt.Sprintf("[truncated %d items]", len(t)-keep))
		}
		return out
	}
	return v
}

func isEmptyObject(v any) bool { m, ok := v.(map[string]any); return ok && len(m) == 0 }
