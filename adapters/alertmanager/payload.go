package alertmanager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpe-server/mcpe-server/adapters"
	"github.com/mcpe-server/mcpe-server/internal/httpapi"
	"github.com/mcpe-server/mcpe-server/mcpe"
)

// notification is a decoded webhook body: the fields of the group, and its
// alerts still as JSON, so that one bad alert does not spoil the others.
type notification struct {
	receiver        string
	externalURL     string
	groupKey        string
	truncatedAlerts uint64
	alerts          []json.RawMessage
}

// decode parses a webhook body. Fields it does not use (status, which each
// alert has too, groupLabels, commonLabels, commonAnnotations, and whatever
// a later Alertmanager adds) are ignored, whatever their shape.
func decode(body []byte) (*notification, *httpapi.RequestError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, httpapi.BadRequest(`the body is empty; send an Alertmanager webhook notification: a JSON object with "version": %q and "alerts"`, Version)
	}
	if trimmed[0] != '{' {
		return nil, httpapi.BadRequest(`the body must be a JSON object (an Alertmanager webhook notification with "version": %q and "alerts"), not %s`, Version, mcpe.DescribeJSON(trimmed))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, httpapi.BadRequest("the body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	var n notification
	var version string
	if raw, ok := fields["version"]; !ok || adapters.IsNull(raw) {
		return nil, httpapi.BadRequest(`version is missing; this endpoint accepts Alertmanager webhook notifications of version %q, what webhook_config sends`, Version)
	} else if json.Unmarshal(raw, &version) != nil {
		return nil, httpapi.BadRequest(`version is %s; it must be the string %q`, mcpe.DescribeJSON(raw), Version)
	}
	if version != Version {
		return nil, httpapi.BadRequest(`version %q is not supported; this endpoint accepts Alertmanager webhook notifications of version %q, what Alertmanager's webhook_config sends`, adapters.Clip(version, 64), Version)
	}
	var reqErr *httpapi.RequestError
	if n.receiver, reqErr = adapters.StringField(fields, "receiver", maxFieldBytes); reqErr != nil {
		return nil, reqErr
	}
	if n.externalURL, reqErr = adapters.StringField(fields, "externalURL", MaxURLBytes); reqErr != nil {
		return nil, reqErr
	}
	if n.groupKey, reqErr = adapters.StringField(fields, "groupKey", maxFieldBytes); reqErr != nil {
		return nil, reqErr
	}
	if raw, ok := fields["truncatedAlerts"]; ok && !adapters.IsNull(raw) && json.Unmarshal(raw, &n.truncatedAlerts) != nil {
		return nil, httpapi.BadRequest("truncatedAlerts is %s; it must be a whole number of at least 0", mcpe.DescribeJSON(raw))
	}
	raw, ok := fields["alerts"]
	if !ok || adapters.IsNull(raw) {
		return nil, httpapi.BadRequest(`alerts is missing; a notification lists its alerts in "alerts": [{"status", "labels", "annotations", "startsAt", ...}]`)
	}
	if json.Unmarshal(raw, &n.alerts) != nil {
		return nil, httpapi.BadRequest("alerts is %s; it must be an array of alert objects", mcpe.DescribeJSON(raw))
	}
	if len(n.alerts) > MaxAlerts {
		return nil, &httpapi.RequestError{
			Status: http.StatusRequestEntityTooLarge,
			Code:   httpapi.CodeBodyTooLarge,
			Message: fmt.Sprintf("the notification has %d alerts; at most %d are accepted in one. Set max_alerts: %d (or less) in Alertmanager's webhook_config",
				len(n.alerts), MaxAlerts, MaxAlerts),
		}
	}
	return &n, nil
}

// alertIn is one alert as Alertmanager sends it. Times stay text so that a
// bad one is reported in words.
type alertIn struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// decodeAlert parses one alert; the error says what is wrong with it,
// relative to the alert ("labels.team: ...").
func decodeAlert(raw json.RawMessage) (alertIn, error) {
	var in alertIn
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return in, fmt.Errorf("is %s; an alert is an object with status, labels, annotations, startsAt, endsAt, generatorURL and fingerprint", mcpe.DescribeJSON(trimmed))
	}
	if err := json.Unmarshal(trimmed, &in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return in, fmt.Errorf("%s has a JSON %s where %s is expected", typeErr.Field, typeErr.Value, wantType(typeErr.Field))
		}
		return in, fmt.Errorf("is not a valid alert: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return in, nil
}

func wantType(field string) string {
	if field == "labels" || field == "annotations" {
		return "an object of strings (Alertmanager's labels and annotations are strings)"
	}
	return "a string"
}
