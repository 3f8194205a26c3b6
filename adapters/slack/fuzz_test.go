package slack

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// maxDataBytes bounds the data of one event: every kept field at its
// limit, each byte escaped to six in JSON, the copy of the event, and room
// for the keys.
const maxDataBytes = 6*(2*MaxTextBytes+
	MaxAttachments*3*MaxAttachmentTextBytes+
	MaxFiles*(maxIDBytes+maxNameBytes)+
	32*maxNameBytes) + MaxEventBytes + 4096

// FuzzRequest feeds arbitrary bodies, signed, to the parser and the
// handler: nothing panics, a refusal has a reason, and what is accepted is
// one valid, bounded event.
func FuzzRequest(f *testing.F) {
	for _, name := range adaptertest.Fixtures(f) {
		f.Add(adaptertest.ReadFixture(f, name+".json"))
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"type": "event_callback"}`, `{"type": "url_verification", "challenge": "\u0000"}`,
		`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message", "subtype": "message_changed", "message": {"user": {"id": 1}}, "previous_message": []}}`,
		`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "x", "a": [[[[[[[{"b": "` + strings.Repeat("\\u0001", 300) + `"}]]]]]]]}}`,
		`{"type": "event_callback", "event_id": "Ev1", "event_time": 1e400, "event": {"type": "reaction_added", "item": {"message": {"ts": 5}}}}`,
		`{"type": "app_rate_limited", "minute_rate_limited": "soon"}`,
	} {
		f.Add([]byte(s))
	}
	clk := clocktest.NewFake(t0)
	a, err := New(Options{Publisher: adaptertest.ValidatingPublisher{Clock: clk}, SigningSecret: testSecret, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, reqErr := decode(body)
		if reqErr != nil {
			if reqErr.Message == "" || reqErr.Status != http.StatusBadRequest {
				t.Fatalf("refusal %d %q", reqErr.Status, reqErr.Message)
			}
		} else if req.kind == typeEventCallback {
			ev, err := a.event(req, t0)
			if err != nil {
				t.Fatalf("event: %v", err)
			}
			checkEvent(t, ev, req.eventID)
		}
		w := post(a, body)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest:
		default:
			t.Fatalf("status %d for body %q: %s", w.Code, body, w.Body)
		}
	})
}

func checkEvent(t *testing.T, ev mcpe.Event, eventID string) {
	t.Helper()
	if len(ev.Data) > maxDataBytes {
		t.Fatalf("data is %d bytes; the bound is %d", len(ev.Data), maxDataBytes)
	}
	if !strings.HasPrefix(ev.Type, "slack.") {
		t.Fatalf("type %q is not slack.*", ev.Type)
	}
	if ev.Metadata.SourceEventID != eventID {
		t.Fatalf("sourceEventId %q, want %q", ev.Metadata.SourceEventID, eventID)
	}
	if err := subscriptions.NormalizeEvent(&ev, t0); err != nil {
		t.Fatalf("invalid event %+v: %v", ev, err)
	}
}

// FuzzSignature feeds arbitrary signature headers and bodies to the
// handler: nothing panics, and a request gets past the signature check
// exactly when its timestamp is within the tolerance and its signature is
// the HMAC of its body, as computed here independently of checkHeaders.
func FuzzSignature(f *testing.F) {
	now := strconv.FormatInt(t0.Unix(), 10)
	body := []byte(`{"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}}`)
	f.Add(now, Signature(testSecret, now, body), body)
	f.Add(now, strings.ToUpper(Signature(testSecret, now, body)), body)
	f.Add(strconv.FormatInt(t0.Unix()-300, 10), Signature(testSecret, strconv.FormatInt(t0.Unix()-300, 10), body), body)
	f.Add(strconv.FormatInt(t0.Unix()-301, 10), Signature(testSecret, strconv.FormatInt(t0.Unix()-301, 10), body), body)
	f.Add("0"+now, Signature(testSecret, "0"+now, body), body)
	f.Add(now, "v0=", []byte{})
	f.Add("", "", []byte(nil))
	f.Add("-1", "v0=zz", []byte("x"))
	clk := clocktest.NewFake(t0)
	pub := &adaptertest.Publisher{Clock: clk}
	a, err := New(Options{Publisher: pub, SigningSecret: testSecret, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		before := pub.Calls()
		r := httptest.NewRequest(http.MethodPost, Endpoint, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if ts != "" {
			r.Header[HeaderTimestamp] = []string{ts}
		}
		if sig != "" {
			r.Header[HeaderSignature] = []string{sig}
		}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		if want := genuine(ts, sig, body); (w.Code != http.StatusUnauthorized) != want {
			t.Fatalf("ts %q sig %q body %q: status %d, want genuine=%v; %s", ts, sig, body, w.Code, want, w.Body)
		}
		if w.Code == http.StatusUnauthorized && pub.Calls() != before {
			t.Fatal("a refused request was published")
		}
	})
}

// genuine says whether Slack could have sent a request with these headers
// at t0.
func genuine(ts, sig string, body []byte) bool {
	if ts == "" || len(ts) > 19 || strings.Trim(ts, "0123456789") != "" {
		return false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || n < t0.Unix()-300 || n > t0.Unix()+300 {
		return false
	}
	want := Signature(testSecret, ts, body)
	return len(sig) == len(want) && strings.HasPrefix(sig, "v0=") && strings.EqualFold(sig, want)
}

// The memory one request takes is bounded by its body: a body near the
// limit, of any shape, allocates a bounded multiple of its size.
func TestAllocationBounded(t *testing.T) {
	wide := func() []byte {
		var b strings.Builder
		b.WriteString(`{"type": "wide_event"`)
		for i := 0; b.Len() < adapters.DefaultMaxBodyBytes-200; i++ {
			fmt.Fprintf(&b, `, "k%d": [%q, {"a": 1}]`, i, "v")
		}
		b.WriteString(`}`)
		return callback(b.String())
	}()
	deep := callback(`{"type": "deep", "a": ` + strings.Repeat(`[`, 9000) + strings.Repeat(`]`, 9000) + `}`)
	files := func() []byte {
		var b strings.Builder
		b.WriteString(`{"type": "message", "files": [`)
		for i := 0; b.Len() < adapters.DefaultMaxBodyBytes-200; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id": "F%d", "name": "f.txt"}`, i)
		}
		b.WriteString(`]}`)
		return callback(b.String())
	}()
	text := callback(`{"type": "message", "text": "` + strings.Repeat("\\u00e9", (adapters.DefaultMaxBodyBytes-300)/6) + `"}`)
	for name, body := range map[string][]byte{"wide": wide, "deep": deep, "files": files, "text": text} {
		t.Run(name, func(t *testing.T) {
			if len(body) > adapters.DefaultMaxBodyBytes {
				t.Fatalf("body is %d bytes, over the limit", len(body))
			}
			clk := clocktest.NewFake(t0)
			a, err := New(Options{Publisher: adaptertest.ValidatingPublisher{Clock: clk}, SigningSecret: testSecret, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			var w *httptest.ResponseRecorder
			got := adaptertest.Allocated(func() { w = post(a, body) })
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %.300s", w.Code, w.Body)
			}
			// A fixed allowance covers the JSON scanner's state, which
			// grows with nesting (at most 10 000 levels) rather than size.
			const factor, fixed = 32, 4 << 20
			if got > factor*uint64(len(body))+fixed {
				t.Errorf("one request of %d bytes allocated %d bytes; want at most %d times the body and %d bytes", len(body), got, factor, fixed)
			}
			t.Logf("%s: a body of %d bytes allocated %d bytes", name, len(body), got)
		})
	}
}
