package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/pipeline"
)

// Registry prefixes recognised as the function catalog. An image under
// one of them resolves to the builtin of the same name.
var catalogPrefixes = []string{
	"ghcr.io/kptdev/krm-functions-catalog/",
	"gcr.io/kpt-fn/",
}

// DefaultTimeout bounds one function run when Options.Timeout is zero, as
// kpt's 5 minutes.
const DefaultTimeout = 5 * time.Minute

// Options configure a [Registry]. The zero value (and nil) means: builtins
// only, no exec, a 5 minute timeout.
type Options struct {
	// AllowExec allows exec steps. Default false: resolving an exec step
	// fails with an error matching pipeline.ErrExecNotAllowed.
	AllowExec bool
	// ExecAllow, when not empty, limits exec steps to these programs (the
	// first word of the command line, compared after path.Clean).
	ExecAllow []string
	// ExecDir is the working directory of exec functions and the base of
	// relative program paths. Empty means the process's.
	ExecDir string
	// Env is the environment of exec functions. Nil means only PATH and
	// HOME of this process.
	Env []string
	// MaxOutput caps an exec (or container, or wasm) function's stdout; zero
	// means DefaultMaxExecOutput (64 MiB). A run over it fails with an
	// error matching ErrOutputTooLarge and revision.ErrLimit (a
	// *revision.LimitError naming "fnruntime.Options.MaxOutput"), and
	// nothing of its output is used.
	MaxOutput int64
	// MaxStderr caps an exec (or container, or wasm) function's stderr; zero means
	// DefaultMaxExecStderr (1 MiB). A run over it fails as for MaxOutput
	// ("fnruntime.Options.MaxStderr").
	MaxStderr int64
	// Limits bound what the builtin functions add to their input and the
	// field paths their configs write through (see [Limits]); the zero
	// value means the defaults: 128 MiB added at most, and no more than
	// 4 times the input plus 16 MiB; paths of 100 segments.
	Limits Limits
	// Allow, when not empty, lists the function names or images allowed
	// (a trailing "*" matches any suffix). Deny lists forbidden ones and
	// wins over Allow.
	Allow, Deny []string
	// Timeout bounds one function run (builtin, exec, wasm or container); zero
	// means DefaultTimeout (5 minutes). The caller's context still ends a
	// run sooner: an exec function's processes are killed within a second
	// of it (see ExecFunction).
	Timeout time.Duration
	// StarlarkMaxSteps and StarlarkMaxMemory bound the builtin starlark
	// function (StarlarkFunction.MaxSteps and MaxMemory); zero means
	// DefaultStarlarkSteps and DefaultStarlarkMemory, a negative
	// StarlarkMaxMemory no memory bound.
	StarlarkMaxSteps  uint64
	StarlarkMaxMemory int64
	// NoBuiltins leaves out the builtin functions.
	NoBuiltins bool
	// Containers runs images that have no Go implementation with a
	// container engine (see ContainerFunction). Default false: such an
	// image gives a *NotFoundError.
	Containers bool
	// ContainerEngine is the container engine (ContainerFunction.Engine):
	// docker or a binary that takes docker run's flags (podman, nerdctl),
	// by name or path; empty means the first of docker and podman on PATH. Resolving a container step without one gives an
	// error matching ErrNoContainerEngine.
	ContainerEngine string
	// ContainerNetwork gives function containers the host network.
	ContainerNetwork bool
	// ContainerEnv are environment variables of function containers
	// (ContainerFunction.FunctionEnv); they do not reach builtins or exec
	// functions.
	ContainerEnv []string
	// ContainerMounts are storage mounts of function containers
	// (ContainerFunction.Mounts).
	ContainerMounts []string
	// ContainerUser is the user function containers run as
	// (ContainerFunction.User); empty means nobody.
	ContainerUser string
	// Wasm runs WebAssembly functions, as kpt's --allow-alpha-wasm does
	// (package fnruntime/wasmfn implements it in-process). Default nil: no
	// wasm, and an exec step naming a .wasm file fails with an error
	// matching pipeline.ErrNotAllowed. When set, an image with no
	// builtin or registered implementation (or pinning a version that
	// none implements) runs as the wasm module its OCI image holds, in
	// place of a container (kpt, with the flag, runs every image as wasm;
	// cad's builtins still run in-process), and an exec step whose
	// program ends in ".wasm" runs that file as wasm: it still needs
	// AllowExec, and ExecAllow applies, as kpt's fn render asks for
	// --allow-exec too.
	Wasm WasmRuntime
	// IgnoreImageTags leaves a version tag in the image itself
	// ("set-labels:v0.1.5") unchecked; Step.Tag is always checked.
	// Default false: the image's version must be one the implementation
	// implements (see Resolve), so a package pinning a release whose
	// behaviour cad does not implement fails instead of silently getting
	// other output.
	IgnoreImageTags bool
}

