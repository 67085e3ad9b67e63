package wasmfn_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime/wasmfn"
)

// BenchmarkRun runs the test module over a one-resource ResourceList,
// compiled (the first run compiles it, or loads it from the cache): the
// cost of instantiating a Go WASI module and running it.
func BenchmarkRun(b *testing.B) {
	wr := newRuntime(b, nil)
	in := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- ` + strings.ReplaceAll(strings.TrimSpace(deployment), "\n", "\n  ") + "\n"
	fn := wr.File(testModule)
	ctx := context.Background()
	var out bytes.Buffer
	if _, err := fn.RunStream(ctx, strings.NewReader(in), &out); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		out.Reset()
		if _, err := fn.RunStream(ctx, strings.NewReader(in), &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile loads and compiles the test module (4 MiB, a Go
// program) with no cache and runs it once: the first run of a function in
// a process without Options.CacheDir.
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		wr, err := wasmfn.New(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wr.File(testModule).RunStream(ctx, strings.NewReader("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"), io.Discard); err != nil {
			b.Fatal(err)
		}
		_ = wr.Close(ctx)
	}
}
