package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// What a page shows of the inbox.
const (
	// inboxShown is how many of the newest inbox entries are listed.
	inboxShown = 25
	// inboxScan is how many of the newest inbox entries are read for the
	// chart of the last hour (the list is the newest of them).
	inboxScan = 5000
	// dataShown bounds the JSON of an event's data shown, in bytes.
	dataShown = 600
	// outputShown bounds a handler's last output shown, in bytes.
	outputShown = 2000
)

// loginPage is the data of login.html.
type loginPage struct{ Error string }

// page is the data of page.html.
type page struct {
	Admin bool
	// Principal is the principal shown: the one logged in, or the one the
	// administrator picked.
	Principal  string
	Principals []principalRow
	CSRF       string
	Subs       []subRow
	Sessions   []LiveSession
	Inbox      []inboxRow
	// InboxCount counts the entries read (at most inboxScan).
	InboxCount int
	// InboxMore tells that the inbox may hold more than InboxCount.
	InboxMore bool
	// ChartCut tells that the last hour had more entries than were read,
	// so that the chart counts only the newest InboxCount.
	ChartCut   bool
	Chart      chart
	Flash      string
	FlashError bool
	Now        string
}

// principalRow is one principal in the administrator's list.
type principalRow struct {
	Name          string
	Subscriptions int
	Sessions      int
	Current       bool
	URL           string
}

// subRow is one subscription as the console shows it.
type subRow struct {
	ID, Status, Filter, Delivery, NextFire, Expires string
	Created, LastDelivered                          string
	Delivered, Buffered                             int64
	Timed, Active, Paused                           bool
	Handler                                         *handlerView
}

// handlerView is a subscription's handler and its last run.
type handlerView struct {
	Spec, Counts, LastRun, LastError, LastOutput, Disabled string
	ToolCalls                                              []string
}

// inboxRow is one inbox entry.
type inboxRow struct {
	Seq                  int64
	At, Kind, State      string
	Subscriptions        []string
	Replay               []string
	EventID, Type, Data  string
	Priority, Tags       string
	Events, Remaining    int
	BatchTypes           string
	StateOK, StateWaited bool
}

// build reads what the page of ss shows; want is the principal the
// administrator asked for.
func (c *Console) build(ctx context.Context, ss session, want string) (*page, error) {
	now := c.opts.Clock.Now().UTC()
	p := &page{Admin: ss.admin, Principal: ss.principal, CSRF: ss.csrf, Now: stamp(now)}
	var live []LiveSession
	if c.opts.Sessions != nil {
		live = c.opts.Sessions()
	}
	// The administrator's principal is "", which lists every principal's.
	subs, err := c.opts.Service.List(ctx, ss.principal, "")
	if err != nil {
		return nil, err
	}
	if ss.admin {
		p.Principal, p.Principals = pickPrincipal(subs, live, want)
	}
	if p.Principal == "" {
		return p, nil
	}
	active := map[string]bool{}
	for _, s := range subs {
		if s.Principal != p.Principal {
			continue
		}
		p.Subs = append(p.Subs, newSubRow(s))
		active[s.ID] = s.Status == mcpe.StatusActive
	}
	for _, l := range live {
		if l.Principal == p.Principal {
			p.Sessions = append(p.Sessions, l)
		}
	}
	cursor, connected := int64(0), false
	if c.opts.Cursors != nil {
		cursor, connected = c.opts.Cursors()[p.Principal]
	}
	// The newest inboxScan entries, oldest first, are charted; the newest
	// inboxShown of them are listed, newest first.
	entries, err := c.opts.Service.LatestInbox(ctx, p.Principal, inboxScan)
	if err != nil {
		return nil, err
	}
	p.InboxCount, p.InboxMore = len(entries), len(entries) >= inboxScan
	p.Chart, p.ChartCut = newChart(entries, now)
	for _, e := range slices.Backward(entries[max(0, len(entries)-inboxShown):]) {
		p.Inbox = append(p.Inbox, newInboxRow(e, cursor, connected, active))
	}
	return p, nil
}

// pickPrincipal lists the principals known from subs and live sessions and
// returns the one to show: want when known, else the first.
func pickPrincipal(subs []*subscriptions.Subscription, live []LiveSession, want string) (string, []principalRow) {
	counts := map[string]*principalRow{}
	row := func(name string) *principalRow {
		if counts[name] == nil {
			counts[name] = &principalRow{Name: name, URL: pageURL(true, name)}
		}
		return counts[name]
	}
	for _, s := range subs {
		row(s.Principal).Subscriptions++
	}
	for _, l := range live {
		row(l.Principal).Sessions++
	}
	names := slices.Sorted(maps.Keys(counts))
	if len(names) == 0 {
		return "", nil
	}
	shown := names[0]
	if counts[want] != nil {
		shown = want
	}
	counts[shown].Current = true
	rows := make([]principalRow, len(names))
	for i, name := range names {
		rows[i] = *counts[name]
	}
	return shown, rows
}

