package fnruntime_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/fixtures"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// A script that holds more and more memory in few steps is stopped by the
// memory watchdog, with a typed error and an error result.
func TestStarlarkMemoryLimit(t *testing.T) {
	rl := starlarkList(t, `
keep = []
for i in range(100000):
    keep.append("x" * 100000 + str(i))
`)
	err := (&fnruntime.StarlarkFunction{MaxMemory: 32 << 20}).Run(context.Background(), rl)
	if !errors.Is(err, fnruntime.ErrMemoryLimit) {
		t.Fatalf("got %v, want ErrMemoryLimit", err)
	}
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("got %T, want a *pipeline.FunctionError", err)
	}
	if len(rl.Results) != 1 || !strings.Contains(rl.Results[0].Message, "memory limit of 33554432 bytes") {
		t.Errorf("results = %v, want the memory limit", rl.Results)
	}
}

// The watchdog does not stop a script that stays under its bound, nor one
// that makes much garbage but holds little.
func TestStarlarkMemoryLimitGarbage(t *testing.T) {
	rl := starlarkList(t, `
n = 0
for i in range(300):
    s = "x" * 100000 + str(i)
    n += len(s)
ctx.resource_list["items"][0]["data"]["n"] = n
`)
	if err := (&fnruntime.StarlarkFunction{MaxMemory: 16 << 20}).Run(context.Background(), rl); err != nil {
		t.Fatalf("%v: %v", err, rl.Results)
	}
}

// An exec function whose output exceeds its cap writes nothing, and the
// renderer reports the typed error rather than a parse error of the
// truncated output.
func TestExecOutputTooLargeThroughPipeline(t *testing.T) {
	fixtures.RequireTool(t, "yes", "the oversized output")
	var out bytes.Buffer
	big := &fnruntime.ExecFunction{Path: "sh", Args: []string{"-c", "cat >/dev/null; yes | head -c 100000"}, MaxOutput: 1000}
	stderr, err := big.RunStream(context.Background(), strings.NewReader("{}"), &out)
	if !errors.Is(err, fnruntime.ErrOutputTooLarge) || out.Len() != 0 || !strings.Contains(stderr, "stdout exceeded its cap of 1000 bytes") {
		t.Fatalf("RunStream: %v, %d bytes out, stderr %q", err, out.Len(), stderr)
	}

	files, err := revision.FilesFromStrings(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
pipeline:
  mutators:
  - exec: yes
`,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := fnruntime.NewRegistry(&fnruntime.Options{AllowExec: true, MaxOutput: 4096})
	_, err = pipeline.NewKptfile(reg, nil).Render(context.Background(), files)
	var re *pipeline.RenderError
	if !errors.As(err, &re) || !errors.Is(err, fnruntime.ErrOutputTooLarge) {
		t.Fatalf("render: %v, want a *pipeline.RenderError matching ErrOutputTooLarge", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "function output too large") || strings.Contains(msg, "yaml") {
		t.Errorf("render error %q, want the output cap and no YAML parse error", msg)
	}
}

// The registry's starlark options reach the builtin.
func TestRegistryStarlarkLimits(t *testing.T) {
	reg := fnruntime.NewRegistry(&fnruntime.Options{StarlarkMaxSteps: 1000})
	fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.0"})
	if err != nil {
		t.Fatal(err)
	}
	rl := starlarkList(t, "x = 0\nwhile True:\n    x += 1\n")
	if err := fn.Run(context.Background(), rl); err == nil || len(rl.Results) != 1 || !strings.Contains(rl.Results[0].Message, "too many steps") {
		t.Errorf("step limit from Options: %v %v", err, rl.Results)
	}
}
