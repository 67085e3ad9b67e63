package celfn

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/configasdata/cad/pipeline"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// DefaultCostLimit bounds one evaluation when WithCostLimit is not given.
const DefaultCostLimit = 1_000_000

// Option configures an Evaluator or a Programs. Options are functional
// because CEL environment options are open-ended and composable.
type Option func(*config)

type config struct {
	envOpts       []cel.EnvOption
	costLimit     uint64
	maxValueBytes int64
	timeout       time.Duration
	maxPrograms   int
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if c.costLimit == 0 {
		c.costLimit = DefaultCostLimit
	}
	if c.maxValueBytes <= 0 {
		c.maxValueBytes = DefaultMaxValueBytes
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxPrograms <= 0 {
		c.maxPrograms = DefaultMaxPrograms
	}
	return c
}

// WithEnvOptions adds CEL environment options (libraries, extra
// variables, macros). The functions of the package doc's Bounds that such
// a library declares are bounded like the built-in ones; others are
// bounded only by the cost limit and the timeout.
func WithEnvOptions(opts ...cel.EnvOption) Option {
	return func(c *config) { c.envOpts = append(c.envOpts, opts...) }
}

// WithCostLimit sets the cost limit of one evaluation, in cel-go's runtime
// cost units (one a step; string and list operations by the size of their
// operands and results); 0 means DefaultCostLimit. An evaluation past it
// stops with a *revision.LimitError wrapping ErrCostLimit.
func WithCostLimit(limit uint64) Option {
	return func(c *config) { c.costLimit = limit }
}

// WithMaxValueBytes bounds the size of each value an evaluation creates
// with a function that can return more than it was given (string, bytes
// and list concatenation, replace, split, join, format, strings.quote,
// base64.encode, lists.range): the size, in bytes of a string or bytes and
// 16 bytes an element of a list, is computed from the arguments before the
// function runs, and a call past the bound fails the evaluation with a
// *revision.LimitError (matching revision.ErrLimit). 0 or less means
// DefaultMaxValueBytes (1 MiB).
func WithMaxValueBytes(n int64) Option {
	return func(c *config) { c.maxValueBytes = n }
}

// WithTimeout bounds the time of one evaluation; 0 or less means
// DefaultTimeout. The caller's context ends an evaluation earlier; either
// is noticed at the next iteration of a comprehension or the next call of
// a function the bounds guard. An evaluation past
// the timeout fails with a *revision.LimitError wrapping ErrTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithMaxPrograms bounds the compiled programs an Evaluator keeps
// (default DefaultMaxPrograms); past it the least recently used are
// dropped and compiled again when next needed.
func WithMaxPrograms(n int) Option {
	return func(c *config) { c.maxPrograms = n }
}

// Evaluator compiles and runs CEL expressions: step conditions
// ([pipeline.ConditionEvaluator]) and computed function inputs
// ([pipeline.InputEvaluator]). It is safe for concurrent use; compiled
// programs are kept (see Programs) and shared.
type Evaluator struct {
	progs *Programs
}

var (
	_ pipeline.ConditionEvaluator = (*Evaluator)(nil)
	_ pipeline.InputEvaluator     = (*Evaluator)(nil)
)

// New builds the CEL environment.
func New(opts ...Option) (*Evaluator, error) {
	c := newConfig(opts)
	env, err := cel.NewEnv(append([]cel.EnvOption{
		cel.Variable("resources", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable("object", cel.MapType(cel.StringType, cel.DynType)),
	}, c.envOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("celfn: %w", err)
	}
	return &Evaluator{progs: NewPrograms(env, opts...)}, nil
}

// CompileError reports an expression that does not compile or does not
// yield the type its use needs: a bool for conditions and rules, a string,
// number or bool for computed inputs.
type CompileError struct {
	Expr string
	Err  error
}

// Error names the expression and the compiler's error.
func (e *CompileError) Error() string { return fmt.Sprintf("CEL expression %q: %v", e.Expr, e.Err) }

// Unwrap returns the cause.
func (e *CompileError) Unwrap() error { return e.Err }

// program returns the kept program of expr, compiling it on first use.
func (e *Evaluator) program(expr string) (*Program, error) { return e.progs.Compile(expr) }

// Eval evaluates expr over items and returns its bool value.
func (e *Evaluator) Eval(ctx context.Context, expr string, items []*yaml.RNode) (bool, error) {
	resources, err := toMaps(items)
	if err != nil {
		return false, err
	}
	return e.eval(ctx, expr, map[string]any{"resources": resources, "object": map[string]any{}})
}

// EvalString evaluates expr over items (the variable resources, as for
// Eval) and returns its value as a string: a string as is, an int, uint,
// double or bool formatted with strconv. Any other result is a
// *CompileError; an evaluation refused by a bound (see the package doc)
// matches revision.ErrLimit, and ErrCostLimit past the cost limit.
func (e *Evaluator) EvalString(ctx context.Context, expr string, items []*yaml.RNode) (string, error) {
	c, err := e.program(expr)
	if err != nil {
		return "", err
	}
	switch c.Output.Kind() {
	case types.StringKind, types.IntKind, types.UintKind, types.DoubleKind, types.BoolKind, types.DynKind:
	default:
		return "", &CompileError{Expr: expr, Err: fmt.Errorf("yields %v, want string, number or bool", c.Output)}
	}
	resources, err := toMaps(items)
	if err != nil {
		return "", err
	}
	out, err := e.run(ctx, expr, c, map[string]any{"resources": resources, "object": map[string]any{}})
	if err != nil {
		return "", err
	}
	switch v := out.Value().(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	}
	return "", &CompileError{Expr: expr, Err: fmt.Errorf("yields %s, want string, number or bool", out.Type().TypeName())}
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
	c, err := e.program(expr)
	if err != nil {
		return false, err
	}
	if k := c.Output.Kind(); k != types.BoolKind && k != types.DynKind {
		return false, &CompileError{Expr: expr, Err: fmt.Errorf("yields %v, want bool", c.Output)}
	}
	out, err := e.run(ctx, expr, c, vars)
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, &CompileError{Expr: expr, Err: fmt.Errorf("yields %T, want bool", out.Value())}
	}
	return b, nil
}

// run evaluates a compiled expression under its bounds and ctx.
func (e *Evaluator) run(ctx context.Context, expr string, c *Program, vars map[string]any) (ref.Val, error) {
	out, err := c.Eval(ctx, vars)
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	return out, nil
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
