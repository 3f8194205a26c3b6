package github

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// failedConclusions are the conclusions of a workflow run, workflow job,
// check run or check suite that make its event high priority.
var failedConclusions = []string{"failure", "timed_out", "startup_failure"}

// failedDeployStates are the deployment status and commit status states
// that make their event high priority.
var failedDeployStates = []string{"failure", "error"}

// conv gathers, while one payload is turned into data, what the event's
// metadata is made of.
type conv struct {
	// cut is set when a string or list was cut to the adapter's limits.
	cut bool
	// labels are the labels of the issue, pull request or main object
	// kept in the data, which become tags.
	labels []string
	// allLabels are all their labels read (at most maxListItems), which
	// set the priority.
	allLabels []string
	// branch is the branch the event is about, for the tags.
	branch string
	// failed is set for a failed run, check or deployment.
	failed bool
	// when are the payload's times of the event, best first.
	when []text
}

// kind is an event kind the adapter maps.
type kind struct {
	// data makes the kind's data from a payload that has the objects of
	// needs; the error, when the payload lacks another field the kind
	// needs, is answered to the sender.
	data func(c *conv, p *payload) (eventData, error)
	// actions is true for kinds whose payloads have an action: their type
	// is github.<event>.<action>, and a payload without one is refused.
	// The others are github.<event> whatever the payload says.
	actions bool
	// needs are the JSON names of the payload's objects the kind is
	// about: a payload without one of them is refused.
	needs []string
}

// kinds maps X-GitHub-Event values to their kind.
var kinds = map[string]kind{
	"issues":                      {issuesData, true, []string{"issue"}},
	"pull_request":                {pullRequestEventData, true, []string{"pull_request"}},
	"issue_comment":               {issueCommentData, true, []string{"issue", "comment"}},
	"pull_request_review":         {reviewEventData, true, []string{"pull_request", "review"}},
	"pull_request_review_comment": {reviewCommentData, true, []string{"pull_request", "comment"}},
	"commit_comment":              {commitCommentData, true, []string{"comment"}},
	"push":                        {pushData, false, nil},
	"create":                      {refData, false, nil},
	"delete":                      {refData, false, nil},
	"workflow_run":                {workflowRunData, true, []string{"workflow_run"}},
	"workflow_job":                {workflowJobData, true, []string{"workflow_job"}},
	"check_run":                   {checkRunData, true, []string{"check_run"}},
	"check_suite":                 {checkSuiteData, true, []string{"check_suite"}},
	"release":                     {releaseEventData, true, []string{"release"}},
	"fork":                        {forkData, false, []string{"forkee"}},
	"star":                        {starData, true, nil},
	"watch":                       {watchData, true, nil},
	"deployment":                  {deploymentEventData, true, []string{"deployment"}},
	"deployment_status":           {deploymentStatusEventData, true, []string{"deployment_status"}},
	"status":                      {statusData, false, nil},
}

// eventType returns the event type of a delivery: github.<event>.<action>,
// or github.<event> when the payload has no action.
func eventType(event, action string) string {
	t := "github." + adapters.Segment(event)
	if action != "" {
		t += "." + adapters.Segment(action)
	}
	return t
}

// event turns a delivery into an event. event is X-GitHub-Event, delivery
// X-GitHub-Delivery, body the JSON payload that p was decoded from. The
// error says what is wrong with the payload.
func (a *Adapter) event(event, delivery string, p *payload, body []byte, now time.Time) (mcpe.Event, error) {
	action := strings.TrimSpace(string(p.Action))
	k, known := kinds[event]
	switch {
	case known && k.actions && action == "":
		return mcpe.Event{}, fmt.Errorf(`the payload of a %q event has no "action"; GitHub says in it what happened (such as "opened" or "completed")`, event)
	case known && !k.actions:
		action = ""
	}
	c := &conv{}
	data, err := makeData(c, event, p, body)
	if err != nil {
		return mcpe.Event{}, err
	}
	raw, err := adapters.EncodeJSON(data)
	if err != nil {
		return mcpe.Event{}, fmt.Errorf("the event's data could not be encoded: %v", err)
	}
	ts := now
	for _, t := range c.when {
		if parsed, ok := parseTime(t); ok {
			ts = parsed
			break
		}
	}
	var tags []string
	tag := func(key, value string) {
		if value != "" {
			tags = append(tags, key+value)
		}
	}
	tag("repo:", string(p.Repository.v.FullName))
	tag("org:", string(p.Organization.v.Login))
	tag("sender:", string(p.Sender.v.Login))
	tag("branch:", c.branch)
	for _, l := range c.labels {
		tag("label:", l)
	}
	return mcpe.Event{
		Type: eventType(event, action),
		Data: raw,
		Metadata: mcpe.Metadata{
			SourceEventID: delivery,
			Timestamp:     ts.UTC(),
			Priority:      a.eventPriority(c),
			Tags:          adapters.Tags(tags...),
		},
	}, nil
}

