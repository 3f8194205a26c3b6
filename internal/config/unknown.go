package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file turns the YAML decoder's "field X not found in type config.T"
// into what a user can act on: the key's path, the closest valid keys, and
// the keys its parent takes.

var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)

// badValue is the message of a Duration's TypeError.
var badValue = regexp.MustCompile(`^line (\d+) column (\d+): (.*)$`)

// explainDecodeError rewrites the messages of te, from decoding body: an
// unknown key's, and a bad value's with its key.
func explainDecodeError(te *yaml.TypeError, body []byte) []string {
	var root yaml.Node
	if yaml.Unmarshal(body, &root) != nil {
		return te.Errors
	}
	types := goTypes()
	lines := make([]string, len(te.Errors))
	for i, msg := range te.Errors {
		lines[i] = msg
		if v := badValue.FindStringSubmatch(msg); v != nil {
			line, _ := strconv.Atoi(v[1])
			col, _ := strconv.Atoi(v[2])
			path, _, _ := findKey(&root, "", func(_, v *yaml.Node) bool { return v.Line == line && v.Column == col })
			lines[i] = fmt.Sprintf("line %d: %s: %s", line, path, v[3])
		}
		m := unknownField.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		path, parent, found := findKey(&root, "", func(k, _ *yaml.Node) bool { return k.Line == line && k.Value == m[2] })
		t, known := types[m[3]]
		if !found || !known {
			continue
		}
		lines[i] = describeUnknown(line, path, parent, m[2], yamlKeys(t))
		if why, gone := removed[strings.TrimPrefix(m[3], "config.")+"."+m[2]]; gone {
			lines[i] = fmt.Sprintf("line %d: %s: this key was removed: %s; delete it", line, path, why)
			if to, moved := strings.CutPrefix(why, "moved: "); moved {
				lines[i] = fmt.Sprintf("line %d: %s: this key moved: %s", line, path, to)
			}
		}
	}
	return lines
}

// removed are the keys that earlier versions took, by the type that held
// them and the key, with what the server does now, or, after "moved: ",
// what to write instead.
var removed = map[string]string{
	"Config.debug":                              "give --pprof ADDR on the command line to serve Go's profiles",
	"HTTP.sessionTimeout":                       "sessions idle for 5m are closed",
	"HTTP.maxSessionsPerPrincipal":              "a principal has at most 100 live sessions",
	"Subscriptions.maxPatternCost":              "what one principal's patterns may cost together grows with subscriptions.maxPerPrincipal (4096 for the default 100)",
	"Inbox.dedupWindow":                         "a sourceEventId is remembered for 24h",
	"Inbox.expiredMaxAge":                       "expired subscriptions stay listed for inbox.maxAge",
	"GitHubAdapter.maxBodyBytes":                "a delivery is at most 25 MiB, the most GitHub sends",
	"SlackAdapter.maxBodyBytes":                 "a request is at most 1 MiB",
	"AlertmanagerAdapter.maxBodyBytes":          "a notification is at most 1 MiB",
	"Handlers.perPrincipal":                     "one principal's runs hold at most a quarter of handlers.concurrency",
	"BashHandler.defaultTimeout":                "a run whose subscription sets no timeout gets 30s",
	"BashHandler.maxTimeout":                    "a subscription's timeout is at most half of handlers.runTimeout",
	"BashHandler.maxConcurrent":                 "an eighth of handlers.concurrency programs run at once",
	"BashCommand.readOnlyRoot":                  "the file system is read-only in the sandbox; list what the program writes in writablePaths",
	"WebhookHandler.defaultTimeout":             "a delivery whose subscription sets no timeout gets 10s",
	"WebhookHandler.maxTimeout":                 "a subscription's timeout is at most 60s",
	"WebhookHandler.retrySchedule":              "retries wait 5s, 30s, 2m, 10m, 30m",
	"WebhookHandler.secretGrace":                "a rotated secret keeps signing for 24h",
	"WebhookHandler.wellKnownReceivers":         "a receiver's well-known document is always looked up before a challenge",
	"WebhookHandler.challengesPerHostPerMinute": "a host gets at most 30 challenges a minute",
	"AgentHandler.maxTurns":                     "a run makes at most 8 model calls",
	"AgentHandler.maxTokens":                    "an answer has at most 1024 tokens unless the subscription says otherwise",
	"AgentHandler.maxRunTime":                   "a run takes at most 2m",
	"MCPAdapter.logLevel":                       "upstreams are asked for info and above",
	"MCPAdapter.minBackoff":                     "reconnections wait from 1s up to 5m",
	"MCPAdapter.maxBackoff":                     "reconnections wait from 1s up to 5m",
	"MCPUpstream.protocolVersion":               "the version is negotiated (2025-11-25 with a command, 2026-07-28 or older with a URL)",
	"Conversation.maxEvents":                    "an answer holds at most 20 events",
	"Config.ingest":                             "moved: write its tokens as auth.ingestTokens (event data nests at most 64 deep, a body is at most 1 MiB)",
	"Config.delivery":                           "moved: write minEvery and heartbeatInterval under subscriptions (a principal's latest 1024 deliveries are kept in memory; window, backlog and followInterval are fixed)",
	"Console.adminToken":                        "moved: write console.token",
	"Console.adminTokenEnv":                     "moved: write console.tokenEnv",
	"BashCommand.limits":                        "moved: write memoryBytes on the command itself (128 processes, files of 64 MiB and 256 open files are fixed)",
	"AgentHandler.endpoint":                     "moved: write url and model on handlers.agent itself, and apiKey as its token or tokenEnv",
	"GitHubAdapter.secret":                      "moved: write the secret as adapters.github.token or tokenEnv",
	"Conversation.maxBytes":                     "an answer holds at most 16 KiB",
}

