package celfn

import (
	"context"
	"errors"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"

	"github.com/configasdata/cad/internal/lru"
	"github.com/configasdata/cad/revision"
)

// DefaultMaxPrograms is how many compiled programs a Programs keeps when
// NewPrograms is given no bound.
const DefaultMaxPrograms = 1024

// Programs compiles CEL expressions in one environment and keeps the
// compiled programs by expression, at most a fixed number of them, dropping
// the least recently used. Its programs evaluate under the bounds of the
// package doc (a cost limit, a value bound, a timeout). The Evaluator and
// the variant package's templates share it; a user's own CEL extension can
// too. A Programs is safe for concurrent use, and so are the programs it
// returns.
type Programs struct {
	env    *cel.Env
	limits limits
	guard  cel.ProgramOption
	cache  *lru.Cache[string, *Program]
}

// limits are the bounds of one evaluation.
type limits struct {
	cost     uint64
	valueMax int64
	timeout  time.Duration
}

// Program is a compiled expression and its checked output type.
type Program struct {
	prog   cel.Program
	expr   string
	limits limits
	// Output is the type the checker gives the expression's value
	// (cel.DynType when it cannot tell).
	Output *cel.Type
}

// NewPrograms returns a Programs over env. Of opts, WithCostLimit,
// WithMaxValueBytes, WithTimeout and WithMaxPrograms apply (each with its
// default when not given); WithEnvOptions does not, env being built.
func NewPrograms(env *cel.Env, opts ...Option) *Programs {
	c := newConfig(opts)
	l := limits{cost: c.costLimit, valueMax: c.maxValueBytes, timeout: c.timeout}
	return &Programs{env: env, limits: l, guard: guard(env, l),
		cache: lru.New[string, *Program](int64(c.maxPrograms), 1)}
}

// Compile returns the program of expr, compiled on first use and kept.
// An expression that does not compile (or cannot be planned) returns a
// *CompileError and is not kept. Two goroutines compiling one new
// expression at once may both compile it; one program is kept.
func (p *Programs) Compile(expr string) (*Program, error) {
	if c, ok := p.cache.Get(expr); ok {
		return c, nil
	}
	ast, iss := p.env.Compile(expr)
	if iss.Err() != nil {
		return nil, &CompileError{Expr: expr, Err: iss.Err()}
	}
	prog, err := p.env.Program(ast, p.guard, cel.CostLimit(p.limits.cost), cel.InterruptCheckFrequency(1))
	if err != nil {
		return nil, &CompileError{Expr: expr, Err: err}
	}
	return p.cache.Add(expr, &Program{prog: prog, expr: expr, limits: p.limits, Output: ast.OutputType()}, 1), nil
}

// Len returns the number of compiled programs kept.
func (p *Programs) Len() int { return p.cache.Len() }

// Eval evaluates the program over vars (a map[string]any or a
// cel.Activation) until ctx is done or the program's timeout passes,
// whichever comes first. An evaluation refused by a bound returns a
// *revision.LimitError (matching revision.ErrLimit): wrapping ErrCostLimit
// past the cost limit, ErrTimeout past the timeout, and no cause when a
// value would exceed the value bound. When ctx ends it, the error matches
// ctx's error. Other failures are the evaluator's errors. The errors do
// not name the expression; the caller does.
func (p *Program) Eval(ctx context.Context, vars any) (ref.Val, error) {
	run, cancel := context.WithTimeout(ctx, p.limits.timeout)
	defer cancel()
	out, _, err := p.prog.ContextEval(run, vars)
	if err == nil {
		return out, nil
	}
	var le *revision.LimitError
	switch {
	case errors.As(err, &le):
		return nil, le
	case IsCostLimit(err):
		return nil, &revision.LimitError{What: "the evaluation", Limit: costLimit, Max: int64(min(p.limits.cost, 1<<63-1)), Err: ErrCostLimit}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case run.Err() != nil:
		return nil, &revision.LimitError{What: "the evaluation", Limit: timeoutLimit, Max: int64(p.limits.timeout), Err: ErrTimeout}
	}
	return nil, err
}
