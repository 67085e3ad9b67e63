package wasmfn_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/wasmfn"
	"github.com/configasdata/cad/pipeline"
)

// A Registry with a wasm Runtime runs images it has no builtin for, and
// exec steps naming a .wasm file, as WebAssembly in-process. Here the file
// is a module built for a JavaScript host (GOOS=js, as kpt's own wasm
// functions are), which the runtime refuses, saying how to build it.
func ExampleRuntime() {
	ctx := context.Background()
	wr, err := wasmfn.New(ctx, nil)
	if err != nil {
		panic(err)
	}
	defer wr.Close(ctx)
	dir, err := os.MkdirTemp("", "wasmfn-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// (module (import "gojs" "runtime.wasmExit" (func (param i32))) (memory (export "mem") 1))
	jsModule := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 1, 5, 1, 0x60, 1, 0x7f, 0,
		2, 25, 1, 4, 'g', 'o', 'j', 's', 16, 'r', 'u', 'n', 't', 'i', 'm', 'e', '.', 'w', 'a', 's', 'm', 'E', 'x', 'i', 't', 0, 0,
		5, 3, 1, 0, 1, 7, 7, 1, 3, 'm', 'e', 'm', 2, 0}
	if err := os.WriteFile(filepath.Join(dir, "fn.wasm"), jsModule, 0o644); err != nil {
		panic(err)
	}

	reg := fnruntime.NewRegistry(&fnruntime.Options{Wasm: wr, AllowExec: true, ExecDir: dir})
	fn, err := reg.Resolve(ctx, pipeline.Step{Exec: "fn.wasm"})
	if err != nil {
		panic(err)
	}
	err = fn.Run(ctx, &pipeline.ResourceList{})
	fmt.Println(errors.Is(err, wasmfn.ErrUnsupportedModule))
	// Output: true
}