// eventPriority applies the label rule and the failure rule.
func (a *Adapter) eventPriority(c *conv) mcpe.Priority {
	p := cmp.Or(a.labelPriority(c.allLabels), mcpe.PriorityNormal)
	if c.failed && rank(p) < rank(mcpe.PriorityHigh) {
		p = mcpe.PriorityHigh
	}
	return p
}

// makeData makes the data of one delivery, with the common fields filled
// in.
func makeData(c *conv, event string, p *payload, body []byte) (eventData, error) {
	cm := common{
		Event:        adapters.Segment(event),
		Action:       c.name(text(strings.TrimSpace(string(p.Action)))),
		Repository:   c.repo(p.Repository),
		Organization: c.login(p.Organization),
		Sender:       c.login(p.Sender),
	}
	k, ok := kinds[event]
	if !ok {
		return otherData(c, cm, event, body), nil
	}
	for _, field := range k.needs {
		if !p.has(field) {
			return nil, fmt.Errorf("the payload of a %q event has no %q object; GitHub sends one with every %s delivery", event, field, event)
		}
	}
	data, err := k.data(c, p)
	if err != nil {
		return nil, err
	}
	data.setCommon(cm)
	data.setTruncated(c.cut)
	return data, nil
}

func issuesData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.Issue.v.UpdatedAt, p.Issue.v.CreatedAt)
	return &issuesEvent{
		Issue:    c.issue(p.Issue.v, true),
		Label:    c.labelName(p.Label),
		Assignee: c.login(p.Assignee),
	}, nil
}

func pullRequestEventData(c *conv, p *payload) (eventData, error) {
	d := &pullRequestEvent{
		PullRequest:       c.pullRequest(p.PullRequest.v, true),
		Label:             c.labelName(p.Label),
		Assignee:          c.login(p.Assignee),
		RequestedReviewer: c.login(p.RequestedReviewer),
	}
	d.Number = d.PullRequest.Number
	c.when = append(c.when, p.PullRequest.v.UpdatedAt, p.PullRequest.v.CreatedAt)
	return d, nil
}

func issueCommentData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.Comment.v.UpdatedAt, p.Comment.v.CreatedAt)
	return &issueCommentEvent{Issue: c.issue(p.Issue.v, false), Comment: c.comment(p.Comment.v)}, nil
}

func reviewEventData(c *conv, p *payload) (eventData, error) {
	r := p.Review.v
	c.when = append(c.when, r.SubmittedAt, p.PullRequest.v.UpdatedAt)
	return &reviewEvent{
		PullRequest: c.pullRequest(p.PullRequest.v, false),
		Review: &reviewData{
			ID:          int64(r.ID),
			State:       c.name(r.State),
			Body:        c.str(r.Body, MaxTextBytes),
			HTMLURL:     c.url(r.HTMLURL),
			User:        c.login(r.User),
			CommitID:    c.name(r.CommitID),
			SubmittedAt: c.time(r.SubmittedAt),
		},
	}, nil
}

func reviewCommentData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.Comment.v.UpdatedAt, p.Comment.v.CreatedAt)
	return &reviewCommentEvent{PullRequest: c.pullRequest(p.PullRequest.v, false), Comment: c.comment(p.Comment.v)}, nil
}

