// Package github receives GitHub webhook deliveries on POST
// /adapters/github and publishes one event per delivery through the same
// subscriptions.Publisher as POST /v1/events, so validation, dedup and
// routing are the same as for every other way in. It serves repository,
// organization and GitHub App webhooks alike.
//
// # Receiving
//
// Every delivery must carry X-Hub-Signature-256: "sha256=" and the hex
// HMAC-SHA256 of the raw body with the webhook's secret (Options.Secret),
// compared in constant time. The signature is checked on the body as
// received, before the content type, the GitHub headers or the payload are
// looked at; a missing, malformed or wrong signature is 401 and nothing is
// published. The body is JSON (content type application/json) or a form
// (application/x-www-form-urlencoded) whose payload field holds the JSON,
// GitHub's two content types. X-GitHub-Event names the event kind;
// X-GitHub-Delivery identifies the delivery. A "ping" (sent when the
// webhook is created) is answered 200 with its zen, hook ID and subscribed
// events, and publishes nothing.
//
// # Events
//
//   - type: "github.<event>.<action>", <event> being X-GitHub-Event and
//     <action> the payload's action, each made one type segment by
//     adapters.Segment: github.issues.opened, github.pull_request.closed,
//     github.workflow_run.completed, github.issue_comment.created,
//     github.release.published. Kinds that have no action (push, create,
//     delete, fork, status) are "github.<event>": github.push. A mapped
//     kind that has actions (issues, pull_request, ...) is refused without
//     one, and a kind without actions keeps its type whatever action its
//     payload names. Kinds the adapter does not map follow the same rule:
//     github.discussion.created, github.gollum.
//   - metadata.sourceEventId: X-GitHub-Delivery. A redelivery (from the
//     webhook's Recent Deliveries, or an app's retry) has the same one, so
//     it is accepted once within the server's dedup window and answered as
//     a duplicate.
//   - metadata.timestamp: when the payload says the event happened, per
//     kind: the issue's, pull request's, comment's, run's, deployment's
//     updated_at (then created_at), a review's submitted_at, a check run's
//     or job's completed_at (then started_at), a release's published_at, a
//     push's head commit timestamp, a fork's created_at, starred_at, a
//     commit status's updated_at; the time of receipt when there is none
//     or it is not a valid RFC 3339 time between the years 0001 and 9999.
//   - metadata.tags, at most mcpe.MaxTags: "repo:<owner/name>",
//     "org:<login>" (an organization's repository or webhook),
//     "sender:<login>", "branch:<name>" (a push to refs/heads/<name>, a
//     branch created or deleted, the head branch of a workflow run, job or
//     check), then "label:<name>" for each label of the issue or pull
//     request (for kinds not mapped, of the payload's main object).
//   - metadata.priority: from labels and failures; see Priority.
//   - data: what an agent needs rather than the whole payload; see Data.
//
// # Priority
//
// The labels of the issue or pull request (for kinds not mapped, of the
// payload's main object) are looked up, in NormalizeLabel form (lower case,
// each run of punctuation and spaces made one space: "Priority: High" and
// "priority/high" are "priority high"), in Options.PriorityLabels, by
// default DefaultPriorityLabels:
//
//	critical  p0, priority p0, critical, priority critical, severity critical,
//	          sev0, sev1, blocker, priority blocker, priority critical urgent
//	high      p1, priority p1, high, priority high, high priority, severity high,
//	          urgent, priority urgent, sev2, priority important soon
//	low       p3, p4, priority p3, priority p4, low, priority low, low priority,
//	          severity low, priority backlog, priority awaiting more evidence
//
// The highest priority among the matching labels wins; no matching label is
// normal. A configured map replaces the default one. Whatever the labels
// say, a workflow run, workflow job, check run or check suite whose
// conclusion is failure, timed_out or startup_failure, and a deployment
// status or commit status whose state is failure or error, is at least
// high. Everything else is normal.
//
// # Data
//
// The data keeps GitHub's own field names and layout, with users reduced to
// their login and labels to their name, and times in RFC 3339 UTC. Every
// event has event, action (when there is one), repository {full_name,
// html_url, private}, organization and sender, then, per kind:
//
//   - issues: issue {number, title, state, state_reason, html_url, user,
//     labels, assignees, milestone, comments, body, created_at, updated_at,
//     closed_at}; label or assignee for (un)labeled and (un)assigned.
//   - pull_request: number, pull_request {number, title, state, draft,
//     merged, html_url, user, labels, assignees, requested_reviewers,
//     milestone, base_ref, head_ref, head_sha, head_repo, merged_by,
//     merged_at, merge_commit_sha, commits, additions, deletions,
//     changed_files, body, times}; label, assignee or requested_reviewer.
//   - issue_comment: issue without its body (is_pull_request when it is a
//     pull request) and comment {id, body, html_url, user, times}.
//   - pull_request_review: pull_request without its body, and review {id,
//     state, body, html_url, user, commit_id, submitted_at}.
//   - pull_request_review_comment: pull_request without its body, and
//     comment with path, line, commit_id and in_reply_to_id.
//   - commit_comment: comment with commit_id, path and line.
//   - push: ref, before, after, created, deleted, forced, base_ref,
//     compare, pusher, head_commit and commits {id, message, author,
//     author_username, url, timestamp}, at most MaxCommits of them, and
//     commit_count.
//   - create, delete: ref and ref_type.
//   - workflow_run, workflow_job, check_run, check_suite: the object of that
//     name, with those of id, name, display_title, workflow_name, run_id,
//     run_number, run_attempt, event, status, conclusion, html_url,
//     head_branch, head_sha, actor, app, title, summary, runner_name,
//     pull_requests (numbers) and times that it has.
//   - release: release {id, tag_name, name, html_url, draft, prerelease,
//     author, target_commitish, body, created_at, published_at}.
//   - fork: forkee {full_name, html_url, private}. star: starred_at.
//     watch: nothing more.
//   - deployment: deployment {id, environment, ref, sha, task, description,
//     creator, times}. deployment_status: deployment_status {id, state,
//     environment, description, target_url, log_url, environment_url,
//     creator, times} and the deployment.
//   - status: sha, state, context, description, target_url.
//   - any other kind: subject, a summary of the payload's main object (the
//     top-level object named like the event, or else its alert or
//     comment): {field, id, number, title, name, html_url, state, labels};
//     never the whole payload.
//
// Catalog lists each kind with the JSON Schema of its data and an example.
// The payload is read leniently: a field of an unexpected JSON type reads
// as absent. A mapped kind whose payload lacks its main object (an issues
// delivery without "issue") is refused. Sizes are bounded: bodies are cut
// to MaxTextBytes, titles, messages and descriptions to MaxLineBytes,
// names to MaxNameBytes, URLs to MaxURLBytes, with a cut string ending in
// "…"; at most MaxLabels labels, MaxUsers assignees or reviewers,
// MaxCommits commits and MaxPullRequests pull request numbers are kept;
// data.truncated is true when anything was cut.
//
// # Answers
//
//   - 202 {"ids": [id], "duplicates": 1 for a redelivery}: published.
//   - 200 {"zen", "hook_id", "events"}: a ping.
//   - 400: after a valid signature, a body that is not a JSON object (or a
//     form without payload), no X-GitHub-Event or X-GitHub-Delivery, or a
//     payload that does not fit its event kind; the message says what.
//   - 401: no valid X-Hub-Signature-256.
//   - 405 (not POST), 413 (body over 25 MiB), 415 (another
//     content type).
//   - 500: the event could not be stored; GitHub marks the delivery failed
//     and it can be redelivered, which the dedup then accepts once.
package github
