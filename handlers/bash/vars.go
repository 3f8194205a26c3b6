package bash

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// The variables of a run.
const (
	varSubscriptionID = "MCPE_SUBSCRIPTION_ID"
	varDelivery       = "MCPE_DELIVERY"
	varEventID        = "MCPE_EVENT_ID"
	varEventType      = "MCPE_EVENT_TYPE"
	varEventPriority  = "MCPE_EVENT_PRIORITY"
	varEventTimestamp = "MCPE_EVENT_TIMESTAMP"
	varEventTags      = "MCPE_EVENT_TAGS"
	varEventData      = "MCPE_EVENT_DATA"
	varEvents         = "MCPE_EVENTS"
	varEventCount     = "MCPE_EVENT_COUNT"
	varRemaining      = "MCPE_REMAINING"
)

// varNames lists the variables in the order the documentation gives them.
var varNames = []string{
	varSubscriptionID, varDelivery,
	varEventID, varEventType, varEventPriority, varEventTimestamp, varEventTags, varEventData,
	varEvents, varEventCount, varRemaining,
}

// payloadVar tells the variables that carry the payload, set in the
// environment only in env mode.
func payloadVar(name string) bool { return name == varEventData || name == varEvents }

// eventFields are the fields of an event the variables show.
type eventFields struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Data     json.RawMessage `json:"data"`
	Metadata struct {
		Timestamp string   `json:"timestamp"`
		Priority  string   `json:"priority"`
		Tags      []string `json:"tags"`
	} `json:"metadata"`
}

// variables returns the value of every variable for inv. Names that do not
// apply to the kind of delivery are empty. It fails on a malformed event.
func variables(inv *subscriptions.Invocation) (map[string]string, error) {
	vars := make(map[string]string, len(varNames))
	for _, name := range varNames {
		vars[name] = ""
	}
	vars[varSubscriptionID] = inv.SubscriptionID
	if inv.Kind == mcpe.InboxBatch {
		vars[varDelivery] = string(mcpe.InboxBatch)
		events := inv.Events
		if events == nil {
			events = []json.RawMessage{}
		}
		b, err := json.Marshal(events)
		if err != nil {
			return nil, fmt.Errorf("the batch holds an event that is not valid JSON: %w", err)
		}
		vars[varEvents] = string(b)
		vars[varEventCount] = strconv.Itoa(len(inv.Events))
		vars[varRemaining] = strconv.Itoa(inv.Remaining)
		return vars, nil
	}
	if inv.Kind != mcpe.InboxEvent && inv.Kind != "" {
		return nil, fmt.Errorf("the delivery is of kind %q; expected %q or %q", inv.Kind, mcpe.InboxEvent, mcpe.InboxBatch)
	}
	vars[varDelivery] = string(mcpe.InboxEvent)
	raw := bytes.TrimSpace(inv.Event)
	if len(raw) == 0 {
		return nil, errors.New("the delivery has no event")
	}
	if raw[0] != '{' {
		return nil, errors.New("the event is not a JSON object")
	}
	var ev eventFields
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("the event is not valid JSON: %w", err)
	}
	vars[varEventID] = ev.ID
	vars[varEventType] = ev.Type
	vars[varEventPriority] = ev.Metadata.Priority
	vars[varEventTimestamp] = ev.Metadata.Timestamp
	vars[varEventTags] = strings.Join(ev.Metadata.Tags, ",")
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	vars[varEventData] = string(data)
	return vars, nil
}

// arguments expands the placeholders in args, the arguments a subscription
// wrote for command c named name. It refuses an argument that the model
// wrote with a leading '-' when c allows no options, and one that a
// placeholder made start with '-' unless c allows it: a value an event sender
// chose ("--output=/x" in a tag) never reaches the program as an option, even
// after a "--", which not every program honors. A placeholder after literal
// text ("--tags=$MCPE_EVENT_TAGS") is the subscription's choice.
func arguments(c *Command, name string, args []string, vars map[string]string) ([]string, error) {
	argv := make([]string, 0, len(args)+1)
	for i, a := range args {
		v := expand(a, vars)
		switch {
		case strings.HasPrefix(a, "-"):
			if !c.allowOptions() {
				return nil, fmt.Errorf("argument %d (%q) starts with '-': the operator allows no options for command %q", i+1, a, name)
			}
		case strings.HasPrefix(v, "-") && !c.AllowOptionPlaceholders:
			return nil, fmt.Errorf("argument %d (%q) expands to %s, which starts with '-': event content never reaches a program as an option, so the run was refused; "+
				"put literal text before the placeholder (such as \"--tags=$MCPE_EVENT_TAGS\"), or the operator sets allowOptionPlaceholders on command %q", i+1, a, quoteShort(v), name)
		}
		argv = append(argv, v)
	}
	return argv, nil
}

// quoteShort quotes s, cut to its first 64 bytes.
func quoteShort(s string) string {
	const n = 64
	if len(s) <= n {
		return strconv.Quote(s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// expand replaces the placeholders $NAME and ${NAME} in s, where NAME is a
// key of vars, by their values. Anything else stays as written: other
// names, $(...), a lone '$', an unterminated ${. Values are not expanded
// again. As in a shell, $NAME takes the longest run of letters, digits and
// '_', so "$MCPE_EVENT_IDx" names MCPE_EVENT_IDx (and stays as written);
// write "${MCPE_EVENT_ID}x" instead.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		name, n := placeholder(s)
		if v, ok := vars[name]; ok && n > 0 {
			b.WriteString(v)
			s = s[n:]
			continue
		}
		b.WriteByte('$')
		s = s[1:]
	}
}

// placeholder reads the name of the placeholder at the start of s, which
// begins with '$', and returns it with the length of the placeholder; n is
// zero when s does not start with a well-formed one.
func placeholder(s string) (name string, n int) {
	if len(s) > 1 && s[1] == '{' {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0
		}
		name = s[2:end]
		if name == "" || nameLen(name) != len(name) {
			return "", 0
		}
		return name, end + 1
	}
	j := 1 + nameLen(s[1:])
	if j == 1 {
		return "", 0
	}
	return s[1:j], j
}

// nameLen returns the length of the name at the start of s: the longest run
// of letters, digits and '_' that does not start with a digit.
func nameLen(s string) int {
	i := 0
	for i < len(s) && isNameChar(s[i], i == 0) {
		i++
	}
	return i
}

func isNameChar(c byte, first bool) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || !first && c >= '0' && c <= '9'
}

// unknownPlaceholder returns the first name starting with MCPE_ that s uses
// as a placeholder and that is not a variable, or "".
func unknownPlaceholder(s string) string {
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			return ""
		}
		s = s[i:]
		if name, n := placeholder(s); n > 0 && strings.HasPrefix(name, "MCPE_") && !slices.Contains(varNames, name) {
			return name
		}
		s = s[1:]
	}
}
