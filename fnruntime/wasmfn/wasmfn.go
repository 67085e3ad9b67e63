package wasmfn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sync/singleflight"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Defaults of [Options].
const (
	// DefaultMaxMemory caps the linear memory of one run: 512 MiB.
	DefaultMaxMemory = 512 << 20
	// DefaultMaxModuleBytes caps a module's size, as a file, as an image
	// layer and uncompressed: 128 MiB.
	DefaultMaxModuleBytes = 128 << 20
	// DefaultMaxModules is how many compiled modules a Runtime keeps.
	DefaultMaxModules = 16
	// maxMemoryLimit is wasm32's address space: 4 GiB.
	maxMemoryLimit = 4 << 30
	pageSize       = 64 << 10
)

// Errors of a run or of loading a module. Each reaches the caller wrapped
// (a *pipeline.FunctionError for a run, naming the module).
var (
	// ErrMemoryLimit matches a run that failed after the module asked
	// for more linear memory than Options.MaxMemory; the error is a
	// *revision.LimitError (Limit "wasmfn.Options.MaxMemory"), so it
	// matches revision.ErrLimit too.
	ErrMemoryLimit = errors.New("wasm memory limit reached")
	// ErrNotWasm matches an image or file that holds no wasm module: an
	// image with neither a wasm platform in its index nor a single layer
	// holding one module, a file without wasm's magic number. It matches
	// revision.ErrInvalid.
	ErrNotWasm = notWasm("not a wasm function")
	// ErrUnsupportedModule matches a wasm module this runtime cannot run:
	// one built for a JavaScript host (GOOS=js, kpt's wasm ABI), one that
	// imports from modules other than WASI preview 1, or one without a
	// _start function or an exported memory. It matches
	// revision.ErrInvalid.
	ErrUnsupportedModule = notWasm("unsupported wasm module")
)

type notWasm string

func (e notWasm) Error() string { return string(e) }

// Is makes the error match revision.ErrInvalid: the module is bad input.
func (e notWasm) Is(target error) bool { return target == revision.ErrInvalid }

// Mount gives a run a host directory (Options.Mounts).
type Mount struct {
	// Source is the host directory.
	Source string
	// Target is where the module sees it: an absolute path ("/data").
	Target string
	// Writable lets the module change it; default read-only.
	Writable bool
}

// Options configure a [Runtime]. The zero value, and nil, mean the
// defaults: no file system, no environment, 512 MiB of memory, the
// function runtime's output caps and timeout, compiled modules kept in
// memory, anonymous registry access.
type Options struct {
	// MaxMemory caps the linear memory of one run, in bytes (rounded up
	// to wasm's 64 KiB pages, at most 4 GiB): a module that asks for more
	// is refused the memory, and a run that then fails reports a
	// *revision.LimitError matching ErrMemoryLimit. A module whose
	// declared minimum is over it is refused before it runs. Zero means
	// DefaultMaxMemory (512 MiB).
	MaxMemory int64
	// MaxModuleBytes caps a module's size: the file, the image layer
	// (compressed and uncompressed) and the module in it. Zero means
	// DefaultMaxModuleBytes (128 MiB). Over it, loading fails with a
	// *revision.LimitError ("wasmfn.Options.MaxModuleBytes").
	MaxModuleBytes int64
	// MaxModules is how many compiled modules are kept, by digest, for
	// later runs; zero means DefaultMaxModules (16).
	MaxModules int
	// Timeout bounds a run whose fnruntime.WasmSpec has none; zero means
	// fnruntime.DefaultExecTimeout (5 minutes). The caller's context
	// always ends a run sooner.
	Timeout time.Duration
	// MaxOutput and MaxStderr cap a run's stdout and stderr when its
	// fnruntime.WasmSpec has no cap; zero means
	// fnruntime.DefaultMaxExecOutput (64 MiB) and DefaultMaxExecStderr
	// (1 MiB). A run over either ends at once and fails as an exec
	// function's does (fnruntime.ErrOutputTooLarge).
	MaxOutput, MaxStderr int64
	// Env are "KEY=VALUE" environment variables of every run; default
	// none.
	Env []string
	// Mounts are the host directories a run sees; default none: the
	// module has no file system at all. WASI preview 1 has no network,
	// so a module never has one.
	Mounts []Mount
	// CacheDir keeps compiled code on disk across processes (wazero's
	// compilation cache); empty means in memory only.
	CacheDir string
	// Keychain resolves registry credentials, such as
	// authn.DefaultKeychain; default anonymous, unless Auth is set.
	Keychain authn.Keychain
	// Auth is used for every registry request when set; it takes
	// precedence over Keychain.
	Auth authn.Authenticator
	// Insecure makes registry requests plain http. Default false: https,
	// except where go-containerregistry picks plain http itself
	// (localhost and loopback addresses).
	Insecure bool
	// RemoteOptions are passed to every registry call after cad's own
	// (a transport, a user agent). Do not pass remote.WithContext: every
	// call takes its context.
	RemoteOptions []remote.Option
}

