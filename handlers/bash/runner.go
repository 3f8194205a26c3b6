package bash

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpe-server/mcpe-server/mcpe"
	"github.com/mcpe-server/mcpe-server/subscriptions"
)

var _ subscriptions.Handler = (*Runner)(nil)

// Runner runs bash handlers: the programs the operator allowed.
type Runner struct {
	opts Options
	// bwrap is the bubblewrap program, or "" to run without a sandbox.
	bwrap string
	// paths are what the sandbox hides and the helper it runs.
	paths sandboxPaths
	// slots holds a token per program running.
	slots chan struct{}
	// maxOutput is the output kept of a run: maxOutput unless a test sets less.
	maxOutput int
	// waitHook, when set, is called when a run starts waiting for a slot
	// (tests).
	waitHook func()
}

// New checks opts, the commands' programs and the sandbox, and returns a
// Runner. It fails when Options.Sandbox is SandboxBwrap and bubblewrap is
// missing or does not work on this system.
func New(opts *Options) (*Runner, error) {
	if !supported {
		return nil, errors.New("bash: the bash handler runs programs only on Unix systems")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	paths, err := newSandboxPaths(&o)
	if err != nil {
		return nil, err
	}
	bwrap, err := findBwrap(&o, &paths)
	if err != nil {
		return nil, err
	}
	return &Runner{opts: o, bwrap: bwrap, paths: paths, slots: make(chan struct{}, o.MaxConcurrent), maxOutput: maxOutput}, nil
}

// Sandboxed reports whether programs run under bubblewrap.
func (r *Runner) Sandboxed() bool { return r.bwrap != "" }

// Commands returns the names of the allowed commands, sorted; empty, not
// nil, when there are none.
func (r *Runner) Commands() []string {
	names := slices.AppendSeq(make([]string, 0, len(r.opts.Commands)), maps.Keys(r.opts.Commands))
	slices.Sort(names)
	return names
}

// Check tells whether spec may run: a bash handler naming an allowed
// command, with a timeout the operator allows, no unknown MCPE_* placeholder
// in its arguments, and no option among them when the command allows none.
func (r *Runner) Check(_ context.Context, _ string, spec *mcpe.HandlerSpec) error {
	if spec == nil {
		return mcpe.Invalid("handler", "is required")
	}
	if spec.Type != mcpe.HandlerBash {
		return mcpe.Invalid("handler.type", "%q is not %q; this handler runs only bash handlers", spec.Type, mcpe.HandlerBash)
	}
	c, ok := r.opts.Commands[spec.Command]
	switch {
	case !ok && len(r.opts.Commands) == 0:
		return mcpe.Invalid("handler.command", "%q is not allowed: the operator allowed no commands on this server, so bash handlers cannot run here; use another handler type or leave handler out", spec.Command)
	case !ok && spec.Command == "":
		return mcpe.Invalid("handler.command", "is required: the name of a command the operator allowed, one of %s", r.allowed())
	case !ok:
		return mcpe.Invalid("handler.command", "%q is not a command the operator allowed; use one of %s (a name, not a path or a shell line)", spec.Command, r.allowed())
	}
	switch spec.Input {
	case "", mcpe.InputStdin, mcpe.InputEnv, mcpe.InputArgs:
	default:
		return mcpe.Invalid("handler.input", "%q is not an input mode; use \"stdin\" (the event JSON on standard input, the default), \"env\" (MCPE_* variables) or \"args\" (the event JSON as the last argument)", spec.Input)
	}
	maxMS := r.opts.MaxTimeout.Milliseconds()
	if spec.Timeout < 0 || int64(spec.Timeout) > maxMS {
		return mcpe.Invalid("handler.timeout", "is %d ms; the operator allows at most %d (%v); give a smaller number of milliseconds, or leave it out for the default %v",
			spec.Timeout, maxMS, r.opts.MaxTimeout, r.opts.DefaultTimeout)
	}
	for i, a := range spec.Args {
		if name := unknownPlaceholder(a); name != "" {
			return mcpe.Invalid(fmt.Sprintf("handler.args[%d]", i), "uses $%s, which is not a variable; the placeholders are %s, written $NAME or ${NAME}", name, "$"+strings.Join(varNames, ", $"))
		}
		if strings.HasPrefix(a, "-") && !c.allowOptions() {
			return mcpe.Invalid(fmt.Sprintf("handler.args[%d]", i), "%q starts with '-': the operator allows no options for command %q; give operands only", a, spec.Command)
		}
	}
	return nil
}

// allowed lists the allowed commands, quoted.
func (r *Runner) allowed() string {
	names := r.Commands()
	for i, n := range names {
		names[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(names, ", ")
}

// Handle runs the command of inv.Spec once for inv. It never asks for a
// retry: a program that failed fails the delivery.
func (r *Runner) Handle(ctx context.Context, inv *subscriptions.Invocation) subscriptions.Outcome {
	if inv == nil {
		return subscriptions.Outcome{Err: errors.New("no invocation")}
	}
	start := r.opts.Clock.Now()
	out, err := r.handle(ctx, inv)
	log := r.opts.Logger.With("subscription_id", inv.SubscriptionID, "job_id", inv.JobID, "attempt", inv.Attempt,
		"sandbox", r.Sandboxed(), "duration", r.opts.Clock.Now().Sub(start))
	if inv.Spec != nil {
		log = log.With("command", inv.Spec.Command)
	}
	if err != nil {
		log.Info("bash handler run failed", "error", err)
	} else {
		log.Debug("bash handler run succeeded")
	}
	return subscriptions.Outcome{Output: out, Err: err}
}

func (r *Runner) handle(ctx context.Context, inv *subscriptions.Invocation) (string, error) {
	spec := inv.Spec
	if spec == nil || spec.Type != mcpe.HandlerBash {
		return "", errors.New("the invocation has no bash handler")
	}
	c, ok := r.opts.Commands[spec.Command]
	if !ok {
		return "", fmt.Errorf("command %q is not allowed by the operator (any more); the allowed commands are %s", spec.Command, r.allowed())
	}
	vars, err := variables(inv)
	if err != nil {
		return "", err
	}
	argv, err := arguments(&c, spec.Command, spec.Args, vars)
	if err != nil {
		return "", err
	}
	var stdin []byte
	input := spec.Input
	switch input {
	case "", mcpe.InputStdin:
		input = mcpe.InputStdin
		stdin = inv.Payload()
	case mcpe.InputArgs:
		argv = append(argv, string(inv.Payload()))
	case mcpe.InputEnv:
	default:
		return "", fmt.Errorf("input %q is not an input mode; use \"stdin\", \"env\" or \"args\"", spec.Input)
	}
	timeout := r.opts.DefaultTimeout
	if spec.Timeout > 0 {
		timeout = min(time.Duration(spec.Timeout)*time.Millisecond, r.opts.MaxTimeout)
	}
	// The working directory's path is not known yet: check with a
	// placeholder as long as the longest it may be.
	if err := checkSizes(argv, environ(&c, vars, input == mcpe.InputEnv, filepath.Join(r.opts.WorkRoot, workDirPrefix+"0123456789"))); err != nil {
		return "", err
	}

	if err := r.acquire(ctx); err != nil {
		return "", fmt.Errorf("not run: %w", err)
	}
	defer func() { <-r.slots }()

	wd, err := os.MkdirTemp(r.opts.WorkRoot, workDirPrefix)
	if err != nil {
		return "", fmt.Errorf("create the working directory: %w", err)
	}
	defer func() {
		if err := removeAll(wd); err != nil {
			r.opts.Logger.Warn("bash handler: cannot remove a working directory", "dir", wd, "error", err)
		}
	}()
	env := environ(&c, vars, input == mcpe.InputEnv, wd)
	return r.run(ctx, &c, argv, env, stdin, input == mcpe.InputStdin, wd, timeout)
}

// acquire takes a slot to run a program, waiting for one while ctx allows.
func (r *Runner) acquire(ctx context.Context) error {
	select {
	case r.slots <- struct{}{}:
		return nil
	default:
	}
	if r.waitHook != nil {
		r.waitHook()
	}
	select {
	case r.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
