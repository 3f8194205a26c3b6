// Package cron is the cron delivery channel of MCPE: a subscription's
// matching events wait in a durable buffer and go out as a digest
// (events/batch) on a cron schedule. This package decides when: it parses
// schedules with github.com/robfig/cron/v3 and computes fire times in the
// subscription's time zone, across daylight-saving changes (see Next).
package cron

import (
	"fmt"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// starBit marks a robfig field written as "*" (robfig's own constant is
// unexported); day-of-month and day-of-week combine differently with it.
const starBit = 1 << 63

// parser accepts the standard five fields and the descriptors (@daily,
// @hourly, @weekly, @monthly, @yearly, @every <duration>).
var parser = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// Schedule is a parsed cron expression in a time zone.
type Schedule struct {
	spec  *robfig.SpecSchedule // nil for @every
	every time.Duration
	loc   *time.Location
}

// Parse parses expression for the zone loc. minEvery is the shortest @every
// interval accepted. Errors say what is accepted, with an example.
func Parse(expression string, loc *time.Location, minEvery time.Duration) (*Schedule, error) {
	expr := strings.TrimSpace(expression)
	if expr == "" {
		return nil, fmt.Errorf(`the expression is empty; use five fields (minute hour day-of-month month day-of-week) such as "0 9 * * *" for 09:00 every day, or a descriptor such as "@daily" or "@every 30m"`)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf(`%q names a time zone inside the expression; put the zone in cronSchedule.timezone instead, e.g. {"expression": "0 9 * * *", "timezone": "America/New_York"}`, expression)
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf(`%q is not a cron expression (%v); use five fields (minute hour day-of-month month day-of-week) such as "0 9 * * 1-5" for 09:00 on weekdays, or a descriptor: @hourly, @daily, @weekly, @monthly, @yearly or "@every 30m"`, expression, err)
	}
	switch s := s.(type) {
	case *robfig.SpecSchedule:
		return &Schedule{spec: s, loc: loc}, nil
	case robfig.ConstantDelaySchedule:
		// robfig rounds an interval under a second up to one second, so
		// check the interval as written ("@every 500ms", "@every -5m").
		d, _ := time.ParseDuration(expr[len("@every "):])
		if d < minEvery || s.Delay < minEvery {
			return nil, fmt.Errorf("%q fires more often than this server allows; use an interval of at least %v, e.g. \"@every %v\"", expression, minEvery, minEvery)
		}
		return &Schedule{every: s.Delay, loc: loc}, nil
	}
	return nil, fmt.Errorf("%q: unsupported schedule", expression)
}

// Location returns the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first fire time strictly after after, or the zero time if
// there is none within five years (a date such as February 30).
//
// Fire times are wall-clock times in the schedule's zone, with two rules for
// daylight-saving changes: a time that does not exist (skipped when clocks
// spring forward) fires at the first instant after the skipped stretch, and a
// time that occurs twice (when clocks fall back) fires once, at its first
// occurrence. So "30 2 * * *" in America/New_York fires at 03:00 EDT on the
// spring-forward day and once at 02:30 EST on the fall-back day. An @every
// interval counts real time from after.
func (s *Schedule) Next(after time.Time) time.Time {
	if s.spec == nil {
		return after.Add(s.every)
	}
	local := after.In(s.loc)
	// The first whole minute after after, as a wall-clock date and time.
	start := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), 0, 0, time.UTC).Add(time.Minute)
	day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	for i := 0; i < 366*5+2; i++ {
		if s.dateMatches(day) {
			for h := 0; h < 24; h++ {
				if s.spec.Hour&(1<<uint(h)) == 0 {
					continue
				}
				for m := 0; m < 60; m++ {
					if s.spec.Minute&(1<<uint(m)) == 0 {
						continue
					}
					wall := day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
					if wall.Before(start) {
						continue
					}
					if t := subscriptions.WallTime(wall, s.loc); t.After(after) {
						return t
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}
}

// dateMatches applies the month, day-of-month and day-of-week fields to a
// date given in UTC form, with cron's rule that when both day fields are
// restricted either may match.
func (s *Schedule) dateMatches(day time.Time) bool {
	if s.spec.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	dom := s.spec.Dom&(1<<uint(day.Day())) != 0
	dow := s.spec.Dow&(1<<uint(day.Weekday())) != 0
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
