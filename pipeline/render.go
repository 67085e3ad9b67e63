package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/configasdata/cad/revision"
)

// DefaultImagePrefix is the registry path prepended to a function image
// name that has no "/", as kpt does.
const DefaultImagePrefix = "ghcr.io/kptdev/krm-functions-catalog"

// Options configure a [Renderer]. The zero value (and nil) means the
// documented defaults.
type Options struct {
	// ImagePrefix is prepended (with "/") to image names without "/".
	// Empty means DefaultImagePrefix.
	ImagePrefix string
	// Conditions evaluates step conditions. Nil means a step with a
	// Condition fails with an error.
	Conditions ConditionEvaluator
	// Inputs evaluates steps' ConfigMapExprs. Nil means a step with
	// ConfigMapExprs fails with an *ExprError matching ErrNoEvaluator.
	Inputs InputEvaluator
	// SaveOnFailure keeps the partial render on failure as if the root
	// Kptfile had kpt.dev/save-on-render-failure: "true".
	SaveOnFailure bool
	// NoRenderStatus leaves the root Kptfile's status alone. By default
	// the root Kptfile gets kpt's Rendered condition and renderStatus.
	NoRenderStatus bool
	// KptStyleKptfile rewrites the root Kptfile after a render as kpt
	// does: from its struct, in canonical field order, with wide sequence
	// indent, without comments, empty maps ("configMap: {}") and the
	// original quoting. By default the Kptfile is edited in place: only
	// its status (the Rendered condition and renderStatus) is rewritten,
	// and everything else (a step's configMap key order and quoting, an
	// empty configMap, comments, a function's edits) is kept as it is.
	// kpt's CLI twin (examples/cadctl fn render) sets it, so its output
	// matches kpt's.
	KptStyleKptfile bool
	// NoAttribution leaves out kpt's attribution: by default, as kpt's
	// (and Porch's) render does, every Config Connector resource
	// (apiVersion with ".cnrm.") of the written output gets "krm-fn" in
	// its Config Connector blueprint annotation,
	// cnrm.cloud.google.com/blueprint.
	NoAttribution bool
	// RequireKptfile makes a Renderer from NewKptfile refuse a root
	// without a Kptfile ("No Kptfile found", matching ErrInvalidPackage),
	// as kpt fn render does. By default such a root runs the pipeline of
	// its package file (revision.PackageFileName) when it has one, and
	// otherwise no step of its own: a package with no Kptfile, no package
	// file and no subpackage is returned as it is, unparsed.
	RequireKptfile bool
	// Path is where the caller read the package from, as messages should
	// show it: kpt prints the paths of files it cannot open under the
	// directory given on its command line. Empty means paths relative to
	// the package.
	Path string
	// YAMLLimits bound the work of reading each YAML file of the package
	// (Kptfiles, *.yaml, *.yml) and of each function's output (where the
	// whole package is one ResourceList, so only the bounds on nesting,
	// aliases and mapping size apply). Render refuses an over-bound file
	// with a *RenderError wrapping a *revision.YAMLLimitError (matching
	// ErrInvalidPackage) before it runs anything. Nil means the defaults
	// of revision.YAMLLimits.
	YAMLLimits *revision.YAMLLimits
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.ImagePrefix == "" {
		out.ImagePrefix = DefaultImagePrefix
	}
	out.ImagePrefix = strings.TrimSuffix(out.ImagePrefix, "/")
	return out
}

// Pipeline renders a package: it runs functions over the package's files
// and returns the new files and what every step reported.
type Pipeline interface {
	Render(ctx context.Context, files revision.Files) (*Output, error)
}

// Output is the outcome of a render.
type Output struct {
	// Files is the rendered package. For a failed render it is what kpt
	// leaves on disk: the input with only the root Kptfile's render status
	// updated, or the partial render under save-on-render-failure.
	Files revision.Files
	// Steps lists every step that ran or failed to start, in execution
	// order across all packages.
	Steps []StepResult
}

