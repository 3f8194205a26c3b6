// Package alertmanager receives Prometheus Alertmanager webhook
// notifications on POST /adapters/alertmanager and publishes one event per
// alert through the same subscriptions.Publisher as POST /v1/events, so
// validation, dedup and routing are the same as for every other way in.
//
// Alertmanager posts a JSON notification (webhook_config, payload version
// "4") for a group of alerts. Each alert becomes one event:
//
//   - type: "alert.<alertname>.<status>", where <alertname> is the
//     alertname label made into one type segment by adapters.Segment
//     ("HighCPU Usage" becomes "HighCPU_Usage", a missing alertname
//     "unknown") and <status> is "firing" or "resolved".
//   - metadata.priority: from the severity label, compared without regard
//     to case, through Options.SeverityPriorities (by default critical ->
//     critical, warning -> high, info -> low); any other severity, or none,
//     is normal.
//   - metadata.tags: every label as "name:value", alertname, severity,
//     instance, job, namespace and service first and the others by name,
//     at most mcpe.MaxTags of them.
//   - metadata.sourceEventId: "<fingerprint>:<status>:<startsAt>" (startsAt
//     in UTC, RFC 3339). Alertmanager repeats a notification (every
//     repeat_interval, on a retry, from each member of an HA cluster) with
//     the same alert state, which is therefore accepted once within the
//     server's dedup window; the alert resolving, or firing again with a
//     new startsAt, is a new event. When an alert has no fingerprint, one is
//     derived from its labels exactly as Alertmanager does it (FNV-1a 64 of
//     the sorted names and values, as prometheus/common's
//     LabelSet.Fingerprint), so the same alert gets the same ID either way.
//   - metadata.timestamp: startsAt for a firing alert, endsAt for a resolved
//     one; the time of receipt when that is missing.
//   - data: alertname, status, labels, annotations (summary, description,
//     runbook_url, ... all of them), startsAt, endsAt (left out while the
//     alert fires: Alertmanager sends "0001-01-01T00:00:00Z"), generatorURL,
//     fingerprint, and from the notification receiver, externalURL,
//     groupKey and truncatedAlerts (when Alertmanager's max_alerts dropped
//     some of the group's alerts). Times are in UTC.
//
// Sizes are bounded: at most MaxAlerts alerts per notification, MaxLabels
// labels and MaxAnnotations annotations per alert, label names and values
// and annotation values cut to MaxNameBytes, MaxLabelValueBytes and
// MaxAnnotationValueBytes (a cut value ends in "…" and data.truncated is
// true).
//
// Answers, chosen for Alertmanager, which retries a notification on a 5xx
// answer and drops it on any other failure:
//
//   - 202 {"ids", "duplicates", "errors"}: the notification was taken. ids
//     are the events of the alerts accepted (for a repeat, the first
//     event's ID); errors lists the alerts that were refused (index,
//     alertname, message), which a retry would refuse again. The valid
//     alerts of a notification are published even when others are not.
//   - 400: the notification as a whole is unusable (not JSON, not version
//     "4", no alerts array), or every one of its alerts was refused.
//   - 401: a token is configured and the request has none or another one.
//   - 405, 413 (body over 1 MiB, more than MaxAlerts
//     alerts), 415 (not application/json).
//   - 500: an alert could not be stored. Alertmanager retries the whole
//     notification; the alerts accepted before the failure are then
//     recognised as repeats and not delivered twice.
package alertmanager
