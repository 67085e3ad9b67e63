package wasmfn_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/wasmfn"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

const resourceList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
`

// Hostile modules end with a clear error within their bounds: an endless
// loop at its timeout, a memory hog at its memory bound and a flood of
// output at the stdout cap. The hog and the flood run in a child process
// whose peak memory is measured: the host holds what the bounds allow,
// not what the module asks for.
func TestHostileModules(t *testing.T) {
	t.Run("endless loop", func(t *testing.T) {
		wr := newRuntime(t, nil)
		// Resolved through a Registry, so that its Timeout is the bound.
		reg := fnruntime.NewRegistry(&fnruntime.Options{Wasm: wr, AllowExec: true, Timeout: time.Second})
		fn, err := reg.Resolve(context.Background(), pipeline.Step{Exec: testModule + " loop"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = fn.Run(context.Background(), &pipeline.ResourceList{})
		var fe *pipeline.FunctionError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &fe) || !strings.Contains(err.Error(), "timeout of 1s") {
			t.Fatalf("endless loop: %v; want a *pipeline.FunctionError matching context.DeadlineExceeded naming the timeout", err)
		}
		t.Logf("stopped after %v: %v", time.Since(start).Round(time.Millisecond), err)
	})

	t.Run("caller cancels", func(t *testing.T) {
		wr := newRuntime(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err := wr.File(testModule, "loop").RunStream(ctx, strings.NewReader(resourceList), &bytes.Buffer{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled loop: %v; want context.Canceled", err)
		}
	})

	const maxMemory = 64 << 20
	t.Run("memory hog", func(t *testing.T) {
		r := peakmem.Measure(t, 2<<30, func(t *testing.T) {
			wr := newRuntime(t, &wasmfn.Options{MaxMemory: maxMemory})
			var out bytes.Buffer
			stderr, err := wr.File(testModule, "hog").RunStream(context.Background(), strings.NewReader(resourceList), &out)
			var le *revision.LimitError
			var fe *pipeline.FunctionError
			if !errors.Is(err, wasmfn.ErrMemoryLimit) || !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "wasmfn.Options.MaxMemory" || !errors.As(err, &fe) {
				t.Fatalf("memory hog: %v; want a *pipeline.FunctionError whose cause is a *revision.LimitError matching ErrMemoryLimit", err)
			}
			if out.Len() != 0 || !strings.Contains(stderr, "memory") {
				t.Errorf("memory hog: %d bytes of output, stderr %q", out.Len(), stderr)
			}
			t.Log(err)
		})
		t.Logf("host grew by %d MiB (start %d MiB, peak %d MiB) running a module that allocates without end under a %d MiB bound",
			r.Growth()>>20, r.StartRSS>>20, r.PeakRSS>>20, maxMemory>>20)
		// The linear memory (at most the bound: it is reserved outside Go's
		// heap and grows in place) and the compiled module loaded from the
		// cache.
		if limit := maxMemory + int64(raceFactor)*64<<20; r.Killed || r.Growth() > limit {
			t.Errorf("the host grew by %d bytes, more than %d: the memory bound does not hold", r.Growth(), limit)
		}
	})

	const maxOutput = 1 << 20
	t.Run("output flood", func(t *testing.T) {
		r := peakmem.Measure(t, 2<<30, func(t *testing.T) {
			wr := newRuntime(t, nil)
			reg := fnruntime.NewRegistry(&fnruntime.Options{Wasm: wr, AllowExec: true, MaxOutput: maxOutput})
			fn, err := reg.Resolve(context.Background(), pipeline.Step{Exec: testModule + " flood"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err = fn.(pipeline.StreamFunction).RunStream(context.Background(), strings.NewReader(resourceList), &out)
			var le *revision.LimitError
			if !errors.Is(err, fnruntime.ErrOutputTooLarge) || !errors.As(err, &le) || le.Limit != "fnruntime.Options.MaxOutput" {
				t.Fatalf("output flood: %v; want a *revision.LimitError matching fnruntime.ErrOutputTooLarge", err)
			}
			if out.Len() != 0 {
				t.Errorf("output flood: %d bytes reached the caller", out.Len())
			}
			t.Log(err)
		})
		t.Logf("host grew by %d MiB (start %d MiB, peak %d MiB) refusing a module writing 1 GiB under a %d MiB cap",
			r.Growth()>>20, r.StartRSS>>20, r.PeakRSS>>20, maxOutput>>20)
		if limit := maxOutput + int64(raceFactor)*64<<20; r.Killed || r.Growth() > limit {
			t.Errorf("the host grew by %d bytes, more than %d: the output cap does not hold", r.Growth(), limit)
		}
	})
}
