package slack

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpe-server/mcpe-server/adapters"
)

// copyLimits bound one attempt of boundedCopy: keys per object, items per
// array, bytes per string.
type copyLimits struct{ keys, items, text int }

// copyPasses are tried in turn until the copy fits in MaxEventBytes.
var copyPasses = []copyLimits{
	{keys: 64, items: 32, text: 1024},
	{keys: 32, items: 16, text: 256},
	{keys: 16, items: 8, text: 64},
	{keys: 8, items: 4, text: 32},
}

// boundedCopy returns a copy of the inner event ev that is at most
// MaxEventDepth levels deep and MaxEventBytes long, and whether anything
// was cut. Objects keep their "type" and "subtype" and then their first
// keys in alphabetical order, arrays their first items, strings their
// first bytes; numbers are kept as Slack wrote them. When even the
// tightest limits do not fit, only the type is kept.
//
// Only what is kept is decoded, level by level, so the work and memory
// follow the copy's size, not the event's.
func boundedCopy(ev object) (json.RawMessage, bool) {
	var buf bytes.Buffer
	for _, lim := range copyPasses {
		buf.Reset()
		c := copier{buf: &buf, lim: lim}
		c.object(ev, 1)
		if buf.Len() <= MaxEventBytes {
			return bytes.Clone(buf.Bytes()), c.cut
		}
	}
	raw, _ := adapters.EncodeJSON(map[string]string{"type": ev.str("type", maxNameBytes)}) // strings always encode
	return raw, true
}

// copier writes one attempt of boundedCopy.
type copier struct {
	buf *bytes.Buffer
	lim copyLimits
	cut bool
}

// full reports whether the attempt is already too long to be kept.
func (c *copier) full() bool { return c.buf.Len() > MaxEventBytes }

// value writes raw, which is at level depth.
func (c *copier) value(raw json.RawMessage, depth int) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		c.buf.WriteString("null")
		return
	}
	switch raw[0] {
	case '{':
		c.object(decodeObject(raw), depth)
	case '[':
		c.array(array(raw), depth)
	case '"':
		var s string
		json.Unmarshal(raw, &s)
		short := adapters.Clip(s, c.lim.text)
		c.cut = c.cut || len(short) != len(s)
		writeString(c.buf, short)
	default: // a number, true, false or null, as written
		c.buf.Write(raw)
	}
}

// object writes o, which is at level depth.
func (c *copier) object(o object, depth int) {
	c.buf.WriteByte('{')
	n := 0
	written := make(map[string]bool)
	for _, k := range keyOrder(o) {
		if c.full() {
			break
		}
		if n == c.lim.keys {
			c.cut = true
			break
		}
		child := o[k]
		if isContainer(child) && depth >= MaxEventDepth {
			c.cut = true
			continue
		}
		short := adapters.Clip(k, maxNameBytes)
		if written[short] {
			c.cut = true
			continue
		}
		written[short] = true
		c.cut = c.cut || short != k
		if n > 0 {
			c.buf.WriteByte(',')
		}
		writeString(c.buf, short)
		c.buf.WriteByte(':')
		c.value(child, depth+1)
		n++
	}
	c.buf.WriteByte('}')
}

// array writes items, which are at level depth.
func (c *copier) array(items []json.RawMessage, depth int) {
	c.buf.WriteByte('[')
	n := 0
	for _, child := range items {
		if c.full() {
			break
		}
		if n == c.lim.items {
			c.cut = true
			break
		}
		if isContainer(child) && depth >= MaxEventDepth {
			c.cut = true
			continue
		}
		if n > 0 {
			c.buf.WriteByte(',')
		}
		c.value(child, depth+1)
		n++
	}
	c.buf.WriteByte(']')
}

// writeString writes s as a JSON string, without escaping <, > and &.
func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	buf.Truncate(buf.Len() - 1) // the newline Encode adds
}

// keyOrder returns the keys of o: "type" and "subtype" first, then the
// others alphabetically.
func keyOrder(o object) []string {
	rank := func(k string) int {
		switch k {
		case "type":
			return 0
		case "subtype":
			return 1
		}
		return 2
	}
	return slices.SortedFunc(maps.Keys(o), func(a, b string) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// isContainer reports whether raw is an object or an array.
func isContainer(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '{' || raw[0] == '[')
}