func commitCommentData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.Comment.v.UpdatedAt, p.Comment.v.CreatedAt)
	return &commitCommentEvent{Comment: c.comment(p.Comment.v)}, nil
}

func pushData(c *conv, p *payload) (eventData, error) {
	if p.Ref == "" {
		return nil, fmt.Errorf(`the payload of a "push" event has no "ref"; GitHub names the pushed branch or tag in it, such as "refs/heads/main"`)
	}
	d := &pushEvent{
		Ref:         c.name(p.Ref),
		Before:      c.name(p.Before),
		After:       c.name(p.After),
		Created:     bool(p.Created),
		Deleted:     bool(p.Deleted),
		Forced:      bool(p.Forced),
		BaseRef:     c.name(p.BaseRef),
		Compare:     c.url(p.Compare),
		Pusher:      c.name(p.Pusher.v.Name),
		Commits:     []commitData{},
		CommitCount: p.Commits.total,
	}
	if p.HeadCommit.ok {
		d.HeadCommit = c.commit(p.HeadCommit.v)
		c.when = append(c.when, p.HeadCommit.v.Timestamp)
	}
	for _, cm := range firstItems(c, p.Commits, MaxCommits) {
		if cm.ok {
			d.Commits = append(d.Commits, *c.commit(cm.v))
		}
	}
	if b, ok := strings.CutPrefix(string(p.Ref), "refs/heads/"); ok {
		c.branch = b
	}
	return d, nil
}

// refData is the data of create and delete.
func refData(c *conv, p *payload) (eventData, error) {
	if p.Ref == "" {
		return nil, fmt.Errorf(`the payload of a create or delete event has no "ref"; GitHub names the branch or tag in it`)
	}
	if p.RefType == "branch" {
		c.branch = string(p.Ref)
	}
	return &refEvent{Ref: c.name(p.Ref), RefType: c.name(p.RefType)}, nil
}

func workflowRunData(c *conv, p *payload) (eventData, error) {
	r := p.WorkflowRun.v
	return &workflowRunEvent{WorkflowRun: c.run(r, r.UpdatedAt, r.RunStartedAt, r.CreatedAt)}, nil
}

func workflowJobData(c *conv, p *payload) (eventData, error) {
	r := p.WorkflowJob.v
	return &workflowJobEvent{WorkflowJob: c.run(r, r.CompletedAt, r.StartedAt, r.CreatedAt)}, nil
}

func checkRunData(c *conv, p *payload) (eventData, error) {
	r := p.CheckRun.v
	return &checkRunEvent{CheckRun: c.run(r, r.CompletedAt, r.StartedAt)}, nil
}

func checkSuiteData(c *conv, p *payload) (eventData, error) {
	r := p.CheckSuite.v
	return &checkSuiteEvent{CheckSuite: c.run(r, r.UpdatedAt, r.CreatedAt)}, nil
}

func releaseEventData(c *conv, p *payload) (eventData, error) {
	r := p.Release.v
	c.when = append(c.when, r.PublishedAt, r.CreatedAt)
	return &releaseEvent{Release: &releaseData{
		ID:              int64(r.ID),
		TagName:         c.name(r.TagName),
		Name:            c.str(r.Name, MaxLineBytes),
		HTMLURL:         c.url(r.HTMLURL),
		Draft:           bool(r.Draft),
		Prerelease:      bool(r.Prerelease),
		Author:          c.login(r.Author),
		TargetCommitish: c.name(r.TargetCommitish),
		Body:            c.str(r.Body, MaxTextBytes),
		CreatedAt:       c.time(r.CreatedAt),
		PublishedAt:     c.time(r.PublishedAt),
	}}, nil
}

func forkData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.Forkee.v.CreatedAt)
	return &forkEvent{Forkee: c.repo(p.Forkee)}, nil
}

func starData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.StarredAt)
	return &starEvent{StarredAt: c.time(p.StarredAt)}, nil
}

func watchData(*conv, *payload) (eventData, error) { return &watchEvent{}, nil }

func deploymentEventData(c *conv, p *payload) (eventData, error) {
	c.when = append(c.when, p.Deployment.v.UpdatedAt, p.Deployment.v.CreatedAt)
	return &deploymentEvent{Deployment: c.deployment(p.Deployment.v)}, nil
}

