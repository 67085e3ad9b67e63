package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Function is one KRM function: it transforms a ResourceList in place,
// replacing its Items and appending to its Results. A non-nil error means
// the function failed (kpt's non-zero exit); diagnostics that do not fail
// the function belong in Results. Return a *FunctionError to report an
// exit code and standard error text.
//
// Implementations must honour ctx and be safe for concurrent use when they
// are shared between renders; a single call gets exclusive use of rl.
type Function interface {
	Run(ctx context.Context, rl *ResourceList) error
}

// FunctionFunc adapts a plain function to [Function].
type FunctionFunc func(ctx context.Context, rl *ResourceList) error

// Run calls f.
func (f FunctionFunc) Run(ctx context.Context, rl *ResourceList) error { return f(ctx, rl) }

// FunctionError is a failed function run with the exit code and standard
// error of the process (or its in-process equivalent).
type FunctionError struct {
	ExitCode int
	Stderr   string
	Err      error
}

// Error gives the exit code, the cause and the standard error.
func (e *FunctionError) Error() string {
	msg := fmt.Sprintf("function exited with code %d", e.ExitCode)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Stderr != "" {
		msg += "\nstderr: " + e.Stderr
	}
	return msg
}

// Unwrap returns the cause.
func (e *FunctionError) Unwrap() error { return e.Err }

// Selector selects resources; see [Step.Selectors]. It is the Kptfile's
// selector type.
type Selector = revision.Selector

// Step is one pipeline step as data: which function to run and with which
// configuration. Exactly one of Image and Exec names the function. A Step
// is resolved to a [Function] by a [Resolver].
type Step struct {
	// Name identifies the step in results and errors.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Image is the function's container image; a name without "/" is in the
	// catalog (see Options.ImagePrefix) and a name without tag or digest is
	// ":latest".
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Tag overrides the image's tag; it may be a semver constraint.
	Tag string `yaml:"tag,omitempty" json:"tag,omitempty"`
	// Exec is a command line run with the ResourceList on stdin.
	Exec string `yaml:"exec,omitempty" json:"exec,omitempty"`
	// ConfigPath is the package-relative path of a resource of the package
	// used as the functionConfig.
	ConfigPath string `yaml:"configPath,omitempty" json:"configPath,omitempty"`
	// ConfigMap is an inline configuration, passed as a ConfigMap named
	// function-input.
	ConfigMap map[string]string `yaml:"configMap,omitempty" json:"configMap,omitempty"`
	// ConfigMapExprs are computed function inputs: each value is an
	// expression (CEL with fnruntime/celfn) evaluated over the resources the
	// step's Condition sees, and its result becomes the function-input
	// ConfigMap's entry for the key, overriding ConfigMap's. It needs
	// Options.Inputs and cannot be combined with ConfigPath or Config.
	// It is cad's extension of the Kptfile (revision.Function has it too);
	// kpt itself does not know it.
	ConfigMapExprs map[string]string `yaml:"configMapExprs,omitempty" json:"configMapExprs,omitempty"`
	// Config is an inline functionConfig object, for steps built in code.
	Config map[string]any `yaml:"config,omitempty" json:"config,omitempty"`
	// Selectors limit the step to the resources matching any of them.
	Selectors []Selector `yaml:"selectors,omitempty" json:"selectors,omitempty"`
	// Exclude removes the resources matching any of them.
	Exclude []Selector `yaml:"exclude,omitempty" json:"exclude,omitempty"`
	// Condition is a CEL expression over the resources; when it is false
	// the step is skipped. It needs Options.Conditions.
	Condition string `yaml:"condition,omitempty" json:"condition,omitempty"`
	// When is kpt's condition (the Kptfile's when): a CEL expression over
	// the resources the step selects (after Selectors and Exclude); when
	// it is false the step is skipped. It needs Options.Conditions. A step
	// with both runs only when both hold.
	When string `yaml:"when,omitempty" json:"when,omitempty"`
}

// StepFromKptfile converts a Kptfile function to a Step.
func StepFromKptfile(f revision.Function) Step {
	return Step{
		Name: f.Name, Image: f.Image, Tag: f.Tag, Exec: f.Exec,
		ConfigPath: f.ConfigPath, ConfigMap: f.ConfigMap, ConfigMapExprs: f.ConfigMapExprs,
		Selectors: f.Selectors, Exclude: f.Exclude, Condition: f.Condition, When: f.When,
	}
}

// Steps is a pipeline as data: mutators then validators.
type Steps struct {
	Mutators   []Step `yaml:"mutators,omitempty" json:"mutators,omitempty"`
	Validators []Step `yaml:"validators,omitempty" json:"validators,omitempty"`
}

// Empty reports whether s has no step.
func (s Steps) Empty() bool { return len(s.Mutators) == 0 && len(s.Validators) == 0 }

