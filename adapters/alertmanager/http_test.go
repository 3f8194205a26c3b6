package alertmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpe-server/mcpe-server/adapters/adaptertest"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestBearerToken(t *testing.T) {
	body := adaptertest.ReadFixture(t, "resolved.json")
	tokens := httpapi.NewTokens(map[string]string{"s3cret-token": "alertmanager"})
	tests := []struct {
		name       string
		header     []string
		wantStatus int
	}{
		{name: "no header", wantStatus: http.StatusUnauthorized},
		{name: "wrong token", header: []string{"Authorization", "Bearer not-the-token"}, wantStatus: http.StatusUnauthorized},
		{name: "basic auth", header: []string{"Authorization", "Basic YWxpY2U6czNjcmV0LXRva2Vu"}, wantStatus: http.StatusUnauthorized},
		{name: "token without scheme", header: []string{"Authorization", "s3cret-token"}, wantStatus: http.StatusUnauthorized},
		{name: "right token", header: []string{"Authorization", "Bearer s3cret-token"}, wantStatus: http.StatusAccepted},
		{name: "lower-case scheme", header: []string{"Authorization", "bearer s3cret-token"}, wantStatus: http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, func(o *Options) { o.Tokens = tokens })
			w := post(a, body, tt.header...)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body)
			}
			n := len(pub.Published())
			if tt.wantStatus == http.StatusUnauthorized {
				if got := adaptertest.Refusal(t, w).Error.Code; got != httpapi.CodeUnauthorized {
					t.Errorf("code = %q, want %q", got, httpapi.CodeUnauthorized)
				}
				if w.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				if n != 0 {
					t.Errorf("%d events published without a valid token", n)
				}
			} else if n != 1 {
				t.Errorf("%d events published, want 1", n)
			}
		})
	}
}

