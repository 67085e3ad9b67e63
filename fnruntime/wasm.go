package fnruntime

import (
	"fmt"
	"strings"
	"time"

	"github.com/configasdata/cad/pipeline"
)

// WasmSpec is one WebAssembly function a [Registry] asks its
// [WasmRuntime] for: the module an OCI image holds (Image), or a local
// .wasm file (Path), with the bounds of the Registry's Options.
type WasmSpec struct {
	// Image is an OCI image reference ("example.com/fns/mine:v1") whose
	// manifest holds a wasm module, as kpt alpha wasm push writes it; empty
	// when Path is set.
	Image string
	// Path is a local .wasm file, as the step's exec names it; a relative
	// path is resolved against Dir. Empty when Image is set.
	Path string
	// Args are the arguments after the file in the step's exec (the
	// module's argv after argv[0]).
	Args []string
	// Dir is Options.ExecDir.
	Dir string
	// Timeout is Options.Timeout.
	Timeout time.Duration
	// MaxOutput and MaxStderr are Options.MaxOutput and MaxStderr: the
	// caps of the module's stdout and stderr.
	MaxOutput, MaxStderr int64
}

// WasmRuntime runs WebAssembly functions for a [Registry]
// (Options.Wasm). Package fnruntime/wasmfn implements it in-process with
// a pure-Go runtime; this package holds only the contract, so that it
// depends on no wasm runtime or registry client. Implementations must be
// safe for concurrent use.
type WasmRuntime interface {
	// WasmFunction returns the function of spec's module. It may defer
	// loading the module to the function's first run; an error means spec
	// cannot name a module (an unparseable image reference, say).
	WasmFunction(spec WasmSpec) (pipeline.Function, error)
}

// isWasmFile reports whether an exec step's program is a WebAssembly
// module by its name, as kpt decides it: a path ending in ".wasm".
func isWasmFile(program string) bool {
	return strings.HasSuffix(strings.ToLower(program), ".wasm")
}

// resolveWasmImage returns the wasm function of an image that has no
// in-process implementation.
func (r *Registry) resolveWasmImage(step pipeline.Step) (pipeline.Function, error) {
	fn, err := r.opts.Wasm.WasmFunction(WasmSpec{Image: step.Image,
		Timeout: r.opts.Timeout, MaxOutput: r.opts.MaxOutput, MaxStderr: r.opts.MaxStderr})
	if err != nil {
		return nil, fmt.Errorf("wasm function %q: %w", step.Image, err)
	}
	return withTimeout(fn, r.opts.Timeout), nil
}

// resolveWasmFile returns the wasm function of an exec step naming a
// .wasm file, or an error matching pipeline.ErrNotAllowed when wasm is
// not enabled.
func (r *Registry) resolveWasmFile(step pipeline.Step, args []string) (pipeline.Function, error) {
	if r.opts.Wasm == nil {
		return nil, fmt.Errorf("exec %q: %w: it is a WebAssembly module and wasm functions are not enabled (Options.Wasm; cadctl's --allow-alpha-wasm)", step.Exec, pipeline.ErrNotAllowed)
	}
	fn, err := r.opts.Wasm.WasmFunction(WasmSpec{Path: args[0], Args: args[1:], Dir: r.opts.ExecDir,
		Timeout: r.opts.Timeout, MaxOutput: r.opts.MaxOutput, MaxStderr: r.opts.MaxStderr})
	if err != nil {
		return nil, fmt.Errorf("wasm function %q: %w", args[0], err)
	}
	return withTimeout(fn, r.opts.Timeout), nil
}