func deploymentStatusEventData(c *conv, p *payload) (eventData, error) {
	s := p.DeploymentStatus.v
	d := &deploymentStatusEvent{DeploymentStatus: &deploymentStatusData{
		ID:             int64(s.ID),
		State:          c.name(s.State),
		Environment:    c.name(s.Environment),
		Description:    c.str(s.Description, MaxLineBytes),
		TargetURL:      c.url(s.TargetURL),
		LogURL:         c.url(s.LogURL),
		EnvironmentURL: c.url(s.EnvironmentURL),
		Creator:        c.login(s.Creator),
		CreatedAt:      c.time(s.CreatedAt),
		UpdatedAt:      c.time(s.UpdatedAt),
	}}
	if p.Deployment.ok {
		d.Deployment = c.deployment(p.Deployment.v)
	}
	c.failed = c.failed || slices.Contains(failedDeployStates, string(s.State))
	c.when = append(c.when, s.UpdatedAt, s.CreatedAt)
	return d, nil
}

func statusData(c *conv, p *payload) (eventData, error) {
	if p.SHA == "" || p.State == "" {
		return nil, fmt.Errorf(`the payload of a "status" event has no "sha" or "state"; GitHub sends the commit and its new status in them`)
	}
	c.failed = c.failed || slices.Contains(failedDeployStates, string(p.State))
	c.when = append(c.when, p.UpdatedAt, p.CreatedAt)
	return &statusEvent{
		SHA:         c.name(p.SHA),
		State:       c.name(p.State),
		Context:     c.name(p.Context),
		Description: c.str(p.Description, MaxLineBytes),
		TargetURL:   c.url(p.TargetURL),
	}, nil
}

// otherData is the data of an event kind without a mapping: the common
// fields and a summary of the payload's main object, which is the
// top-level object named like the event, or else alert or comment.
func otherData(c *conv, cm common, event string, body []byte) eventData {
	d := &otherEvent{common: cm}
	subjects := decodeSubjects(body)
	for _, field := range []string{event, "alert", "comment"} {
		if s := subjects[field]; s.ok {
			d.Subject = &subjectData{
				Field:   c.name(text(field)),
				ID:      int64(s.v.ID),
				Number:  int64(s.v.Number),
				Title:   c.str(s.v.Title, MaxLineBytes),
				Name:    c.name(s.v.Name),
				HTMLURL: c.url(s.v.HTMLURL),
				State:   c.name(s.v.State),
				Labels:  c.labelNames(s.v.Labels),
			}
			c.setLabels(d.Subject.Labels, s.v.Labels)
			c.when = append(c.when, s.v.UpdatedAt, s.v.CreatedAt)
			break
		}
	}
	d.setTruncated(c.cut)
	return d
}

// issue returns the data of an issue, whose labels are the event's.
func (c *conv) issue(in issue, withBody bool) *issueData {
	d := &issueData{
		Number:        int64(in.Number),
		Title:         c.str(in.Title, MaxLineBytes),
		State:         c.name(in.State),
		StateReason:   c.name(in.StateReason),
		HTMLURL:       c.url(in.HTMLURL),
		User:          c.login(in.User),
		Labels:        c.labelNames(in.Labels),
		Assignees:     c.logins(in.Assignees),
		Milestone:     c.str(in.Milestone.v.Title, MaxLineBytes),
		Comments:      int64(in.Comments),
		IsPullRequest: in.PullRequest.ok,
		CreatedAt:     c.time(in.CreatedAt),
		UpdatedAt:     c.time(in.UpdatedAt),
		ClosedAt:      c.time(in.ClosedAt),
	}
	if withBody {
		d.Body = c.str(in.Body, MaxTextBytes)
	}
	c.setLabels(d.Labels, in.Labels)
	return d
}

