// Package wasmfn runs WebAssembly KRM functions in-process, as kpt does
// with --allow-alpha-wasm, on wazero, a WebAssembly runtime in pure Go (no
// cgo, no container engine, no JavaScript host): a cad embedded in a pod
// runs them where no docker exists.
//
// A [Runtime] implements fnruntime.WasmRuntime; set it as
// fnruntime.Options.Wasm and a Registry runs as wasm every image it has no
// in-process implementation for, and every exec step naming a .wasm file:
//
//	wr, err := wasmfn.New(ctx, nil)
//	if err != nil { ... }
//	defer wr.Close(ctx)
//	reg := fnruntime.NewRegistry(&fnruntime.Options{Wasm: wr, AllowExec: true})
//
// # Modules
//
// A function is a WASI preview 1 command module: it reads the
// ResourceList on stdin and writes the result on stdout, its diagnostics
// on stderr, and exits non-zero on failure, as an exec function does. A Go
// function is built with
//
//	GOOS=wasip1 GOARCH=wasm go build -o fn.wasm .
//
// kpt's own wasm functions are built with GOOS=js and call a JavaScript
// function processResourceList through a JavaScript host (node, or
// wasmtime with Go's wasm_exec glue); such a module is refused with
// [ErrUnsupportedModule], which says to build it for wasip1.
//
// # Images
//
// A module is read from a local file or from an OCI image in kpt's
// format: what kpt alpha wasm push writes, an index with a manifest for
// the platform js/wasm whose single layer is a (gzipped) tar of the one
// module file. The platform wasip1/wasm is preferred when an index has
// both, and an image whose one layer has a wasm media type
// (application/wasm, application/vnd.wasm.content.layer.v1+wasm) is the
// module itself. A tag is resolved on every load; a layer already compiled
// is not downloaded again. Compiled modules are kept by the sha256 of the
// module (Options.MaxModules), and, with Options.CacheDir, wazero keeps
// the compiled code on disk for other processes.
//
// # Sandbox and bounds
//
// A run has no file system unless Options.Mounts gives it directories
// (read-only unless Writable), no network (WASI preview 1 has no sockets,
// and none is ever handed to a module), no environment beyond
// Options.Env, and its own memory. Its bounds:
//
//	bound                 default      bounds
//	Options.MaxMemory     512 MiB      the linear memory of one run; a growth past
//	                                   it is refused and a run that then fails
//	                                   reports ErrMemoryLimit (a *revision.LimitError)
//	WasmSpec.Timeout      5 minutes    one run (fnruntime.Options.Timeout, else
//	                                   Options.Timeout); the module is stopped where
//	                                   it is, endless loops included
//	WasmSpec.MaxOutput    64 MiB       stdout (fnruntime.Options.MaxOutput); the run
//	                                   stops at once when it passes it
//	WasmSpec.MaxStderr    1 MiB        stderr (fnruntime.Options.MaxStderr)
//	Options.MaxModuleBytes 128 MiB     a module file, image layer and module
//
// The host holds, for a run, its linear memory (at most MaxMemory: on
// Linux, macOS and FreeBSD it is reserved as address space outside Go's
// heap and only the pages the module touches cost memory; elsewhere it
// grows in Go's heap, the previous buffer held while it is copied), its
// stdout (at most MaxOutput) and stderr, and the compiled module, shared
// by all runs.
package wasmfn
