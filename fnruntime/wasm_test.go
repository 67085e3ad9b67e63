package fnruntime_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
)

// wasmRecorder is a fnruntime.WasmRuntime that records what it is asked
// for and returns a function that does nothing.
type wasmRecorder struct {
	mu    sync.Mutex
	specs []fnruntime.WasmSpec
}

func (w *wasmRecorder) WasmFunction(spec fnruntime.WasmSpec) (pipeline.Function, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.specs = append(w.specs, spec)
	return pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil }), nil
}

func (w *wasmRecorder) last() (fnruntime.WasmSpec, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.specs) == 0 {
		return fnruntime.WasmSpec{}, 0
	}
	return w.specs[len(w.specs)-1], len(w.specs)
}

// With Options.Wasm, an image without an in-process implementation (or
// pinning a version no builtin implements) and an exec step naming a
// .wasm file go to the wasm runtime with the registry's bounds; builtins
// stay builtins, and the allow/deny lists and exec gating still apply.
func TestWasmResolution(t *testing.T) {
	ctx := context.Background()
	w := &wasmRecorder{}
	reg := fnruntime.NewRegistry(&fnruntime.Options{Wasm: w, AllowExec: true, ExecDir: "/fns", Timeout: time.Minute,
		MaxOutput: 1000, MaxStderr: 100, Deny: []string{"example.com/denied"}})

	if _, err := reg.Resolve(ctx, pipeline.Step{Image: "example.com/fns/mine:v1"}); err != nil {
		t.Fatal(err)
	}
	want := fnruntime.WasmSpec{Image: "example.com/fns/mine:v1", Timeout: time.Minute, MaxOutput: 1000, MaxStderr: 100}
	if got, _ := w.last(); !reflect.DeepEqual(got, want) {
		t.Errorf("image: asked for %+v, want %+v", got, want)
	}

	if _, err := reg.Resolve(ctx, pipeline.Step{Image: "set-labels:v0.1.5"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.last(); got.Image != "set-labels:v0.1.5" {
		t.Errorf("a version no builtin implements: asked for %+v, want the image as wasm", got)
	}

	_, before := w.last()
	if _, err := reg.Resolve(ctx, pipeline.Step{Image: "set-labels:v0.2.0"}); err != nil {
		t.Fatal(err)
	}
	if _, n := w.last(); n != before {
		t.Errorf("a builtin went to the wasm runtime")
	}

	if _, err := reg.Resolve(ctx, pipeline.Step{Exec: "bin/fn.WASM mode 'two words'"}); err != nil {
		t.Fatal(err)
	}
	want = fnruntime.WasmSpec{Path: "bin/fn.WASM", Args: []string{"mode", "two words"}, Dir: "/fns", Timeout: time.Minute, MaxOutput: 1000, MaxStderr: 100}
	if got, _ := w.last(); !reflect.DeepEqual(got, want) {
		t.Errorf("exec: asked for %+v, want %+v", got, want)
	}

	if _, err := reg.Resolve(ctx, pipeline.Step{Image: "example.com/denied:v1"}); !errors.Is(err, pipeline.ErrNotAllowed) {
		t.Errorf("a denied image: %v, want pipeline.ErrNotAllowed", err)
	}
	noExec := fnruntime.NewRegistry(&fnruntime.Options{Wasm: w})
	if _, err := noExec.Resolve(ctx, pipeline.Step{Exec: "fn.wasm"}); !errors.Is(err, pipeline.ErrExecNotAllowed) {
		t.Errorf("a .wasm exec without AllowExec: %v, want pipeline.ErrExecNotAllowed", err)
	}
}
