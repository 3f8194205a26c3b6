package github

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

func TestNormalizeLabel(t *testing.T) {
	tests := map[string]string{
		"P0":                       "p0",
		"Priority: Critical":       "priority critical",
		"priority/critical-urgent": "priority critical urgent",
		"priority:high":            "priority high",
		"  High Priority  ":        "high priority",
		"🔥 urgent 🔥":               "urgent",
		"Sev-1":                    "sev 1",
		"ÜBER_wichtig":             "über wichtig",
		"!!!":                      "",
		"":                         "",
	}
	for in, want := range tests {
		if got := NormalizeLabel(in); got != want {
			t.Errorf("NormalizeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// issueWithLabels is an issues.opened payload with the given labels.
func issueWithLabels(labels ...string) []byte {
	var ls []string
	for _, l := range labels {
		b, _ := json.Marshal(map[string]string{"name": l})
		ls = append(ls, string(b))
	}
	return []byte(fmt.Sprintf(`{"action": "opened", "issue": {"number": 1, "title": "t", "labels": [%s]}, "repository": {"full_name": "o/r"}}`, strings.Join(ls, ",")))
}

func TestLabelPriority(t *testing.T) {
	tests := []struct {
		name   string
		rule   map[string]mcpe.Priority
		labels []string
		want   mcpe.Priority
	}{
		{name: "no labels", want: "normal"},
		{name: "unrelated labels", labels: []string{"bug", "help wanted"}, want: "normal"},
		{name: "P0", labels: []string{"bug", "P0"}, want: "critical"},
		{name: "priority: critical", labels: []string{"Priority: Critical"}, want: "critical"},
		{name: "kubernetes critical-urgent", labels: []string{"priority/critical-urgent"}, want: "critical"},
		{name: "critical", labels: []string{"CRITICAL"}, want: "critical"},
		{name: "sev1", labels: []string{"SEV1"}, want: "critical"},
		{name: "P1", labels: []string{"p1"}, want: "high"},
		{name: "urgent", labels: []string{"urgent"}, want: "high"},
		{name: "high priority", labels: []string{"High Priority"}, want: "high"},
		{name: "kubernetes important-soon", labels: []string{"priority/important-soon"}, want: "high"},
		{name: "P2 is normal", labels: []string{"P2"}, want: "normal"},
		{name: "P3", labels: []string{"P3"}, want: "low"},
		{name: "low priority", labels: []string{"low-priority"}, want: "low"},
		{name: "backlog", labels: []string{"priority/backlog"}, want: "low"},
		{name: "highest wins", labels: []string{"P3", "P1", "low"}, want: "high"},
		{name: "highest wins over order", labels: []string{"P0", "P3"}, want: "critical"},
		{name: "a prefix is not a match", labels: []string{"P10", "criticality"}, want: "normal"},
		{name: "the 100th label counts", labels: append(manyLabels(99), "P0"), want: "critical"},
		{name: "configured rule replaces the default", rule: map[string]mcpe.Priority{"Sev-A": "critical", "nice to have": "low"}, labels: []string{"P0", "sev a"}, want: "critical"},
		{name: "configured rule: P0 no longer counts", rule: map[string]mcpe.Priority{"Sev-A": "critical"}, labels: []string{"P0"}, want: "normal"},
		{name: "configured rule can lower", rule: map[string]mcpe.Priority{"nice-to-have": "low"}, labels: []string{"Nice to have"}, want: "low"},
		{name: "empty rule: everything normal", rule: map[string]mcpe.Priority{}, labels: []string{"P0", "critical"}, want: "normal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, func(o *Options) { o.PriorityLabels = tt.rule })
			accepted(t, send(a, delivery{event: "issues", id: "d", body: issueWithLabels(tt.labels...)}))
			if got := pub.Published()[0].Metadata.Priority; got != tt.want {
				t.Errorf("priority = %q, want %q", got, tt.want)
			}
		})
	}
}

func manyLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("area/%d", i)
	}
	return out
}

// Labels set the priority of every event about an issue or pull request:
// comments and reviews too.
func TestLabelPriorityAcrossKinds(t *testing.T) {
	labels := `[{"name": "P0"}]`
	pr := `{"number": 2, "title": "t", "labels": ` + labels + `}`
	issue := `{"number": 2, "title": "t", "labels": ` + labels + `}`
	for event, body := range map[string]string{
		"issues":                      `{"action": "labeled", "issue": ` + issue + `, "label": {"name": "P0"}}`,
		"pull_request":                `{"action": "labeled", "pull_request": ` + pr + `}`,
		"issue_comment":               `{"action": "created", "issue": ` + issue + `, "comment": {"body": "x"}}`,
		"pull_request_review":         `{"action": "submitted", "pull_request": ` + pr + `, "review": {"state": "approved"}}`,
		"pull_request_review_comment": `{"action": "created", "pull_request": ` + pr + `, "comment": {"body": "x"}}`,
		"discussion":                  `{"action": "labeled", "discussion": ` + issue + `}`,
	} {
		a, pub := newTestAdapter(t, nil)
		accepted(t, send(a, delivery{event: event, id: "d", body: []byte(body)}))
		ev := pub.Published()[0]
		if ev.Metadata.Priority != "critical" || !strings.Contains(strings.Join(ev.Metadata.Tags, " "), "label:P0") {
			t.Errorf("%s: priority %q, tags %q; want critical and label:P0", event, ev.Metadata.Priority, ev.Metadata.Tags)
		}
	}
}

// A failed run, check, deployment or commit status is high priority, or
// what its labels say when that is higher.
func TestFailurePriority(t *testing.T) {
	tests := []struct {
		event, body string
		want        mcpe.Priority
	}{
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "failure"}}`, "high"},
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "timed_out"}}`, "high"},
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "startup_failure"}}`, "high"},
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "success"}}`, "normal"},
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "cancelled"}}`, "normal"},
		{"workflow_run", `{"action": "completed", "workflow_run": {"conclusion": "action_required"}}`, "normal"},
		{"workflow_run", `{"action": "requested", "workflow_run": {"conclusion": null}}`, "normal"},
		{"workflow_job", `{"action": "completed", "workflow_job": {"conclusion": "failure"}}`, "high"},
		{"check_run", `{"action": "completed", "check_run": {"conclusion": "failure"}}`, "high"},
		{"check_run", `{"action": "completed", "check_run": {"conclusion": "neutral"}}`, "normal"},
		{"check_suite", `{"action": "completed", "check_suite": {"conclusion": "failure"}}`, "high"},
		{"check_suite", `{"action": "completed", "check_suite": {"conclusion": "FAILURE"}}`, "normal"},
		{"deployment_status", `{"action": "created", "deployment_status": {"state": "failure"}}`, "high"},
		{"deployment_status", `{"action": "created", "deployment_status": {"state": "error"}}`, "high"},
		{"deployment_status", `{"action": "created", "deployment_status": {"state": "success"}}`, "normal"},
		{"status", `{"sha": "abc", "state": "failure"}`, "high"},
		{"status", `{"sha": "abc", "state": "error"}`, "high"},
		{"status", `{"sha": "abc", "state": "pending"}`, "normal"},
		// A failure is not raised by the label rule, and does not lower a
		// label's critical.
		{"pull_request", `{"action": "closed", "pull_request": {"conclusion": "failure", "labels": [{"name": "P0"}]}}`, "critical"},
		{"pull_request", `{"action": "closed", "pull_request": {"conclusion": "failure"}}`, "normal"},
	}
	for _, tt := range tests {
		a, pub := newTestAdapter(t, nil)
		accepted(t, send(a, delivery{event: tt.event, id: "d", body: []byte(tt.body)}))
		if got := pub.Published()[0].Metadata.Priority; got != tt.want {
			t.Errorf("%s %s: priority %q, want %q", tt.event, tt.body, got, tt.want)
		}
	}
}

func TestTimestamp(t *testing.T) {
	tests := []struct {
		name, updated, created string
		want                   time.Time
	}{
		{name: "updated_at", updated: "2025-06-02T09:31:02Z", created: "2025-06-01T00:00:00Z", want: time.Date(2025, 6, 2, 9, 31, 2, 0, time.UTC)},
		{name: "offset made UTC", updated: "2025-06-02T11:31:02.5+02:00", want: time.Date(2025, 6, 2, 9, 31, 2, 5e8, time.UTC)},
		{name: "bad updated_at, created_at used", updated: "yesterday", created: "2025-06-01T00:00:00Z", want: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)},
		{name: "no time: receipt", want: t0},
		{name: "out of range: receipt", updated: "9999-12-31T23:59:59-23:59", want: t0},
		{name: "date only: receipt", updated: "2025-06-02", want: t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, pub := newTestAdapter(t, nil)
			issue := map[string]any{"number": 1, "title": "t"}
			if tt.updated != "" {
				issue["updated_at"] = tt.updated
			}
			if tt.created != "" {
				issue["created_at"] = tt.created
			}
			body, _ := json.Marshal(map[string]any{"action": "edited", "issue": issue})
			accepted(t, send(a, delivery{event: "issues", id: "d", body: body}))
			if got := pub.Published()[0].Metadata.Timestamp; !got.Equal(tt.want) {
				t.Errorf("timestamp = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTags(t *testing.T) {
	long := strings.Repeat("a", 200)
	body := fmt.Sprintf(`{"action": "opened", "issue": {"number": 1, "title": "t", "labels": [%s]},
		"repository": {"full_name": "octo-org/%s"}, "organization": {"login": "octo-org"}, "sender": {"login": "oct\u0000ocat"}}`,
		strings.TrimSuffix(strings.Repeat(`{"name": "bug"}, {"name": "x"}, `, 20), ", "), long)
	a, pub := newTestAdapter(t, nil)
	accepted(t, send(a, delivery{event: "issues", id: "d", body: []byte(body)}))
	tags := pub.Published()[0].Metadata.Tags
	want := []string{("repo:octo-org/" + long)[:mcpe.MaxTagLength], "org:octo-org", "sender:octocat", "label:bug", "label:x"}
	if diff := cmp.Diff(want, tags); diff != "" {
		t.Errorf("tags mismatch (-want +got):\n%s", diff)
	}
	// Branch tags: a pushed branch, a created branch, a run's branch; not
	// a tag.
	for _, tt := range []struct{ event, body, want string }{
		{"push", `{"ref": "refs/heads/release/1.x"}`, "branch:release/1.x"},
		{"push", `{"ref": "refs/tags/v1"}`, ""},
		{"create", `{"ref": "feature", "ref_type": "branch"}`, "branch:feature"},
		{"create", `{"ref": "v1", "ref_type": "tag"}`, ""},
		{"check_run", `{"action": "completed", "check_run": {"check_suite": {"head_branch": "main"}}}`, "branch:main"},
	} {
		a, pub := newTestAdapter(t, nil)
		accepted(t, send(a, delivery{event: tt.event, id: "d", body: []byte(tt.body)}))
		var got string
		for _, tag := range pub.Published()[0].Metadata.Tags {
			if strings.HasPrefix(tag, "branch:") {
				got = tag
			}
		}
		if got != tt.want {
			t.Errorf("%s %s: branch tag %q, want %q", tt.event, tt.body, got, tt.want)
		}
	}
}

// Long strings are cut on a rune boundary and marked; lists are bounded;
// truncated is set.
func TestTruncation(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	body, _ := json.Marshal(map[string]any{
		"action": "created",
		"issue":  map[string]any{"number": 1, "title": strings.Repeat("é", 600), "labels": []any{}},
		"comment": map[string]any{
			"body": strings.Repeat("€", 2000),
			"user": map[string]any{"login": strings.Repeat("u", 300)},
		},
	})
	accepted(t, send(a, delivery{event: "issue_comment", id: "d", body: body}))
	var data issueCommentEvent
	if err := json.Unmarshal(pub.Published()[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name, s string
		max     int
	}{
		{"issue.title", data.Issue.Title, MaxLineBytes},
		{"comment.body", data.Comment.Body, MaxTextBytes},
		{"comment.user", data.Comment.User, MaxNameBytes},
	} {
		if len(f.s) > f.max || len(f.s) < f.max-8 || !strings.HasSuffix(f.s, "…") || !utf8.ValidString(f.s) {
			t.Errorf("%s is %d bytes ending %q; want at most %d, valid UTF-8, ending in …", f.name, len(f.s), f.s[len(f.s)-6:], f.max)
		}
	}
	if !data.Truncated {
		t.Error("truncated is not set")
	}
	// Nothing cut: no truncated.
	accepted(t, send(a, delivery{event: "issue_comment", id: "d2", body: []byte(`{"action": "created", "issue": {"number": 1, "title": "t"}, "comment": {"body": "ok"}}`)}))
	if strings.Contains(string(pub.Published()[1].Data), "truncated") {
		t.Errorf("data %s has truncated", pub.Published()[1].Data)
	}
}

func TestEventType(t *testing.T) {
	tests := []struct{ event, action, want string }{
		{"issues", "opened", "github.issues.opened"},
		{"push", "", "github.push"},
		{"pull_request", "ready_for_review", "github.pull_request.ready_for_review"},
		{"x", "a.b c", "github.x.a_b_c"},
		{"", "", "github.unknown"},
		{strings.Repeat("e", 100), strings.Repeat("a", 100), "github." + strings.Repeat("e", 64) + "." + strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		got := eventType(tt.event, tt.action)
		if got != tt.want {
			t.Errorf("eventType(%q, %q) = %q, want %q", tt.event, tt.action, got, tt.want)
		}
		if err := mcpe.ValidateType(got); err != nil {
			t.Error(err)
		}
	}
}

// The merge commit of a pull request is named only once it is merged, and
// merged_at alone marks it merged.
func TestPullRequestMerged(t *testing.T) {
	a, pub := newTestAdapter(t, nil)
	for i, pr := range []string{
		`{"number": 1, "merged": false, "merge_commit_sha": "test-merge"}`,
		`{"number": 1, "merged_at": "2025-06-02T11:40:05Z", "merge_commit_sha": "abc"}`,
	} {
		accepted(t, send(a, delivery{event: "pull_request", id: fmt.Sprint(i), body: []byte(`{"action": "closed", "pull_request": ` + pr + `}`)}))
	}
	var open, merged pullRequestEvent
	json.Unmarshal(pub.Published()[0].Data, &open)
	json.Unmarshal(pub.Published()[1].Data, &merged)
	if open.PullRequest.Merged || open.PullRequest.MergeCommitSHA != "" {
		t.Errorf("unmerged: %+v", open.PullRequest)
	}
	if !merged.PullRequest.Merged || merged.PullRequest.MergeCommitSHA != "abc" {
		t.Errorf("merged: %+v", merged.PullRequest)
	}
}
