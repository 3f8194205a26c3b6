package tools

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// warnings names each of patterns that matches no type cat declares or saw
// lately, with the closest known type when one is close, and that type's
// description when it speaks of the pattern's last word; none without a
// catalog. A subscription with such a pattern is made all the same.
func warnings(ctx context.Context, cat Catalog, patterns []string) []string {
	if cat == nil {
		return nil
	}
	out, known := []string(nil), []mcpe.EventType(nil)
	for _, p := range patterns {
		c, err := cat.Get(ctx, mcpe.CatalogRequest{Pattern: p})
		if err != nil || len(c.Types)+len(c.SeenRecently) > 0 {
			continue
		}
		if known == nil {
			all, err := cat.Get(ctx, mcpe.CatalogRequest{})
			if err != nil {
				return out
			}
			known = []mcpe.EventType{}    // fetched once, however few
			for _, t := range all.Types { // a family by its types, when known
				for _, typ := range strings.Fields(cmp.Or(strings.Join(t.Types, " "), t.Type)) {
					known = append(known, mcpe.EventType{Type: typ, Description: t.Description})
				}
			}
			for _, t := range all.SeenRecently {
				known = append(known, mcpe.EventType{Type: t.Type})
			}
		}
		w := p + " matches no event type this server has declared or seen"
		best, bestDist := mcpe.EventType{}, len(p)/2+1
		for _, t := range known {
			if d := typeDistance(p, t.Type); d < bestDist || d == bestDist && best.Type != "" && t.Type < best.Type {
				best, bestDist = t, d
			}
		}
		if best.Type != "" {
			w += fmt.Sprintf("; did you mean %s?", best.Type)
			if word := p[strings.LastIndexByte(p, '.')+1:]; len(word) > 2 && !strings.Contains(best.Type, word) && strings.Contains(best.Description, word) {
				w += " " + best.Description
			}
		}
		out = append(out, w)
	}
	return out
}

// typeDistance is how far pattern p is from type t, segment by segment: an
// abbreviation ("pr" of "pull_request") or "*" (with the segments after
// it, when last) costs nothing, a placeholder segment of t the length of
// p's, other segments their edit distance, and a missing one its length.
func typeDistance(p, t string) int {
	ps, ts := strings.Split(p, "."), strings.Split(t, ".")
	d := 0
	for i := range max(len(ps), len(ts)) {
		switch {
		case i >= len(ps):
			d += len(ts[i])
		case i >= len(ts):
			d += len(ps[i])
		case ps[i] == "*" && i == len(ps)-1:
			return d
		case ps[i] == "*" || abbreviates(ps[i], ts[i]):
		case strings.HasPrefix(ts[i], "<"):
			d += len(ps[i])
		default:
			d += editDistance(ps[i], ts[i])
		}
	}
	return d
}

// abbreviates reports whether a is b with letters left out, keeping the
// first.
func abbreviates(a, b string) bool {
	if a == "" || b == "" || a[0] != b[0] {
		return false
	}
	for i := 0; i < len(b) && a != ""; i++ {
		if a[0] == b[i] {
			a = a[1:]
		}
	}
	return a == ""
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j]
			substitute := prev
			if a[i-1] != b[j-1] {
				substitute++
			}
			row[j] = min(row[j]+1, row[j-1]+1, substitute)
			prev = cur
		}
	}
	return row[len(b)]
}
