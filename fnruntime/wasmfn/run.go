package wasmfn

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Function is one wasm module run as a KRM function: the ResourceList on
// its stdin, the result on its stdout, as an exec function. It implements
// pipeline.StreamFunction and is safe for concurrent use; every run gets
// a fresh instance of the module (its own memory) and the bounds of its
// spec (or of the Runtime's Options where the spec has none).
//
// A run is sandboxed: no file system but Options.Mounts, no network (WASI
// preview 1 has none), the environment of Options.Env only, the host's
// clocks and a cryptographic random source. It is bounded: its linear
// memory by Options.MaxMemory, its time by the spec's Timeout (the module
// is stopped where it is, endless loops included, when the time is up or
// the caller's context ends), its stdout and stderr by the spec's caps
// (the run is stopped at once when one is passed, and nothing of its
// stdout is used).
type Function struct {
	r    *Runtime
	spec fnruntime.WasmSpec

	mu    sync.Mutex
	layer string // the image layer's digest, once an image was loaded
}

var _ pipeline.StreamFunction = (*Function)(nil)

// name says which module a message is about: the image or the file.
func (f *Function) name() string {
	if f.spec.Image != "" {
		return f.spec.Image
	}
	return f.spec.Path
}

// Run implements pipeline.Function by encoding rl, running the module and
// decoding its output into rl. Errors are those of RunStream, and a
// malformed output is a *pipeline.FunctionError.
func (f *Function) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	in, err := rl.Encode()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	stderr, runErr := f.RunStream(ctx, bytes.NewReader(in), &out)
	if out.Len() > 0 {
		got, err := pipeline.ParseResourceList(out.Bytes())
		if err != nil {
			if runErr != nil {
				return runErr
			}
			return &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: fmt.Errorf("wasm %s: malformed output: %w", f.name(), err)}
		}
		*rl = *got
	}
	return runErr
}

// load returns the compiled module, loading and compiling it when it is
// not cached.
func (f *Function) load(ctx context.Context) (*module, error) {
	if f.spec.Image == "" {
		data, err := f.r.readFile(f.spec)
		if err != nil {
			return nil, err
		}
		return f.r.compile(ctx, data)
	}
	f.mu.Lock()
	layer := f.layer
	f.mu.Unlock()
	if layer != "" {
		if m, ok := f.r.cachedLayer(layer); ok {
			return m, nil
		}
	}
	m, layer, err := f.r.pull(ctx, f.spec.Image)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.layer = layer
	f.mu.Unlock()
	return m, nil
}

