package bash

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkRun measures a whole run of /bin/true: working directory,
// standard input, process, output and clean-up.
func BenchmarkRun(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true program")
	}
	for _, sandbox := range []string{SandboxOff, SandboxBwrap} {
		name := map[string]string{SandboxOff: "plain", SandboxBwrap: "bwrap"}[sandbox]
		b.Run(name, func(b *testing.B) {
			if sandbox == SandboxBwrap {
				needBwrap(b)
			}
			r := newRunner(b, Options{Sandbox: sandbox, Commands: map[string]Command{"true": {Path: truePath}}})
			inv := eventInv(bashSpec("true", "", "$MCPE_EVENT_ID"), event(b, map[string]any{"number": 42}))
			ctx := context.Background()
			for b.Loop() {
				if out := r.Handle(ctx, inv); out.Err != nil {
					b.Fatal(out.Err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
