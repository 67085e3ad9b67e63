package celfn

import (
	"github.com/google/cel-go/cel"

	"github.com/configasdata/cad/internal/lru"
)

// DefaultMaxPrograms is how many compiled programs a Programs keeps when
// NewPrograms is given no bound.
const DefaultMaxPrograms = 1024

// Programs compiles CEL expressions in one environment, each with a cost
// limit and interrupt checks (so a context cancels it), and keeps the
// compiled programs by expression, at most a fixed number of them, dropping
// the least recently used. The Evaluator and the variant package's
// templates share it; a user's own CEL extension can too. A Programs is
// safe for concurrent use, and so are the programs it returns.
type Programs struct {
	env   *cel.Env
	cost  uint64
	cache *lru.Cache[string, *Program]
}

// Program is a compiled expression and its checked output type.
type Program struct {
	cel.Program
	// Output is the type the checker gives the expression's value
	// (cel.DynType when it cannot tell).
	Output *cel.Type
}

// NewPrograms returns a Programs over env whose programs stop at costLimit
// (0 means DefaultCostLimit) and that keeps at most max compiled programs
// (0 or less means DefaultMaxPrograms).
func NewPrograms(env *cel.Env, costLimit uint64, max int) *Programs {
	if costLimit == 0 {
		costLimit = DefaultCostLimit
	}
	if max <= 0 {
		max = DefaultMaxPrograms
	}
	return &Programs{env: env, cost: costLimit, cache: lru.New[string, *Program](int64(max), 1)}
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
	prog, err := p.env.Program(ast, cel.CostLimit(p.cost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, &CompileError{Expr: expr, Err: err}
	}
	return p.cache.Add(expr, &Program{Program: prog, Output: ast.OutputType()}, 1), nil
}

// Len returns the number of compiled programs kept.
func (p *Programs) Len() int { return p.cache.Len() }