// Without tokens configured, no token is asked for, and one sent is
// ignored.
func TestNoTokensConfigured(t *testing.T) {
	for _, tokens := range []*httpapi.Tokens{nil, httpapi.NewTokens(nil)} {
		a, _ := newTestAdapter(t, func(o *Options) { o.Tokens = tokens })
		for _, h := range [][]string{nil, {"Authorization", "Bearer anything"}} {
			if w := post(a, adaptertest.ReadFixture(t, "resolved.json"), h...); w.Code != http.StatusAccepted {
				t.Errorf("tokens %v, headers %q: status = %d, want 202; body %s", tokens, h, w.Code, w.Body)
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	valid := adaptertest.ReadFixture(t, "resolved.json")
	tooMany := func() []byte {
		var b strings.Builder
		b.WriteString(`{"version": "4", "alerts": [`)
		for i := range MaxAlerts + 1 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{}`)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}()
	tests := []struct {
		name        string
		method      string
		contentType string
		maxBody     int64
		body        []byte
		wantStatus  int
		wantCode    string
		wantMessage string // a part of the message
	}{
		{name: "GET", method: http.MethodGet, body: valid, wantStatus: http.StatusMethodNotAllowed, wantCode: httpapi.CodeMethodNotAllowed, wantMessage: "use POST"},
		{name: "PUT", method: http.MethodPut, body: valid, wantStatus: http.StatusMethodNotAllowed, wantCode: httpapi.CodeMethodNotAllowed, wantMessage: "use POST"},
		{name: "no content type", contentType: "-", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia, wantMessage: "application/json"},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia},
		{name: "text/plain", contentType: "text/plain", body: valid, wantStatus: http.StatusUnsupportedMediaType, wantCode: httpapi.CodeUnsupportedMedia},
		{name: "JSON with charset", contentType: "application/json; charset=utf-8", body: valid, wantStatus: http.StatusAccepted},
		{name: "body over the limit", maxBody: 512, body: valid, wantStatus: http.StatusRequestEntityTooLarge, wantCode: httpapi.CodeBodyTooLarge, wantMessage: "512 bytes"},
		{name: "too many alerts", body: tooMany, wantStatus: http.StatusRequestEntityTooLarge, wantCode: httpapi.CodeBodyTooLarge, wantMessage: "max_alerts: 1000"},
		{name: "empty body", body: nil, wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "empty"},
		{name: "not JSON", body: []byte(`alertname=HighCPU`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "JSON object"},
		{name: "truncated JSON", body: valid[:len(valid)/2], wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not valid JSON"},
		{name: "trailing data", body: append(append([]byte{}, valid...), []byte(` {}`)...), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not valid JSON"},
		{name: "array", body: []byte(`[{"version": "4"}]`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "not an array"},
		{name: "no version", body: []byte(`{"alerts": []}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `version is missing`},
		{name: "numeric version", body: []byte(`{"version": 4, "alerts": []}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `the string "4"`},
		{name: "version 5", body: []byte(`{"version": "5", "alerts": []}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: `version "5" is not supported`},
		{name: "no alerts", body: []byte(`{"version": "4"}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "alerts is missing"},
		{name: "alerts not an array", body: []byte(`{"version": "4", "alerts": {}}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "alerts is an object"},
		{name: "receiver not a string", body: []byte(`{"version": "4", "receiver": 1, "alerts": []}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "receiver is a number"},
		{name: "negative truncatedAlerts", body: []byte(`{"version": "4", "truncatedAlerts": -1, "alerts": []}`), wantStatus: http.StatusBadRequest, wantCode: httpapi.CodeInvalidPayload, wantMessage: "truncatedAlerts"},
		{name: "odd group fields are ignored", body: []byte(`{"version": "4", "alerts": [], "groupLabels": 7, "commonLabels": null, "orgId": 1}`), wantStatus: http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			if tt.maxBody > 0 {
				a.maxBody = tt.maxBody
			}
			w := adaptertest.Serve(a, adaptertest.Request(tt.method, Endpoint, tt.contentType, tt.body))
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus == http.StatusAccepted {
				return
			}
			adaptertest.CheckRefusal(t, w, tt.wantCode, tt.wantMessage)
			if n := len(pub.Published()); n != 0 {
				t.Errorf("%d events published by a refused request", n)
			}
		})
	}
}

// A storage failure answers 500 so that Alertmanager retries; the retry
// publishes what failed, and what was accepted before is a duplicate.
func TestPublishFailureRetried(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	calls := 0
	pub.Fail = func(mcpe.Event) error {
		calls++
		if calls == 2 {
			return errors.New("database is locked")
		}
		return nil
	}
	body := adaptertest.ReadFixture(t, "firing_group.json")
	w := post(a, body)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500; body %s", w.Code, w.Body)
	}
	if e := adaptertest.Refusal(t, w).Error; e.Code != httpapi.CodeInternal || !strings.Contains(e.Message, "alerts[1] of 3") || strings.Contains(e.Message, "database") {
		t.Errorf("refusal = %+v; want code internal naming alerts[1] and not the internal error", e)
	}
	if calls != 2 {
		t.Errorf("publisher called %d times; want it to stop at the failure", calls)
	}

	w = post(a, body)
	if w.Code != http.StatusAccepted {
		t.Fatalf("retry: status = %d, want 202; body %s", w.Code, w.Body)
	}
	var res Response
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.IDs) != 3 || res.Duplicates != 1 || len(res.Errors) != 0 {
		t.Errorf("retry answer = %+v; want 3 ids, 1 duplicate, no errors", res)
	}
	if n := len(pub.Published()); n != 3 {
		t.Errorf("%d events stored, want 3", n)
	}
}

// An event the Publisher refuses as invalid is reported with the others'
// IDs, not retried.
func TestPublisherRefusesOneAlert(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	pub.Fail = func(ev mcpe.Event) error {
		if ev.Metadata.Priority == mcpe.PriorityLow {
			return &mcpe.InvalidError{Field: "metadata.priority", Message: "low is not accepted here"}
		}
		return nil
	}
	w := post(a, adaptertest.ReadFixture(t, "firing_group.json"))
	if w.Code != http.StatusAccepted {
		t.Fatalf("status = %d, want 202; body %s", w.Code, w.Body)
	}
	var res Response
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	want := []AlertError{{Index: 2, Alertname: "KubePodCrashLooping", Message: "alerts[2]: metadata.priority: low is not accepted here"}}
	if diff := cmp.Diff(want, res.Errors); diff != "" || len(res.IDs) != 2 {
		t.Errorf("answer %+v; errors mismatch (-want +got):\n%s", res, diff)
	}
}

func TestNew(t *testing.T) {
	pub := &adaptertest.Publisher{}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "no publisher", opts: Options{}, wantErr: "Options.Publisher is required"},
		{name: "bad priority", opts: Options{Publisher: pub, SeverityPriorities: map[string]mcpe.Priority{"page": "urgent"}}, wantErr: `alertmanager: severityPriorities.page: "urgent" is not a priority`},
		{name: "conflicting case", opts: Options{Publisher: pub, SeverityPriorities: map[string]mcpe.Priority{"Page": "high", "page": "critical"}}, wantErr: `severity "page" both`},
		{name: "empty severity", opts: Options{Publisher: pub, SeverityPriorities: map[string]mcpe.Priority{" ": "high"}}, wantErr: `severityPriorities: has the severity " ", which is empty`},
		{name: "same priority in two cases", opts: Options{Publisher: pub, SeverityPriorities: map[string]mcpe.Priority{"Page": "high", "page": "high"}}},
		{name: "defaults", opts: Options{Publisher: pub}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.opts)
			adaptertest.CheckNew(t, a, err, tt.wantErr)
		})
	}
}

func TestSeverityPriorities(t *testing.T) {
	alert := func(severity string) string {
		labels := `{"alertname": "X"}`
		if severity != "-" {
			labels = fmt.Sprintf(`{"alertname": "X", "severity": %q}`, severity)
		}
		return fmt.Sprintf(`{"status": "firing", "labels": %s, "startsAt": "2025-06-02T12:00:00Z"}`, labels)
	}
	tests := []struct {
		name       string
		severities map[string]mcpe.Priority
		want       map[string]mcpe.Priority // severity label ("-" for none) -> priority
	}{
		{
			name: "defaults",
			want: map[string]mcpe.Priority{
				"critical": "critical", "CRITICAL": "critical", " Warning ": "high", "info": "low",
				"page": "normal", "": "normal", "-": "normal", "error": "normal",
			},
		},
		{
			name:       "configured map replaces the defaults",
			severities: map[string]mcpe.Priority{"P1": "critical", "p2": "high", "Warning": "normal"},
			want: map[string]mcpe.Priority{
				"p1": "critical", "P2": "high", "warning": "normal", "critical": "normal", "info": "normal", "-": "normal",
			},
		},
		{
			name:       "empty map: everything normal",
			severities: map[string]mcpe.Priority{},
			want:       map[string]mcpe.Priority{"critical": "normal", "-": "normal"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, func(o *Options) { o.SeverityPriorities = tt.severities })
			got := make(map[string]mcpe.Priority)
			for sev := range tt.want {
				body := fmt.Sprintf(`{"version": "4", "alerts": [%s]}`, alert(sev))
				if w := post(a, []byte(body)); w.Code != http.StatusAccepted {
					t.Fatalf("severity %q: status %d; body %s", sev, w.Code, w.Body)
				}
				evs := pub.Published()
				got[sev] = evs[len(evs)-1].Metadata.Priority
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("priorities mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestName(t *testing.T) {
	a, _ := newTestAdapter(t, nil)
	if got := a.Name(); got != "alertmanager" {
		t.Errorf("Name() = %q, want alertmanager", got)
	}
}
