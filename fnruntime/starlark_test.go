package fnruntime_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func starlarkList(t *testing.T, source string) *pipeline.ResourceList {
	t.Helper()
	fc, err := yaml.FromMap(map[string]any{
		"apiVersion": "fn.kpt.dev/v1alpha1", "kind": "StarlarkRun",
		"metadata": map[string]any{"name": "test"}, "source": source,
	})
	if err != nil {
		t.Fatal(err)
	}
	item := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: 1\n  f: 1.5\n  s: \"2\"\n  b: true\n  z: null\n")
	return &pipeline.ResourceList{Items: []*yaml.RNode{item}, FunctionConfig: fc}
}

func TestStarlarkTypes(t *testing.T) {
	rl := starlarkList(t, `
d = ctx.resource_list["items"][0]["data"]
if type(d["n"]) != "int" or type(d["f"]) != "float" or type(d["s"]) != "string" or d["b"] != True or d["z"] != None:
    fail("types: %s" % [type(d[k]) for k in d])
if list(d.keys()) != ["n", "f", "s", "b", "z"]:
    fail("order: %s" % list(d.keys()))
d["n"] = d["n"] + 1
`)
	if err := (&fnruntime.StarlarkFunction{}).Run(context.Background(), rl); err != nil {
		t.Fatalf("%v: %v", err, rl.Results)
	}
	got, _ := rl.Items[0].Pipe(yaml.Lookup("data", "n"))
	if got.YNode().Value != "2" || got.YNode().Tag != yaml.NodeTagInt {
		t.Errorf("data.n = %s %q, want !!int 2", got.YNode().Tag, got.YNode().Value)
	}
}

func TestStarlarkStepLimit(t *testing.T) {
	rl := starlarkList(t, "x = 0\nwhile True:\n    x += 1\n")
	err := (&fnruntime.StarlarkFunction{MaxSteps: 10_000}).Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *pipeline.FunctionError", err)
	}
	if len(rl.Results) != 1 || !strings.Contains(rl.Results[0].Message, "too many steps") {
		t.Errorf("results = %v, want the step limit", rl.Results)
	}
}

func TestStarlarkCancel(t *testing.T) {
	rl := starlarkList(t, "x = 0\nwhile True:\n    x += 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := (&fnruntime.StarlarkFunction{MaxSteps: 1 << 62}).Run(ctx, rl)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}

func TestStarlarkStreamStderr(t *testing.T) {
	rl := starlarkList(t, `print("hello")`)
	in, err := rl.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	stderr, err := (&fnruntime.StarlarkFunction{}).RunStream(context.Background(), bytes.NewReader(in), &out)
	if err != nil || stderr != "hello" {
		t.Fatalf("RunStream = %q, %v; want \"hello\", nil", stderr, err)
	}
	if _, err := pipeline.ParseResourceList(out.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func TestStarlarkConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		fc   *yaml.RNode
		want string
	}{
		{nil, "FunctionConfig is missing"},
		{yaml.MustParse("apiVersion: example.com/v1\nkind: Other\nmetadata:\n  name: x\n"), "but we got: example.com/v1, Kind=Other"},
		{yaml.MustParse("apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: x\n"), "`source` must not be empty"},
	} {
		rl := &pipeline.ResourceList{FunctionConfig: tc.fc}
		if err := (&fnruntime.StarlarkFunction{}).Run(context.Background(), rl); err == nil {
			t.Errorf("%s: no error", tc.want)
			continue
		}
		if len(rl.Results) != 1 || !strings.Contains(rl.Results[0].Message, tc.want) {
			t.Errorf("results = %v, want %q", rl.Results, tc.want)
		}
	}
}

// overLimitScript holds about 64 MiB, over a 32 MiB cap, in few steps,
// and then works on for a while (so that the watchdog samples it).
const overLimitScript = `
keep = []
for i in range(640):
    keep.append("x" * 100000 + str(i))
n = 0
for i in range(2000000):
    n += i
`

// garbageSink keeps the compiler from dropping the garbage allocations.
var garbageSink []byte

// The memory cap measures each run on its own: the same over-limit script
// is refused on a fresh process and after earlier work left much garbage
// on the heap (which a collection during the run frees, hiding the run's
// own growth from a baseline that counted it).
func TestStarlarkMemoryLimitIgnoresEarlierGarbage(t *testing.T) {
	run := func() error {
		return (&fnruntime.StarlarkFunction{MaxMemory: 32 << 20}).Run(context.Background(), starlarkList(t, overLimitScript))
	}
	runtime.GC()
	if err := run(); !errors.Is(err, fnruntime.ErrMemoryLimit) {
		t.Fatalf("fresh: got %v, want ErrMemoryLimit", err)
	}
	// Leave 256 MiB of garbage, with the collector off so that it stays
	// until the run starts.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	for i := 0; i < 256; i++ {
		garbageSink = make([]byte, 1<<20)
		garbageSink[0] = 1
	}
	garbageSink = nil
	if err := run(); !errors.Is(err, fnruntime.ErrMemoryLimit) {
		t.Fatalf("after garbage: got %v, want ErrMemoryLimit", err)
	}
}

// BenchmarkStarlarkSmall runs a small script over one resource: the cost
// of a run, its memory watchdog included.
func BenchmarkStarlarkSmall(b *testing.B) {
	t := &testing.T{}
	fn := &fnruntime.StarlarkFunction{}
	for b.Loop() {
		rl := starlarkList(t, `
for r in ctx.resource_list["items"]:
    r["metadata"]["annotations"] = {"seen": "yes"}
`)
		if err := fn.Run(context.Background(), rl); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStarlarkYAMLLoadsBomb: a script that decodes the merge-key bomb
// (1.8 KB, 7.5 million mappings expanded) with yaml.loads fails with
// the revision.YAMLLimitError instead of building it, and leaves the
// items unchanged.
func TestStarlarkYAMLLoadsBomb(t *testing.T) {
	rl := starlarkList(t, `load("encoding/yaml.star", "yaml")
ctx.resource_list["items"][0]["data"]["n"] = 2
v = yaml.loads(`+strconv.Quote(hostileyaml.MergeBomb())+`)
`)
	before := rl.Items[0].MustString()
	err := (&fnruntime.StarlarkFunction{}).Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *pipeline.FunctionError", err)
	}
	if len(rl.Results) != 1 || !strings.Contains(rl.Results[0].Message, "YAMLLimits.MaxAliasNodes") {
		t.Errorf("results = %v, want the MaxAliasNodes refusal", rl.Results)
	}
	if got := rl.Items[0].MustString(); got != before {
		t.Errorf("item changed:\n%s", got)
	}
}