// MutationSteps returns the mutator steps of o.Steps.
func (o *Output) MutationSteps() []StepResult { return o.filter(false) }

// ValidationSteps returns the validator steps of o.Steps.
func (o *Output) ValidationSteps() []StepResult { return o.filter(true) }

func (o *Output) filter(validator bool) []StepResult {
	var out []StepResult
	for _, s := range o.Steps {
		if s.Validator == validator {
			out = append(out, s)
		}
	}
	return out
}

// Results returns the results of every step, in order.
func (o *Output) Results() Results {
	var out Results
	for _, s := range o.Steps {
		out = append(out, s.Results...)
	}
	return out
}

// StepResult is the outcome of one step.
type StepResult struct {
	// Package is the package directory the step belongs to, "." for the
	// root.
	Package string
	// Validator is true for a validator step.
	Validator bool
	// Name, Image (normalised) and Exec identify the step.
	Name, Image, Exec string
	// Executed is true when the function ran (it may still have failed).
	Executed bool
	// Skipped is true when the step's condition was false.
	Skipped bool
	// When is the step's condition (its When, else its Condition), as
	// the render status records it; empty for a step without one.
	When string
	// ExitCode is 0 on success.
	ExitCode int
	// Stderr is the function's standard error.
	Stderr string
	// ExecutionError says why the step failed before or outside the
	// function itself (not allowed, not found, bad output, ...).
	ExecutionError string
	// Results are the function's results.
	Results Results
}

// ID returns the step's name, image or exec, as kpt names a step.
func (s StepResult) ID() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Image != "":
		return s.Image
	}
	return s.Exec
}

// RenderError is a failed render. It carries the steps that ran, with their
// results, so callers can show the function diagnostics. Err is the cause.
type RenderError struct {
	// Package is the package whose pipeline failed ("." for the root).
	Package string
	// Output is what ran and, in Output.Files, what kpt would leave on disk.
	Output *Output
	Err    error
}

// Error says which package and step failed and why; the kpt-style error
// chain recorded in the Kptfile's Rendered condition is Err.Error().
func (e *RenderError) Error() string {
	var he *handledError
	if e.Output != nil && errors.As(e.Err, &he) {
		for i := len(e.Output.Steps) - 1; i >= 0; i-- {
			s := e.Output.Steps[i]
			if s.ExitCode == 0 && s.ExecutionError == "" {
				continue
			}
			msg := fmt.Sprintf("render package %s: step %s failed with exit code %d", e.Package, s.ID(), s.ExitCode)
			if errs := s.Results.Errors(); len(errs) > 0 {
				msg += ": " + errs[0].Message
			} else if st := strings.TrimSpace(s.Stderr); st != "" {
				msg += ": " + st
			}
			return msg
		}
	}
	return fmt.Sprintf("render package %s: %v", e.Package, e.Err)
}

// Unwrap returns the cause.
func (e *RenderError) Unwrap() error { return e.Err }

// Steps returns the step results of the failed render.
func (e *RenderError) Steps() []StepResult {
	if e.Output == nil {
		return nil
	}
	return e.Output.Steps
}

// ErrInvalidPackage matches errors about the package itself: a missing or
// invalid Kptfile, a bad function config, non-KRM input. It is
// revision.ErrInvalid.
var ErrInvalidPackage = revision.ErrInvalid

// Renderer renders packages with the semantics of kpt fn render: the root
// package and its subpackages (directories with a Kptfile) depth-first,
// each package's mutators then validators over its own resources and its
// rendered subpackages'. A Renderer is safe for concurrent use; each Render
// call is independent.
type Renderer struct {
	resolver Resolver
	opts     Options
	root     *Steps // steps of the root package from code; nil means its Kptfile
}

var _ Pipeline = (*Renderer)(nil)

// NewKptfile returns a Renderer for kpt packages: every package's steps come
// from its Kptfile. A root without a Kptfile runs the steps of its package
// file (revision.PackageFileName), or none; Options.RequireKptfile refuses
// it instead, as kpt does.
func NewKptfile(resolver Resolver, opts *Options) *Renderer {
	return &Renderer{resolver: resolver, opts: opts.withDefaults()}
}

