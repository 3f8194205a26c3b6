package github

import (
	"bytes"
	"crypto/hmac"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/clock/clocktest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// maxRawBytes bounds the text kept of one payload: the largest kind is a
// push, with its head commit and MaxCommits commits.
const maxRawBytes = (MaxCommits+1)*(MaxLineBytes+3*MaxNameBytes+MaxURLBytes+64) + 2*MaxURLBytes + 8*MaxNameBytes

// maxDataBytes bounds the data of one event: every byte escaped to six in
// JSON, and room for the keys.
const maxDataBytes = 6*maxRawBytes + 8192

// FuzzPayload feeds arbitrary payloads, under arbitrary event names, to
// the parser and the handler: nothing panics, a refusal has a reason, and
// an accepted payload is one valid event of bounded size whose data
// validates against its catalog schema.
func FuzzPayload(f *testing.F) {
	for _, name := range adaptertest.Fixtures(f) {
		event, _, _ := strings.Cut(name, ".")
		f.Add(event, adaptertest.ReadFixture(f, name+".json"))
	}
	for _, s := range []struct{ event, body string }{
		{"issues", ``}, {"issues", `{}`}, {"issues", `null`}, {"push", `[]`}, {"push", `{"ref": ""}`},
		{"issues", `{"issue": {"labels": [1, "x", null, [], {"name": 5}, {"name": "P0"}]}}`},
		{"issues", `{"issue": {"number": 1e400, "title": "\ud800", "created_at": "2025-13-45T99:99:99Z"}}`},
		{"push", `{"ref": "refs/heads/\u0000", "commits": {"a": 1}, "head_commit": []}`},
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "failure", "pull_requests": [{"number": -1}, {"number": 9223372036854775807}]}}`},
		{"discussion", `{"discussion": {"labels": "P0"}, "alert": {"number": 3}}`},
		{"", `{"action": "x"}`}, {"\u2028", `{"action": "\u0000"}`}, {"ping", `{"hook": {"events": [1, 2]}}`},
	} {
		f.Add(s.event, []byte(s.body))
	}
	clk := clocktest.NewFake(t0)
	a, err := New(Options{Publisher: adaptertest.ValidatingPublisher{Clock: clk}, Secret: testSecret, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	cat := a.Catalog()
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		p, reqErr := decode(body)
		if reqErr != nil {
			if reqErr.Message == "" || reqErr.Status != http.StatusBadRequest {
				t.Fatalf("refusal %d %q", reqErr.Status, reqErr.Message)
			}
		} else if ev, err := a.event(event, "delivery-1", p, body, t0); err != nil {
			if err.Error() == "" {
				t.Fatal("a payload refused without a reason")
			}
		} else {
			if len(ev.Data) > maxDataBytes {
				t.Fatalf("data is %d bytes; the bound is %d", len(ev.Data), maxDataBytes)
			}
			if !strings.HasPrefix(ev.Type, "github.") || ev.Metadata.SourceEventID != "delivery-1" {
				t.Fatalf("event %s %q", ev.Type, ev.Metadata.SourceEventID)
			}
			if err := subscriptions.NormalizeEvent(&ev, t0); err != nil {
				t.Fatalf("invalid event %+v: %v", ev, err)
			}
			checkAgainstCatalog(t, cat, ev)
		}
		w := send(a, delivery{event: event, id: "delivery-1", body: body})
		switch w.Code {
		case http.StatusAccepted, http.StatusBadRequest:
		case http.StatusOK:
			if strings.TrimSpace(event) != "ping" {
				t.Fatalf("200 for event %q", event)
			}
		default:
			t.Fatalf("status %d for event %q, body %q: %s", w.Code, event, body, w.Body)
		}
	})
}

// FuzzSignature feeds arbitrary X-Hub-Signature-256 values to the parser:
// nothing panics, what parses is 32 bytes, and only the right signature is
// accepted.
func FuzzSignature(f *testing.F) {
	body := []byte(`{"zen": "Design for failure."}`)
	good := Signature(testSecret, body)
	for _, s := range []string{good, "", "sha256=", "sha256=" + strings.Repeat("0", 64), "sha1=abc", strings.ToUpper(good), good + "\x00", "sha256=" + strings.Repeat("é", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sum, err := parseSignature(header)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("refused without a reason")
			}
		} else if len(sum) != 32 {
			t.Fatalf("parsed %d bytes", len(sum))
		}
		err = checkSignature(testSecret, body, header)
		want, _ := parseSignature(good)
		if (err == nil) != (sum != nil && hmac.Equal(sum, want)) {
			t.Fatalf("checkSignature(%q) = %v", header, err)
		}
	})
}

// FuzzForm feeds arbitrary form bodies to the form reader: nothing panics,
// and a payload comes out only of a payload field.
func FuzzForm(f *testing.F) {
	for _, s := range []string{"payload=%7B%7D", "payload=", "", "payload", "a=b&payload=%7B&payload=x", "payload=%zz", "payload=a;b", strings.Repeat("&", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		raw, reqErr := payloadOf("application/x-www-form-urlencoded", []byte(body))
		if reqErr != nil {
			if reqErr.Status != http.StatusBadRequest || reqErr.Message == "" {
				t.Fatalf("refusal %d %q", reqErr.Status, reqErr.Message)
			}
			return
		}
		form, err := url.ParseQuery(body)
		if err != nil || !form.Has("payload") || form.Get("payload") != string(raw) {
			t.Fatalf("payload %q out of %q", raw, body)
		}
	})
}

// A 1 MiB payload built to be expensive (huge arrays where lists are read,
// deep nesting, long strings) is read with bounded allocation and makes
// bounded data.
func TestAllocationBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"action": "opened", "issue": {"number": 1, "title": "`)
	b.WriteString(strings.Repeat("t", 100<<10))
	b.WriteString(`", "labels": [`)
	for i := range 8000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name": "l%d"}`, i)
	}
	b.WriteString(`], "assignees": [`)
	b.WriteString(strings.TrimSuffix(strings.Repeat(`{"login": "u"},`, 8000), ","))
	b.WriteString(`]}, "commits": [`)
	b.WriteString(strings.TrimSuffix(strings.Repeat(`{"id": "x", "message": "m"},`, 8000), ","))
	b.WriteString(`], "deep": `)
	b.WriteString(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))
	b.WriteString(`, "pad": "`)
	for b.Len() < 1<<20-16 {
		b.WriteString("padding ")
	}
	b.WriteString(`"}`)
	body := b.Bytes()

	a, _ := newTestAdapter(t, nil)
	var (
		p      *payload
		reqErr *httpapi.RequestError
		ev     mcpe.Event
		err    error
	)
	got := adaptertest.Allocated(func() {
		if p, reqErr = decode(body); reqErr == nil {
			ev, err = a.event("issues", "d", p, body, t0)
		}
	})
	if reqErr != nil {
		t.Fatal(reqErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if limit := uint64(16 * len(body)); got > limit {
		t.Errorf("reading a %d-byte payload allocated %d bytes; want at most %d", len(body), got, limit)
	}
	if len(ev.Data) > 64<<10 {
		t.Errorf("data is %d bytes", len(ev.Data))
	}
	if p.Issue.v.Labels.total != 8000 || len(p.Issue.v.Labels.items) != maxListItems {
		t.Errorf("labels: %d read of %d; want %d of 8000", len(p.Issue.v.Labels.items), p.Issue.v.Labels.total, maxListItems)
	}
}
