package webhook

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/testhook"
)

// statusReceiver answers /<status> with that status, and with the query's
// ra as Retry-After and location as Location.
func statusReceiver(t *testing.T) *receiver {
	return newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			code = http.StatusOK
		}
		if ra := r.URL.Query().Get("ra"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if loc := r.URL.Query().Get("location"); loc != "" {
			w.Header().Set("Location", loc)
		}
		w.WriteHeader(code)
		w.Write([]byte("body of " + r.URL.Path))
	})
}

func TestOutcomes(t *testing.T) {
	rc := statusReceiver(t)
	clk := clocktest.NewFake(t0)
	s := newSender(t, httpOptions(clk)) // no jitter: exact delays
	httpDate := func(d time.Duration) string { return url.QueryEscape(t0.Add(d).Format(http.TimeFormat)) }

	type outcome struct {
		Output  string
		Err     string // a part of the error; "" for none
		RetryIn time.Duration
		Disable bool
	}
	tests := []struct {
		name    string
		path    string
		attempt int
		want    outcome
	}{
		{"200", "/200", 1, outcome{Output: "200 OK: body of /200"}},
		{"204", "/204", 3, outcome{Output: "204 No Content"}},
		{"299", "/299", 1, outcome{Output: "299: body of /299"}},

		{"503 first", "/503", 1, outcome{"503 Service Unavailable: body of /503", "503 Service Unavailable", 5 * time.Second, false}},
		{"500 second", "/500", 2, outcome{"500 Internal Server Error: body of /500", "500", 30 * time.Second, false}},
		{"502 third", "/502", 3, outcome{"502 Bad Gateway: body of /502", "502", 2 * time.Minute, false}},
		{"504 fourth", "/504", 4, outcome{"504 Gateway Timeout: body of /504", "504", 10 * time.Minute, false}},
		{"599 fifth", "/599", 5, outcome{"599: body of /599", "599", 30 * time.Minute, false}},
		{"503 exhausted", "/503", 6, outcome{"503 Service Unavailable: body of /503", "gave up after 6 attempts", 0, false}},
		{"408", "/408", 1, outcome{"408 Request Timeout: body of /408", "408", 5 * time.Second, false}},
		{"425", "/425", 2, outcome{"425 Too Early: body of /425", "425", 30 * time.Second, false}},
		{"429", "/429", 1, outcome{"429 Too Many Requests: body of /429", "429", 5 * time.Second, false}},

		{"Retry-After seconds", "/429?ra=120", 1, outcome{"429 Too Many Requests: body of /429", "429", 2 * time.Minute, false}},
		{"Retry-After shorter than schedule", "/429?ra=1", 2, outcome{"429 Too Many Requests: body of /429", "429", 30 * time.Second, false}},
		{"Retry-After date", "/503?ra=" + httpDate(15*time.Minute), 1, outcome{"503 Service Unavailable: body of /503", "503", 15 * time.Minute, false}},
		{"Retry-After date past", "/503?ra=" + httpDate(-time.Hour), 1, outcome{"503 Service Unavailable: body of /503", "503", 5 * time.Second, false}},
		{"Retry-After capped", "/503?ra=86400", 1, outcome{"503 Service Unavailable: body of /503", "503", time.Hour, false}},
		{"Retry-After date capped", "/503?ra=" + httpDate(48*time.Hour), 1, outcome{"503 Service Unavailable: body of /503", "503", time.Hour, false}},
		{"Retry-After garbage", "/503?ra=soon", 1, outcome{"503 Service Unavailable: body of /503", "503", 5 * time.Second, false}},
		{"Retry-After when exhausted", "/429?ra=60", 6, outcome{"429 Too Many Requests: body of /429", "gave up after 6 attempts", 0, false}},

		{"410", "/410", 1, outcome{"410 Gone: body of /410", "turned off", 0, true}},
		{"410 late", "/410", 4, outcome{"410 Gone: body of /410", "turned off", 0, true}},

		{"400 first", "/400", 1, outcome{"400 Bad Request: body of /400", "400 Bad Request", 5 * time.Second, false}},
		{"400 second", "/400", 2, outcome{"400 Bad Request: body of /400", "gave up after 2 attempts", 0, false}},
		{"404 first", "/404", 1, outcome{"404 Not Found: body of /404", "404", 5 * time.Second, false}},
		{"401 third", "/401", 3, outcome{"401 Unauthorized: body of /401", "gave up after 3 attempts", 0, false}},
		{"400 with Retry-After", "/400?ra=600", 1, outcome{"400 Bad Request: body of /400", "400", 10 * time.Minute, false}},

		{"301", "/301?location=https://elsewhere.example/", 1, outcome{"301 Moved Permanently: body of /301", `redirect to "https://elsewhere.example/", which was not followed`, 0, false}},
		{"307", "/307?location=/x", 2, outcome{"307 Temporary Redirect: body of /307", "not followed", 0, false}},
		{"304", "/304", 1, outcome{"304 Not Modified", "not followed", 0, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := s.Handle(t.Context(), invocation(rc.URL+tt.path, tt.attempt))
			got := outcome{Output: o.Output, RetryIn: o.RetryIn, Disable: o.Disable}
			if o.Err != nil {
				got.Err = "<" + o.Err.Error() + ">"
				if strings.Contains(o.Err.Error(), tt.want.Err) {
					got.Err = tt.want.Err
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCustomSchedule(t *testing.T) {
	rc := statusReceiver(t)
	s := newSender(t, &Options{
		AllowHTTP: true, AllowNetworks: loopback, Clock: clocktest.NewFake(t0), Test: &testhook.Webhook{NoJitter: true},
	})
	s.retrySchedule, s.maxRetryAfter = []time.Duration{time.Minute}, 90*time.Second
	var got []time.Duration
	for attempt := 1; attempt <= 2; attempt++ {
		got = append(got, s.Handle(t.Context(), invocation(rc.URL+"/503?ra=3600", attempt)).RetryIn)
	}
	if diff := cmp.Diff([]time.Duration{90 * time.Second, 0}, got); diff != "" {
		t.Errorf("RetryIn mismatch (-want +got):\n%s", diff)
	}
}

func TestJitterBounds(t *testing.T) {
	rc := statusReceiver(t)
	s := newSender(t, &Options{AllowHTTP: true, AllowNetworks: loopback, Clock: clocktest.NewFake(t0)}) // default ±20%
	for attempt, base := range defaultRetrySchedule {
		lo, hi := base-base/5, base+base/5
		seen := map[bool]bool{}
		for range 40 {
			d := s.Handle(t.Context(), invocation(rc.URL+"/503", attempt+1)).RetryIn
			if d < lo || d > hi {
				t.Fatalf("attempt %d: RetryIn %v, want within [%v, %v]", attempt+1, d, lo, hi)
			}
			seen[d < base] = true
		}
		if len(seen) != 2 {
			t.Errorf("attempt %d: 40 delays all on one side of %v", attempt+1, base)
		}
	}
}

func TestJitter(t *testing.T) {
	tests := []struct {
		d    time.Duration
		frac float64
		r    float64
		want time.Duration
	}{
		{10 * time.Second, 0.2, 0, 8 * time.Second},
		{10 * time.Second, 0.2, 0.5, 10 * time.Second},
		{10 * time.Second, 0.2, 0.75, 11 * time.Second},
		{10 * time.Second, 0, 0.9, 10 * time.Second},
		{10 * time.Second, 1, 0, time.Millisecond}, // never zero: zero means no retry
	}
	for _, tt := range tests {
		if got := jitter(tt.d, tt.frac, tt.r); got != tt.want {
			t.Errorf("jitter(%v, %v, %v) = %v, want %v", tt.d, tt.frac, tt.r, got, tt.want)
		}
	}
	s := newSender(t, nil)
	s.rand = func() float64 { return 0.999999 }
	if got := s.retry(1, nil, 0).RetryIn; got <= 5*time.Second || got > 6*time.Second {
		t.Errorf("retry with the highest jitter = %v, want just under 6s", got)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"120", 2 * time.Minute},
		{" 7 ", 7 * time.Second},
		{"-5", 0},
		{"1.5", 0},
		{"99999999999999999999999", math.MaxInt64},
		{"9223372036", 9223372036 * time.Second},
		{"9223372037", math.MaxInt64},
		{t0.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{t0.Add(-90 * time.Second).Format(http.TimeFormat), 0},
		{"Wednesday, 04-Mar-26 05:36:07 GMT", 30 * time.Minute}, // RFC 850
		{"Wed Mar  4 05:16:07 2026", 10 * time.Minute},          // asctime
		{"tomorrow", 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.in, t0); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