// New returns a Renderer whose root package runs steps given in code. The
// root needs no Kptfile (a Kptfile there is carried as a resource and its
// pipeline is ignored); subpackages with a Kptfile still run theirs.
func New(resolver Resolver, steps Steps, opts *Options) *Renderer {
	return &Renderer{resolver: resolver, opts: opts.withDefaults(), root: &steps}
}

// Render renders files. On failure it returns a *RenderError (matching
// ErrInvalidPackage for package problems, such as a YAML file over a
// bound of Options.YAMLLimits; matching ctx.Err() when ctx ends) whose
// Output holds the results; the returned *Output is nil then.
func (r *Renderer) Render(ctx context.Context, files revision.Files) (*Output, error) {
	// Files whose exact bytes passed a check under the same bounds (the
	// engine's, just before) are not parsed again (internal/yamlmemo);
	// every other file is.
	if err := revision.CheckYAMLFiles(ctx, files, r.opts.YAMLLimits); err != nil {
		return nil, &RenderError{Package: ".", Err: err, Output: &Output{Files: files}}
	}
	h, err := newHydration(ctx, r, files)
	if err != nil {
		return nil, &RenderError{Package: ".", Err: err, Output: &Output{Files: files}}
	}
	if h.root.kf == nil && h.root.steps.Empty() && !hasSubpackage(files) {
		return &Output{Files: files}, nil // nothing to run
	}
	out, err := h.run(ctx)
	if err != nil {
		var re *RenderError
		if errors.As(err, &re) {
			return nil, err
		}
		return nil, &RenderError{Package: ".", Err: err, Output: out}
	}
	return out, nil
}

// hasSubpackage reports whether files has a Kptfile below the root.
func hasSubpackage(files revision.Files) bool {
	for _, p := range files.Paths() {
		if p != revision.KptfileName && path.Base(p) == revision.KptfileName {
			return true
		}
	}
	return false
}

// normaliseImage applies kpt's image defaults: the catalog prefix for names
// without "/", and ":latest" when there is neither tag nor digest.
func normaliseImage(prefix, image, tag string) string {
	if image == "" {
		return ""
	}
	if !strings.Contains(image, "/") {
		image = prefix + "/" + image
	}
	if tag != "" {
		// kpt resolves tag (or constraint) against the registry; the
		// resolver sees the constraint in Step.Tag.
		return image
	}
	if !hasTagOrDigest(image) {
		image += ":latest"
	}
	return image
}

func hasTagOrDigest(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	last := image[strings.LastIndex(image, "/")+1:]
	return strings.Contains(last, ":")
}

// kptError is kpt's error chain format ("op: pkg path:\n\tinner"), used for
// the Rendered condition message so it matches what kpt writes.
type kptError struct {
	op   string
	path string
	err  error
}

func wrapE(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var inner *kptError
	if errors.As(err, &inner) && inner == err {
		if inner.path == path {
			if inner.op == op {
				return inner
			}
			inner = &kptError{op: inner.op, err: inner.err}
			return &kptError{op: op, path: path, err: inner}
		}
	}
	return &kptError{op: op, path: path, err: err}
}

func (e *kptError) Error() string {
	var b strings.Builder
	b.WriteString(e.op)
	if e.path != "" {
		b.WriteString(": pkg ")
		b.WriteString(e.path)
	}
	var inner *kptError
	if errors.As(e.err, &inner) && inner == e.err {
		b.WriteString(":\n\t")
		b.WriteString(inner.Error())
	} else if e.err != nil {
		b.WriteString(": ")
		b.WriteString(e.err.Error())
	}
	return b.String()
}

func (e *kptError) Unwrap() error { return e.err }

// errAlreadyHandled is kpt's marker for a function failure whose details
// are in the results.
type handledError struct{ fn error }

func (e *handledError) Error() string { return "already handled error" }
func (e *handledError) Unwrap() error { return e.fn }