// StepsFromKptfile returns the pipeline of a Kptfile; an absent pipeline is
// empty.
func StepsFromKptfile(kf *revision.Kptfile) Steps {
	var s Steps
	if kf == nil || kf.Pipeline == nil {
		return s
	}
	for _, f := range kf.Pipeline.Mutators {
		s.Mutators = append(s.Mutators, StepFromKptfile(f))
	}
	for _, f := range kf.Pipeline.Validators {
		s.Validators = append(s.Validators, StepFromKptfile(f))
	}
	return s
}

// StepsFromPackageFile returns the pipeline of cad's package file
// (revision.PackageFileName), spec.pipeline: mutators and validators in
// the shape of [Step], conditions and computed inputs included. An absent
// pipeline is empty. It returns an error matching [ErrInvalidPackage] when
// data is not a package file or its pipeline does not decode, names an
// unknown field, or has a step with not exactly one of image and exec.
func StepsFromPackageFile(data []byte) (Steps, error) {
	if _, err := revision.ParsePackageFile(data); err != nil {
		return Steps{}, err
	}
	var doc struct {
		Spec struct {
			Pipeline yaml.Node `yaml:"pipeline"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Steps{}, invalidf("%s: %v", revision.PackageFileName, err)
	}
	var steps Steps
	if doc.Spec.Pipeline.Kind == 0 {
		return steps, nil
	}
	b, err := yaml.Marshal(&doc.Spec.Pipeline)
	if err != nil {
		return Steps{}, invalidf("%s: %v", revision.PackageFileName, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&steps); err != nil {
		return Steps{}, invalidf("%s: spec.pipeline: %v", revision.PackageFileName, err)
	}
	for kind, list := range map[string][]Step{"mutators": steps.Mutators, "validators": steps.Validators} {
		for i, st := range list {
			if (st.Image == "") == (st.Exec == "") {
				return Steps{}, invalidf("%s: spec.pipeline.%s[%d]: must specify exactly one of `image` or `exec`", revision.PackageFileName, kind, i)
			}
		}
	}
	return steps, nil
}

// Resolver turns a step into code. fnruntime.Registry is the standard
// implementation. Resolve gets the step with its image name already
// normalised (catalog prefix and tag applied). It returns an error
// matching [ErrFunctionNotFound] when it knows no such function and an error
// matching [ErrNotAllowed] when policy forbids it.
//
// Implementations must be safe for concurrent use.
type Resolver interface {
	Resolve(ctx context.Context, step Step) (Function, error)
}

// ResolverFunc adapts a plain function to [Resolver].
type ResolverFunc func(ctx context.Context, step Step) (Function, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, step Step) (Function, error) { return f(ctx, step) }

// ConditionEvaluator evaluates a step's Condition over the resources the
// step would see. fnruntime/celfn provides a CEL implementation.
type ConditionEvaluator interface {
	Eval(ctx context.Context, expr string, items []*yaml.RNode) (bool, error)
}

// InputEvaluator evaluates the expressions of a step's ConfigMapExprs over
// the resources the step would see (those its Condition sees) and returns
// the value as a string. fnruntime/celfn provides a CEL implementation.
//
// Implementations must honour ctx and be safe for concurrent use.
type InputEvaluator interface {
	EvalString(ctx context.Context, expr string, items []*yaml.RNode) (string, error)
}

// ErrNoEvaluator matches a step that needs an evaluator (see
// Options.Inputs) when none is configured.
var ErrNoEvaluator = errors.New("no expression evaluator configured")

// ExprError is a failed entry of a step's ConfigMapExprs: no evaluator is
// configured ([ErrNoEvaluator]), or the expression does not compile, fails
// at run time, exceeds its cost limit or yields a value that is not a
// string, number or bool (Err says which). The step fails and the render
// with it.
type ExprError struct {
	// Step is the step's name (or short image name or exec).
	Step string
	// Key is the ConfigMapExprs key; Expr its expression.
	Key, Expr string
	Err       error
}

// Error names the step and key and gives the cause.
func (e *ExprError) Error() string {
	return fmt.Sprintf("step %q: configMapExprs[%q]: %v", e.Step, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *ExprError) Unwrap() error { return e.Err }

// Errors of resolution.
var (
	// ErrFunctionNotFound: the resolver knows no function for the step
	// (no such image, tag or exec binary). It is not
	// repository.ErrNotFound, which is about revisions, packages and
	// repositories: a render that fails on it returns an error matching
	// [ErrFunctionNotFound], never repository.ErrNotFound.
	ErrFunctionNotFound = errors.New("function not found")
	// ErrNotAllowed: policy (allow list, deny list, exec gating) forbids
	// the function.
	ErrNotAllowed = errors.New("function not allowed")
)

// ErrExecNotAllowed is returned (wrapped, naming the step) for exec steps
// when the resolver does not run function binaries (fnruntime's
// Options.AllowExec is false). It matches [ErrNotAllowed]. A CLI that
// imitates kpt words it as kpt does (kpt's --allow-exec flag).
var ErrExecNotAllowed = fmt.Errorf("running function binaries (exec steps) is not allowed%w", silent{ErrNotAllowed})

// silent wraps an error for errors.Is without adding text.
type silent struct{ error }

func (silent) Error() string   { return "" }
func (s silent) Unwrap() error { return s.error }
