package github

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// The JSON Schemas of the events' data, one per event kind, written to
// match the types of data.go (a test holds them together). Every object is
// closed (additionalProperties false), so a schema says all that the data
// may hold.

// prop is one property of an object schema.
type prop struct {
	name     string
	schema   *jsonschema.Schema
	required bool
}

func req(name string, s *jsonschema.Schema) prop { return prop{name, s, true} }
func opt(name string, s *jsonschema.Schema) prop { return prop{name, s, false} }

func object(desc string, props ...prop) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Description:          desc,
		Properties:           make(map[string]*jsonschema.Schema, len(props)),
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	for _, p := range props {
		s.Properties[p.name] = p.schema
		s.PropertyOrder = append(s.PropertyOrder, p.name)
		if p.required {
			s.Required = append(s.Required, p.name)
		}
	}
	return s
}

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func dateTime(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Format: "date-time", Description: desc}
}

func integer(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: desc}
}

func boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}

func array(desc string, items *jsonschema.Schema, max int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: items, MaxItems: &max}
}

func stringList(desc string, max int) *jsonschema.Schema {
	return array(desc, &jsonschema.Schema{Type: "string"}, max)
}

// commonProps are the properties every event's data starts with.
func commonProps() []prop {
	return []prop{
		req("event", str("The X-GitHub-Event of the delivery, such as \"issues\" or \"push\".")),
		opt("action", str("The payload's action, such as \"opened\" or \"completed\"; absent for events without one.")),
		opt("repository", repoSchema("The repository the event happened in.")),
		opt("organization", str("Login of the organization, for events in an organization's repository or organization webhooks.")),
		opt("sender", str("Login of the user (or app, ending in \"[bot]\") who caused the event.")),
	}
}

var truncatedProp = opt("truncated", &jsonschema.Schema{Const: ptr[any](true), Description: "Present when a string or list was cut to the adapter's limits; cut strings end in \"…\"."})

func ptr[T any](v T) *T { return &v }

func repoSchema(desc string) *jsonschema.Schema {
	return object(desc,
		req("full_name", str("owner/name.")),
		opt("html_url", str("Web page of the repository.")),
		req("private", boolean("Whether the repository is private.")),
	)
}

func issueSchema() *jsonschema.Schema {
	return object("The issue.",
		req("number", integer("Issue number.")),
		req("title", str("Title.")),
		opt("state", str("open or closed.")),
		opt("state_reason", str("Why it was closed or reopened: completed, not_planned, reopened.")),
		opt("html_url", str("Web page of the issue.")),
		opt("user", str("Login of its author.")),
		req("labels", stringList("Names of its labels.", MaxLabels)),
		req("assignees", stringList("Logins of its assignees.", MaxUsers)),
		opt("milestone", str("Title of its milestone.")),
		opt("comments", integer("How many comments it has.")),
		opt("is_pull_request", &jsonschema.Schema{Const: ptr[any](true), Description: "Present when the issue is a pull request (pull requests are issues on GitHub)."}),
		opt("body", str("Its text (Markdown), cut to 4096 bytes; left out in comment events.")),
		opt("created_at", dateTime("When it was opened.")),
		opt("updated_at", dateTime("When it last changed.")),
		opt("closed_at", dateTime("When it was closed.")),
	)
}

func pullRequestSchema() *jsonschema.Schema {
	return object("The pull request.",
		req("number", integer("Pull request number.")),
		req("title", str("Title.")),
		opt("state", str("open or closed; see merged.")),
		req("draft", boolean("Whether it is a draft.")),
		req("merged", boolean("Whether it was merged; a closed pull request that is not merged was closed without merging.")),
		opt("html_url", str("Web page of the pull request.")),
		opt("user", str("Login of its author.")),
		req("labels", stringList("Names of its labels.", MaxLabels)),
		req("assignees", stringList("Logins of its assignees.", MaxUsers)),
		opt("requested_reviewers", stringList("Logins of the reviewers asked for.", MaxUsers)),
		opt("milestone", str("Title of its milestone.")),
		opt("base_ref", str("Branch it merges into.")),
		opt("head_ref", str("Branch it merges from.")),
		opt("head_sha", str("Commit at the head of that branch.")),
		opt("head_repo", str("owner/name of the repository of the head branch (another one for a pull request from a fork).")),
		opt("merged_by", str("Login of who merged it.")),
		opt("merged_at", dateTime("When it was merged.")),
		opt("merge_commit_sha", str("The merge commit, once merged.")),
		opt("commits", integer("Number of commits.")),
		opt("additions", integer("Lines added.")),
		opt("deletions", integer("Lines removed.")),
		opt("changed_files", integer("Files changed.")),
		opt("body", str("Its description (Markdown), cut to 4096 bytes; left out in review events.")),
		opt("created_at", dateTime("When it was opened.")),
		opt("updated_at", dateTime("When it last changed.")),
		opt("closed_at", dateTime("When it was closed or merged.")),
	)
}

func commentSchema(desc string) *jsonschema.Schema {
	return object(desc,
		opt("id", integer("Comment ID.")),
		req("body", str("Its text (Markdown), cut to 4096 bytes.")),
		opt("html_url", str("Web page of the comment.")),
		opt("user", str("Login of its author.")),
		opt("path", str("File it is on, for comments on code.")),
		opt("line", integer("Line it is on, for comments on code.")),
		opt("commit_id", str("Commit it is on, for comments on code.")),
		opt("in_reply_to_id", integer("ID of the review comment it replies to.")),
		opt("created_at", dateTime("When it was written.")),
		opt("updated_at", dateTime("When it was last edited.")),
	)
}

