package github

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// accepted decodes a 202 answer.
func accepted(t *testing.T, w *httptest.ResponseRecorder) adapters.Accepted {
	t.Helper()
	if w.Code != http.StatusAccepted {
		t.Fatalf("status = %d, want 202; body %s", w.Code, w.Body)
	}
	var res adapters.Accepted
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRefusals(t *testing.T) {
	valid := adaptertest.ReadFixture(t, "issues.opened.json")
	const id = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	tests := []struct {
		name        string
		method      string
		maxBody     int64
		d           delivery
		wantStatus  int
		wantCode    string
		wantMessage string // a part of the message
	}{
		{name: "GET", method: http.MethodGet, d: delivery{event: "issues", id: id, body: valid}, wantStatus: http.StatusMethodNotAllowed, wantCode: httpapi.CodeMethodNotAllowed, wantMessage: "use POST"},
		{name: "PUT", method: http.MethodPut, d: delivery{event: "issues", id: id, body: valid}, wantStatus: http.StatusMethodNotAllowed, wantCode: httpapi.CodeMethodNotAllowed, wantMessage: "use POST"},
		{name: "body over the limit", maxBody: 1024, d: delivery{event: "issues", id: id, body: valid}, wantStatus: http.StatusRequestEntityTooLarge, wantCode: httpapi.CodeBodyTooLarge, wantMessage: "1024 bytes"},
		{name: "no content type", d: delivery{event: "issues", id: id, body: valid, contentType: "-"}, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia, wantMessage: "application/json"},
		{name: "text/plain", d: delivery{event: "issues", id: id, body: valid, contentType: "text/plain"}, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia, wantMessage: `"text/plain"`},
		{name: "multipart", d: delivery{event: "issues", id: id, body: valid, contentType: "multipart/form-data; boundary=x"}, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia},
		{name: "no event header", d: delivery{id: id, body: valid}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "no X-GitHub-Event header"},
		{name: "blank event header", d: delivery{id: id, body: valid, headers: []string{"X-GitHub-Event", "  "}}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "no X-GitHub-Event header"},
		{name: "no delivery header", d: delivery{event: "issues", body: valid}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "no X-GitHub-Delivery header"},
		{name: "delivery too long", d: delivery{event: "issues", id: strings.Repeat("a", 257), body: valid}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "at most 256"},
		{name: "empty body", d: delivery{event: "issues", id: id, body: nil}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "empty"},
		{name: "not JSON", d: delivery{event: "issues", id: id, body: []byte("action=opened")}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not JSON"},
		{name: "array", d: delivery{event: "issues", id: id, body: []byte(`[{"action": "opened"}]`)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "JSON object describing the event, as GitHub sends, not an array"},
		{name: "string", d: delivery{event: "issues", id: id, body: []byte(`"opened"`)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not a string"},
		{name: "null", d: delivery{event: "issues", id: id, body: []byte(`null`)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not null"},
		{name: "truncated JSON", d: delivery{event: "issues", id: id, body: valid[:len(valid)/2]}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not valid JSON"},
		{name: "trailing data", d: delivery{event: "issues", id: id, body: append(append([]byte{}, valid...), []byte(` {}`)...)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not valid JSON"},
		{name: "issues without issue", d: delivery{event: "issues", id: id, body: []byte(`{"action": "opened", "issue": "1347"}`)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `no "issue" object`},
		{name: "issues without action", d: delivery{event: "issues", id: id, body: []byte(`{"issue": {"number": 1, "title": "t"}}`)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `no "action"`},
		{name: "push without ref", d: delivery{event: "push", id: id, body: []byte(`{"after": "7638417db6d59f3c431d3e1f261cc637155684cd"}`)}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `no "ref"`},
		{name: "form without payload", d: delivery{event: "issues", id: id, contentType: "application/x-www-form-urlencoded", body: []byte("data=" + url.QueryEscape(string(valid)))}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "no payload field"},
		{name: "invalid form", d: delivery{event: "issues", id: id, contentType: "application/x-www-form-urlencoded", body: []byte("payload=%zz")}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not a valid form"},
		{name: "form with JSON that is not", d: delivery{event: "issues", id: id, contentType: "application/x-www-form-urlencoded", body: []byte("payload=hello")}, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			if tt.maxBody > 0 {
				a.maxBody = tt.maxBody
			}
			r := tt.d.request()
			if tt.method != "" {
				r.Method = tt.method
			}
			w := adaptertest.Serve(a, r)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body)
			}
			adaptertest.CheckRefusal(t, w, tt.wantCode, tt.wantMessage)
			if n := len(pub.Published()); n != 0 {
				t.Errorf("%d events published by a refused request", n)
			}
		})
	}
}

// GitHub's other content type puts the payload in the form field payload;
// the signature covers the form body as sent. The event is the same as
// from the JSON body.
func TestFormEncoded(t *testing.T) {
	payload := adaptertest.ReadFixture(t, "issues.opened.json")
	a, pub := newTestAdapter(t, nil)
	accepted(t, send(a, delivery{event: "issues", id: "json-1", body: payload}))
	for _, ct := range []string{"application/x-www-form-urlencoded", "application/x-www-form-urlencoded; charset=utf-8"} {
		form := []byte("payload=" + url.QueryEscape(string(payload)))
		accepted(t, send(a, delivery{event: "issues", id: "form-" + ct, body: form, contentType: ct}))
	}
	evs := pub.Published()
	if len(evs) != 3 {
		t.Fatalf("%d events published, want 3", len(evs))
	}
	for _, ev := range evs[1:] {
		ev.ID, ev.Metadata.SourceEventID = evs[0].ID, evs[0].Metadata.SourceEventID
		if diff := cmp.Diff(evs[0], ev); diff != "" {
			t.Errorf("event from the form differs from the one from JSON (-json +form):\n%s", diff)
		}
	}
	// The signature of the JSON inside the form does not do: GitHub signs
	// the body it sends.
	form := []byte("payload=" + url.QueryEscape(string(payload)))
	w := send(a, delivery{event: "issues", id: "form-2", body: form, contentType: "application/x-www-form-urlencoded", signature: Signature(testSecret, payload)})
	if w.Code != http.StatusUnauthorized {
		t.Errorf("form signed by its payload: status = %d, want 401", w.Code)
	}
}

func TestPing(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	for _, d := range []delivery{
		{event: "ping", id: "ping-1", body: adaptertest.ReadFixture(t, "ping.json")},
		// GitHub sends a delivery ID with a ping, but none is needed.
		{event: "ping", body: []byte(`{"zen": "Keep it logically awesome.", "hook_id": 7, "hook": {"events": ["*"]}}`)},
		{event: "ping", id: "ping-3", contentType: "application/x-www-form-urlencoded", body: []byte("payload=" + url.QueryEscape(`{"zen": "Approachable is better than simple.", "hook_id": 8}`))},
	} {
		w := send(a, d)
		if w.Code != http.StatusOK {
			t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
		}
		var res PingResponse
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.Zen == "" || res.HookID == 0 {
			t.Errorf("answer %s: %v; want the zen and the hook ID", w.Body, err)
		}
	}
	if n := len(pub.Published()); n != 0 {
		t.Errorf("a ping published %d events", n)
	}
	// A ping is signed like any delivery.
	if w := send(a, delivery{event: "ping", body: []byte(`{"zen": "x"}`), signature: "-"}); w.Code != http.StatusUnauthorized {
		t.Errorf("unsigned ping: status = %d, want 401", w.Code)
	}
}

// An event kind without a mapping is published with compact data: the
// common fields and a summary of its main object, never the whole payload.
func TestUnknownEventKind(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	body := []byte(`{"action": "created", "label": {"id": 208045946, "name": "P0", "color": "b60205", "url": "https://api.github.com/repos/octo-org/octo-repo/labels/P0",
		"description": "` + strings.Repeat("secret-ish payload text ", 500) + `"},
		"repository": {"full_name": "octo-org/octo-repo", "html_url": "https://github.com/octo-org/octo-repo", "private": true},
		"sender": {"login": "octocat"}, "installation": {"id": 1}}`)
	res := accepted(t, send(a, delivery{event: "label", id: "label-1", body: body}))
	if len(res.IDs) != 1 {
		t.Fatalf("answer %+v; want one ID", res)
	}
	ev := pub.Published()[0]
	if ev.Type != "github.label.created" {
		t.Errorf("type = %q, want github.label.created", ev.Type)
	}
	want := `{"event":"label","action":"created","repository":{"full_name":"octo-org/octo-repo","html_url":"https://github.com/octo-org/octo-repo","private":true},"sender":"octocat","subject":{"field":"label","id":208045946,"name":"P0"}}`
	if diff := cmp.Diff(want, string(ev.Data)); diff != "" {
		t.Errorf("data mismatch (-want +got):\n%s", diff)
	}
	checkAgainstCatalog(t, a.Catalog(), ev)

	// Without an action, and with no main object: github.<event>.
	accepted(t, send(a, delivery{event: "meta", id: "meta-1", body: []byte(`{"hook_id": 1, "hook": {}, "sender": {"login": "octocat"}}`)}))
	ev = pub.Published()[1]
	if ev.Type != "github.meta" || string(ev.Data) != `{"event":"meta","sender":"octocat"}` {
		t.Errorf("event %s %s; want github.meta with the event and sender", ev.Type, ev.Data)
	}
	// A kind without actions keeps its type whatever the payload says.
	accepted(t, send(a, delivery{event: "push", id: "push-1", body: []byte(`{"ref": "refs/heads/main", "action": "odd"}`)}))
	if ev := pub.Published()[2]; ev.Type != "github.push" || !strings.Contains(string(ev.Data), `"action":"odd"`) {
		t.Errorf("event %s %s; want github.push with the action in the data", ev.Type, ev.Data)
	}
	// An odd event name becomes one segment.
	accepted(t, send(a, delivery{event: "Some Event/v2", id: "odd-1", body: []byte(`{"action": "re.run"}`)}))
	if ev := pub.Published()[3]; ev.Type != "github.Some_Event_v2.re_run" {
		t.Errorf("type = %q, want github.Some_Event_v2.re_run", ev.Type)
	}
}

// A storage failure answers 500 so that the delivery shows as failed on
// GitHub and can be redelivered; the redelivery is then accepted once.
func TestPublishFailure(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	calls := 0
	pub.Fail = func(mcpe.Event) error {
		calls++
		if calls == 1 {
			return errors.New("database is locked")
		}
		return nil
	}
	d := fixtureDelivery(t, "push.branch")
	w := send(a, d)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500; body %s", w.Code, w.Body)
	}
	if e := adaptertest.Refusal(t, w).Error; e.Code != httpapi.CodeInternal || strings.Contains(e.Message, "database") || !strings.Contains(e.Message, "redeliver") {
		t.Errorf("refusal = %+v; want code internal, advice to redeliver and not the internal error", e)
	}
	first := accepted(t, send(a, d))
	again := accepted(t, send(a, d))
	if first.Duplicates != 0 || again.Duplicates != 1 || !cmp.Equal(first.IDs, again.IDs) {
		t.Errorf("answers %+v then %+v; want the redelivery accepted, then a duplicate of it", first, again)
	}
	if n := len(pub.Published()); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
}

// An event the Publisher refuses as invalid is a 400 that says why.
func TestPublisherRefusesEvent(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	pub.Fail = func(mcpe.Event) error {
		return &mcpe.InvalidError{Field: "type", Message: "github.* is not accepted here"}
	}
	w := send(a, fixtureDelivery(t, "push.branch"))
	if w.Code != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400; body %s", w.Code, w.Body)
	}
	if e := adaptertest.Refusal(t, w).Error; !strings.Contains(e.Message, "type: github.* is not accepted here") {
		t.Errorf("refusal = %+v; want the publisher's reason", e)
	}
}

func TestNew(t *testing.T) {
	pub := &adaptertest.Publisher{}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "no publisher", opts: Options{Secret: testSecret}, wantErr: "Options.Publisher is required"},
		{name: "no secret", opts: Options{Publisher: pub}, wantErr: "github: secret: is required"},
		{name: "empty secret", opts: Options{Publisher: pub, Secret: []byte{}}, wantErr: "github: secret: is required"},
		{name: "bad priority", opts: Options{Publisher: pub, Secret: testSecret, PriorityLabels: map[string]mcpe.Priority{"P1": "urgent"}}, wantErr: `github: priorityLabels.P1: "urgent" is not a priority`},
		{name: "label without letters", opts: Options{Publisher: pub, Secret: testSecret, PriorityLabels: map[string]mcpe.Priority{"!!!": "high"}}, wantErr: `the label "!!!", which has no letter or digit`},
		{name: "conflicting spellings", opts: Options{Publisher: pub, Secret: testSecret, PriorityLabels: map[string]mcpe.Priority{"Priority: High": "high", "priority/high": "critical"}}, wantErr: `label "priority high" both`},
		{name: "same priority in two spellings", opts: Options{Publisher: pub, Secret: testSecret, PriorityLabels: map[string]mcpe.Priority{"Priority: High": "high", "priority/high": "high"}}},
		{name: "defaults", opts: Options{Publisher: pub, Secret: testSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.opts)
			if adaptertest.CheckNew(t, a, err, tt.wantErr) && a.maxBody != 25<<20 {
				t.Errorf("max body %d, want 25 MiB, the most GitHub sends", a.maxBody)
			}
		})
	}
}

// The adapter keeps its own copy of the secret.
func TestSecretCopied(t *testing.T) {
	secret := []byte("s3cret")
	a, pub := newTestAdapter(t, func(o *Options) { o.Secret = secret })
	copy(secret, "XXXXXX")
	body := []byte(`{"ref": "refs/heads/main"}`)
	if w := send(a, delivery{event: "push", id: "c1", body: body, signature: Signature([]byte("s3cret"), body)}); w.Code != http.StatusAccepted {
		t.Errorf("status = %d, want 202; body %s", w.Code, w.Body)
	}
	if len(pub.Published()) != 1 {
		t.Error("nothing published")
	}
}

func TestName(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	if got := a.Name(); got != "github" {
		t.Errorf("Name() = %q, want github", got)
	}
	var _ http.Handler = a
	var _ adapters.Source = a
}

// Refusals are logged with what identifies the delivery; the secret and
// the body are not.
func TestRefusalLogged(t *testing.T) {
	var logs strings.Builder
	a, _ := newTestAdapter(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	send(a, delivery{event: "issues", id: "72d3162e-cc78-11e3-81ab-4c9367dc0958", body: []byte(`{"secret-body": 1}`), signature: Signature([]byte("wrong"), []byte(`{"secret-body": 1}`))})
	got := logs.String()
	for _, want := range []string{"github delivery refused", "status=401", "delivery_id=72d3162e-cc78-11e3-81ab-4c9367dc0958", "github_event=issues", "remote_addr="} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, string(testSecret)) || strings.Contains(got, "secret-body") {
		t.Errorf("log %q shows the secret or the body", got)
	}
}