// describeUnknown says that key, at path under parent, is not one of keys.
func describeUnknown(line int, path, parent, key string, keys []string) string {
	where := "at the top level"
	if parent != "" {
		where = "under " + parent
	}
	msg := fmt.Sprintf("line %d: %s: unknown key", line, path)
	if near := closest(key, keys); len(near) > 0 {
		for i := range near {
			near[i] = strconv.Quote(near[i])
		}
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(near, " or "))
	} else {
		msg += "."
	}
	return msg + fmt.Sprintf(" The keys %s are: %s.", where, strings.Join(keys, ", "))
}

// closest returns the keys nearest to key: a case-insensitive match, or
// those within an edit distance of a third of key's length (at least 1,
// at most 3).
func closest(key string, keys []string) []string {
	for _, k := range keys {
		if strings.EqualFold(k, key) {
			return []string{k}
		}
	}
	limit := min(max(len(key)/3, 1), 3)
	best, out := limit+1, []string(nil)
	for _, k := range keys {
		switch d := editDistance(strings.ToLower(key), strings.ToLower(k)); {
		case d < best:
			best, out = d, []string{k}
		case d == best:
			out = append(out, k)
		}
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// findKey returns the dotted path of the first key in n that match picks,
// and that of the mapping holding it.
func findKey(n *yaml.Node, prefix string, match func(k, v *yaml.Node) bool) (path, parent string, ok bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if path, parent, ok = findKey(c, prefix, match); ok {
				return path, parent, ok
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path = strings.TrimPrefix(prefix+"."+k.Value, ".")
			if match(k, v) {
				return path, prefix, true
			}
			if path, parent, ok = findKey(v, path, match); ok {
				return path, parent, ok
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if path, parent, ok = findKey(c, fmt.Sprintf("%s[%d]", prefix, i), match); ok {
				return path, parent, ok
			}
		}
	}
	return "", "", false
}

// goTypes maps the names the decoder gives the configuration's struct types
// ("config.HTTP") to the types.
func goTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		name := t.String()
		if _, seen := out[name]; seen {
			return
		}
		out[name] = t
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	return out
}

// yamlKeys lists the keys a struct type takes, in order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(f.Type)...)
		case name != "":
			keys = append(keys, name)
		}
	}
	return slices.Compact(keys)
}