func newSubRow(s *subscriptions.Subscription) subRow {
	r := subRow{
		ID:        s.ID,
		Status:    string(s.Status),
		Filter:    filterText(s.Filter),
		Delivery:  deliveryText(s.Delivery),
		Created:   stamp(s.CreatedAt),
		Delivered: s.DeliveredCount,
		Buffered:  s.BufferedEvents,
		Timed:     s.Delivery.Timed() != "",
		Active:    s.Status == mcpe.StatusActive,
		Paused:    s.Status == mcpe.StatusPaused,
	}
	if s.NextDelivery != nil {
		r.NextFire = s.NextDelivery.At
		if s.NextDelivery.UTC != s.NextDelivery.At {
			r.NextFire += " (" + s.NextDelivery.UTC + ")"
		}
	}
	if s.ExpiresAt != nil {
		r.Expires = stamp(*s.ExpiresAt)
	}
	if s.LastDeliveredAt != nil {
		r.LastDelivered = stamp(*s.LastDeliveredAt)
	}
	if h := s.Handler; h != nil {
		v := &handlerView{Spec: handlerText(h)}
		if st := s.HandlerStatus; st != nil {
			v.Counts = fmt.Sprintf("%d succeeded, %d failed, %d pending", st.Succeeded, st.Failed, st.Pending)
			if st.LastRunAt != nil {
				v.LastRun = stamp(*st.LastRunAt)
			}
			v.LastError, v.Disabled, v.ToolCalls = st.LastError, st.Disabled, st.LastToolCalls
			v.LastOutput = cut(st.LastOutput, outputShown)
		}
		r.Handler = v
	}
	return r
}

func newInboxRow(e subscriptions.InboxEntry, cursor int64, connected bool, active map[string]bool) inboxRow {
	r := inboxRow{Seq: e.Seq, At: stamp(e.CreatedAt), Kind: string(e.Kind), Subscriptions: e.SubscriptionIDs, Remaining: e.Remaining}
	switch {
	case e.Pending:
		r.State, r.StateWaited = "kept for the owner's next connection", true
	case connected && e.Seq <= cursor:
		r.State, r.StateOK = "sent to the live sessions", true
	case connected:
		r.State, r.StateWaited = "queued for the live sessions", true
	default:
		r.State = "in the inbox for events_poll (no live session)"
	}
	switch e.Kind {
	case mcpe.InboxEvent:
		var ev mcpe.Event
		if json.Unmarshal(e.Event, &ev) == nil {
			r.EventID, r.Type, r.Priority = ev.ID, ev.Type, string(ev.Metadata.Priority)
			r.Tags = strings.Join(ev.Metadata.Tags, ", ")
			r.Data = cut(readable(ev.Data), dataShown)
		}
		if eventIDPattern.MatchString(r.EventID) {
			for _, id := range e.SubscriptionIDs {
				if active[id] {
					r.Replay = append(r.Replay, id)
				}
			}
		}
	case mcpe.InboxBatch:
		r.Events = len(e.Events)
		types := map[string]int{}
		for _, raw := range e.Events {
			var ev struct {
				Type string `json:"type"`
			}
			json.Unmarshal(raw, &ev)
			types[ev.Type]++
		}
		var parts []string
		for t, n := range types {
			parts = append(parts, fmt.Sprintf("%s ×%d", t, n))
		}
		slices.Sort(parts)
		r.BatchTypes = strings.Join(parts, ", ")
	}
	return r
}

func filterText(f mcpe.Filter) string {
	parts := []string{"every type"}
	if len(f.EventTypes) > 0 {
		parts[0] = "types " + strings.Join(f.EventTypes, ", ")
	}
	if len(f.Tags) > 0 {
		parts = append(parts, "tags "+strings.Join(f.Tags, ", "))
	}
	if len(f.Priority) > 0 {
		ps := make([]string, len(f.Priority))
		for i, p := range f.Priority {
			ps[i] = string(p)
		}
		parts = append(parts, "priority "+strings.Join(ps, ", "))
	}
	return strings.Join(parts, "; ")
}

func deliveryText(d mcpe.Delivery) string {
	switch {
	case d.CronSchedule != nil:
		return "cron " + d.CronSchedule.Expression + parens(d.CronSchedule.Timezone)
	case d.ScheduledDelivery != nil:
		sd := d.ScheduledDelivery
		s := "scheduled at " + sd.DeliverAt + parens(sd.Timezone)
		if sd.Description != "" {
			s += ": " + sd.Description
		}
		return s
	}
	chans := make([]string, len(d.Channels))
	for i, ch := range d.Channels {
		chans[i] = string(ch)
	}
	if len(chans) == 0 {
		return string(mcpe.ChannelRealtime)
	}
	return strings.Join(chans, ", ")
}

func handlerText(h *mcpe.HandlerSpec) string {
	switch h.Type {
	case mcpe.HandlerWebhook:
		return "webhook " + h.URL
	case mcpe.HandlerBash:
		return strings.TrimSpace("bash " + h.Command + " " + strings.Join(h.Args, " "))
	}
	return string(h.Type) + parens(h.Model)
}

// parens is s in parentheses after a space, or "" for an empty s.
func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// readable indents JSON and leaves <, > and & as they are (the template
// escapes them), so that text reads as it was sent.
func readable(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSpace(b.String())
}

// stamp formats t for the page, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// cut shortens s to at most n bytes on a UTF-8 boundary, marked with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// short is the end of an ID: the random part of a UUIDv7, whose
	// start is a time shared by IDs made close together.
	"short": func(id string) string {
		if len(id) > 8 {
			return "…" + id[len(id)-8:]
		}
		return id
	},
}
