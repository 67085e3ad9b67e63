// Package celfn evaluates CEL (github.com/google/cel-go) over KRM
// resources: the condition that skips a pipeline step.
//
// An [Evaluator] implements pipeline.ConditionEvaluator. Expressions see
// the step's input as the variable resources (a list of maps, one per
// resource) and must yield a bool. [Validator] is a KRM validator function
// whose rules are CEL expressions over each resource (the variable
// object), in the spirit of ValidatingAdmissionPolicy. The environment is built once; each
// expression is compiled once and its program cached; evaluation honours
// the context and a cost limit, and an expression over its budget fails
// with an error matching [ErrCostLimit] instead of running on.
//
// EXPERIMENTAL: computed function inputs (configMap values from CEL) are
// not here yet.
package celfn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/configasdata/cad/pipeline"
	"github.com/google/cel-go/cel"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// DefaultCostLimit bounds one evaluation when WithCostLimit is not given.
const DefaultCostLimit = 1_000_000

// ErrCostLimit matches an evaluation stopped by its cost limit.
var ErrCostLimit = errors.New("CEL cost limit exceeded")

// Option configures an Evaluator.
type Option func(*config)

type config struct {
	envOpts   []cel.EnvOption
	costLimit uint64
}

// WithEnvOptions adds CEL environment options (libraries, extra
// variables, macros).
func WithEnvOptions(opts ...cel.EnvOption) Option {
	return func(c *config) { c.envOpts = append(c.envOpts, opts...) }
}

// WithCostLimit sets the cost limit of one evaluation.
func WithCostLimit(limit uint64) Option {
	return func(c *config) { c.costLimit = limit }
}

// Evaluator compiles and runs CEL conditions. It is safe for concurrent
// use; compiled programs are cached and shared.
type Evaluator struct {
	env       *cel.Env
	costLimit uint64

	mu    sync.Mutex
	progs map[string]cel.Program
}

var _ pipeline.ConditionEvaluator = (*Evaluator)(nil)

// New builds the CEL environment.
func New(opts ...Option) (*Evaluator, error) {
	c := &config{costLimit: DefaultCostLimit}
	for _, o := range opts {
		o(c)
	}
	env, err := cel.NewEnv(append([]cel.EnvOption{
		cel.Variable("resources", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable("object", cel.MapType(cel.StringType, cel.DynType)),
	}, c.envOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("celfn: %w", err)
	}
	return &Evaluator{env: env, costLimit: c.costLimit, progs: map[string]cel.Program{}}, nil
}

// CompileError reports an expression that does not compile or does not
// yield a bool.
type CompileError struct {
	Expr string
	Err  error
}

func (e *CompileError) Error() string { return fmt.Sprintf("CEL expression %q: %v", e.Expr, e.Err) }

// Unwrap returns the cause.
func (e *CompileError) Unwrap() error { return e.Err }

func (e *Evaluator) program(expr string) (cel.Program, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.progs[expr]; ok {
		return p, nil
	}
	ast, iss := e.env.Compile(expr)
	if iss.Err() != nil {
		return nil, &CompileError{Expr: expr, Err: iss.Err()}
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, &CompileError{Expr: expr, Err: fmt.Errorf("yields %v, want bool", ast.OutputType())}
	}
	p, err := e.env.Program(ast, cel.CostLimit(e.costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, &CompileError{Expr: expr, Err: err}
	}
	e.progs[expr] = p
	return p, nil
}

// Eval evaluates expr over items and returns its bool value.
func (e *Evaluator) Eval(ctx context.Context, expr string, items []*yaml.RNode) (bool, error) {
	resources, err := toMaps(items)
	if err != nil {
		return false, err
	}
	return e.eval(ctx, expr, map[string]any{"resources": resources, "object": map[string]any{}})
}

func toMaps(items []*yaml.RNode) ([]any, error) {
	out := make([]any, 0, len(items))
	for _, it := range items {
		m, err := it.Map()
		if err != nil {
			return nil, fmt.Errorf("celfn: resource %s: %w", it.GetName(), err)
		}
		out = append(out, m)
	}
	return out, nil
}

func (e *Evaluator) eval(ctx context.Context, expr string, vars map[string]any) (bool, error) {
	p, err := e.program(expr)
	if err != nil {
		return false, err
	}
	out, _, err := p.ContextEval(ctx, vars)
	if err != nil {
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return false, fmt.Errorf("CEL expression %q: %w", expr, ErrCostLimit)
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("CEL expression %q: %w", expr, ctx.Err())
		}
		return false, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, &CompileError{Expr: expr, Err: fmt.Errorf("yields %T, want bool", out.Value())}
	}
	return b, nil
}

// Rule is one validation: Expression must be true for every resource it
// applies to; Message is reported when it is not.
type Rule struct {
	Expression string `yaml:"expression" json:"expression"`
	Message    string `yaml:"message,omitempty" json:"message,omitempty"`
}

// Validator is a KRM validator function: it checks every rule against every
// item (the variable object; resources holds all items) and fails with one
// error result per violation. It does not change the items.
type Validator struct {
	Evaluator *Evaluator
	Rules     []Rule
}

var _ pipeline.Function = (*Validator)(nil)

// Run implements pipeline.Function.
func (v *Validator) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	resources, err := toMaps(rl.Items)
	if err != nil {
		return err
	}
	failed := 0
	for i, it := range rl.Items {
		for _, r := range v.Rules {
			ok, err := v.Evaluator.eval(ctx, r.Expression, map[string]any{"resources": resources, "object": resources[i]})
			if err != nil {
				return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: err}
			}
			if ok {
				continue
			}
			failed++
			msg := r.Message
			if msg == "" {
				msg = "failed rule: " + r.Expression
			}
			rl.Results = append(rl.Results, &pipeline.Result{
				Message: msg, Severity: pipeline.SeverityError,
				ResourceRef: &pipeline.ResourceRef{APIVersion: it.GetApiVersion(), Kind: it.GetKind(), Name: it.GetName(), Namespace: it.GetNamespace()},
			})
		}
	}
	if failed > 0 {
		return &pipeline.FunctionError{ExitCode: 1, Stderr: fmt.Sprintf("%d validation(s) failed", failed)}
	}
	return nil
}