func commitSchema(desc string) *jsonschema.Schema {
	return object(desc,
		req("id", str("Commit SHA.")),
		req("message", str("Commit message, cut to 1024 bytes.")),
		opt("author", str("Name of its author.")),
		opt("author_username", str("GitHub login of its author, when GitHub knows it.")),
		opt("url", str("Web page of the commit.")),
		opt("timestamp", dateTime("When it was authored.")),
	)
}

// runSchema describes a workflow run, workflow job, check run or check
// suite; each has a part of the properties.
func runSchema(desc string) *jsonschema.Schema {
	return object(desc,
		opt("id", integer("ID.")),
		opt("name", str("Name (of the workflow, job or check).")),
		opt("display_title", str("Title of a workflow run, such as the commit message or pull request title.")),
		opt("workflow_name", str("Workflow of a job.")),
		opt("run_id", integer("Workflow run of a job.")),
		opt("run_number", integer("Run number of a workflow run.")),
		opt("run_attempt", integer("Attempt (1, then 2 for the first re-run, ...).")),
		opt("event", str("What triggered a workflow run: push, pull_request, schedule, workflow_dispatch, ...")),
		opt("status", str("queued, in_progress, completed, waiting, requested or pending.")),
		opt("conclusion", str("Once completed: success, failure, neutral, cancelled, skipped, timed_out, action_required, stale or startup_failure.")),
		opt("html_url", str("Web page (for a check run from an app, its details URL).")),
		opt("head_branch", str("Branch it ran on.")),
		opt("head_sha", str("Commit it ran on.")),
		opt("actor", str("Login of who triggered a workflow run.")),
		opt("app", str("Name of the app of a check run or suite, such as \"GitHub Actions\".")),
		opt("title", str("Title of a check run's output.")),
		opt("summary", str("Summary of a check run's output (Markdown), cut to 1024 bytes.")),
		opt("runner_name", str("Runner of a job.")),
		opt("pull_requests", array("Numbers of the pull requests it ran for.", &jsonschema.Schema{Type: "integer"}, MaxPullRequests)),
		opt("created_at", dateTime("When it was created.")),
		opt("updated_at", dateTime("When it last changed.")),
		opt("started_at", dateTime("When it started.")),
		opt("completed_at", dateTime("When it completed.")),
	)
}

func releaseSchema() *jsonschema.Schema {
	return object("The release.",
		opt("id", integer("Release ID.")),
		req("tag_name", str("Its tag, such as \"v1.2.0\".")),
		opt("name", str("Its title.")),
		opt("html_url", str("Web page of the release.")),
		req("draft", boolean("Whether it is a draft.")),
		req("prerelease", boolean("Whether it is marked as a pre-release.")),
		opt("author", str("Login of who created it.")),
		opt("target_commitish", str("Branch or commit the tag points at.")),
		opt("body", str("Release notes (Markdown), cut to 4096 bytes.")),
		opt("created_at", dateTime("When it was created.")),
		opt("published_at", dateTime("When it was published.")),
	)
}

func deploymentSchema() *jsonschema.Schema {
	return object("The deployment.",
		opt("id", integer("Deployment ID.")),
		opt("environment", str("Environment, such as \"production\".")),
		opt("ref", str("Branch, tag or SHA deployed.")),
		opt("sha", str("Commit deployed.")),
		opt("task", str("Task, such as \"deploy\".")),
		opt("description", str("Description.")),
		opt("creator", str("Login of who created it.")),
		opt("created_at", dateTime("When it was created.")),
		opt("updated_at", dateTime("When it last changed.")),
	)
}

func deploymentStatusSchema() *jsonschema.Schema {
	return object("The new status of the deployment.",
		opt("id", integer("Status ID.")),
		req("state", str("error, failure, inactive, in_progress, queued, pending or success.")),
		opt("environment", str("Environment, such as \"production\".")),
		opt("description", str("Description.")),
		opt("target_url", str("Link to the deployment's output.")),
		opt("log_url", str("Link to the deployment's log.")),
		opt("environment_url", str("Link to the deployed environment.")),
		opt("creator", str("Login of who set the status.")),
		opt("created_at", dateTime("When it was set.")),
		opt("updated_at", dateTime("When it last changed.")),
	)
}

func subjectSchema() *jsonschema.Schema {
	return object("The payload's main object: the top-level object named like the event, or else its alert or comment; absent when it has none.",
		req("field", str("Which top-level field of the payload it is, such as \"discussion\" or \"alert\".")),
		opt("id", integer("Its id.")),
		opt("number", integer("Its number.")),
		opt("title", str("Its title.")),
		opt("name", str("Its name.")),
		opt("html_url", str("Its web page.")),
		opt("state", str("Its state.")),
		opt("labels", stringList("Names of its labels.", MaxLabels)),
	)
}

// dataSchema returns the schema of an event's data: the common properties,
// then props, then truncated.
func dataSchema(desc string, props ...prop) json.RawMessage {
	all := append(commonProps(), props...)
	all = append(all, truncatedProp)
	s := object(desc, all...)
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	raw, err := json.Marshal(s)
	if err != nil {
		panic("github: data schema: " + err.Error())
	}
	return raw
}