func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxMemory == 0 {
		out.MaxMemory = DefaultMaxMemory
	}
	if out.MaxMemory < 0 || out.MaxMemory > maxMemoryLimit {
		return out, fmt.Errorf("wasmfn: %w: MaxMemory %d is outside (0, 4 GiB]", revision.ErrInvalid, out.MaxMemory)
	}
	out.MaxMemory = (out.MaxMemory + pageSize - 1) / pageSize * pageSize
	if out.MaxModuleBytes <= 0 {
		out.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if out.MaxModules <= 0 {
		out.MaxModules = DefaultMaxModules
	}
	if out.Timeout == 0 {
		out.Timeout = fnruntime.DefaultExecTimeout
	}
	if out.MaxOutput == 0 {
		out.MaxOutput = fnruntime.DefaultMaxExecOutput
	}
	if out.MaxStderr == 0 {
		out.MaxStderr = fnruntime.DefaultMaxExecStderr
	}
	for _, e := range out.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return out, fmt.Errorf("wasmfn: %w: environment entry %q is not KEY=VALUE", revision.ErrInvalid, e)
		}
	}
	for _, m := range out.Mounts {
		if !strings.HasPrefix(m.Target, "/") || m.Source == "" {
			return out, fmt.Errorf("wasmfn: %w: mount %q on %q needs a host directory and an absolute target", revision.ErrInvalid, m.Source, m.Target)
		}
	}
	return out, nil
}

// Runtime runs WebAssembly functions in-process with wazero, a pure-Go
// WebAssembly runtime: WASI preview 1 command modules that read the
// ResourceList on stdin and write it on stdout, as an exec function does.
// It implements fnruntime.WasmRuntime (fnruntime.Options.Wasm). Compiled
// modules are kept by the digest of the module, so a function runs
// compiled after its first run. A Runtime is safe for concurrent use;
// Close releases it.
type Runtime struct {
	opts  Options
	rt    wazero.Runtime
	cache wazero.CompilationCache

	compiling singleflight.Group

	mu      sync.Mutex
	modules map[string]*module // by the module's sha256
	seq     uint64             // last use, for eviction
	layers  map[string]string  // image layer digest -> module key
	closed  bool
}

var _ fnruntime.WasmRuntime = (*Runtime)(nil)

// module is a compiled module, checked to be a WASI command.
type module struct {
	key      string
	compiled wazero.CompiledModule
	refs     int    // runs using it; it is closed only at zero
	used     uint64 // Runtime.seq at its last use
	evicted  bool   // out of the cache: closed when refs reach zero
}

