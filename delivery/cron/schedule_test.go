package cron

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, also where the system has no zoneinfo

	"github.com/google/go-cmp/cmp"
)

// layout shows a fire time with its offset and zone abbreviation, so that a
// diff tells 01:30 EDT from 01:30 EST.
const layout = "2006-01-02 15:04 -0700 MST"

// notCron is how Parse ends every error that robfig's parser reports.
const notCron = `; use five fields (minute hour day-of-month month day-of-week) such as "0 9 * * 1-5" for 09:00 on weekdays, or a descriptor: @hourly, @daily, @weekly, @monthly, @yearly or "@every 30m"`

func loadZone(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("load zone %q: %v", name, err)
	}
	return loc
}

func mustParse(tb testing.TB, expression string, loc *time.Location) *Schedule {
	tb.Helper()
	s, err := Parse(expression, loc, DefaultMinEvery)
	if err != nil {
		tb.Fatalf("Parse(%q): %v", expression, err)
	}
	return s
}

// fires steps Next from from while the fire times are before until, and
// returns them in the schedule's zone. It stops at 1000 fires.
func fires(tb testing.TB, s *Schedule, from, until time.Time) []string {
	tb.Helper()
	var got []string
	for t := s.Next(from); !t.IsZero() && t.Before(until); t = s.Next(t) {
		if len(got) == 1000 {
			tb.Fatalf("more than 1000 fires between %v and %v", from, until)
		}
		got = append(got, t.In(s.Location()).Format(layout))
	}
	return got
}

