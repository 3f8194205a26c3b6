package github

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// The payload is read leniently: GitHub adds fields and, over the years,
// changed the JSON type of some (repository.created_at is a Unix time in
// push payloads and a string elsewhere), and a delivery is not refused
// because a field the adapter does not need has an unexpected shape. Each
// field is read with one of the types below, which take a value of the
// expected JSON type and read any other as absent. Only a body that is not
// a JSON object is refused.

// text is a JSON string; any other JSON value reads as "".
type text string

func (t *text) UnmarshalJSON(b []byte) error { return readAs(b, `"`, (*string)(t)) }

// number is a JSON integer; any other JSON value reads as 0.
type number int64

func (n *number) UnmarshalJSON(b []byte) error { return readAs(b, "-0123456789", (*int64)(n)) }

// readAs reads b into v when b starts with one of the bytes of first and
// decodes as a T; otherwise v is T's zero value. It never fails.
func readAs[T any](b []byte, first string, v *T) error {
	var zero T
	*v = zero
	if len(b) > 0 && strings.IndexByte(first, b[0]) >= 0 && json.Unmarshal(b, v) != nil {
		*v = zero
	}
	return nil
}

// truth is a JSON boolean; any other JSON value reads as false.
type truth bool

func (f *truth) UnmarshalJSON(b []byte) error {
	*f = string(b) == "true"
	return nil
}

// obj is a JSON object read into T; ok is false for any other JSON value,
// and v is then T's zero value, so that the fields of an absent object read
// as absent too. T's fields are themselves lenient, so reading an object
// cannot fail.
type obj[T any] struct {
	v  T
	ok bool
}

func (o *obj[T]) UnmarshalJSON(b []byte) error {
	*o = obj[T]{}
	o.ok = len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &o.v) == nil
	return nil
}

// list is a JSON array of which at most maxListItems elements are read;
// total counts them all. Any other JSON value reads as an empty list.
type list[T any] struct {
	items []T
	total int
}

func (l *list[T]) UnmarshalJSON(b []byte) error {
	*l = list[T]{}
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	for dec.More() {
		if l.total < maxListItems {
			var v T
			if dec.Decode(&v) != nil {
				return nil
			}
			l.items = append(l.items, v)
		} else if dec.Decode(&skip{}) != nil {
			return nil
		}
		l.total++
	}
	return nil
}

// skip reads any JSON value and keeps nothing.
type skip struct{}

func (*skip) UnmarshalJSON([]byte) error { return nil }

// account is a user, bot or organization: only its login is kept.
type account struct {
	Login text `json:"login"`
}

type label struct {
	Name text `json:"name"`
}

type repository struct {
	FullName  text  `json:"full_name"`
	HTMLURL   text  `json:"html_url"`
	Private   truth `json:"private"`
	CreatedAt text  `json:"created_at"`
}

type milestone struct {
	Title text `json:"title"`
}

type issue struct {
	Number      number             `json:"number"`
	Title       text               `json:"title"`
	State       text               `json:"state"`
	StateReason text               `json:"state_reason"`
	HTMLURL     text               `json:"html_url"`
	Body        text               `json:"body"`
	User        obj[account]       `json:"user"`
	Labels      list[obj[label]]   `json:"labels"`
	Assignees   list[obj[account]] `json:"assignees"`
	Milestone   obj[milestone]     `json:"milestone"`
	Comments    number             `json:"comments"`
	PullRequest obj[struct{}]      `json:"pull_request"`
	CreatedAt   text               `json:"created_at"`
	UpdatedAt   text               `json:"updated_at"`
	ClosedAt    text               `json:"closed_at"`
}

type branch struct {
	Ref  text            `json:"ref"`
	SHA  text            `json:"sha"`
	Repo obj[repository] `json:"repo"`
}

type pullRequest struct {
	Number             number             `json:"number"`
	Title              text               `json:"title"`
	State              text               `json:"state"`
	Draft              truth              `json:"draft"`
	Merged             truth              `json:"merged"`
	HTMLURL            text               `json:"html_url"`
	Body               text               `json:"body"`
	User               obj[account]       `json:"user"`
	Labels             list[obj[label]]   `json:"labels"`
	Assignees          list[obj[account]] `json:"assignees"`
	RequestedReviewers list[obj[account]] `json:"requested_reviewers"`
	Milestone          obj[milestone]     `json:"milestone"`
	Base               obj[branch]        `json:"base"`
	Head               obj[branch]        `json:"head"`
	MergedBy           obj[account]       `json:"merged_by"`
	MergedAt           text               `json:"merged_at"`
	MergeCommitSHA     text               `json:"merge_commit_sha"`
	Commits            number             `json:"commits"`
	Additions          number             `json:"additions"`
	Deletions          number             `json:"deletions"`
	ChangedFiles       number             `json:"changed_files"`
	CreatedAt          text               `json:"created_at"`
	UpdatedAt          text               `json:"updated_at"`
	ClosedAt           text               `json:"closed_at"`
}