// pullRequest returns the data of a pull request, whose labels are the
// event's.
func (c *conv) pullRequest(in pullRequest, withBody bool) *pullRequestData {
	d := &pullRequestData{
		Number:             int64(in.Number),
		Title:              c.str(in.Title, MaxLineBytes),
		State:              c.name(in.State),
		Draft:              bool(in.Draft),
		Merged:             bool(in.Merged),
		HTMLURL:            c.url(in.HTMLURL),
		User:               c.login(in.User),
		Labels:             c.labelNames(in.Labels),
		Assignees:          c.logins(in.Assignees),
		RequestedReviewers: c.logins(in.RequestedReviewers),
		Milestone:          c.str(in.Milestone.v.Title, MaxLineBytes),
		BaseRef:            c.name(in.Base.v.Ref),
		HeadRef:            c.name(in.Head.v.Ref),
		HeadSHA:            c.name(in.Head.v.SHA),
		HeadRepo:           c.name(in.Head.v.Repo.v.FullName),
		MergedBy:           c.login(in.MergedBy),
		MergedAt:           c.time(in.MergedAt),
		Commits:            int64(in.Commits),
		Additions:          int64(in.Additions),
		Deletions:          int64(in.Deletions),
		ChangedFiles:       int64(in.ChangedFiles),
		CreatedAt:          c.time(in.CreatedAt),
		UpdatedAt:          c.time(in.UpdatedAt),
		ClosedAt:           c.time(in.ClosedAt),
	}
	// A merged pull request is merged whatever the payload's flag says
	// (closed events of older GitHub versions omit it).
	d.Merged = d.Merged || d.MergedAt != ""
	if d.Merged {
		// Before the merge, GitHub names a test merge commit here.
		d.MergeCommitSHA = c.name(in.MergeCommitSHA)
	}
	if withBody {
		d.Body = c.str(in.Body, MaxTextBytes)
	}
	c.setLabels(d.Labels, in.Labels)
	return d
}

func (c *conv) comment(in comment) *commentData {
	return &commentData{
		ID:          int64(in.ID),
		Body:        c.str(in.Body, MaxTextBytes),
		HTMLURL:     c.url(in.HTMLURL),
		User:        c.login(in.User),
		Path:        c.str(in.Path, MaxLineBytes),
		Line:        int64(in.Line),
		CommitID:    c.name(in.CommitID),
		InReplyToID: int64(in.InReplyToID),
		CreatedAt:   c.time(in.CreatedAt),
		UpdatedAt:   c.time(in.UpdatedAt),
	}
}

func (c *conv) commit(in commit) *commitData {
	return &commitData{
		ID:             c.name(in.ID),
		Message:        c.str(in.Message, MaxLineBytes),
		Author:         c.name(in.Author.v.Name),
		AuthorUsername: c.name(in.Author.v.Username),
		URL:            c.url(in.URL),
		Timestamp:      c.time(in.Timestamp),
	}
}

// run returns the data of a workflow run, workflow job, check run or check
// suite; when are its times that may date the event, best first.
func (c *conv) run(in run, when ...text) *runData {
	d := &runData{
		ID:           int64(in.ID),
		Name:         c.name(in.Name),
		DisplayTitle: c.str(in.DisplayTitle, MaxLineBytes),
		WorkflowName: c.name(in.WorkflowName),
		RunID:        int64(in.RunID),
		RunNumber:    int64(in.RunNumber),
		RunAttempt:   int64(in.RunAttempt),
		Event:        c.name(in.Event),
		Status:       c.name(in.Status),
		Conclusion:   c.name(in.Conclusion),
		HTMLURL:      c.url(in.HTMLURL),
		HeadBranch:   c.name(in.HeadBranch),
		HeadSHA:      c.name(in.HeadSHA),
		Actor:        c.login(in.Actor),
		App:          c.name(in.App.v.Name),
		Title:        c.str(in.Output.v.Title, MaxLineBytes),
		Summary:      c.str(in.Output.v.Summary, MaxLineBytes),
		RunnerName:   c.name(in.RunnerName),
		CreatedAt:    c.time(in.CreatedAt),
		UpdatedAt:    c.time(in.UpdatedAt),
		StartedAt:    c.time(in.StartedAt),
		CompletedAt:  c.time(in.CompletedAt),
	}
	if d.StartedAt == "" {
		d.StartedAt = c.time(in.RunStartedAt)
	}
	if d.HTMLURL == "" {
		// A check run from an outside app links to it in details_url.
		d.HTMLURL = c.url(in.DetailsURL)
	}
	if d.HeadBranch == "" {
		d.HeadBranch = c.name(in.CheckSuite.v.HeadBranch)
	}
	for _, pr := range firstItems(c, in.PullRequests, MaxPullRequests) {
		if pr.v.Number > 0 {
			d.PullRequests = append(d.PullRequests, int64(pr.v.Number))
		}
	}
	c.failed = c.failed || slices.Contains(failedConclusions, string(in.Conclusion))
	c.branch = d.HeadBranch
	c.when = append(c.when, when...)
	return d
}