// Registry resolves pipeline steps to functions: images to the builtin or
// registered Go implementations, exec steps to local processes. It
// implements [pipeline.Resolver]. A Registry is safe for concurrent use;
// Register may be called at any time.
type Registry struct {
	opts Options

	mu       sync.RWMutex
	fns      map[string]pipeline.Function
	versions map[string][]semVersion // by key: the minor lines' newest releases; absent: unversioned
	// unreleased are the builtins the catalog never released with a
	// version (CatalogVersion.Unreleased): a version tag is refused.
	unreleased map[string]bool
	// lines are implementations of older minor lines, by key and by
	// release ("0.2.0"); a line without one runs fns[key].
	lines map[string]map[string]pipeline.Function
}

var _ pipeline.Resolver = (*Registry)(nil)

// NewRegistry returns a registry with the builtin functions (unless
// opts.NoBuiltins) and no others.
func NewRegistry(opts *Options) *Registry {
	r := &Registry{fns: map[string]pipeline.Function{}, versions: map[string][]semVersion{}, lines: map[string]map[string]pipeline.Function{}, unreleased: map[string]bool{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Timeout == 0 {
		r.opts.Timeout = DefaultTimeout
	}
	if r.opts.MaxOutput == 0 {
		r.opts.MaxOutput = DefaultMaxExecOutput
	}
	if r.opts.MaxStderr == 0 {
		r.opts.MaxStderr = DefaultMaxExecStderr
	}
	if !r.opts.NoBuiltins {
		for name, fn := range Builtins() {
			r.fns[name] = fn
		}
		r.fns["starlark"] = &StarlarkFunction{MaxSteps: r.opts.StarlarkMaxSteps, MaxMemory: r.opts.StarlarkMaxMemory}
		for name, cv := range BuiltinVersions() {
			for _, rel := range cv.Releases {
				v, _ := parseVersion(rel)
				r.versions[name] = append(r.versions[name], v)
			}
			if cv.Unreleased {
				r.unreleased[name] = true
			}
		}
		for name, byRelease := range builtinLines() {
			r.lines[name] = byRelease
		}
	}
	return r
}

// Register makes fn the implementation of name: a catalog function name
// ("set-labels"), or a full image without tag ("example.com/fns/mine").
// The implementation has no version: every tag and well-formed constraint
// resolves to it.
func (r *Registry) Register(name string, fn pipeline.Function) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := imageKey(name)
	r.fns[key] = fn
	delete(r.versions, key)
	delete(r.lines, key)
	delete(r.unreleased, key)
}

// RegisterVersion is Register for an implementation that behaves like
// the given releases of the function ("v0.4.1", each standing for its
// minor line, v0.4.x): a step pinning another version, or a constraint
// none of the releases satisfies, does not resolve to it (see Resolve).
// No release, or a malformed one, is an error matching
// revision.ErrInvalid.
func (r *Registry) RegisterVersion(name string, fn pipeline.Function, releases ...string) error {
	if len(releases) == 0 {
		return &ConstraintError{Constraint: "", Err: errors.New("no release given")}
	}
	vs := make([]semVersion, 0, len(releases))
	for _, rel := range releases {
		v, err := parseVersion(rel)
		if err != nil {
			return &ConstraintError{Constraint: rel, Err: err}
		}
		vs = append(vs, v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := imageKey(name)
	r.fns[key] = fn
	r.versions[key] = vs
	delete(r.lines, key)
	return nil
}

// Names returns the registered names.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.fns))
	for k := range r.fns {
		out = append(out, k)
	}
	return out
}

// imageKey strips a catalog prefix, the tag and the digest.
func imageKey(image string) string {
	image = imageref.Split(image).Name
	for _, p := range catalogPrefixes {
		if rest, ok := strings.CutPrefix(image, p); ok {
			return rest
		}
	}
	return image
}

func matchAny(patterns []string, names ...string) bool {
	for _, p := range patterns {
		for _, n := range names {
			if n == "" {
				continue
			}
			if pre, ok := strings.CutSuffix(p, "*"); ok {
				if strings.HasPrefix(n, pre) {
					return true
				}
			} else if p == n || imageKey(p) == n {
				return true
			}
		}
	}
	return false
}

// Resolve implements pipeline.Resolver. It returns errors matching
// pipeline.ErrFunctionNotFound and pipeline.ErrNotAllowed.
//
// A step's Tag, or else the image's own tag (unless
// Options.IgnoreImageTags), that is a version or a semver constraint
// ("v0.4.1", "v0.4", "~0.4", "^0.4.1", ">=0.3, <1") is checked against
// the releases of an implementation registered with them (the builtins'
// BuiltinVersions, RegisterVersion). A full version (v0.4.0) resolves when
// it is in the minor line of one of the releases, whether or not cad's
// record of the catalog's releases lists it (BuiltinVersions' Released is
// incomplete: the catalog publishes untagged patch images such as
// set-namespace v0.4.3, so only a builtin never released with a version
// refuses a version as never released); any other constraint
// when one of the releases satisfies it; a bare or partial version is an
// x-range ("v0.4" is 0.4.x), as in the Masterminds semver library kpt
// uses. Otherwise, when Options.Wasm is set, the image runs as the wasm
// module it holds; else, when Options.Containers is set, in a
// container; if neither, the error is a *VersionError, which names the image
// and the releases implemented and matches pipeline.ErrFunctionNotFound. A
// malformed constraint gives a *ConstraintError, which matches
// revision.ErrInvalid. An empty tag, "latest", a digest and other plain
// tags ("unstable") resolve to any version.
func (r *Registry) Resolve(ctx context.Context, step pipeline.Step) (pipeline.Function, error) {
	switch {
	case step.Image != "" && step.Exec != "":
		return nil, fmt.Errorf("step %q: %w: both image and exec are set", step.Name, pipeline.ErrInvalidPackage)
	case step.Exec != "":
		return r.resolveExec(step)
	case step.Image == "":
		return nil, errors.New("must specify `exec` or `image` to execute a function")
	}
	key := imageKey(step.Image)
	if matchAny(r.opts.Deny, step.Image, key) || (len(r.opts.Allow) > 0 && !matchAny(r.opts.Allow, step.Image, key)) {
		return nil, fmt.Errorf("function %q: %w by the registry's allow/deny lists", step.Image, pipeline.ErrNotAllowed)
	}
	r.mu.RLock()
	fn, ok := r.fns[key]
	releases, versioned := r.versions[key]
	lines := r.lines[key]
	unreleased := r.unreleased[key]
	r.mu.RUnlock()
	// fallback says an image that no implementation here implements
	// runs elsewhere: as wasm (Options.Wasm) or in a container.
	fallback := r.opts.Wasm != nil || r.opts.Containers
	tag := step.Tag
	if tag == "" && !r.opts.IgnoreImageTags {
		tag = imageTag(step.Image)
	}
	if isVersionTag(tag) {
		tag = strings.TrimSpace(tag)
		c, err := parseConstraint(tag)
		if err != nil {
			return nil, fmt.Errorf("function %q: %w", step.Image, err)
		}
		if ok && unreleased {
			if !fallback {
				return nil, &VersionError{Image: step.Image, Constraint: tag, NotReleased: true}
			}
			ok = false
		}
		rel, implemented := implements(releases, tag, c)
		if ok && versioned && implemented {
			if lf, has := lines[rel.String()]; has {
				fn = lf
			}
		}
		if ok && versioned && !implemented {
			if !fallback {
				names := make([]string, len(releases))
				for i, v := range releases {
					names[i] = "v" + v.String()
				}
				return nil, &VersionError{Image: step.Image, Constraint: tag, Version: names[len(names)-1], Implemented: names}
			}
			ok = false
		}
	}
	if !ok {
		if r.opts.Wasm != nil {
			return r.resolveWasmImage(step)
		}
		if !r.opts.Containers {
			return nil, &NotFoundError{Image: step.Image}
		}
		engine, err := FindContainerEngine(r.opts.ContainerEngine)
		if err != nil {
			return nil, fmt.Errorf("function %q: %w", step.Image, err)
		}
		return &ContainerFunction{Engine: engine, Image: step.Image, Network: r.opts.ContainerNetwork, FunctionEnv: r.opts.ContainerEnv, Mounts: r.opts.ContainerMounts, User: r.opts.ContainerUser,
			Timeout: r.opts.Timeout, MaxOutput: r.opts.MaxOutput, MaxStderr: r.opts.MaxStderr}, nil
	}
	return withTimeout(withLimits(fn, r.opts.Limits), r.opts.Timeout), nil
}

// NotFoundError reports an image with no implementation. It matches
// pipeline.ErrFunctionNotFound. Container runtimes are not used by the registry.
type NotFoundError struct {
	Image string
}

// Error names the image.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("function %q is not available in-process (no builtin or registered implementation, and neither wasm nor container functions are enabled)", e.Image)
}

// Is reports whether target is pipeline.ErrFunctionNotFound.
func (e *NotFoundError) Is(target error) bool { return target == pipeline.ErrFunctionNotFound }

// VersionError reports that the step pins a version or constraint of an
// image that its implementation does not implement. It matches
// pipeline.ErrFunctionNotFound.
type VersionError struct {
	Image      string
	Constraint string
	// Version is the newest release the implementation behaves like.
	Version string
	// Implemented are the releases it behaves like, each standing for its
	// minor line.
	Implemented []string
	// NotReleased says the function is known never to have been released
	// with a version (CatalogVersion.Unreleased), so no version or
	// constraint names a release of it.
	NotReleased bool
}

// Error names the image, the version asked for and the versions
// implemented.
func (e *VersionError) Error() string {
	lines := make([]string, len(e.Implemented))
	for i, rel := range e.Implemented {
		lines[i] = minorLine(rel)
	}
	if len(lines) == 0 && e.NotReleased {
		return fmt.Sprintf("function %q: version %q was never released: the catalog published no version of it (run it by its documented plain tag, such as unstable)", e.Image, e.Constraint)
	}
	if len(lines) == 0 {
		lines = []string{e.Version}
	}
	return fmt.Sprintf("function %q: version %q is not implemented in-process (cad implements %s); pin one of those, or enable container functions",
		e.Image, e.Constraint, strings.Join(lines, ", "))
}

// minorLine formats "v0.4.1" as "v0.4.x".
func minorLine(rel string) string {
	v, err := parseVersion(rel)
	if err != nil {
		return rel
	}
	return fmt.Sprintf("v%d.%d.x", v.Major(), v.Minor())
}

// implements reports which of releases (each standing for its minor line)
// implements tag: for a full version, the release of its minor line; for
// any other constraint, the newest release that satisfies it, as kpt
// resolves a constraint to the newest matching tag.
func implements(releases []semVersion, tag string, c *constraint) (semVersion, bool) {
	if v, err := semver.StrictNewVersion(strings.TrimPrefix(strings.TrimPrefix(tag, "v"), "V")); err == nil {
		for _, rel := range releases {
			if rel.Major() == v.Major() && rel.Minor() == v.Minor() {
				return rel, true
			}
		}
		return nil, false
	}
	var best semVersion
	for _, rel := range releases {
		if c.check(rel) && (best == nil || rel.GreaterThan(best)) {
			best = rel
		}
	}
	return best, best != nil
}

// Is reports whether target is pipeline.ErrFunctionNotFound.
func (e *VersionError) Is(target error) bool { return target == pipeline.ErrFunctionNotFound }

// imageTag returns the tag of an image reference, without digest; "" when
// there is none.
func imageTag(image string) string { return imageref.Split(image).Tag }

func (r *Registry) resolveExec(step pipeline.Step) (pipeline.Function, error) {
	if !r.opts.AllowExec {
		return nil, fmt.Errorf("exec %q: %w by this registry (Options.AllowExec is false)", step.Exec, pipeline.ErrExecNotAllowed)
	}
	args, err := splitCommand(step.Exec)
	if err != nil {
		return nil, fmt.Errorf("exec command %q must be valid: %w", step.Exec, err)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("exec command %q must be valid: empty", step.Exec)
	}
	if len(r.opts.ExecAllow) > 0 {
		ok := false
		for _, a := range r.opts.ExecAllow {
			if path.Clean(a) == path.Clean(args[0]) {
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("exec %q: %w: not in the registry's exec allow list", args[0], pipeline.ErrNotAllowed)
		}
	}
	if isWasmFile(args[0]) {
		return r.resolveWasmFile(step, args)
	}
	return &ExecFunction{
		Path: args[0], Args: args[1:], Dir: r.opts.ExecDir, Env: r.opts.Env,
		Timeout: r.opts.Timeout, MaxOutput: r.opts.MaxOutput, MaxStderr: r.opts.MaxStderr,
	}, nil
}

type timeoutFunction struct {
	fn pipeline.Function
	d  time.Duration
}

func withTimeout(fn pipeline.Function, d time.Duration) pipeline.Function {
	if d <= 0 {
		return fn
	}
	if sf, ok := fn.(pipeline.StreamFunction); ok {
		return &timeoutStreamFunction{timeoutFunction{fn: fn, d: d}, sf}
	}
	return &timeoutFunction{fn: fn, d: d}
}

// timeoutStreamFunction keeps a wrapped function's StreamFunction side,
// so the renderer still runs it over the wire format.
type timeoutStreamFunction struct {
	timeoutFunction
	sf pipeline.StreamFunction
}

func (t *timeoutStreamFunction) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.d)
	defer cancel()
	return t.sf.RunStream(ctx, in, out)
}

func (t *timeoutFunction) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	ctx, cancel := context.WithTimeout(ctx, t.d)
	defer cancel()
	return t.fn.Run(ctx, rl)
}