// comment is an issue, commit or review comment.
type comment struct {
	ID          number       `json:"id"`
	Body        text         `json:"body"`
	HTMLURL     text         `json:"html_url"`
	User        obj[account] `json:"user"`
	Path        text         `json:"path"`
	Line        number       `json:"line"`
	CommitID    text         `json:"commit_id"`
	InReplyToID number       `json:"in_reply_to_id"`
	CreatedAt   text         `json:"created_at"`
	UpdatedAt   text         `json:"updated_at"`
}

type review struct {
	ID          number       `json:"id"`
	State       text         `json:"state"`
	Body        text         `json:"body"`
	HTMLURL     text         `json:"html_url"`
	User        obj[account] `json:"user"`
	CommitID    text         `json:"commit_id"`
	SubmittedAt text         `json:"submitted_at"`
}

type gitActor struct {
	Name     text `json:"name"`
	Username text `json:"username"`
}

type commit struct {
	ID        text          `json:"id"`
	Message   text          `json:"message"`
	URL       text          `json:"url"`
	Timestamp text          `json:"timestamp"`
	Author    obj[gitActor] `json:"author"`
}

// pullRequestRef is a pull request as workflow runs and checks list it.
type pullRequestRef struct {
	Number number `json:"number"`
}

type app struct {
	Name text `json:"name"`
}

type checkOutput struct {
	Title   text `json:"title"`
	Summary text `json:"summary"`
}

// run is a workflow run, workflow job, check run or check suite: the four
// share most of their fields.
type run struct {
	ID           number                    `json:"id"`
	Name         text                      `json:"name"`
	DisplayTitle text                      `json:"display_title"`
	WorkflowName text                      `json:"workflow_name"`
	RunID        number                    `json:"run_id"`
	RunNumber    number                    `json:"run_number"`
	RunAttempt   number                    `json:"run_attempt"`
	Event        text                      `json:"event"`
	Status       text                      `json:"status"`
	Conclusion   text                      `json:"conclusion"`
	HTMLURL      text                      `json:"html_url"`
	DetailsURL   text                      `json:"details_url"`
	HeadBranch   text                      `json:"head_branch"`
	HeadSHA      text                      `json:"head_sha"`
	Actor        obj[account]              `json:"actor"`
	App          obj[app]                  `json:"app"`
	Output       obj[checkOutput]          `json:"output"`
	CheckSuite   obj[checkSuiteRef]        `json:"check_suite"`
	RunnerName   text                      `json:"runner_name"`
	PullRequests list[obj[pullRequestRef]] `json:"pull_requests"`
	CreatedAt    text                      `json:"created_at"`
	UpdatedAt    text                      `json:"updated_at"`
	StartedAt    text                      `json:"started_at"`
	RunStartedAt text                      `json:"run_started_at"`
	CompletedAt  text                      `json:"completed_at"`
}

// checkSuiteRef is the suite of a check run, which knows its branch.
type checkSuiteRef struct {
	HeadBranch text `json:"head_branch"`
}

type release struct {
	ID              number       `json:"id"`
	TagName         text         `json:"tag_name"`
	Name            text         `json:"name"`
	HTMLURL         text         `json:"html_url"`
	Draft           truth        `json:"draft"`
	Prerelease      truth        `json:"prerelease"`
	Author          obj[account] `json:"author"`
	TargetCommitish text         `json:"target_commitish"`
	Body            text         `json:"body"`
	CreatedAt       text         `json:"created_at"`
	PublishedAt     text         `json:"published_at"`
}

type deployment struct {
	ID          number       `json:"id"`
	Environment text         `json:"environment"`
	Ref         text         `json:"ref"`
	SHA         text         `json:"sha"`
	Task        text         `json:"task"`
	Description text         `json:"description"`
	Creator     obj[account] `json:"creator"`
	CreatedAt   text         `json:"created_at"`
	UpdatedAt   text         `json:"updated_at"`
}

