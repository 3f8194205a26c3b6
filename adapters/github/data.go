package github

// The data of the events. Each kind keeps the fields an agent needs, under
// GitHub's own names and in GitHub's own layout (issue, pull_request,
// comment, ... objects; push fields at the top), with users made their
// login and labels their name. Times are RFC 3339 in UTC.

// common starts the data of every event.
type common struct {
	Event        string    `json:"event"`
	Action       string    `json:"action,omitempty"`
	Repository   *repoData `json:"repository,omitempty"`
	Organization string    `json:"organization,omitempty"`
	Sender       string    `json:"sender,omitempty"`
}

type repoData struct {
	FullName string `json:"full_name"`
	HTMLURL  string `json:"html_url,omitempty"`
	Private  bool   `json:"private"`
}

type issueData struct {
	Number        int64    `json:"number"`
	Title         string   `json:"title"`
	State         string   `json:"state,omitempty"`
	StateReason   string   `json:"state_reason,omitempty"`
	HTMLURL       string   `json:"html_url,omitempty"`
	User          string   `json:"user,omitempty"`
	Labels        []string `json:"labels"`
	Assignees     []string `json:"assignees"`
	Milestone     string   `json:"milestone,omitempty"`
	Comments      int64    `json:"comments,omitempty"`
	IsPullRequest bool     `json:"is_pull_request,omitempty"`
	Body          string   `json:"body,omitempty"`
	CreatedAt     string   `json:"created_at,omitempty"`
	UpdatedAt     string   `json:"updated_at,omitempty"`
	ClosedAt      string   `json:"closed_at,omitempty"`
}

type pullRequestData struct {
	Number             int64    `json:"number"`
	Title              string   `json:"title"`
	State              string   `json:"state,omitempty"`
	Draft              bool     `json:"draft"`
	Merged             bool     `json:"merged"`
	HTMLURL            string   `json:"html_url,omitempty"`
	User               string   `json:"user,omitempty"`
	Labels             []string `json:"labels"`
	Assignees          []string `json:"assignees"`
	RequestedReviewers []string `json:"requested_reviewers,omitempty"`
	Milestone          string   `json:"milestone,omitempty"`
	BaseRef            string   `json:"base_ref,omitempty"`
	HeadRef            string   `json:"head_ref,omitempty"`
	HeadSHA            string   `json:"head_sha,omitempty"`
	HeadRepo           string   `json:"head_repo,omitempty"`
	MergedBy           string   `json:"merged_by,omitempty"`
	MergedAt           string   `json:"merged_at,omitempty"`
	MergeCommitSHA     string   `json:"merge_commit_sha,omitempty"`
	Commits            int64    `json:"commits,omitempty"`
	Additions          int64    `json:"additions,omitempty"`
	Deletions          int64    `json:"deletions,omitempty"`
	ChangedFiles       int64    `json:"changed_files,omitempty"`
	Body               string   `json:"body,omitempty"`
	CreatedAt          string   `json:"created_at,omitempty"`
	UpdatedAt          string   `json:"updated_at,omitempty"`
	ClosedAt           string   `json:"closed_at,omitempty"`
}

type commentData struct {
	ID          int64  `json:"id,omitempty"`
	Body        string `json:"body"`
	HTMLURL     string `json:"html_url,omitempty"`
	User        string `json:"user,omitempty"`
	Path        string `json:"path,omitempty"`
	Line        int64  `json:"line,omitempty"`
	CommitID    string `json:"commit_id,omitempty"`
	InReplyToID int64  `json:"in_reply_to_id,omitempty"`
	CreatedAt   string `json:"created_at,omitempty"`
	UpdatedAt   string `json:"updated_at,omitempty"`
}

type reviewData struct {
	ID          int64  `json:"id,omitempty"`
	State       string `json:"state,omitempty"`
	Body        string `json:"body,omitempty"`
	HTMLURL     string `json:"html_url,omitempty"`
	User        string `json:"user,omitempty"`
	CommitID    string `json:"commit_id,omitempty"`
	SubmittedAt string `json:"submitted_at,omitempty"`
}