func (c *conv) deployment(in deployment) *deploymentData {
	return &deploymentData{
		ID:          int64(in.ID),
		Environment: c.name(in.Environment),
		Ref:         c.name(in.Ref),
		SHA:         c.name(in.SHA),
		Task:        c.name(in.Task),
		Description: c.str(in.Description, MaxLineBytes),
		Creator:     c.login(in.Creator),
		CreatedAt:   c.time(in.CreatedAt),
		UpdatedAt:   c.time(in.UpdatedAt),
	}
}

func (c *conv) repo(in obj[repository]) *repoData {
	if !in.ok || in.v.FullName == "" {
		return nil
	}
	return &repoData{FullName: c.name(in.v.FullName), HTMLURL: c.url(in.v.HTMLURL), Private: bool(in.v.Private)}
}

// setLabels notes the labels of the event: kept, those in its data, and
// all of those read.
func (c *conv) setLabels(kept []string, all list[obj[label]]) {
	c.labels = kept
	for _, l := range all.items {
		if l.ok && l.v.Name != "" {
			c.allLabels = append(c.allLabels, string(l.v.Name))
		}
	}
}

// labelNames returns the names of at most MaxLabels labels; never nil.
func (c *conv) labelNames(in list[obj[label]]) []string {
	return names(c, in, MaxLabels, (*conv).labelName)
}

func (c *conv) labelName(l obj[label]) string { return c.name(l.v.Name) }

// logins returns the logins of at most MaxUsers accounts; never nil.
func (c *conv) logins(in list[obj[account]]) []string {
	return names(c, in, MaxUsers, (*conv).login)
}

func (c *conv) login(u obj[account]) string { return c.name(u.v.Login) }

// firstItems returns the first max items of in, noting a cut when in had
// more.
func firstItems[T any](c *conv, in list[T], max int) []T {
	if in.total > max {
		c.cut = true
	}
	return in.items[:min(max, len(in.items))]
}

// names returns the names that name reads of the items of in, leaving out
// the empty ones, at most max of them; never nil. It notes a cut when in
// had more.
func names[T any](c *conv, in list[T], max int, name func(*conv, T) string) []string {
	out := []string{}
	for _, item := range in.items {
		if len(out) == max {
			c.cut = true
			break
		}
		if n := name(c, item); n != "" {
			out = append(out, n)
		}
	}
	if in.total > max {
		c.cut = true
	}
	return out
}

func (c *conv) name(t text) string { return c.str(t, MaxNameBytes) }
func (c *conv) url(t text) string  { return c.str(t, MaxURLBytes) }

// str cuts t to max bytes, noting the cut.
func (c *conv) str(t text, max int) string {
	if len(t) > max {
		c.cut = true
		return adapters.Clip(string(t), max)
	}
	return string(t)
}

// time returns t in UTC as RFC 3339, or "" when it is not a valid time.
func (c *conv) time(t text) string {
	if parsed, ok := parseTime(t); ok {
		return parsed.UTC().Format(time.RFC3339Nano)
	}
	return ""
}

// parseTime reads an RFC 3339 time that lies between the years 0001 and
// 9999 in UTC.
func parseTime(t text) (time.Time, bool) {
	s := strings.TrimSpace(string(t))
	if s == "" || len(s) > 64 {
		return time.Time{}, false
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	if y := parsed.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, false
	}
	return parsed, true
}