// New returns a Runtime with opts (nil means the defaults). A malformed
// option (a MaxMemory over 4 GiB, an environment entry without "=", a
// mount with a relative target) is an error matching revision.ErrInvalid;
// a CacheDir that cannot be created is an error too.
func New(ctx context.Context, opts *Options) (*Runtime, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var cache wazero.CompilationCache
	if o.CacheDir != "" {
		if cache, err = wazero.NewCompilationCacheWithDir(o.CacheDir); err != nil {
			return nil, fmt.Errorf("wasmfn: compilation cache %s: %w", o.CacheDir, err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	// The memory bound is the allocator's (memory.go), which sees every
	// refused growth; wazero's own page limit stays at wasm32's 4 GiB so
	// that a module declaring a larger maximum than MaxMemory still runs
	// within MaxMemory.
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasmfn: WASI: %w", err)
	}
	return &Runtime{opts: o, rt: rt, cache: cache, modules: map[string]*module{}, layers: map[string]string{}}, nil
}

// Close releases the compiled modules and the runtime; runs under way
// end. It returns the runtime's error, if any.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.modules, r.layers = map[string]*module{}, map[string]string{}
	r.mu.Unlock()
	err := r.rt.Close(ctx)
	return errors.Join(err, r.cache.Close(ctx))
}

// WasmFunction implements fnruntime.WasmRuntime: the function of an
// image's or a file's module. The module is loaded and compiled on the
// function's first run.
func (r *Runtime) WasmFunction(spec fnruntime.WasmSpec) (pipeline.Function, error) {
	switch {
	case spec.Image != "" && spec.Path != "":
		return nil, fmt.Errorf("wasmfn: %w: both an image and a file", revision.ErrInvalid)
	case spec.Image == "" && spec.Path == "":
		return nil, fmt.Errorf("wasmfn: %w: neither an image nor a file", revision.ErrInvalid)
	case spec.Image != "":
		if _, err := r.parseReference(spec.Image); err != nil {
			return nil, err
		}
	}
	return &Function{r: r, spec: spec}, nil
}

// File returns the function of a local .wasm file, with args after
// argv[0]; a relative path is the process's. It is WasmFunction for a
// file with the Runtime's own bounds.
func (r *Runtime) File(path string, args ...string) *Function {
	return &Function{r: r, spec: fnruntime.WasmSpec{Path: path, Args: args}}
}

// Image returns the function of the module an OCI image holds. It is
// WasmFunction for an image with the Runtime's own bounds; an
// unparseable reference fails on the first run.
func (r *Runtime) Image(image string) *Function {
	return &Function{r: r, spec: fnruntime.WasmSpec{Image: image}}
}

// readFile reads a local module, bounded by MaxModuleBytes.
func (r *Runtime) readFile(spec fnruntime.WasmSpec) ([]byte, error) {
	p := spec.Path
	if !filepath.IsAbs(p) && spec.Dir != "" {
		p = filepath.Join(spec.Dir, p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: not a regular file", p, ErrNotWasm)
	}
	return readBounded(f, r.opts.MaxModuleBytes, "wasm file "+p)
}

// readBounded reads r whole, refusing more than max bytes.
func readBounded(rd io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(rd, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, moduleTooLarge(what, max)
	}
	return data, nil
}

func moduleTooLarge(what string, max int64) error {
	return &revision.LimitError{What: what, Limit: "wasmfn.Options.MaxModuleBytes", Max: max,
		Err: errors.New("the module is larger")}
}

// wasmMagic starts every binary wasm module.
var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// compile returns the compiled module of data, from the cache or
// compiled now, with a reference the caller releases.
func (r *Runtime) compile(ctx context.Context, data []byte) (*module, error) {
	if len(data) < 8 || string(data[:4]) != string(wasmMagic) {
		return nil, fmt.Errorf("%w: no wasm magic number (a wasm module starts with \\0asm)", ErrNotWasm)
	}
	sum := sha256.Sum256(data)
	key := "sha256:" + hex.EncodeToString(sum[:])
	if m := r.acquire(key); m != nil {
		return m, nil
	}
	_, err, _ := r.compiling.Do(key, func() (any, error) {
		if m := r.peek(key); m != nil {
			return nil, nil
		}
		compiled, err := r.rt.CompileModule(ctx, data)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupportedModule, err)
		}
		if err := r.check(compiled); err != nil {
			_ = compiled.Close(ctx)
			return nil, err
		}
		r.store(ctx, &module{key: key, compiled: compiled})
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	if m := r.acquire(key); m != nil {
		return m, nil
	}
	return nil, errors.New("wasmfn: the runtime is closed")
}

// check refuses a module that is not a WASI preview 1 command within the
// memory bound.
func (r *Runtime) check(c wazero.CompiledModule) error {
	others := map[string]bool{}
	for _, f := range c.ImportedFunctions() {
		mod, _, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
		case "go", "gojs":
			return fmt.Errorf("%w: it was built for a JavaScript host (GOOS=js, imports %q), kpt's wasm ABI; cad runs WASI preview 1 command modules: build it with GOOS=wasip1 GOARCH=wasm", ErrUnsupportedModule, mod)
		default:
			others[mod] = true
		}
	}
	if len(others) > 0 {
		names := make([]string, 0, len(others))
		for n := range others {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("%w: it imports from %s; only WASI preview 1 (%s) is provided", ErrUnsupportedModule, strings.Join(names, ", "), wasi_snapshot_preview1.ModuleName)
	}
	if len(c.ImportedMemories()) > 0 {
		return fmt.Errorf("%w: it imports its memory; a WASI command defines and exports it", ErrUnsupportedModule)
	}
	mem, ok := c.ExportedMemories()["memory"]
	if !ok {
		return fmt.Errorf("%w: it exports no memory named \"memory\", as a WASI command does", ErrUnsupportedModule)
	}
	if min := int64(mem.Min()) * pageSize; min > r.opts.MaxMemory {
		return &revision.LimitError{What: "the wasm module's initial memory", Limit: "wasmfn.Options.MaxMemory", Max: r.opts.MaxMemory,
			Err: fmt.Errorf("%w: the module declares %d bytes", ErrMemoryLimit, min)}
	}
	if _, ok := c.ExportedFunctions()["_start"]; !ok {
		return fmt.Errorf("%w: it has no _start function: a WASI command (package main) is needed, not a library (reactor)", ErrUnsupportedModule)
	}
	return nil
}

// acquire returns the cached module of key with a reference, or nil.
func (r *Runtime) acquire(key string) *module {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.modules[key]
	if m == nil {
		return nil
	}
	r.seq++
	m.used = r.seq
	m.refs++
	return m
}

func (r *Runtime) peek(key string) *module {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.modules[key]
}

// store caches m, evicting the least recently used modules that no run
// holds beyond MaxModules.
func (r *Runtime) store(ctx context.Context, m *module) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = m.compiled.Close(ctx)
		return
	}
	r.seq++
	m.used = r.seq
	r.modules[m.key] = m
	var closing []*module
	for len(r.modules) > r.opts.MaxModules {
		var oldest *module
		for _, c := range r.modules {
			if c != m && (oldest == nil || c.used < oldest.used) {
				oldest = c
			}
		}
		if oldest == nil {
			break
		}
		delete(r.modules, oldest.key)
		for d, k := range r.layers {
			if k == oldest.key {
				delete(r.layers, d)
			}
		}
		oldest.evicted = true
		if oldest.refs == 0 {
			closing = append(closing, oldest)
		}
	}
	r.mu.Unlock()
	for _, c := range closing {
		_ = c.compiled.Close(ctx)
	}
}

// release drops a run's reference to m, closing it when it was evicted
// and no run holds it.
func (r *Runtime) release(m *module) {
	r.mu.Lock()
	m.refs--
	done := m.evicted && m.refs == 0
	r.mu.Unlock()
	if done {
		_ = m.compiled.Close(context.Background())
	}
}

// cachedLayer returns the module key of an image layer already compiled.
func (r *Runtime) cachedLayer(digest string) (*module, bool) {
	r.mu.Lock()
	key, ok := r.layers[digest]
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	m := r.acquire(key)
	return m, m != nil
}

func (r *Runtime) rememberLayer(digest, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.modules[key]; ok {
		r.layers[digest] = key
	}
}
