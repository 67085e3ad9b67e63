package variant

import (
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// The CEL variables of a PackageVariantSet template, as Porch names them.
const (
	VarRepoDefault    = "repoDefault"
	VarPackageDefault = "packageDefault"
	VarUpstream       = "upstream"
	VarRepository     = "repository"
	VarTarget         = "target"
)

// ErrCostLimit is matched by an *ExprError whose evaluation was stopped by
// Options.CostLimit. It is the same value as celfn.ErrCostLimit, and
// matches revision.ErrLimit.
var ErrCostLimit = celfn.ErrCostLimit

// ExprError is a template expression that does not compile, fails, exceeds
// a bound or does not yield a string. It matches
// repository.ErrInvalidInput; when a bound refused it (Options.CostLimit,
// MaxCELValueBytes, CELTimeout), its Err is a *revision.LimitError naming
// the option, and it matches revision.ErrLimit (and ErrCostLimit for the
// cost limit).
type ExprError struct {
	Field string // e.g. "spec.targets[0].template.downstream.packageExpr"
	Expr  string
	Err   error
}

// Error names the field and the expression and gives the cause.
func (e *ExprError) Error() string {
	return fmt.Sprintf("%s: CEL expression %q: %v", e.Field, e.Expr, e.Err)
}

// Unwrap returns the cause and repository.ErrInvalidInput.
func (e *ExprError) Unwrap() []error { return []error{e.Err, repository.ErrInvalidInput} }

// celEnv compiles template expressions once and evaluates them under the
// CEL bounds of Options. It is safe for concurrent use.
type celEnv struct {
	progs *celfn.Programs
}

// newCELEnv builds the template environment with o's CEL bounds (o after
// withDefaults; the zero Options, for validation only, gives celfn's
// defaults).
func newCELEnv(o Options) (*celEnv, error) {
	env, err := cel.NewEnv(
		cel.Variable(VarRepoDefault, cel.StringType),
		cel.Variable(VarPackageDefault, cel.StringType),
		cel.Variable(VarUpstream, cel.DynType),
		cel.Variable(VarTarget, cel.DynType),
		cel.Variable(VarRepository, cel.DynType),
		cel.DefaultUTCTimeZone(true),
		ext.Strings(),
	)
	if err != nil {
		return nil, fmt.Errorf("variant: CEL environment: %w", err)
	}
	return &celEnv{progs: celfn.NewPrograms(env, celfn.WithCostLimit(o.CostLimit),
		celfn.WithMaxValueBytes(o.MaxCELValueBytes), celfn.WithTimeout(o.CELTimeout))}, nil
}

// program returns the compiled expr, which must yield a string. Errors
// are the compiler's.
func (c *celEnv) program(expr string) (*celfn.Program, error) {
	p, err := c.progs.Compile(expr)
	if err != nil {
		var ce *celfn.CompileError
		if errors.As(err, &ce) {
			err = ce.Err
		}
		return nil, err
	}
	if k := p.Output.Kind(); k != types.StringKind && k != types.DynKind {
		return nil, fmt.Errorf("yields %v, want string", p.Output)
	}
	return p, nil
}

// check compiles expr, for validation.
func (c *celEnv) check(field, expr string) error {
	if _, err := c.program(expr); err != nil {
		return &ExprError{Field: field, Expr: expr, Err: err}
	}
	return nil
}

// eval evaluates expr over vars and returns its string value.
func (c *celEnv) eval(ctx context.Context, field, expr string, vars map[string]any) (string, error) {
	p, err := c.program(expr)
	if err != nil {
		return "", &ExprError{Field: field, Expr: expr, Err: err}
	}
	out, err := p.Eval(ctx, vars)
	if err != nil {
		var le *revision.LimitError
		switch {
		case errors.As(err, &le):
			name, ok := optionNames[le.Limit]
			if !ok {
				name = le.Limit
			}
			err = &revision.LimitError{What: le.What, Limit: name, Max: le.Max, Err: le.Err}
		case ctx.Err() != nil:
			return "", ctx.Err()
		}
		return "", &ExprError{Field: field, Expr: expr, Err: err}
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", &ExprError{Field: field, Expr: expr, Err: fmt.Errorf("yields %s, want string", out.Type().TypeName())}
	}
	return s, nil
}

// optionNames are the Options fields of celfn's bounds, for the Limit of a
// *revision.LimitError.
var optionNames = map[string]string{
	"celfn.WithCostLimit":     "variant.Options.CostLimit",
	"celfn.WithMaxValueBytes": "variant.Options.MaxCELValueBytes",
	"celfn.WithTimeout":       "variant.Options.CELTimeout",
}
