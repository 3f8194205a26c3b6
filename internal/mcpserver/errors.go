package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

// The error codes of SEP-3415 (provisional until the SEP is accepted).
const (
	CodeNotFound              = -32023
	CodeForbidden             = -32024
	CodeResourceExhausted     = -32025
	CodeUnsupported           = -32026
	CodeCallbackEndpointError = -32027
)

// eventsError returns a JSON-RPC error with a SEP code other than
// InvalidParams: the message is the code's name, and data says the rest.
func eventsError(code int64, data map[string]any) *jsonrpc.Error {
	name := map[int64]string{
		CodeNotFound:              "NotFound",
		CodeForbidden:             "Forbidden",
		CodeResourceExhausted:     "ResourceExhausted",
		CodeUnsupported:           "Unsupported",
		CodeCallbackEndpointError: "CallbackEndpointError",
		jsonrpc.CodeInternalError: "InternalError",
	}[code]
	e := &jsonrpc.Error{Code: code, Message: name}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return e
}

// invalidParams is the events extension's InvalidParams: it says what was
// wrong with a request and what is accepted, in its message and data.
func invalidParams(format string, args ...any) *jsonrpc.Error {
	msg := fmt.Sprintf(format, args...)
	data, _ := json.Marshal(map[string]any{"reason": msg})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "InvalidParams: " + msg, Data: data}
}

// paramsError is the plain JSON-RPC invalid-params error of the core
// methods (resources/*, conversation/*), with a message for the caller.
func paramsError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// domainError turns an error of the subscriptions domain into the SEP's.
func domainError(err error) error {
	if inv, ok := errors.AsType[*mcpe.InvalidError](err); ok {
		return invalidParams("arguments.%s", strings.TrimPrefix(inv.Error(), "filter."))
	}
	if _, ok := errors.AsType[*subscriptions.LimitError](err); ok {
		return eventsError(CodeResourceExhausted, map[string]any{"limit": "subscriptions", "reason": err.Error()})
	}
	return err
}

// rpcError turns a domain error into a paramsError whose message the
// caller can act on; other errors stay internal.
func rpcError(err error) error {
	if isInvalid(err) || errors.Is(err, subscriptions.ErrLimitReached) || errors.Is(err, subscriptions.ErrNotFound) || errors.Is(err, subscriptions.ErrExpired) {
		return paramsError("%s", err)
	}
	return err
}

// isInvalid reports whether err is an *mcpe.InvalidError, such as the
// refusal of a URL by its checks.
func isInvalid(err error) bool {
	var inv *mcpe.InvalidError
	return errors.As(err, &inv)
}

// errorObject is err as the error object of a notification or a webhook
// body: a JSON-RPC error as it is, anything else an InternalError that says
// only reason.
func errorObject(err error, reason string) map[string]any {
	e, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok {
		e = eventsError(jsonrpc.CodeInternalError, map[string]any{"reason": reason})
	}
	out := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Data) > 0 {
		out["data"] = e.Data
	}
	return out
}

// jsonData moves the data of a JSON-RPC error that is not JSON, which no
// transport can write (the stdio session, and the process, would end), into
// its message as text: the go-sdk (v1.8 mcp.ResourceNotFoundError) quotes
// a client's URI into its data with %q, which writes a control character
// as \x00 or \a.
func jsonData(err error) error {
	if je, ok := errors.AsType[*jsonrpc.Error](err); ok && len(je.Data) > 0 && !json.Valid(je.Data) {
		return &jsonrpc.Error{Code: je.Code, Message: je.Message + ": " + string(je.Data)}
	}
	return err
}