type deploymentStatus struct {
	ID             number       `json:"id"`
	State          text         `json:"state"`
	Environment    text         `json:"environment"`
	Description    text         `json:"description"`
	TargetURL      text         `json:"target_url"`
	LogURL         text         `json:"log_url"`
	EnvironmentURL text         `json:"environment_url"`
	Creator        obj[account] `json:"creator"`
	CreatedAt      text         `json:"created_at"`
	UpdatedAt      text         `json:"updated_at"`
}

type hook struct {
	Events list[text] `json:"events"`
}

// subject is the main object of an event kind the adapter has no mapping
// for: what most GitHub objects have.
type subject struct {
	ID        number           `json:"id"`
	Number    number           `json:"number"`
	Title     text             `json:"title"`
	Name      text             `json:"name"`
	HTMLURL   text             `json:"html_url"`
	State     text             `json:"state"`
	Labels    list[obj[label]] `json:"labels"`
	CreatedAt text             `json:"created_at"`
	UpdatedAt text             `json:"updated_at"`
}

// payload is a webhook payload: the fields of every event kind the adapter
// maps. Each kind reads the ones it needs.
type payload struct {
	Action       text            `json:"action"`
	Repository   obj[repository] `json:"repository"`
	Organization obj[account]    `json:"organization"`
	Sender       obj[account]    `json:"sender"`

	Issue             obj[issue]       `json:"issue"`
	PullRequest       obj[pullRequest] `json:"pull_request"`
	Comment           obj[comment]     `json:"comment"`
	Review            obj[review]      `json:"review"`
	Label             obj[label]       `json:"label"`
	Assignee          obj[account]     `json:"assignee"`
	RequestedReviewer obj[account]     `json:"requested_reviewer"`

	Ref        text              `json:"ref"`
	RefType    text              `json:"ref_type"`
	Before     text              `json:"before"`
	After      text              `json:"after"`
	Compare    text              `json:"compare"`
	Created    truth             `json:"created"`
	Deleted    truth             `json:"deleted"`
	Forced     truth             `json:"forced"`
	BaseRef    text              `json:"base_ref"`
	Pusher     obj[gitActor]     `json:"pusher"`
	Commits    list[obj[commit]] `json:"commits"`
	HeadCommit obj[commit]       `json:"head_commit"`

	WorkflowRun obj[run] `json:"workflow_run"`
	WorkflowJob obj[run] `json:"workflow_job"`
	CheckRun    obj[run] `json:"check_run"`
	CheckSuite  obj[run] `json:"check_suite"`

	Release          obj[release]          `json:"release"`
	Forkee           obj[repository]       `json:"forkee"`
	StarredAt        text                  `json:"starred_at"`
	Deployment       obj[deployment]       `json:"deployment"`
	DeploymentStatus obj[deploymentStatus] `json:"deployment_status"`

	SHA         text `json:"sha"`
	State       text `json:"state"`
	Context     text `json:"context"`
	Description text `json:"description"`
	TargetURL   text `json:"target_url"`
	UpdatedAt   text `json:"updated_at"`
	CreatedAt   text `json:"created_at"`

	Zen    text      `json:"zen"`
	HookID number    `json:"hook_id"`
	Hook   obj[hook] `json:"hook"`
}

// has reports whether p has the object whose JSON name is field: its obj
// field, found by the tag, is ok.
func (p *payload) has(field string) bool {
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("json") == field {
			return v.Field(i).FieldByName("ok").Bool()
		}
	}
	return false
}

// decode reads a JSON payload. Only a body that is not one JSON object is
// refused; fields of unexpected types read as absent.
func decode(body []byte) (*payload, *httpapi.RequestError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, httpapi.BadRequest("the payload is empty; GitHub sends a JSON object describing the event")
	}
	if trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return nil, httpapi.BadRequest("the payload is not JSON; GitHub sends a JSON object describing the event (as the body with content type application/json, or in the payload field of a form)")
		}
		return nil, httpapi.BadRequest("the payload must be a JSON object describing the event, as GitHub sends, not %s", mcpe.DescribeJSON(trimmed))
	}
	var p payload
	if err := json.Unmarshal(trimmed, &p); err != nil {
		return nil, httpapi.BadRequest("the payload is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return &p, nil
}

// decodeSubjects reads the top-level objects of a payload by name, for
// event kinds the adapter has no mapping for. The body was decoded before,
// so it is a valid JSON object.
func decodeSubjects(body []byte) map[string]obj[subject] {
	var m map[string]obj[subject]
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	return m
}
