package subscriptions

import (
	"encoding/json"
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"

	"github.com/mcpe-server/mcpe-server/mcpe"
)

// Bounds of mcpe.Filter.Where.
const (
	// MaxWhereBytes bounds the length of a condition.
	MaxWhereBytes = 1024
	// WhereCostLimit bounds, in CEL cost units, what one condition may cost
	// against one event: its estimate when it is compiled (every string,
	// list and map of the event counted as whereSizeHint long), and its
	// actual cost each time it runs, past which it does not match.
	WhereCostLimit = 1000
	whereSizeHint  = 256
)

// whereEnv declares what a condition sees of an event.
var whereEnv, _ = cel.NewEnv(cel.Variable("type", cel.StringType), cel.Variable("priority", cel.StringType),
	cel.Variable("tags", cel.ListType(cel.StringType)), cel.Variable("data", cel.MapType(cel.StringType, cel.DynType)))

// compileWhere compiles a condition and returns its program and estimated
// cost, which counts towards ServiceOptions.MaxPatternCost.
func compileWhere(text string) (cel.Program, int, error) {
	const accepted = `a CEL condition over type, priority, tags and data is accepted, e.g. data.pull_request.merged == true && "deploy" in tags`
	if len(text) > MaxWhereBytes {
		return nil, 0, invalid("filter.where", "is %d bytes long; at most %d are accepted", len(text), MaxWhereBytes)
	}
	ast, iss := whereEnv.Compile(text)
	if iss.Err() != nil {
		e, at := iss.Errors()[0], ""
		if e.Location.Line() > 0 {
			at = fmt.Sprintf("line %d, column %d: ", e.Location.Line(), e.Location.Column()+1)
		}
		return nil, 0, invalid("filter.where", "%s%s; %s", at, e.Message, accepted)
	}
	if t := ast.OutputType(); t != cel.BoolType {
		return nil, 0, invalid("filter.where", "is a %s, not a condition; %s (compare a field with == true if it holds a bool)", t, accepted)
	}
	est, err := whereEnv.EstimateCost(ast, sizeHint{})
	if err != nil || est.Max > WhereCostLimit {
		return nil, 0, invalid("filter.where", "may cost %d to evaluate against one event (each string, list and map counted as %d long), over the limit of %d; "+
			"use fewer comprehensions (all, exists, map, filter), regular expressions and string searches", est.Max, whereSizeHint, WhereCostLimit)
	}
	prg, err := whereEnv.Program(ast, cel.CostLimit(WhereCostLimit))
	if err != nil {
		return nil, 0, invalid("filter.where", "%v; %s", err, accepted)
	}
	return prg, int(est.Max), nil
}

// sizeHint sizes every value of an event at whereSizeHint.
type sizeHint struct{}

func (sizeHint) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

func (sizeHint) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Max: whereSizeHint}
}

// eventVars are the variables a condition sees, decoded once per event.
type eventVars struct {
	ev   *mcpe.Event
	vars map[string]any
}

// where reports whether prg holds for the event; an error, such as a field
// the event lacks or the cost limit, is false.
func (v *eventVars) where(prg cel.Program) bool {
	if v.vars == nil {
		var data map[string]any
		_ = json.Unmarshal(v.ev.Data, &data)
		v.vars = map[string]any{"type": v.ev.Type, "priority": string(v.ev.Metadata.Priority), "tags": v.ev.Metadata.Tags, "data": data}
	}
	out, _, err := prg.Eval(v.vars)
	return err == nil && out == types.True
}