type commitData struct {
	ID             string `json:"id"`
	Message        string `json:"message"`
	Author         string `json:"author,omitempty"`
	AuthorUsername string `json:"author_username,omitempty"`
	URL            string `json:"url,omitempty"`
	Timestamp      string `json:"timestamp,omitempty"`
}

type runData struct {
	ID           int64   `json:"id,omitempty"`
	Name         string  `json:"name,omitempty"`
	DisplayTitle string  `json:"display_title,omitempty"`
	WorkflowName string  `json:"workflow_name,omitempty"`
	RunID        int64   `json:"run_id,omitempty"`
	RunNumber    int64   `json:"run_number,omitempty"`
	RunAttempt   int64   `json:"run_attempt,omitempty"`
	Event        string  `json:"event,omitempty"`
	Status       string  `json:"status,omitempty"`
	Conclusion   string  `json:"conclusion,omitempty"`
	HTMLURL      string  `json:"html_url,omitempty"`
	HeadBranch   string  `json:"head_branch,omitempty"`
	HeadSHA      string  `json:"head_sha,omitempty"`
	Actor        string  `json:"actor,omitempty"`
	App          string  `json:"app,omitempty"`
	Title        string  `json:"title,omitempty"`
	Summary      string  `json:"summary,omitempty"`
	RunnerName   string  `json:"runner_name,omitempty"`
	PullRequests []int64 `json:"pull_requests,omitempty"`
	CreatedAt    string  `json:"created_at,omitempty"`
	UpdatedAt    string  `json:"updated_at,omitempty"`
	StartedAt    string  `json:"started_at,omitempty"`
	CompletedAt  string  `json:"completed_at,omitempty"`
}

type releaseData struct {
	ID              int64  `json:"id,omitempty"`
	TagName         string `json:"tag_name"`
	Name            string `json:"name,omitempty"`
	HTMLURL         string `json:"html_url,omitempty"`
	Draft           bool   `json:"draft"`
	Prerelease      bool   `json:"prerelease"`
	Author          string `json:"author,omitempty"`
	TargetCommitish string `json:"target_commitish,omitempty"`
	Body            string `json:"body,omitempty"`
	CreatedAt       string `json:"created_at,omitempty"`
	PublishedAt     string `json:"published_at,omitempty"`
}

type deploymentData struct {
	ID          int64  `json:"id,omitempty"`
	Environment string `json:"environment,omitempty"`
	Ref         string `json:"ref,omitempty"`
	SHA         string `json:"sha,omitempty"`
	Task        string `json:"task,omitempty"`
	Description string `json:"description,omitempty"`
	Creator     string `json:"creator,omitempty"`
	CreatedAt   string `json:"created_at,omitempty"`
	UpdatedAt   string `json:"updated_at,omitempty"`
}

type deploymentStatusData struct {
	ID             int64  `json:"id,omitempty"`
	State          string `json:"state"`
	Environment    string `json:"environment,omitempty"`
	Description    string `json:"description,omitempty"`
	TargetURL      string `json:"target_url,omitempty"`
	LogURL         string `json:"log_url,omitempty"`
	EnvironmentURL string `json:"environment_url,omitempty"`
	Creator        string `json:"creator,omitempty"`
	CreatedAt      string `json:"created_at,omitempty"`
	UpdatedAt      string `json:"updated_at,omitempty"`
}

type subjectData struct {
	Field   string   `json:"field"`
	ID      int64    `json:"id,omitempty"`
	Number  int64    `json:"number,omitempty"`
	Title   string   `json:"title,omitempty"`
	Name    string   `json:"name,omitempty"`
	HTMLURL string   `json:"html_url,omitempty"`
	State   string   `json:"state,omitempty"`
	Labels  []string `json:"labels,omitempty"`
}