// RunStream implements pipeline.StreamFunction. A module that exits with
// a non-zero code fails with a *pipeline.FunctionError carrying the code
// and its stderr; so does a run stopped by a bound, whose error says
// which: its cause matches context.DeadlineExceeded (the timeout),
// ErrMemoryLimit or fnruntime.ErrOutputTooLarge (both also
// revision.ErrLimit, as *revision.LimitError). A module that cannot be
// loaded (the file or image is missing, not wasm, too large, or not a
// WASI command: ErrNotWasm, ErrUnsupportedModule) fails with an error
// naming it.
func (f *Function) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	timeout := f.spec.Timeout
	if timeout == 0 {
		if _, ok := ctx.Deadline(); !ok {
			timeout = f.r.opts.Timeout
		}
	}
	var cancelTimeout context.CancelFunc = func() {}
	if timeout > 0 {
		ctx, cancelTimeout = context.WithTimeout(ctx, timeout)
	}
	defer cancelTimeout()
	m, err := f.load(ctx)
	if err != nil {
		return "", fmt.Errorf("wasm %s: %w", f.name(), err)
	}
	defer f.r.release(m)

	maxOut, maxErr := orDefault(f.spec.MaxOutput, f.r.opts.MaxOutput), orDefault(f.spec.MaxStderr, f.r.opts.MaxStderr)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var outBuf, errBuf bytes.Buffer
	stdout := &capWriter{w: &outBuf, max: maxOut, stop: stop}
	stderrW := &capWriter{w: &errBuf, max: maxErr, stop: stop}
	mem := &boundedMemory{limit: uint64(f.r.opts.MaxMemory)}

	argv0 := path.Base(strings.ReplaceAll(f.name(), "\\", "/"))
	cfg := wazero.NewModuleConfig().WithName("").WithArgs(append([]string{argv0}, f.spec.Args...)...).
		WithStdin(in).WithStdout(stdout).WithStderr(stderrW).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader).
		WithStartFunctions() // _start is called below, once the instance's memory is checked
	for _, e := range f.r.opts.Env {
		k, v, _ := strings.Cut(e, "=")
		cfg = cfg.WithEnv(k, v)
	}
	if len(f.r.opts.Mounts) > 0 {
		fsc := wazero.NewFSConfig()
		for _, mt := range f.r.opts.Mounts {
			if mt.Writable {
				fsc = fsc.WithDirMount(mt.Source, mt.Target)
			} else {
				fsc = fsc.WithReadOnlyDirMount(mt.Source, mt.Target)
			}
		}
		cfg = cfg.WithFSConfig(fsc)
	}

	runCtx = experimental.WithMemoryAllocator(runCtx, mem)
	mod, err := f.r.rt.InstantiateModule(runCtx, m.compiled, cfg)
	if err == nil {
		_, err = mod.ExportedFunction("_start").Call(runCtx)
		_ = mod.Close(context.Background())
	}
	stderr := cleanStderr(errBuf.Bytes())
	var exit *sys.ExitError
	exited := errors.As(err, &exit)
	if err == nil || (exited && exit.ExitCode() == 0 && !stdout.over && !stderrW.over) {
		if _, werr := out.Write(outBuf.Bytes()); werr != nil {
			return stderr, werr
		}
		return stderr, nil
	}
	fail := func(code int, cause error) (string, error) {
		return stderr, &pipeline.FunctionError{ExitCode: code, Stderr: stderr, Err: cause}
	}
	switch {
	case stdout.over || stderrW.over:
		which, limit, name := "stdout", maxOut, "fnruntime.Options.MaxOutput"
		if !stdout.over {
			which, limit, name = "stderr", maxErr, "fnruntime.Options.MaxStderr"
		}
		msg := fmt.Sprintf("wasm %s: %s: %s exceeded its cap of %d bytes", f.name(), fnruntime.ErrOutputTooLarge, which, limit)
		stderr = appendLine(stderr, msg)
		return fail(1, fmt.Errorf("%s: %w", msg, &revision.LimitError{What: which + " of wasm " + f.name(), Limit: name, Max: limit, Err: fnruntime.ErrOutputTooLarge}))
	case mem.refused.Load():
		msg := fmt.Sprintf("wasm %s: %s: the module asked for more than its %d bytes of memory", f.name(), ErrMemoryLimit, f.r.opts.MaxMemory)
		stderr = appendLine(stderr, msg)
		code := 1
		if exited && exit.ExitCode() < 256 {
			code = int(exit.ExitCode())
		}
		return fail(code, fmt.Errorf("%s: %w", msg, &revision.LimitError{What: "memory of wasm " + f.name(), Limit: "wasmfn.Options.MaxMemory", Max: f.r.opts.MaxMemory, Err: ErrMemoryLimit}))
	case ctx.Err() != nil:
		cause := ctx.Err()
		msg := fmt.Sprintf("wasm %s: stopped", f.name())
		if errors.Is(cause, context.DeadlineExceeded) && timeout > 0 {
			msg = fmt.Sprintf("wasm %s: stopped after its timeout of %s", f.name(), timeout)
		}
		return fail(1, fmt.Errorf("%s: %w", msg, cause))
	case exited:
		return fail(int(exit.ExitCode()), fmt.Errorf("wasm %s: exit code %d", f.name(), exit.ExitCode()))
	}
	// A trap: unreachable, out-of-bounds access, stack overflow.
	return fail(1, fmt.Errorf("wasm %s: %w", f.name(), err))
}

func appendLine(s, line string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + line
}

// orDefault returns v, or def when v is zero; a negative v is no cap (0).
func orDefault(v, def int64) int64 {
	if v == 0 {
		v = def
	}
	return max(v, 0)
}

// capWriter writes to w until max bytes, then refuses and stops the run.
type capWriter struct {
	w    io.Writer
	max  int64
	n    int64
	over bool
	stop context.CancelFunc
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.max > 0 && c.n+int64(len(p)) > c.max {
		c.over = true
		c.stop()
		return 0, fnruntime.ErrOutputTooLarge
	}
	c.n += int64(len(p))
	return c.w.Write(p)
}

// cleanStderr makes a module's stderr safe to carry in errors and
// results, as fnruntime does an exec function's: invalid UTF-8 becomes
// U+FFFD and control characters other than newline and tab are dropped.
func cleanStderr(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0)) {
			return r
		}
		return -1
	}, s)
}
