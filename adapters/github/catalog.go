package github

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// family is one entry of the catalog: an event kind, or the event kinds
// without a mapping.
type family struct {
	// typ is the pattern listed for the event kinds without a mapping;
	// a kind the adapter maps is listed as github.<event>.<action>, or
	// github.<event> when it has no actions.
	typ string
	// event is the X-GitHub-Event of the kind, and of the example.
	event string
	// actions are those of the type's <action> GitHub sends.
	actions     string
	description string
	props       []prop
	// priority is "labels of <what>", "failure" or "" (normal).
	priority string
	// tags says which tags the kind adds to the common ones, besides a
	// tag per label when its labels set the priority.
	tags string
	// example is a payload the adapter turns into the example data;
	// $REPO, $ORG and $SENDER stand for the usual objects.
	example string
}

const (
	exampleRepo   = `{"id": 1296269, "name": "octo-repo", "full_name": "octo-org/octo-repo", "private": false, "html_url": "https://github.com/octo-org/octo-repo", "default_branch": "main"}`
	exampleOrg    = `{"login": "octo-org", "id": 6811672}`
	exampleSender = `{"login": "octocat", "id": 583231, "type": "User"}`
)

var families = []family{
	{
		event: "issues", actions: "opened edited closed reopened deleted assigned unassigned labeled unlabeled milestoned demilestoned locked unlocked pinned unpinned transferred",
		description: "An issue changed (e.g. github.issues.opened).",
		props: []prop{
			req("issue", issueSchema()),
			opt("label", str("The label added or removed, for labeled and unlabeled.")),
			opt("assignee", str("The user assigned or unassigned, for assigned and unassigned.")),
		},
		priority: "labels of the issue",
		example: `{"action": "opened", "issue": {"number": 1347, "title": "Login fails with SSO enabled", "state": "open",
			"html_url": "https://github.com/octo-org/octo-repo/issues/1347", "user": {"login": "octocat"},
			"labels": [{"name": "bug"}, {"name": "P1"}], "assignees": [{"login": "hubot"}], "comments": 0,
			"body": "Signing in through SSO returns a 500 since this morning's deploy.",
			"created_at": "2025-06-02T09:12:44Z", "updated_at": "2025-06-02T09:12:44Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "pull_request", actions: "opened edited closed reopened synchronize ready_for_review converted_to_draft review_requested review_request_removed assigned unassigned labeled unlabeled auto_merge_enabled auto_merge_disabled enqueued dequeued locked unlocked",
		description: "A pull request changed: synchronize is new commits; closed is merged or not (a merge: closed, where data.pull_request.merged == true).",
		props: []prop{
			req("number", integer("Pull request number.")),
			req("pull_request", pullRequestSchema()),
			opt("label", str("The label added or removed, for labeled and unlabeled.")),
			opt("assignee", str("The user assigned or unassigned, for assigned and unassigned.")),
			opt("requested_reviewer", str("The reviewer asked for or no longer, for review_requested and review_request_removed.")),
		},
		priority: "labels of the pull request",
		example: `{"action": "closed", "number": 1348, "pull_request": {"number": 1348, "title": "Fix SSO login redirect", "state": "closed",
			"draft": false, "merged": true, "html_url": "https://github.com/octo-org/octo-repo/pull/1348", "user": {"login": "octocat"},
			"labels": [{"name": "bug"}], "assignees": [], "requested_reviewers": [], "body": "Fixes #1347.",
			"base": {"ref": "main", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
			"head": {"ref": "fix-sso", "sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6", "repo": {"full_name": "octo-org/octo-repo"}},
			"merged_by": {"login": "hubot"}, "merged_at": "2025-06-02T11:40:05Z", "merge_commit_sha": "7638417db6d59f3c431d3e1f261cc637155684cd",
			"commits": 2, "additions": 14, "deletions": 3, "changed_files": 2,
			"created_at": "2025-06-02T10:01:13Z", "updated_at": "2025-06-02T11:40:06Z", "closed_at": "2025-06-02T11:40:05Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "issue_comment", actions: "created edited deleted",
		description: "A comment on an issue or pull request (issue.is_pull_request) was created, edited or deleted " +
			"(e.g. github.issue_comment.created).",
		props: []prop{
			req("issue", issueSchema()),
			req("comment", commentSchema("The comment.")),
		},
		priority: "labels of the issue",
		example: `{"action": "created", "issue": {"number": 1348, "title": "Fix SSO login redirect", "state": "open",
			"html_url": "https://github.com/octo-org/octo-repo/pull/1348", "user": {"login": "octocat"}, "labels": [{"name": "bug"}],
			"assignees": [], "comments": 3, "pull_request": {"url": "https://api.github.com/repos/octo-org/octo-repo/pulls/1348"},
			"created_at": "2025-06-02T10:01:13Z", "updated_at": "2025-06-02T10:30:27Z"},
			"comment": {"id": 2154773, "body": "Could you add a test for the redirect?", "user": {"login": "hubot"},
			"html_url": "https://github.com/octo-org/octo-repo/pull/1348#issuecomment-2154773",
			"created_at": "2025-06-02T10:30:27Z", "updated_at": "2025-06-02T10:30:27Z"},
			"repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "pull_request_review", actions: "submitted edited dismissed",
		description: "A review of a pull request was submitted, edited or dismissed; review.state is approved, changes_requested or commented.",
		props: []prop{
			req("pull_request", pullRequestSchema()),
			req("review", object("The review.",
				opt("id", integer("Review ID.")),
				opt("state", str("approved, changes_requested, commented or dismissed.")),
				opt("body", str("Its text (Markdown), cut to 4096 bytes.")),
				opt("html_url", str("Web page of the review.")),
				opt("user", str("Login of the reviewer.")),
				opt("commit_id", str("Commit reviewed.")),
				opt("submitted_at", dateTime("When it was submitted.")),
			)),
		},
		priority: "labels of the pull request",
		example: `{"action": "submitted", "review": {"id": 80, "state": "approved", "body": "Looks good.", "user": {"login": "hubot"},
			"html_url": "https://github.com/octo-org/octo-repo/pull/1348#pullrequestreview-80",
			"commit_id": "e5bd3914e2e596debea16f433f57875b5b90bcd6", "submitted_at": "2025-06-02T11:02:51Z"},
			"pull_request": {"number": 1348, "title": "Fix SSO login redirect", "state": "open", "draft": false, "merged": false,
			"html_url": "https://github.com/octo-org/octo-repo/pull/1348", "user": {"login": "octocat"}, "labels": [], "assignees": [],
			"base": {"ref": "main"}, "head": {"ref": "fix-sso", "sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6"},
			"created_at": "2025-06-02T10:01:13Z", "updated_at": "2025-06-02T11:02:51Z"},
			"repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "pull_request_review_comment", actions: "created edited deleted",
		description: "A comment on a line of a pull request's diff was created, edited or deleted.",
		props: []prop{
			req("pull_request", pullRequestSchema()),
			req("comment", commentSchema("The comment, with the file, line and commit it is on.")),
		},
		priority: "labels of the pull request",
		example: `{"action": "created", "comment": {"id": 1794, "body": "This should check the state parameter too.", "path": "auth/sso.go",
			"line": 42, "commit_id": "e5bd3914e2e596debea16f433f57875b5b90bcd6", "user": {"login": "hubot"},
			"html_url": "https://github.com/octo-org/octo-repo/pull/1348#discussion_r1794",
			"created_at": "2025-06-02T10:55:02Z", "updated_at": "2025-06-02T10:55:02Z"},
			"pull_request": {"number": 1348, "title": "Fix SSO login redirect", "state": "open", "draft": false,
			"html_url": "https://github.com/octo-org/octo-repo/pull/1348", "user": {"login": "octocat"}, "labels": [], "assignees": [],
			"base": {"ref": "main"}, "head": {"ref": "fix-sso", "sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6"}},
			"repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "commit_comment", actions: "created",
		description: "A comment on a commit was created (github.commit_comment.created; GitHub sends no other action).",
		props:       []prop{req("comment", commentSchema("The comment, with the commit (and file and line) it is on."))},
		example: `{"action": "created", "comment": {"id": 33548674, "body": "This broke the nightly build.",
			"commit_id": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "user": {"login": "hubot"},
			"html_url": "https://github.com/octo-org/octo-repo/commit/6dcb09b5b57875f334f61aebed695e2e4193db5e#commitcomment-33548674",
			"created_at": "2025-06-02T12:00:00Z", "updated_at": "2025-06-02T12:00:00Z"},
			"repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "push",
		description: "Commits were pushed to a branch or tag, or one was created or deleted (created, deleted) or force-pushed (forced); " +
			"ref is \"refs/heads/<branch>\" or \"refs/tags/<tag>\".",
		props: []prop{
			req("ref", str("The full ref pushed, such as \"refs/heads/main\".")),
			opt("before", str("SHA the ref pointed at before (all zeros when created).")),
			opt("after", str("SHA the ref points at now (all zeros when deleted).")),
			req("created", boolean("Whether the push created the ref.")),
			req("deleted", boolean("Whether the push deleted the ref.")),
			req("forced", boolean("Whether it was a force push.")),
			opt("base_ref", str("For a tag pushed, the branch it was pushed from, when GitHub knows it.")),
			opt("compare", str("Web page comparing before and after.")),
			opt("pusher", str("Name of who pushed.")),
			opt("head_commit", commitSchema("The commit the ref points at now.")),
			req("commits", array("The commits pushed, oldest first, at most 20.", commitSchema("A commit."), MaxCommits)),
			req("commit_count", integer("How many commits the push payload listed (GitHub lists at most 2048).")),
		},
		tags: "; branch:<name> for a branch",
		example: `{"ref": "refs/heads/main", "before": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "after": "7638417db6d59f3c431d3e1f261cc637155684cd",
			"created": false, "deleted": false, "forced": false, "base_ref": null,
			"compare": "https://github.com/octo-org/octo-repo/compare/6dcb09b5b578...7638417db6d5",
			"commits": [{"id": "7638417db6d59f3c431d3e1f261cc637155684cd", "message": "Fix SSO login redirect (#1348)",
			"timestamp": "2025-06-02T13:40:05+02:00", "url": "https://github.com/octo-org/octo-repo/commit/7638417db6d59f3c431d3e1f261cc637155684cd",
			"author": {"name": "Mona Octocat", "email": "octocat@github.com", "username": "octocat"}}],
			"head_commit": {"id": "7638417db6d59f3c431d3e1f261cc637155684cd", "message": "Fix SSO login redirect (#1348)",
			"timestamp": "2025-06-02T13:40:05+02:00", "url": "https://github.com/octo-org/octo-repo/commit/7638417db6d59f3c431d3e1f261cc637155684cd",
			"author": {"name": "Mona Octocat", "email": "octocat@github.com", "username": "octocat"}},
			"pusher": {"name": "octocat", "email": "octocat@github.com"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event:       "create",
		description: "A branch or tag was created (ref_type says which).",
		props: []prop{
			req("ref", str("The branch or tag name, such as \"v1.4.0\" (not a full ref).")),
			req("ref_type", str("branch or tag.")),
		},
		tags:    "; branch:<name> for a branch",
		example: `{"ref": "v1.4.0", "ref_type": "tag", "master_branch": "main", "description": null, "pusher_type": "user", "repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event:       "delete",
		description: "A branch or tag was deleted (ref_type says which).",
		props: []prop{
			req("ref", str("The branch or tag name, such as \"fix-sso\" (not a full ref).")),
			req("ref_type", str("branch or tag.")),
		},
		tags:    "; branch:<name> for a branch",
		example: `{"ref": "fix-sso", "ref_type": "branch", "pusher_type": "user", "repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "workflow_run", actions: "requested in_progress completed",
		description: "A GitHub Actions workflow run was requested, is in_progress or completed; on completed, workflow_run.conclusion " +
			"says success, failure, cancelled, ... (e.g. github.workflow_run.completed).",
		props:    []prop{req("workflow_run", runSchema("The workflow run."))},
		priority: "failure",
		tags:     "; branch:<head_branch>",
		example: `{"action": "completed", "workflow_run": {"id": 9301842612, "name": "CI", "display_title": "Fix SSO login redirect (#1348)",
			"run_number": 812, "run_attempt": 1, "event": "push", "status": "completed", "conclusion": "failure",
			"html_url": "https://github.com/octo-org/octo-repo/actions/runs/9301842612", "head_branch": "main",
			"head_sha": "7638417db6d59f3c431d3e1f261cc637155684cd", "actor": {"login": "octocat"}, "pull_requests": [],
			"created_at": "2025-06-02T11:40:12Z", "updated_at": "2025-06-02T11:47:58Z", "run_started_at": "2025-06-02T11:40:12Z"},
			"workflow": {"id": 161335, "name": "CI", "path": ".github/workflows/ci.yml"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "workflow_job", actions: "queued waiting in_progress completed",
		description: "A job of a GitHub Actions workflow run is queued, waiting, in_progress or completed (see workflow_job.conclusion).",
		props:       []prop{req("workflow_job", runSchema("The job."))},
		priority:    "failure",
		tags:        "; branch:<head_branch>",
		example: `{"action": "completed", "workflow_job": {"id": 25621890113, "run_id": 9301842612, "workflow_name": "CI", "name": "test (ubuntu-latest)",
			"run_attempt": 1, "status": "completed", "conclusion": "failure",
			"html_url": "https://github.com/octo-org/octo-repo/actions/runs/9301842612/job/25621890113", "head_branch": "main",
			"head_sha": "7638417db6d59f3c431d3e1f261cc637155684cd", "runner_name": "GitHub Actions 12",
			"created_at": "2025-06-02T11:40:14Z", "started_at": "2025-06-02T11:40:20Z", "completed_at": "2025-06-02T11:47:51Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "check_run", actions: "created completed rerequested requested_action",
		description: "A check run (one check of a commit, by GitHub Actions or another app) was created, completed, rerequested or requested_action.",
		props:       []prop{req("check_run", runSchema("The check run."))},
		priority:    "failure",
		tags:        "; branch:<head_branch>",
		example: `{"action": "completed", "check_run": {"id": 128620228, "name": "lint", "status": "completed", "conclusion": "success",
			"head_sha": "7638417db6d59f3c431d3e1f261cc637155684cd", "html_url": "https://github.com/octo-org/octo-repo/runs/128620228",
			"started_at": "2025-06-02T11:40:20Z", "completed_at": "2025-06-02T11:41:02Z",
			"output": {"title": "No lint errors", "summary": "golangci-lint found nothing to report."},
			"check_suite": {"id": 118578147, "head_branch": "main"}, "app": {"slug": "github-actions", "name": "GitHub Actions"},
			"pull_requests": []}, "repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "check_suite", actions: "requested rerequested completed",
		description: "The checks of a commit by one app were requested, rerequested or completed (see check_suite.conclusion).",
		props:       []prop{req("check_suite", runSchema("The check suite."))},
		priority:    "failure",
		tags:        "; branch:<head_branch>",
		example: `{"action": "completed", "check_suite": {"id": 118578147, "head_branch": "fix-sso", "head_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
			"status": "completed", "conclusion": "success", "app": {"slug": "github-actions", "name": "GitHub Actions"},
			"pull_requests": [{"number": 1348}], "created_at": "2025-06-02T10:01:20Z", "updated_at": "2025-06-02T10:09:41Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "release", actions: "published unpublished created edited deleted prereleased released",
		description: "A release was published, unpublished, created, edited, deleted, prereleased or released " +
			"(e.g. github.release.published, sent once a release is public).",
		props: []prop{req("release", releaseSchema())},
		example: `{"action": "published", "release": {"id": 1, "tag_name": "v1.4.0", "name": "v1.4.0", "draft": false, "prerelease": false,
			"html_url": "https://github.com/octo-org/octo-repo/releases/tag/v1.4.0", "author": {"login": "octocat"}, "target_commitish": "main",
			"body": "## What's changed\n* Fix SSO login redirect by @octocat in #1348",
			"created_at": "2025-06-02T14:00:00Z", "published_at": "2025-06-02T14:05:00Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event:       "fork",
		description: "Someone forked the repository; forkee is the new fork.",
		props:       []prop{req("forkee", repoSchema("The new fork."))},
		example: `{"forkee": {"id": 1296270, "full_name": "hubot/octo-repo", "private": false, "html_url": "https://github.com/hubot/octo-repo",
			"created_at": "2025-06-02T15:00:00Z"}, "repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "star", actions: "created deleted",
		description: "Someone starred (created) or unstarred (deleted) the repository.",
		props:       []prop{opt("starred_at", dateTime("When it was starred; absent for deleted."))},
		example:     `{"action": "created", "starred_at": "2025-06-02T15:10:00Z", "repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "watch", actions: "started",
		description: "Someone starred the repository: github.watch.started, GitHub's older name for a star (watching is not reported).",
		example:     `{"action": "started", "repository": $REPO, "organization": $ORG, "sender": {"login": "hubot"}}`,
	},
	{
		event: "deployment", actions: "created",
		description: "A deployment was created, to an environment such as production (github.deployment.created; GitHub sends no other action).",
		props:       []prop{req("deployment", deploymentSchema())},
		example: `{"action": "created", "deployment": {"id": 145988746, "environment": "production", "ref": "main",
			"sha": "7638417db6d59f3c431d3e1f261cc637155684cd", "task": "deploy", "description": "Deploy v1.4.0", "creator": {"login": "octocat"},
			"created_at": "2025-06-02T14:10:00Z", "updated_at": "2025-06-02T14:10:00Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event: "deployment_status", actions: "created",
		description: "A deployment's status changed (github.deployment_status.created); deployment_status.state is queued, in_progress, success, failure, error, inactive or pending.",
		props: []prop{
			req("deployment_status", deploymentStatusSchema()),
			opt("deployment", deploymentSchema()),
		},
		priority: "failure",
		example: `{"action": "created", "deployment_status": {"id": 209916254, "state": "failure", "environment": "production",
			"description": "Health check failed after rollout", "log_url": "https://github.com/octo-org/octo-repo/actions/runs/9301900001",
			"environment_url": "https://octo-repo.example.com", "creator": {"login": "octocat"},
			"created_at": "2025-06-02T14:16:30Z", "updated_at": "2025-06-02T14:16:30Z"},
			"deployment": {"id": 145988746, "environment": "production", "ref": "main", "sha": "7638417db6d59f3c431d3e1f261cc637155684cd",
			"task": "deploy", "creator": {"login": "octocat"}, "created_at": "2025-06-02T14:10:00Z", "updated_at": "2025-06-02T14:16:30Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		event:       "status",
		description: "The status of a commit changed (commit statuses set by outside CI such as Jenkins or CircleCI); state is pending, success, failure or error.",
		props: []prop{
			req("sha", str("The commit.")),
			req("state", str("pending, success, failure or error.")),
			opt("context", str("Which check set it, such as \"ci/circleci: build\".")),
			opt("description", str("Its description.")),
			opt("target_url", str("Link to the details.")),
		},
		priority: "failure",
		example: `{"id": 214015194, "sha": "7638417db6d59f3c431d3e1f261cc637155684cd", "state": "failure", "context": "ci/jenkins: build",
			"description": "Build #411 failed", "target_url": "https://ci.example.com/job/octo-repo/411/",
			"branches": [{"name": "main"}], "created_at": "2025-06-02T11:52:00Z", "updated_at": "2025-06-02T11:52:00Z",
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		typ:   "github.<event>.<action>",
		event: "discussion",
		description: "Any other GitHub event with an action (discussion, label, milestone, member, repository, dependabot_alert, " +
			"code_scanning_alert, secret_scanning_alert, ...): <event> is X-GitHub-Event and <action> the payload's action; data.subject " +
			"summarizes the payload's main object.",
		props:    []prop{opt("subject", subjectSchema())},
		priority: "labels of the main object",
		example: `{"action": "created", "discussion": {"id": 6458523, "number": 91, "title": "Roadmap for v2", "state": "open",
			"html_url": "https://github.com/octo-org/octo-repo/discussions/91", "labels": [], "user": {"login": "octocat"},
			"created_at": "2025-06-02T16:00:00Z", "updated_at": "2025-06-02T16:00:00Z"},
			"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
	{
		typ:         "github.<event>",
		event:       "public",
		description: "Any other GitHub event without an action (gollum, public, page_build, ...); data as for github.<event>.<action>.",
		props:       []prop{opt("subject", subjectSchema())},
		example:     `{"repository": $REPO, "organization": $ORG, "sender": $SENDER}`,
	},
}

// Placeholders are the values of <event> (github.<event>.<action>, github.<event>): the X-GitHub-Event
// names in GitHub's "Webhook events and payloads" (docs.github.com/en/webhooks/webhook-events-and-payloads),
// ping excepted, which publishes nothing.
var Placeholders = map[string][]string{"<event>": strings.Fields(`branch_protection_configuration branch_protection_rule check_run check_suite code_scanning_alert commit_comment create custom_property custom_property_values delete dependabot_alert
	deploy_key deployment deployment_protection_rule deployment_review deployment_status discussion discussion_comment fork github_app_authorization gollum installation installation_repositories
	installation_target issue_comment issue_dependencies issues label marketplace_purchase member membership merge_group meta milestone org_block organization package page_build
	personal_access_token_request project project_card project_column projects_v2 projects_v2_item projects_v2_status_update public pull_request pull_request_review pull_request_review_comment
	pull_request_review_thread push registry_package release repository repository_advisory repository_dispatch repository_import repository_ruleset repository_vulnerability_alert
	secret_scanning_alert secret_scanning_alert_location secret_scanning_scan security_advisory security_and_analysis sponsorship star status sub_issues team team_add watch workflow_dispatch
	workflow_job workflow_run`)}

// pattern returns the type or pattern the family lists.
func (f family) pattern() string {
	switch {
	case f.typ != "":
		return f.typ
	case f.actions != "":
		return "github." + f.event + ".<action>"
	}
	return "github." + f.event
}

// commonTags are the tags every event may have.
const commonTags = "repo:<owner/name>; org:<login> in an organization; sender:<login>"

// failureText says how a failure sets the priority.
const failureText = "high when the run or check concludes failure, timed_out or startup_failure, or the status is failure or error; otherwise normal"

// buildCatalog returns the adapter's event types, with examples made by
// the adapter itself from the families' example payloads.
func (a *Adapter) buildCatalog() []mcpe.EventType {
	out := make([]mcpe.EventType, 0, len(families))
	for _, f := range families {
		typ, priority, tags := f.pattern(), "normal", commonTags+f.tags
		switch {
		case f.priority == "failure":
			priority = failureText
		case strings.HasPrefix(f.priority, "labels of "):
			priority = a.priorityText(strings.TrimPrefix(f.priority, "labels of "))
			tags += "; label:<name> for each of its labels"
		}
		var types []string
		for _, act := range strings.Fields(f.actions) {
			types = append(types, strings.TrimSuffix(typ, "<action>")+act)
		}
		out = append(out, mcpe.EventType{
			Types:       types,
			Type:        typ,
			Description: f.description,
			DataSchema:  dataSchema("Data of "+typ+".", f.props...),
			Example:     a.example(f),
			Priority:    priority,
			Tags:        tags,
		})
	}
	return out
}

// example turns the family's example payload into data.
func (a *Adapter) example(f family) json.RawMessage {
	body := strings.NewReplacer("$REPO", exampleRepo, "$ORG", exampleOrg, "$SENDER", exampleSender).Replace(f.example)
	p, reqErr := decode([]byte(body))
	if reqErr != nil {
		panic("github: the catalog example of " + f.pattern() + " is not a payload: " + reqErr.Message)
	}
	ev, err := a.event(f.event, "example", p, []byte(body), time.Time{})
	if err != nil {
		panic("github: the catalog example of " + f.pattern() + " is not valid: " + err.Error())
	}
	return ev.Data
}

// Catalog lists the event types the adapter emits: one entry per event
// kind it maps (a pattern such as github.issues.<action> for a kind with
// actions), and github.<event>.<action> and github.<event> for the others.
func (a *Adapter) Catalog() []mcpe.EventType { return slices.Clone(a.catalog) }