// tail ends the data of every event.
type tail struct {
	// Truncated is set when a string or list was cut to the adapter's
	// limits.
	Truncated bool `json:"truncated,omitempty"`
}

// eventData is the data of one event kind: common fields, the kind's own,
// and the tail.
type eventData interface {
	setCommon(common)
	setTruncated(bool)
}

func (c *common) setCommon(cm common) { *c = cm }
func (t *tail) setTruncated(cut bool) { t.Truncated = cut }

// The data of each event kind.

type issuesEvent struct {
	common
	Issue    *issueData `json:"issue"`
	Label    string     `json:"label,omitempty"`
	Assignee string     `json:"assignee,omitempty"`
	tail
}

type pullRequestEvent struct {
	common
	Number            int64            `json:"number"`
	PullRequest       *pullRequestData `json:"pull_request"`
	Label             string           `json:"label,omitempty"`
	Assignee          string           `json:"assignee,omitempty"`
	RequestedReviewer string           `json:"requested_reviewer,omitempty"`
	tail
}

type issueCommentEvent struct {
	common
	Issue   *issueData   `json:"issue"`
	Comment *commentData `json:"comment"`
	tail
}

type reviewEvent struct {
	common
	PullRequest *pullRequestData `json:"pull_request"`
	Review      *reviewData      `json:"review"`
	tail
}

type reviewCommentEvent struct {
	common
	PullRequest *pullRequestData `json:"pull_request"`
	Comment     *commentData     `json:"comment"`
	tail
}

type commitCommentEvent struct {
	common
	Comment *commentData `json:"comment"`
	tail
}

type pushEvent struct {
	common
	Ref         string       `json:"ref"`
	Before      string       `json:"before,omitempty"`
	After       string       `json:"after,omitempty"`
	Created     bool         `json:"created"`
	Deleted     bool         `json:"deleted"`
	Forced      bool         `json:"forced"`
	BaseRef     string       `json:"base_ref,omitempty"`
	Compare     string       `json:"compare,omitempty"`
	Pusher      string       `json:"pusher,omitempty"`
	HeadCommit  *commitData  `json:"head_commit,omitempty"`
	Commits     []commitData `json:"commits"`
	CommitCount int          `json:"commit_count"`
	tail
}

type refEvent struct {
	common
	Ref     string `json:"ref"`
	RefType string `json:"ref_type"`
	tail
}

type workflowRunEvent struct {
	common
	WorkflowRun *runData `json:"workflow_run"`
	tail
}

type workflowJobEvent struct {
	common
	WorkflowJob *runData `json:"workflow_job"`
	tail
}

type checkRunEvent struct {
	common
	CheckRun *runData `json:"check_run"`
	tail
}

type checkSuiteEvent struct {
	common
	CheckSuite *runData `json:"check_suite"`
	tail
}

type releaseEvent struct {
	common
	Release *releaseData `json:"release"`
	tail
}

type forkEvent struct {
	common
	Forkee *repoData `json:"forkee"`
	tail
}

type starEvent struct {
	common
	StarredAt string `json:"starred_at,omitempty"`
	tail
}

type watchEvent struct {
	common
	tail
}

type deploymentEvent struct {
	common
	Deployment *deploymentData `json:"deployment"`
	tail
}

type deploymentStatusEvent struct {
	common
	DeploymentStatus *deploymentStatusData `json:"deployment_status"`
	Deployment       *deploymentData       `json:"deployment,omitempty"`
	tail
}

type statusEvent struct {
	common
	SHA         string `json:"sha"`
	State       string `json:"state"`
	Context     string `json:"context,omitempty"`
	Description string `json:"description,omitempty"`
	TargetURL   string `json:"target_url,omitempty"`
	tail
}

type otherEvent struct {
	common
	Subject *subjectData `json:"subject,omitempty"`
	tail
}
