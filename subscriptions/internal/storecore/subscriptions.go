package storecore

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// EncodeSettings returns the filter and delivery columns of sub.
func EncodeSettings(sub *subscriptions.Subscription) (filter, delivery string, err error) {
	f, err := json.Marshal(sub.Filter)
	if err != nil {
		return "", "", err
	}
	d, err := json.Marshal(Settings{sub.Delivery, sub.Label})
	if err != nil {
		return "", "", err
	}
	return string(f), string(d), nil
}

// Settings is what the delivery column holds: the delivery, and beside its
// fields the subscription's label (which needs no column of its own).
type Settings struct {
	mcpe.Delivery
	Label string `json:"label,omitempty"`
}

// ListCondition returns the WHERE condition on subscriptions (aliased s)
// that q asks for, with its arguments, numbered after mark ("?" or "$").
func ListCondition(q subscriptions.ListQuery, mark string) (string, []any) {
	var where []string
	var args []any
	if q.Principal != "" {
		args = append(args, q.Principal)
		where = append(where, fmt.Sprintf("s.principal = %s%d", mark, len(args)))
	}
	if q.Status != "" {
		args = append(args, string(q.Status))
		where = append(where, fmt.Sprintf("s.status = %s%d", mark, len(args)))
	}
	if len(where) == 0 {
		return "true", nil
	}
	return strings.Join(where, " AND "), args
}
