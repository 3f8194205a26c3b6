package mcpe

import (
	"fmt"
	"slices"
	"strings"
)

// Patterns validates f and returns its eventTypes parsed, each distinct
// pattern once, in the order given; empty when f has no eventTypes (any
// type matches). The error is an *InvalidError whose field is relative to
// the filter, such as "filter.priority[0]".
func (f Filter) Patterns() ([]Pattern, error) {
	if f.EventTypes == nil && f.Tags == nil && f.Priority == nil && f.Where == "" {
		return nil, Invalid("filter", "is empty; give at least one of eventTypes, tags, priority or where. To receive every event, use {\"eventTypes\": [\"*\"]}")
	}
	var patterns []Pattern
	if f.EventTypes != nil {
		if len(f.EventTypes) == 0 {
			return nil, Invalid("filter.eventTypes", "is an empty list; give at least one type or pattern such as \"github.*\", or leave eventTypes out to match any type")
		}
		if len(f.EventTypes) > MaxFilterPatterns {
			return nil, Invalid("filter.eventTypes", "has %d entries; at most %d are accepted. Patterns such as \"github.*\" or \"{a,b}.*\" cover many types at once", len(f.EventTypes), MaxFilterPatterns)
		}
		for i, text := range f.EventTypes {
			p, err := ParsePattern(fmt.Sprintf("filter.eventTypes[%d]", i), text)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(patterns, func(q Pattern) bool { return q.text == p.text }) {
				patterns = append(patterns, p)
			}
		}
	}
	if f.Tags != nil {
		if len(f.Tags) == 0 {
			return nil, Invalid("filter.tags", "is an empty list; give at least one tag, or leave tags out to match events with any tags")
		}
		if err := ValidateTags("filter.tags", f.Tags); err != nil {
			return nil, err
		}
	}
	if f.Priority != nil {
		if len(f.Priority) == 0 {
			return nil, Invalid("filter.priority", "is an empty list; give at least one of %s, or leave priority out to match every priority", PriorityList)
		}
		for i, p := range f.Priority {
			if !p.Valid() {
				return nil, Invalid(fmt.Sprintf("filter.priority[%d]", i), "%q is not a priority; use %s", p, PriorityList)
			}
		}
	}
	return patterns, nil
}

// Validate checks f: at least one part, every pattern parses, every tag and
// priority is valid.
func (f Filter) Validate() error {
	_, err := f.Patterns()
	return err
}

// Validate checks d against the channels a server supports: Fields and
// MaxEventBytes within bounds (see Shape), a known channel each, listed
// once, cron and scheduled not together, and each one's settings present
// exactly when it is. The schedule itself is checked by the channel that
// runs it.
func (d Delivery) Validate(supported []Channel) error {
	if len(d.Fields) > MaxFields {
		return Invalid("delivery.fields", "has %d paths; at most %d are accepted", len(d.Fields), MaxFields)
	}
	for i, f := range d.Fields {
		if len(f) > MaxFieldLength || slices.Contains(strings.Split(f, "."), "") {
			return Invalid(fmt.Sprintf("delivery.fields[%d]", i), "%.80q is not a path into data; give dot-separated keys, at most %d characters in all, such as \"issue.title\"", f, MaxFieldLength)
		}
	}
	if m := d.MaxEventBytes; m != 0 && (m < MinEventBytes || m > MaxEventBytes) {
		return Invalid("delivery.maxEventBytes", "is %d; give a number of bytes from %d to %d, or leave it out for whole events", m, MinEventBytes, MaxEventBytes)
	}
	list := quoteAll(supported)
	if len(d.Channels) == 0 {
		return Invalid("delivery.channels", "is empty; use [%s]", list)
	}
	for i, c := range d.Channels {
		if !slices.Contains(supported, c) {
			return Invalid(fmt.Sprintf("delivery.channels[%d]", i), "%q is not a delivery channel this server offers; use one of %s", c, list)
		}
		if slices.Index(d.Channels, c) != i {
			return Invalid(fmt.Sprintf("delivery.channels[%d]", i), "%q is listed twice", c)
		}
	}
	switch {
	case d.Has(ChannelCron) && d.Has(ChannelScheduled):
		return Invalid("delivery.channels", `"cron" and "scheduled" cannot be combined in one subscription; create one subscription for each`)
	case d.Has(ChannelCron) && d.CronSchedule == nil:
		return Invalid("delivery.cronSchedule", `is required with the "cron" channel, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`)
	case !d.Has(ChannelCron) && d.CronSchedule != nil:
		return Invalid("delivery.cronSchedule", `is given but delivery.channels does not include "cron"; add it, or leave cronSchedule out`)
	case d.Has(ChannelScheduled) && d.ScheduledDelivery == nil:
		return Invalid("delivery.scheduledDelivery", `is required with the "scheduled" channel, e.g. {"deliverAt": "2026-01-15T14:00:00Z"}`)
	case !d.Has(ChannelScheduled) && d.ScheduledDelivery != nil:
		return Invalid("delivery.scheduledDelivery", `is given but delivery.channels does not include "scheduled"; add it, or leave scheduledDelivery out`)
	case d.Throttle != nil && !d.Has(ChannelRealtime):
		return Invalid("delivery.throttle", `limits realtime notifications and delivery.channels has no "realtime"; a digest is already one notification per fire: add "realtime", or leave throttle out`)
	case d.Throttle != nil:
		return d.Throttle.validate()
	}
	return nil
}

// quoteAll writes values as a comma-separated list of JSON strings.
func quoteAll[T ~string](values []T) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