// transition fails the test unless loc's UTC offset changes from from to to
// (seconds east of UTC) exactly at the instant at: the tests below depend on
// the zone data really holding that change.
func transition(tb testing.TB, loc *time.Location, at time.Time, from, to int) {
	tb.Helper()
	_, before := at.Add(-time.Nanosecond).In(loc).Zone()
	_, after := at.In(loc).Zone()
	start, _ := at.In(loc).ZoneBounds()
	if before != from || after != to || !start.Equal(at) {
		tb.Fatalf("zone data: %s does not change from %+d to %+d at %v (offsets %+d, %+d; period starts %v)",
			loc, from, to, at.UTC(), before, after, start.UTC())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		expression string
		minEvery   time.Duration
		want       string
	}{
		{"", time.Minute, `the expression is empty; use five fields (minute hour day-of-month month day-of-week) such as "0 9 * * *" for 09:00 every day, or a descriptor such as "@daily" or "@every 30m"`},
		{"   ", time.Minute, `the expression is empty; use five fields (minute hour day-of-month month day-of-week) such as "0 9 * * *" for 09:00 every day, or a descriptor such as "@daily" or "@every 30m"`},
		{"TZ=UTC 0 9 * * *", time.Minute, `"TZ=UTC 0 9 * * *" names a time zone inside the expression; put the zone in cronSchedule.timezone instead, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`},
		{"CRON_TZ=Europe/Paris 0 9 * * *", time.Minute, `"CRON_TZ=Europe/Paris 0 9 * * *" names a time zone inside the expression; put the zone in cronSchedule.timezone instead, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`},
		{" TZ=UTC 0 9 * * *", time.Minute, `" TZ=UTC 0 9 * * *" names a time zone inside the expression; put the zone in cronSchedule.timezone instead, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`},
		{"0", time.Minute, `"0" is not a cron expression (expected exactly 5 fields, found 1: [0])` + notCron},
		{"0 9 * *", time.Minute, `"0 9 * *" is not a cron expression (expected exactly 5 fields, found 4: [0 9 * *])` + notCron},
		{"0 0 9 * * *", time.Minute, `"0 0 9 * * *" is not a cron expression (expected exactly 5 fields, found 6: [0 0 9 * * *])` + notCron},
		{"60 9 * * *", time.Minute, `"60 9 * * *" is not a cron expression (end of range (60) above maximum (59): 60)` + notCron},
		{"0 24 * * *", time.Minute, `"0 24 * * *" is not a cron expression (end of range (24) above maximum (23): 24)` + notCron},
		{"0 0 0 * *", time.Minute, `"0 0 0 * *" is not a cron expression (beginning of range (0) below minimum (1): 0)` + notCron},
		{"0 0 32 * *", time.Minute, `"0 0 32 * *" is not a cron expression (end of range (32) above maximum (31): 32)` + notCron},
		{"0 0 * 13 *", time.Minute, `"0 0 * 13 *" is not a cron expression (end of range (13) above maximum (12): 13)` + notCron},
		{"0 0 * * 7", time.Minute, `"0 0 * * 7" is not a cron expression (end of range (7) above maximum (6): 7)` + notCron},
		{"5-1 * * * *", time.Minute, `"5-1 * * * *" is not a cron expression (beginning of range (5) beyond end of range (1): 5-1)` + notCron},
		{"*/0 * * * *", time.Minute, `"*/0 * * * *" is not a cron expression (step of range should be a positive number: */0)` + notCron},
		{"@fortnightly", time.Minute, `"@fortnightly" is not a cron expression (unrecognized descriptor: @fortnightly)` + notCron},
		{"@every banana", time.Minute, `"@every banana" is not a cron expression (failed to parse duration @every banana: time: invalid duration "banana")` + notCron},
		{"@every 10s", time.Minute, `"@every 10s" fires more often than this server allows; use an interval of at least 1m0s, e.g. "@every 1m0s"`},
		{"@every 59s", time.Minute, `"@every 59s" fires more often than this server allows; use an interval of at least 1m0s, e.g. "@every 1m0s"`},
		{"@every 0s", time.Minute, `"@every 0s" fires more often than this server allows; use an interval of at least 1m0s, e.g. "@every 1m0s"`},
		{"@every 5m", 10 * time.Minute, `"@every 5m" fires more often than this server allows; use an interval of at least 10m0s, e.g. "@every 10m0s"`},
		// robfig rounds intervals under a second up to one second; the
		// floor applies to the interval as written.
		{"@every 500ms", time.Second, `"@every 500ms" fires more often than this server allows; use an interval of at least 1s, e.g. "@every 1s"`},
		{"@every -5m", time.Second, `"@every -5m" fires more often than this server allows; use an interval of at least 1s, e.g. "@every 1s"`},
		{"@every 0s", time.Second, `"@every 0s" fires more often than this server allows; use an interval of at least 1s, e.g. "@every 1s"`},
	}
	for _, tt := range tests {
		t.Run(tt.expression, func(t *testing.T) {
			s, err := Parse(tt.expression, time.UTC, tt.minEvery)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.expression, s)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	// A Friday.
	from := time.Date(2026, 1, 16, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		expression string
		minEvery   time.Duration
		want       []string // the first three fires after from
	}{
		{"0 9 * * *", time.Minute, []string{"2026-01-17 09:00", "2026-01-18 09:00", "2026-01-19 09:00"}},
		{"  0 9 * * *  ", time.Minute, []string{"2026-01-17 09:00", "2026-01-18 09:00", "2026-01-19 09:00"}},
		{"0  9 *\t* *", time.Minute, []string{"2026-01-17 09:00", "2026-01-18 09:00", "2026-01-19 09:00"}},
		{"0 9-11 * * *", time.Minute, []string{"2026-01-16 11:00", "2026-01-17 09:00", "2026-01-17 10:00"}},
		{"*/20 * * * *", time.Minute, []string{"2026-01-16 10:20", "2026-01-16 10:40", "2026-01-16 11:00"}},
		{"0 8-18/5 * * *", time.Minute, []string{"2026-01-16 13:00", "2026-01-16 18:00", "2026-01-17 08:00"}},
		{"0 9,12,18 * * *", time.Minute, []string{"2026-01-16 12:00", "2026-01-16 18:00", "2026-01-17 09:00"}},
		{"0 9 * * MON-FRI", time.Minute, []string{"2026-01-19 09:00", "2026-01-20 09:00", "2026-01-21 09:00"}},
		{"0 9 * * mon,wed", time.Minute, []string{"2026-01-19 09:00", "2026-01-21 09:00", "2026-01-26 09:00"}},
		{"5 4 * * SUN", time.Minute, []string{"2026-01-18 04:05", "2026-01-25 04:05", "2026-02-01 04:05"}},
		{"0 0 1 JAN *", time.Minute, []string{"2027-01-01 00:00", "2028-01-01 00:00", "2029-01-01 00:00"}},
		{"15 14 1 * *", time.Minute, []string{"2026-02-01 14:15", "2026-03-01 14:15", "2026-04-01 14:15"}},
		{"@yearly", time.Minute, []string{"2027-01-01 00:00", "2028-01-01 00:00", "2029-01-01 00:00"}},
		{"@annually", time.Minute, []string{"2027-01-01 00:00", "2028-01-01 00:00", "2029-01-01 00:00"}},
		{"@monthly", time.Minute, []string{"2026-02-01 00:00", "2026-03-01 00:00", "2026-04-01 00:00"}},
		{"@weekly", time.Minute, []string{"2026-01-18 00:00", "2026-01-25 00:00", "2026-02-01 00:00"}},
		{"@daily", time.Minute, []string{"2026-01-17 00:00", "2026-01-18 00:00", "2026-01-19 00:00"}},
		{"@midnight", time.Minute, []string{"2026-01-17 00:00", "2026-01-18 00:00", "2026-01-19 00:00"}},
		{"@hourly", time.Minute, []string{"2026-01-16 11:00", "2026-01-16 12:00", "2026-01-16 13:00"}},
		{"@every 90m", time.Minute, []string{"2026-01-16 11:30", "2026-01-16 13:00", "2026-01-16 14:30"}},
		{"@every 1m", time.Minute, []string{"2026-01-16 10:01", "2026-01-16 10:02", "2026-01-16 10:03"}},
		{"@every 1s", time.Second, []string{"2026-01-16 10:00:01", "2026-01-16 10:00:02", "2026-01-16 10:00:03"}},
	}
	for _, tt := range tests {
		t.Run(tt.expression, func(t *testing.T) {
			s, err := Parse(tt.expression, time.UTC, tt.minEvery)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.expression, err)
			}
			format := "2006-01-02 15:04"
			if tt.minEvery < time.Minute {
				format = "2006-01-02 15:04:05"
			}
			var got []string
			for at := from; len(got) < 3; {
				at = s.Next(at)
				got = append(got, at.Format(format))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLocation(t *testing.T) {
	paris := loadZone(t, "Europe/Paris")
	for _, expression := range []string{"0 9 * * *", "@every 1h"} {
		if got := mustParse(t, expression, paris).Location(); got != paris {
			t.Errorf("Parse(%q, Europe/Paris).Location() = %v", expression, got)
		}
	}
}

// TestNextDST pins the two daylight-saving rules of Next: a wall time
// skipped when the clocks spring forward fires at the first instant after
// the gap; a wall time that occurs twice when they fall back fires once, at
// its first occurrence.
func TestNextDST(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	lordHowe := loadZone(t, "Australia/Lord_Howe")
	santiago := loadZone(t, "America/Santiago")
	saoPaulo := loadZone(t, "America/Sao_Paulo")
	chatham := loadZone(t, "Pacific/Chatham")
	troll := loadZone(t, "Antarctica/Troll")
	apia := loadZone(t, "Pacific/Apia")

	// New York: 02:00 EST becomes 03:00 EDT on 2026-03-08; 02:00 EDT
	// becomes 01:00 EST on 2026-11-01, so 01:00-01:59 happens twice.
	transition(t, ny, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), -5*3600, -4*3600)
	transition(t, ny, time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC), -4*3600, -5*3600)
	// Lord Howe Island moves by 30 minutes: 02:00 becomes 02:30 on
	// 2026-10-04; 02:00 becomes 01:30 on 2026-04-05.
	transition(t, lordHowe, time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC), 10*3600+1800, 11*3600)
	transition(t, lordHowe, time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC), 11*3600, 10*3600+1800)
	// Santiago skips midnight: 2024-09-08 00:00 -04 becomes 01:00 -03;
	// and repeats 23:00-23:59 on 2025-04-05 (00:00 -03 becomes 23:00 -04).
	transition(t, santiago, time.Date(2024, 9, 8, 4, 0, 0, 0, time.UTC), -4*3600, -3*3600)
	transition(t, santiago, time.Date(2025, 4, 6, 3, 0, 0, 0, time.UTC), -3*3600, -4*3600)
	// São Paulo skipped midnight too, in its last daylight-saving year.
	transition(t, saoPaulo, time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC), -3*3600, -2*3600)
	// Chatham is 12:45 or 13:45 ahead of UTC: 02:45 becomes 03:45 on
	// 2025-09-28; 03:45 becomes 02:45 on 2025-04-06.
	transition(t, chatham, time.Date(2025, 9, 27, 14, 0, 0, 0, time.UTC), 12*3600+2700, 13*3600+2700)
	transition(t, chatham, time.Date(2025, 4, 5, 14, 0, 0, 0, time.UTC), 13*3600+2700, 12*3600+2700)
	// Troll moves by two hours: 01:00 +00 becomes 03:00 +02 on 2026-03-29.
	transition(t, troll, time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), 0, 2*3600)
	// Samoa skipped a whole day: 2011-12-29 24:00 -10 became 2011-12-31
	// 00:00 +14.
	transition(t, apia, time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC), -10*3600, 14*3600)

	tests := []struct {
		name        string
		loc         *time.Location
		expression  string
		from, until time.Time
		want        []string
	}{
		{
			name: "New York spring forward: 02:30 does not exist and fires at 03:00 EDT",
			loc:  ny, expression: "30 2 * * *",
			from: time.Date(2026, 3, 7, 0, 0, 0, 0, ny), until: time.Date(2026, 3, 10, 0, 0, 0, 0, ny),
			want: []string{"2026-03-07 02:30 -0500 EST", "2026-03-08 03:00 -0400 EDT", "2026-03-09 02:30 -0400 EDT"},
		},
		{
			name: "New York spring forward: 01:30 is before the gap",
			loc:  ny, expression: "30 1 * * *",
			from: time.Date(2026, 3, 7, 0, 0, 0, 0, ny), until: time.Date(2026, 3, 10, 0, 0, 0, 0, ny),
			want: []string{"2026-03-07 01:30 -0500 EST", "2026-03-08 01:30 -0500 EST", "2026-03-09 01:30 -0400 EDT"},
		},
		{
			name: "New York spring forward: four skipped times fire once at 03:00 EDT",
			loc:  ny, expression: "*/15 2 * * *",
			from: time.Date(2026, 3, 7, 0, 0, 0, 0, ny), until: time.Date(2026, 3, 10, 0, 0, 0, 0, ny),
			want: []string{
				"2026-03-07 02:00 -0500 EST", "2026-03-07 02:15 -0500 EST", "2026-03-07 02:30 -0500 EST", "2026-03-07 02:45 -0500 EST",
				"2026-03-08 03:00 -0400 EDT",
				"2026-03-09 02:00 -0400 EDT", "2026-03-09 02:15 -0400 EDT", "2026-03-09 02:30 -0400 EDT", "2026-03-09 02:45 -0400 EDT",
			},
		},
		{
			name: "New York spring forward: hourly, 02:00 and 03:00 are one fire",
			loc:  ny, expression: "0 * * * *",
			from: time.Date(2026, 3, 7, 22, 30, 0, 0, ny), until: time.Date(2026, 3, 8, 5, 30, 0, 0, ny),
			want: []string{
				"2026-03-07 23:00 -0500 EST", "2026-03-08 00:00 -0500 EST", "2026-03-08 01:00 -0500 EST",
				"2026-03-08 03:00 -0400 EDT", "2026-03-08 04:00 -0400 EDT", "2026-03-08 05:00 -0400 EDT",
			},
		},
		{
			name: "New York fall back: 02:30 exists once, in EST",
			loc:  ny, expression: "30 2 * * *",
			from: time.Date(2026, 10, 31, 0, 0, 0, 0, ny), until: time.Date(2026, 11, 3, 0, 0, 0, 0, ny),
			want: []string{"2026-10-31 02:30 -0400 EDT", "2026-11-01 02:30 -0500 EST", "2026-11-02 02:30 -0500 EST"},
		},
		{
			name: "New York fall back: 01:30 happens twice and fires at the first, EDT",
			loc:  ny, expression: "30 1 * * *",
			from: time.Date(2026, 10, 31, 0, 0, 0, 0, ny), until: time.Date(2026, 11, 3, 0, 0, 0, 0, ny),
			want: []string{"2026-10-31 01:30 -0400 EDT", "2026-11-01 01:30 -0400 EDT", "2026-11-02 01:30 -0500 EST"},
		},
		{
			name: "New York fall back: hourly skips the repeated 01:00 EST",
			loc:  ny, expression: "0 * * * *",
			from: time.Date(2026, 10, 31, 23, 30, 0, 0, ny), until: time.Date(2026, 11, 1, 4, 30, 0, 0, ny),
			want: []string{
				"2026-11-01 00:00 -0400 EDT", "2026-11-01 01:00 -0400 EDT",
				"2026-11-01 02:00 -0500 EST", "2026-11-01 03:00 -0500 EST", "2026-11-01 04:00 -0500 EST",
			},
		},
		{
			name: "Lord Howe spring forward by 30 minutes: 02:15 fires at 02:30",
			loc:  lordHowe, expression: "15 2 * * *",
			from: time.Date(2026, 10, 3, 0, 0, 0, 0, lordHowe), until: time.Date(2026, 10, 6, 0, 0, 0, 0, lordHowe),
			want: []string{"2026-10-03 02:15 +1030 +1030", "2026-10-04 02:30 +1100 +11", "2026-10-05 02:15 +1100 +11"},
		},
		{
			name: "Lord Howe fall back by 30 minutes: 01:45 fires at the first",
			loc:  lordHowe, expression: "45 1 * * *",
			from: time.Date(2026, 4, 4, 0, 0, 0, 0, lordHowe), until: time.Date(2026, 4, 7, 0, 0, 0, 0, lordHowe),
			want: []string{"2026-04-04 01:45 +1100 +11", "2026-04-05 01:45 +1100 +11", "2026-04-06 01:45 +1030 +1030"},
		},
		{
			name: "Lord Howe fall back: every 20 minutes, the repeated half hour once",
			loc:  lordHowe, expression: "*/20 1-2 * * *",
			from: time.Date(2026, 4, 5, 0, 0, 0, 0, lordHowe), until: time.Date(2026, 4, 5, 3, 0, 0, 0, lordHowe),
			want: []string{
				"2026-04-05 01:00 +1100 +11", "2026-04-05 01:20 +1100 +11", "2026-04-05 01:40 +1100 +11",
				"2026-04-05 02:00 +1030 +1030", "2026-04-05 02:20 +1030 +1030", "2026-04-05 02:40 +1030 +1030",
			},
		},
		{
			name: "Santiago skips midnight: the daily fire moves to 01:00",
			loc:  santiago, expression: "0 0 * * *",
			from: time.Date(2024, 9, 6, 12, 0, 0, 0, santiago), until: time.Date(2024, 9, 9, 12, 0, 0, 0, santiago),
			want: []string{"2024-09-07 00:00 -0400 -04", "2024-09-08 01:00 -0300 -03", "2024-09-09 00:00 -0300 -03"},
		},
		{
			name: "Santiago skips midnight: 00:00, 00:30 and 01:00 are one fire",
			loc:  santiago, expression: "0,30 0-1 * * *",
			from: time.Date(2024, 9, 7, 23, 0, 0, 0, santiago), until: time.Date(2024, 9, 8, 3, 0, 0, 0, santiago),
			want: []string{"2024-09-08 01:00 -0300 -03", "2024-09-08 01:30 -0300 -03"},
		},
		{
			name: "Santiago skips midnight: Sunday's midnight stays on Sunday",
			loc:  santiago, expression: "0 0 * * SUN",
			from: time.Date(2024, 9, 1, 12, 0, 0, 0, santiago), until: time.Date(2024, 9, 16, 0, 0, 0, 0, santiago),
			want: []string{"2024-09-08 01:00 -0300 -03", "2024-09-15 00:00 -0300 -03"},
		},
		{
			name: "Santiago repeats 23:00-23:59: 23:30 fires at the first",
			loc:  santiago, expression: "30 23 * * *",
			from: time.Date(2025, 4, 4, 12, 0, 0, 0, santiago), until: time.Date(2025, 4, 7, 0, 0, 0, 0, santiago),
			want: []string{"2025-04-04 23:30 -0300 -03", "2025-04-05 23:30 -0300 -03", "2025-04-06 23:30 -0400 -04"},
		},
		{
			name: "Sao Paulo skipped midnight",
			loc:  saoPaulo, expression: "@daily",
			from: time.Date(2018, 11, 2, 12, 0, 0, 0, saoPaulo), until: time.Date(2018, 11, 5, 12, 0, 0, 0, saoPaulo),
			want: []string{"2018-11-03 00:00 -0300 -03", "2018-11-04 01:00 -0200 -02", "2018-11-05 00:00 -0200 -02"},
		},
		{
			// More than 12 hours ahead of UTC: regression for offsets read
			// too close to the wall time.
			name: "Chatham spring forward: 02:30 exists and fires",
			loc:  chatham, expression: "30 2 * * *",
			from: time.Date(2025, 9, 27, 0, 0, 0, 0, chatham), until: time.Date(2025, 9, 30, 0, 0, 0, 0, chatham),
			want: []string{"2025-09-27 02:30 +1245 +1245", "2025-09-28 02:30 +1245 +1245", "2025-09-29 02:30 +1345 +1345"},
		},
		{
			name: "Chatham spring forward: 03:00 does not exist and fires at 03:45",
			loc:  chatham, expression: "0 3 * * *",
			from: time.Date(2025, 9, 27, 0, 0, 0, 0, chatham), until: time.Date(2025, 9, 30, 0, 0, 0, 0, chatham),
			want: []string{"2025-09-27 03:00 +1245 +1245", "2025-09-28 03:45 +1345 +1345", "2025-09-29 03:00 +1345 +1345"},
		},
		{
			name: "Chatham fall back: 03:00 happens twice and fires at the first",
			loc:  chatham, expression: "0 3 * * *",
			from: time.Date(2025, 4, 5, 0, 0, 0, 0, chatham), until: time.Date(2025, 4, 8, 0, 0, 0, 0, chatham),
			want: []string{"2025-04-05 03:00 +1345 +1345", "2025-04-06 03:00 +1345 +1345", "2025-04-07 03:00 +1245 +1245"},
		},
		{
			name: "Troll springs forward two hours: 01:30 and 02:30 are one fire at 03:00",
			loc:  troll, expression: "30 1,2 * * *",
			from: time.Date(2026, 3, 28, 0, 0, 0, 0, troll), until: time.Date(2026, 3, 31, 0, 0, 0, 0, troll),
			want: []string{
				"2026-03-28 01:30 +0000 +00", "2026-03-28 02:30 +0000 +00",
				"2026-03-29 03:00 +0200 +02",
				"2026-03-30 01:30 +0200 +02", "2026-03-30 02:30 +0200 +02",
			},
		},
		{
			// The noon of the skipped day fires at the first instant
			// after it, midnight of the 31st, whose own noon fires too.
			name: "Apia skipped December 30, 2011: its fires move to the 31st at 00:00",
			loc:  apia, expression: "0 12 * * *",
			from: time.Date(2011, 12, 28, 18, 0, 0, 0, apia), until: time.Date(2012, 1, 1, 18, 0, 0, 0, apia),
			want: []string{"2011-12-29 12:00 -1000 -10", "2011-12-31 00:00 +1400 +14", "2011-12-31 12:00 +1400 +14", "2012-01-01 12:00 +1400 +14"},
		},
		{
			name: "Apia skipped December 30, 2011: a yearly date on it",
			loc:  apia, expression: "0 12 30 12 *",
			from: time.Date(2011, 1, 1, 0, 0, 0, 0, apia), until: time.Date(2013, 1, 1, 0, 0, 0, 0, apia),
			want: []string{"2011-12-31 00:00 +1400 +14", "2012-12-30 12:00 +1400 +14"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fires(t, mustParse(t, tt.expression, tt.loc), tt.from, tt.until)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNextDSTHourly counts the hourly fires of each day around both New
// York changes: 23 on the 23-hour spring-forward day (02:00 does not exist
// and is the 03:00 fire), 24 on the 25-hour fall-back day (the repeated
// 01:00 EST does not fire), never the same instant twice, never backwards.
func TestNextDSTHourly(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	s := mustParse(t, "0 * * * *", ny)
	tests := []struct {
		name        string
		from, until time.Time
		want        map[string]int
	}{
		{
			name: "spring forward",
			from: time.Date(2026, 3, 6, 23, 30, 0, 0, ny), until: time.Date(2026, 3, 10, 0, 0, 0, 0, ny),
			want: map[string]int{"2026-03-07": 24, "2026-03-08": 23, "2026-03-09": 24},
		},
		{
			name: "fall back",
			from: time.Date(2026, 10, 30, 23, 30, 0, 0, ny), until: time.Date(2026, 11, 3, 0, 0, 0, 0, ny),
			want: map[string]int{"2026-10-31": 24, "2026-11-01": 24, "2026-11-02": 24},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int{}
			prev := tt.from
			for at := s.Next(tt.from); at.Before(tt.until); at = s.Next(at) {
				if !at.After(prev) {
					t.Fatalf("Next(%v) = %v, not after it", prev, at)
				}
				if gap := at.Sub(prev); prev != tt.from && gap != time.Hour && gap != 2*time.Hour {
					t.Errorf("%v to %v: %v apart, want 1h (2h across the repeated hour)", prev, at, gap)
				}
				got[at.In(ny).Format("2006-01-02")]++
				prev = at
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNextFrom starts Next at awkward instants: exactly on a fire time, with
// seconds and nanoseconds, and inside the repeated hour of a fall-back day.
func TestNextFrom(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	// 01:30 EST on 2026-11-01, the second 01:30 of the day.
	secondOneThirty := time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC)
	tests := []struct {
		name       string
		loc        *time.Location
		expression string
		after      time.Time
		want       string
	}{
		{"exactly a fire time", time.UTC, "0 9 * * *", time.Date(2026, 1, 16, 9, 0, 0, 0, time.UTC), "2026-01-17 09:00 +0000 UTC"},
		{"a nanosecond before", time.UTC, "0 9 * * *", time.Date(2026, 1, 16, 8, 59, 59, 999999999, time.UTC), "2026-01-16 09:00 +0000 UTC"},
		{"a nanosecond after", time.UTC, "0 9 * * *", time.Date(2026, 1, 16, 9, 0, 0, 1, time.UTC), "2026-01-17 09:00 +0000 UTC"},
		{"seconds into the fire minute", time.UTC, "0 9 * * *", time.Date(2026, 1, 16, 9, 0, 30, 0, time.UTC), "2026-01-17 09:00 +0000 UTC"},
		{"every minute, exactly on one", time.UTC, "* * * * *", time.Date(2026, 1, 16, 9, 0, 0, 0, time.UTC), "2026-01-16 09:01 +0000 UTC"},
		{"every minute, with seconds", time.UTC, "* * * * *", time.Date(2026, 1, 16, 9, 0, 59, 999999999, time.UTC), "2026-01-16 09:01 +0000 UTC"},
		{"end of year", time.UTC, "* * * * *", time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC), "2027-01-01 00:00 +0000 UTC"},
		{"after given in another zone", ny, "0 9 * * *", time.Date(2026, 1, 16, 13, 59, 0, 0, time.UTC), "2026-01-16 09:00 -0500 EST"},
		{"exactly the gap fire", ny, "30 2 * * *", time.Date(2026, 3, 8, 3, 0, 0, 0, ny), "2026-03-09 02:30 -0400 EDT"},
		{"inside the repeated hour: its fire was the first 01:30", ny, "30 1 * * *", secondOneThirty.Add(-15 * time.Minute), "2026-11-02 01:30 -0500 EST"},
		{"inside the repeated hour: hourly", ny, "0 * * * *", secondOneThirty, "2026-11-01 02:00 -0500 EST"},
		{"first 01:00 of the repeated hour", ny, "0 * * * *", time.Date(2026, 11, 1, 1, 0, 0, 0, ny), "2026-11-01 02:00 -0500 EST"},
		{"every 15 minutes, inside the repeated hour", ny, "*/15 * * * *", secondOneThirty, "2026-11-01 02:00 -0500 EST"},
		{"every 15 minutes, end of the first 01:00 hour", ny, "*/15 * * * *", time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC), "2026-11-01 02:00 -0500 EST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.expression, tt.loc)
			got := s.Next(tt.after)
			if !got.After(tt.after) {
				t.Errorf("Next(%v) = %v, not after it", tt.after, got)
			}
			if diff := cmp.Diff(tt.want, got.In(tt.loc).Format(layout)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextCalendar(t *testing.T) {
	tests := []struct {
		name        string
		expression  string
		from, until time.Time
		want        []string
	}{
		{
			// Both day fields restricted: the 13th or a Friday. April 13,
			// 2026 is a Monday.
			name: "day of month or day of week", expression: "0 0 13 * 5",
			from: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2026-04-03 Fri", "2026-04-10 Fri", "2026-04-13 Mon", "2026-04-17 Fri", "2026-04-24 Fri"},
		},
		{
			// February 13, 2026 is a Friday: both match, one fire.
			name: "day of month or day of week, both on one day", expression: "0 0 13 * FRI",
			from: time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 2, 21, 0, 0, 0, 0, time.UTC),
			want: []string{"2026-02-13 Fri", "2026-02-20 Fri"},
		},
		{
			name: "day of week is *: only the day of month", expression: "0 0 13 * *",
			from: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2026-04-13 Mon", "2026-05-13 Wed"},
		},
		{
			name: "day of month is *: only the day of week", expression: "0 0 * * 5",
			from: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2026-04-03 Fri", "2026-04-10 Fri", "2026-04-17 Fri", "2026-04-24 Fri"},
		},
		{
			// Not "the first Monday": days 1 to 7, and every Monday.
			name: "first week or Mondays", expression: "0 0 1-7 * MON",
			from: time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 4, 21, 0, 0, 0, 0, time.UTC),
			want: []string{
				"2026-04-01 Wed", "2026-04-02 Thu", "2026-04-03 Fri", "2026-04-04 Sat", "2026-04-05 Sun", "2026-04-06 Mon", "2026-04-07 Tue",
				"2026-04-13 Mon", "2026-04-20 Mon",
			},
		},
		{
			name: "a stepped day of month is restricted too", expression: "0 0 */10 * SUN",
			from: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 2, 23, 0, 0, 0, 0, time.UTC),
			want: []string{"2026-02-08 Sun", "2026-02-11 Wed", "2026-02-15 Sun", "2026-02-21 Sat", "2026-02-22 Sun"},
		},
		{
			name: "leap day", expression: "0 0 29 2 *",
			from: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), until: time.Date(2033, 1, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2028-02-29 Tue", "2032-02-29 Sun"},
		},
		{
			name: "the 31st skips short months", expression: "0 0 31 * *",
			from: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC),
			want: []string{"2026-03-31 Tue", "2026-05-31 Sun", "2026-07-31 Fri"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.expression, time.UTC)
			var got []string
			for at := s.Next(tt.from); !at.IsZero() && at.Before(tt.until); at = s.Next(at) {
				got = append(got, at.Format("2006-01-02 Mon"))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNextNever: a date that no calendar has gives the zero time.
func TestNextNever(t *testing.T) {
	from := time.Date(2026, 1, 16, 10, 0, 0, 0, time.UTC)
	for _, expression := range []string{"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 FEB *"} {
		t.Run(expression, func(t *testing.T) {
			if got := mustParse(t, expression, time.UTC).Next(from); !got.IsZero() {
				t.Errorf("Next(%v) = %v, want the zero time", from, got)
			}
		})
	}
}

// TestNextEvery: @every counts real time, so across a daylight-saving change
// the wall clock moves by the interval plus or minus the shift.
func TestNextEvery(t *testing.T) {
	ny := loadZone(t, "America/New_York")
	tests := []struct {
		expression string
		after      time.Time
		want       string
	}{
		{"@every 90m", time.Date(2026, 3, 8, 1, 0, 0, 0, ny), "2026-03-08 03:30 -0400 EDT"},
		{"@every 90m", time.Date(2026, 11, 1, 0, 45, 0, 0, ny), "2026-11-01 01:15 -0500 EST"},
		{"@every 24h", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), "2026-03-08 13:00 -0400 EDT"},
		{"@every 24h", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), "2026-11-01 11:00 -0500 EST"},
		{"@every 1m", time.Date(2026, 3, 8, 1, 59, 0, 0, ny), "2026-03-08 03:00 -0400 EDT"},
	}
	for _, tt := range tests {
		t.Run(tt.expression+" from "+tt.after.Format(layout), func(t *testing.T) {
			s := mustParse(t, tt.expression, ny)
			got := s.Next(tt.after)
			if diff := cmp.Diff(tt.want, got.In(ny).Format(layout)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if d := got.Sub(tt.after); d != s.every {
				t.Errorf("Next is %v after, want %v", d, s.every)
			}
		})
	}
}

func BenchmarkNext(b *testing.B) {
	ny := loadZone(b, "America/New_York")
	// Starting points spread over a year, so that the loop sees every
	// month and both daylight-saving changes.
	var starts [1024]time.Time
	for i := range starts {
		starts[i] = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*8*time.Hour + 37*time.Minute)
	}
	for _, bc := range []struct {
		name, expression string
		loc              *time.Location
	}{
		{"weekdays_0900_New_York", "0 9 * * 1-5", ny},
		{"daily_UTC", "@daily", time.UTC},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustParse(b, bc.expression, bc.loc)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if s.Next(starts[i%len(starts)]).IsZero() {
					b.Fatal("no next fire")
				}
			}
		})
	}
}

// fuzzZones are the zones FuzzNext draws from: none or one-hour daylight
// saving, shifts of 30 minutes and two hours, changes at midnight, offsets
// more than 12 hours from UTC, negative daylight saving (Dublin, Casablanca)
// and a skipped day (Apia, 2011-12-30).
var fuzzZones = []string{
	"UTC", "America/New_York", "America/Los_Angeles", "America/St_Johns", "America/Havana",
	"America/Santiago", "America/Sao_Paulo", "Europe/London", "Europe/Dublin", "Europe/Berlin",
	"Africa/Casablanca", "Antarctica/Troll", "Asia/Kolkata", "Asia/Kathmandu", "Asia/Tehran",
	"Australia/Adelaide", "Australia/Lord_Howe", "Pacific/Auckland", "Pacific/Chatham",
	"Pacific/Apia", "Pacific/Kiritimati",
}

// genSchedule is a generated expression with the values each field stands
// for, worked out independently of robfig's parser.
type genSchedule struct {
	expression                    string
	every                         time.Duration // for "@every"
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

// genField is one generated field.
type genField struct {
	text string
	bits uint64
	star bool
}

var (
	monthNames = []string{"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dowNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

func span(lo, hi, step int) uint64 {
	var b uint64
	for v := lo; v <= hi; v += step {
		b |= 1 << uint(v)
	}
	return b
}

// randField returns a field of values lo to hi: *, a value, a range, a step,
// a range or a start with a step, or a list. Values come from hot half of
// the time; names, when given, stand for values a third of the time.
func randField(r *rand.Rand, lo, hi int, hot []int, names []string) genField {
	value := func() int {
		if len(hot) > 0 && r.IntN(2) == 0 {
			return hot[r.IntN(len(hot))]
		}
		return lo + r.IntN(hi-lo+1)
	}
	name := func(v int) string {
		if names != nil && r.IntN(3) == 0 {
			return names[v]
		}
		return fmt.Sprint(v)
	}
	pair := func() (int, int) {
		a, b := value(), value()
		return min(a, b), max(a, b)
	}
	step := func() int { return 2 + r.IntN(hi-lo) }
	switch r.IntN(8) {
	case 0, 1:
		return genField{"*", span(lo, hi, 1), true}
	case 2:
		v := value()
		return genField{name(v), span(v, v, 1), false}
	case 3:
		a, b := pair()
		return genField{name(a) + "-" + name(b), span(a, b, 1), false}
	case 4:
		n := step()
		return genField{fmt.Sprintf("*/%d", n), span(lo, hi, n), false}
	case 5:
		a, b := pair()
		n := 1 + r.IntN(hi-lo)
		return genField{fmt.Sprintf("%s-%s/%d", name(a), name(b), n), span(a, b, n), false}
	case 6:
		v, n := value(), step()
		return genField{fmt.Sprintf("%s/%d", name(v), n), span(v, hi, n), false}
	default:
		var f genField
		for i := range 2 + r.IntN(2) {
			if i > 0 {
				f.text += ","
			}
			if r.IntN(3) == 0 {
				a, b := pair()
				f.text += name(a) + "-" + name(b)
				f.bits |= span(a, b, 1)
			} else {
				v := value()
				f.text += name(v)
				f.bits |= span(v, v, 1)
			}
		}
		return f
	}
}

var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

func randSchedule(r *rand.Rand) genSchedule {
	switch r.IntN(16) {
	case 0:
		d := time.Minute + time.Duration(r.Int64N(int64(72*time.Hour)))/time.Second*time.Second
		return genSchedule{expression: "@every " + d.String(), every: d}
	case 1:
		names := []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
		name := names[r.IntN(len(names))]
		g := fixedSchedule(descriptors[name])
		g.expression = name
		return g
	}
	minute := randField(r, 0, 59, []int{0, 15, 30, 45, 59}, nil)
	hour := randField(r, 0, 23, []int{0, 1, 2, 3, 23}, nil)
	dom := randField(r, 1, 31, []int{1, 28, 29, 30, 31}, nil)
	month := randField(r, 1, 12, nil, monthNames)
	dow := randField(r, 0, 6, nil, dowNames)
	return genSchedule{
		expression: strings.Join([]string{minute.text, hour.text, dom.text, month.text, dow.text}, " "),
		minute:     minute.bits, hour: hour.bits, dom: dom.bits, month: month.bits, dow: dow.bits,
		domStar: dom.star, dowStar: dow.star,
	}
}

// fixedSchedule reads the plain expressions of the descriptors: numbers and
// "*" only.
func fixedSchedule(expression string) genSchedule {
	f := strings.Fields(expression)
	field := func(s string, lo, hi int) (uint64, bool) {
		if s == "*" {
			return span(lo, hi, 1), true
		}
		var v int
		fmt.Sscan(s, &v)
		return span(v, v, 1), false
	}
	g := genSchedule{expression: expression}
	g.minute, _ = field(f[0], 0, 59)
	g.hour, _ = field(f[1], 0, 23)
	g.dom, g.domStar = field(f[2], 1, 31)
	g.month, _ = field(f[3], 1, 12)
	g.dow, g.dowStar = field(f[4], 0, 6)
	return g
}

func (g *genSchedule) dateMatches(t time.Time) bool {
	if g.month&(1<<uint(t.Month())) == 0 {
		return false
	}
	dom := g.dom&(1<<uint(t.Day())) != 0
	dow := g.dow&(1<<uint(t.Weekday())) != 0
	if g.domStar || g.dowStar {
		return dom && dow
	}
	return dom || dow
}

// matches reports whether t's own clock reading (in t's location) matches.
func (g *genSchedule) matches(t time.Time) bool {
	return g.minute&(1<<uint(t.Minute())) != 0 && g.hour&(1<<uint(t.Hour())) != 0 && g.dateMatches(t)
}

// fireAt reports whether the whole minute u is a fire time in loc by the
// rules of Next, worked out from the zone data alone: a matching wall time
// fires unless it is the second reading of a time the clocks fell back over;
// the first instant after a spring-forward gap fires if any skipped wall
// time matches.
func (g *genSchedule) fireAt(u time.Time, loc *time.Location) bool {
	l := u.In(loc)
	_, off := l.Zone()
	start, _ := l.ZoneBounds()
	prevOff := off
	if !start.IsZero() {
		_, prevOff = start.Add(-time.Nanosecond).In(loc).Zone()
	}
	shift := time.Duration(prevOff-off) * time.Second
	if g.matches(l) && !(shift > 0 && u.Before(start.Add(shift))) {
		return true
	}
	if u.Equal(start) && shift < 0 {
		wall := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
		for w := wall.Add(shift); w.Before(wall); w = w.Add(time.Minute) {
			if g.matches(w) {
				return true
			}
		}
	}
	return false
}

// oracleWindow bounds the minute-by-minute search for the next fire.
const oracleWindow = 26 * time.Hour

// bruteNext returns the first whole minute after after, within
// oracleWindow, that fireAt accepts, or the zero time.
func (g *genSchedule) bruteNext(after time.Time, loc *time.Location) time.Time {
	end := after.Add(oracleWindow)
	for u := after.Truncate(time.Minute).Add(time.Minute); !u.After(end); u = u.Add(time.Minute) {
		if g.fireAt(u, loc) {
			return u
		}
	}
	return time.Time{}
}

// randStart returns a start between 1995 and 2040, two times in three
// shortly before one of loc's offset changes, with seconds and nanoseconds.
func randStart(r *rand.Rand, loc *time.Location) time.Time {
	year := time.Date(1995+r.IntN(45), 1, 1, 0, 0, 0, 0, time.UTC)
	t := year.Add(time.Duration(r.Int64N(int64(365 * 24 * time.Hour))))
	if r.IntN(3) > 0 {
		if _, end := t.In(loc).ZoneBounds(); !end.IsZero() {
			before := 3 * time.Hour
			if r.IntN(2) == 0 {
				before = 72 * time.Hour
			}
			t = end.Add(-time.Duration(r.Int64N(int64(before))))
		}
	}
	if r.IntN(4) == 0 {
		return t.Truncate(time.Minute) // exactly on a minute
	}
	return t.Add(time.Duration(r.Int64N(int64(time.Minute))))
}

// checkNext draws an expression, a zone and a start from seed and steps Next
// 50 times, checking each fire against the fields and the zone data.
func checkNext(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x6d637065))
	g := randSchedule(r)
	loc := loadZone(t, fuzzZones[r.IntN(len(fuzzZones))])
	start := randStart(r, loc)
	s, err := Parse(g.expression, loc, time.Minute)
	if err != nil {
		t.Fatalf("seed %d: Parse(%q): %v", seed, g.expression, err)
	}
	where := fmt.Sprintf("seed %d: %q in %s from %s", seed, g.expression, loc, start.In(loc).Format(time.RFC3339Nano))
	seen := map[string]time.Time{}
	prev := start
	for range 50 {
		next := s.Next(prev)
		if g.every > 0 {
			if !next.Equal(prev.Add(g.every)) {
				t.Fatalf("%s: Next(%v) = %v, want %v later", where, prev, next, g.every)
			}
			prev = next
			continue
		}
		if next.IsZero() {
			// Only when no date in five years matches.
			day := prev.In(loc)
			for i := 1; i <= 5*365; i++ {
				if d := time.Date(day.Year(), day.Month(), day.Day()+i, 12, 0, 0, 0, time.UTC); g.dateMatches(d) {
					t.Fatalf("%s: Next(%v) is the zero time, but %s matches", where, prev, d.Format("2006-01-02 Mon"))
				}
			}
			return
		}
		if !next.After(prev) {
			t.Fatalf("%s: Next(%v) = %v, not after it", where, prev, next)
		}
		l := next.In(loc)
		if zoneStart, _ := l.ZoneBounds(); !g.matches(l) && !next.Equal(zoneStart) {
			t.Fatalf("%s: Next(%v) = %v: the wall time does not match and is not the end of a gap", where, prev, l.Format(layout))
		}
		key := l.Format("2006-01-02 15:04")
		if first, ok := seen[key]; ok {
			t.Fatalf("%s: wall time %s fired twice, at %v and %v", where, key, first.UTC(), next.UTC())
		}
		seen[key] = next
		want := g.bruteNext(prev, loc)
		if !want.IsZero() && !want.Equal(next) || want.IsZero() && !next.After(prev.Add(oracleWindow)) {
			t.Fatalf("%s: Next(%v) = %s, want %s (zero: none within %v)",
				where, prev.In(loc).Format(time.RFC3339Nano), l.Format(layout), want.In(loc).Format(layout), oracleWindow)
		}
		prev = next
	}
}

// FuzzNext checks Next on generated expressions, zones and starts. The seed
// corpus runs with every go test.
func FuzzNext(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed)
	}
	f.Fuzz(checkNext)
}
