package sqlite

import (
	"encoding/json"
	"strings"
)

// decodeIDs decodes a JSON array of strings as the store writes them (IDs:
// no escapes, no spaces) without encoding/json, which costs the most of
// reading an inbox entry; anything else is left to encoding/json.
func decodeIDs(s string) ([]string, error) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' || !plain(s) {
		return decodeIDsJSON(s)
	}
	body := s[1 : len(s)-1]
	if body == "" {
		return []string{}, nil
	}
	out := make([]string, 0, strings.Count(body, ",")+1)
	for part := range strings.SplitSeq(body, ",") {
		if len(part) < 2 || part[0] != '"' || part[len(part)-1] != '"' || strings.Contains(part[1:len(part)-1], `"`) {
			// A comma or quote inside a string, or not a string.
			return decodeIDsJSON(s)
		}
		out = append(out, part[1:len(part)-1])
	}
	return out, nil
}

// plain reports whether s is printable ASCII without spaces or
// backslashes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == '\\' {
			return false
		}
	}
	return true
}

func decodeIDsJSON(s string) ([]string, error) {
	var out []string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}

// decodeInto is decodeIDs into *dst.
func decodeInto(s string, dst *[]string) (err error) {
	*dst, err = decodeIDs(s)
	return err
}
