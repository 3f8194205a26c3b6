package catalog

import (
	"slices"
	"strings"
)

// A catalog type such as "alert.<alertname>.firing" stands for a family of
// types: <alertname> is a name the catalog cannot list. A pattern selects
// the family when it spells that name after a literal start
// ("alert.HighCPU.firing", "alert.Kube*") or leaves it to a wildcard
// ("alert.*", "*.firing"); "*deploy*" does not select it, though an alert
// could be called deploy.

// isFamily reports whether t has a placeholder segment.
func isFamily(t string) bool { return strings.Contains(t, "<") }

// familyMatches reports whether family f could have a type that pattern p
// matches: match tells whether p matches a type, prefix is p's literal start.
// Each placeholder takes what prefix spells in its place, up to the family's
// next literal character (each value in values that starts so, when listed);
// past prefix, a character that only a wildcard matches.
func familyMatches(f string, match func(string) bool, prefix string, values map[string][]string) bool {
	i := strings.IndexByte(f, '<')
	j := strings.IndexByte(f[max(i, 0):], '>') + max(i, 0)
	if i < 0 || j < i {
		return match(f)
	}
	fill := "\x00"
	if rest, ok := strings.CutPrefix(prefix, f[:i]); ok && rest != "" {
		fill = rest
		if j+1 < len(f) {
			fill, _, _ = strings.Cut(rest, f[j+1:j+2])
		}
		if vs, ok := values[f[i:j+1]]; ok {
			return slices.ContainsFunc(vs, func(v string) bool {
				return strings.HasPrefix(v, fill) && familyMatches(f[:i]+v+f[j+1:], match, prefix, values)
			})
		}
	}
	return familyMatches(f[:i]+fill+f[j+1:], match, prefix, values)
}
