package celfn

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/configasdata/cad/revision"
)

// DefaultMaxValueBytes bounds the size of one value an evaluation creates
// when WithMaxValueBytes is not given: 1 MiB.
const DefaultMaxValueBytes = 1 << 20

// DefaultTimeout bounds the time of one evaluation when WithTimeout is not
// given.
const DefaultTimeout = 10 * time.Second

// elemBytes is what one element of a list counts against the value bound:
// the size of the value that holds it, whatever the element.
const elemBytes = 16

// ErrCostLimit matches an evaluation stopped by its cost limit. It is the
// one such sentinel of cad (variant.ErrCostLimit is the same value), and it
// matches revision.ErrLimit and revision.ErrInvalid: the expression, not
// the machinery, is at fault.
var ErrCostLimit error = limitSentinel("CEL cost limit exceeded")

// ErrTimeout matches an evaluation stopped by its own timeout (see
// WithTimeout), not by the caller's context. It matches revision.ErrLimit
// and revision.ErrInvalid.
var ErrTimeout error = limitSentinel("CEL evaluation timed out")

type limitSentinel string

func (s limitSentinel) Error() string { return string(s) }

func (s limitSentinel) Is(target error) bool {
	return target == revision.ErrLimit || target == revision.ErrInvalid
}

// IsCostLimit reports whether err, returned by a cel-go program's
// evaluation, says the program's cost limit stopped it.
func IsCostLimit(err error) bool {
	var c interpreter.EvalCancelledError
	return errors.As(err, &c) && c.Cause == interpreter.CostLimitExceeded
}

// resultSize returns an upper bound of the size in bytes of the value a
// function returns for args, computed from the arguments alone and without
// allocating; past max it may stop counting and return any value above
// max. Arguments of other types than it expects count zero: the function
// itself refuses them.
type resultSize func(args []ref.Val, max int64) int64

// resultSizes are the functions whose result can be larger than their
// arguments, by name, in the standard library and cel-go's ext libraries.
// Functions whose result is never larger than an argument (substring,
// trim, lowerAscii, upperAscii, reverse, charAt, conversions) and
// comprehensions (bounded by the cost limit, one element an iteration)
// are not here.
var resultSizes = map[string]resultSize{
	"_+_":           addSize,
	"replace":       replaceSize,
	"split":         splitSize,
	"join":          joinSize,
	"format":        formatSize,
	"strings.quote": quoteSize,
	"base64.encode": base64Size,
	"lists.range":   rangeSize,
}

// addSize: string and bytes concatenation copy both operands; a list
// concatenation shares them, but its length is what later traversals pay.
func addSize(args []ref.Val, _ int64) int64 {
	switch a := args[0].(type) {
	case types.String:
		if b, ok := args[1].(types.String); ok {
			return int64(len(a)) + int64(len(b))
		}
	case types.Bytes:
		if b, ok := args[1].(types.Bytes); ok {
			return int64(len(a)) + int64(len(b))
		}
	case traits.Lister:
		if b, ok := args[1].(traits.Lister); ok {
			return elemBytes * (length(a) + length(b))
		}
	}
	return 0
}

// replaceSize is exact: the target's length plus what each replaced
// occurrence adds.
func replaceSize(args []ref.Val, _ int64) int64 {
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return 0
	}
	grow := int64(len(repl)) - int64(len(old))
	if grow <= 0 {
		return int64(len(s))
	}
	k := int64(strings.Count(string(s), string(old)))
	if len(args) == 4 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && int64(n) < k {
			k = int64(n)
		}
	}
	return int64(len(s)) + k*grow
}

// splitSize: the pieces share the target's bytes; the list holds one
// element a piece.
func splitSize(args []ref.Val, _ int64) int64 {
	s, ok1 := args[0].(types.String)
	sep, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return 0
	}
	pieces := int64(strings.Count(string(s), string(sep))) + 1
	if len(args) == 3 {
		if n, ok := args[2].(types.Int); ok && n >= 0 && int64(n) < pieces {
			pieces = int64(n)
		}
	}
	return elemBytes * pieces
}

// joinSize sums the elements and separators, stopping past max.
func joinSize(args []ref.Val, max int64) int64 {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0
	}
	var sep int64
	if len(args) == 2 {
		if s, ok := args[1].(types.String); ok {
			sep = int64(len(s))
		}
	}
	n := length(l)
	if n == 0 {
		return 0
	}
	total := (n - 1) * sep
	if total > max || sep > 0 && n-1 > max/sep {
		return max + 1
	}
	for it := l.Iterator(); it.HasNext() == types.True; {
		if s, ok := it.Next().(types.String); ok {
			total += int64(len(s))
			if total > max {
				return total
			}
		}
	}
	return total
}

// formatSize bounds the formatted string by the format's length plus a
// bound of each argument's formatting, whichever verb formats it.
func formatSize(args []ref.Val, max int64) int64 {
	f, ok1 := args[0].(types.String)
	l, ok2 := args[1].(traits.Lister)
	if !ok1 || !ok2 {
		return 0
	}
	num := 512 + precision(string(f))
	total := int64(len(f))
	for it := l.Iterator(); it.HasNext() == types.True && total <= max; {
		total += formatted(it.Next(), num, max-total)
	}
	return total
}

// formatted bounds the formatting of v by any verb: a string or bytes
// quoted, escaped or in hex takes at most three bytes a byte; a number at
// most num; a list or map its elements and separators. It stops past
// budget.
func formatted(v ref.Val, num, budget int64) int64 {
	switch v := v.(type) {
	case types.String:
		return 3*int64(len(v)) + 2
	case types.Bytes:
		return 3*int64(len(v)) + 2
	case traits.Lister:
		total := int64(2)
		for it := v.Iterator(); it.HasNext() == types.True && total <= budget; {
			total += 2 + formatted(it.Next(), num, budget-total)
		}
		return total
	case traits.Mapper:
		total := int64(2)
		for it := v.Iterator(); it.HasNext() == types.True && total <= budget; {
			k := it.Next()
			total += 4 + formatted(k, num, budget-total)
			if total <= budget {
				total += formatted(v.Get(k), num, budget-total)
			}
		}
		return total
	}
	return num
}

// precision returns the largest number after a '.' in a format string
// (the precision of %.Nf and %.Ne), 0 when there is none, at most 1<<30.
func precision(f string) int64 {
	var best int64
	for i := 0; i < len(f); i++ {
		if f[i] != '.' {
			continue
		}
		var n int64
		for j := i + 1; j < len(f) && f[j] >= '0' && f[j] <= '9' && n < 1<<30; j++ {
			n = n*10 + int64(f[j]-'0')
		}
		best = max(best, n)
	}
	return best
}

// quoteSize: an invalid byte becomes the three bytes of U+FFFD, an escaped
// character two bytes, and the quotes two.
func quoteSize(args []ref.Val, _ int64) int64 {
	if s, ok := args[0].(types.String); ok {
		return 3*int64(len(s)) + 2
	}
	return 0
}

// base64Size is exact for padded base64.
func base64Size(args []ref.Val, _ int64) int64 {
	if b, ok := args[0].(types.Bytes); ok {
		return 4 * ((int64(len(b)) + 2) / 3)
	}
	return 0
}

// rangeSize: lists.range(n) is a list of n integers.
func rangeSize(args []ref.Val, max int64) int64 {
	if n, ok := args[0].(types.Int); ok && n > 0 {
		if int64(n) > max/elemBytes {
			return max + 1
		}
		return elemBytes * int64(n)
	}
	return 0
}

func length(l traits.Lister) int64 {
	n, _ := l.Size().(types.Int)
	return int64(n)
}

// traversals are the functions whose work is a walk over nested lists and
// maps: equality compares them element by element, and membership
// compares a value with each element of a list. Nested list and map
// literals share their elements, so an expression of a few hundred bytes
// makes a value of 2^40 nested elements that costs nothing to build and
// hours to compare, in one call that neither the cost tracker (which
// charges after the call) nor the context (checked between iterations)
// can stop.
var traversals = map[string]nodeCount{
	"_==_": equalWork,
	"_!=_": equalWork,
	"@in":  inWork,
}

// nodeCount returns an upper bound of the elements a function visits for
// args, stopping past budget.
type nodeCount func(args []ref.Val, budget int64) int64

// equalWork: equality stops at the smaller operand (it compares sizes
// first, then elements until one differs).
func equalWork(args []ref.Val, budget int64) int64 {
	n := nodes(args[0], budget)
	return min(n, nodes(args[1], min(n, budget)))
}

// inWork: membership in a list compares the value with each element, each
// comparison stopping at the element's size; membership in a map is a
// lookup.
func inWork(args []ref.Val, budget int64) int64 {
	if l, ok := args[1].(traits.Lister); ok {
		return nodes(l, budget)
	}
	return 0
}

// nodes counts the elements of v, those of nested lists and maps
// included, stopping past budget. A scalar counts zero.
func nodes(v ref.Val, budget int64) int64 {
	var total int64
	switch v := v.(type) {
	case traits.Lister:
		if n := length(v); n > budget {
			return n
		}
		for it := v.Iterator(); it.HasNext() == types.True && total <= budget; {
			total += 1 + nodes(it.Next(), budget-total)
		}
	case traits.Mapper:
		for it := v.Iterator(); it.HasNext() == types.True && total <= budget; {
			total += 1 + nodes(v.Get(it.Next()), budget-total)
		}
	}
	return total
}

// guard returns the decorator that plans every call of a function of
// resultSizes or traversals in env through a guardedCall, which refuses
// the call before it runs when its result would exceed l.valueMax bytes
// or its walk l.cost elements.
func guard(env *cel.Env, l limits) cel.ProgramOption {
	fns := env.Functions()
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		fn := call.Function()
		g := &guardedCall{InterpretableCall: call}
		switch fn {
		case "_==_":
			g.apply = func(args []ref.Val) ref.Val { return types.Equal(args[0], args[1]) }
		case "_!=_":
			g.apply = func(args []ref.Val) ref.Val { return types.Bool(types.Equal(args[0], args[1]) != types.True) }
		default:
			impl := binding(fns[fn], fn, call.OverloadID())
			if impl == nil {
				return i, nil
			}
			g.apply = g.dispatch(impl)
		}
		if size, ok := resultSizes[fn]; ok {
			max := l.valueMax
			g.check = func(args []ref.Val) error {
				if n := size(args, max); n > max {
					return &revision.LimitError{What: fmt.Sprintf("the result of %s (at least %d bytes)", fn, n), Limit: valueLimit, Max: max}
				}
				return nil
			}
			return g, nil
		}
		if work, ok := traversals[fn]; ok && len(call.Args()) == 2 {
			budget := int64(min(l.cost, 1<<62))
			g.check = func(args []ref.Val) error {
				if n := work(args, budget); n > budget {
					return &revision.LimitError{What: fmt.Sprintf("%s over %d or more nested elements", fn, n), Limit: costLimit, Max: budget, Err: ErrCostLimit}
				}
				return nil
			}
			return g, nil
		}
		return i, nil
	})
}

// binding returns the implementation the planner would use for a call of
// fn with the overload id: the overload's, or the function's dynamic
// dispatch when the checker left the overload open.
func binding(decl *decls.FunctionDecl, fn, overload string) *functions.Overload {
	bs, err := decl.Bindings()
	if err != nil {
		return nil
	}
	var byName *functions.Overload
	for _, b := range bs {
		switch b.Operator {
		case overload:
			return b
		case fn:
			byName = b
		}
	}
	return byName
}

// guardedCall is a strict function call that evaluates its arguments,
// checks them against a bound, and only then calls the function. It keeps
// the planned call's id, function, overload and arguments, so the cost
// tracker charges it as the call it replaces. It is immutable and safe for
// concurrent use.
type guardedCall struct {
	interpreter.InterpretableCall
	check func(args []ref.Val) error
	apply func(args []ref.Val) ref.Val
}

// dispatch calls impl as the planner would.
func (c *guardedCall) dispatch(impl *functions.Overload) func(args []ref.Val) ref.Val {
	return func(args []ref.Val) ref.Val {
		if len(args) == 0 || impl.OperandTrait != 0 && !args[0].Type().HasTrait(impl.OperandTrait) {
			return types.NewErr("no such overload: %s", c.Function())
		}
		switch {
		case len(args) == 1 && impl.Unary != nil:
			return impl.Unary(args[0])
		case len(args) == 2 && impl.Binary != nil:
			return impl.Binary(args[0], args[1])
		case impl.Function != nil:
			return impl.Function(args...)
		}
		return types.NewErr("no such overload: %s", c.Function())
	}
}

// Eval implements interpreter.Interpretable.
func (c *guardedCall) Eval(a interpreter.Activation) ref.Val { return c.Exec(interpreter.AsFrame(a)) }

// Exec implements interpreter.InterpretableV2.
func (c *guardedCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	argIs := c.Args()
	args := make([]ref.Val, len(argIs))
	var unk *types.Unknown
	for i, a := range argIs {
		args[i] = a.Exec(frame)
		if types.IsError(args[i]) {
			return args[i]
		}
		unk, _ = types.MaybeMergeUnknowns(args[i], unk)
	}
	if unk != nil {
		return unk
	}
	if frame.CheckInterrupt() {
		return types.WrapErr(interpreter.InterruptError{})
	}
	if err := c.check(args); err != nil {
		return types.LabelErrNode(c.ID(), types.WrapErr(err))
	}
	return types.LabelErrNode(c.ID(), c.apply(args))
}

// The names of the bounds in a *revision.LimitError's Limit.
const (
	valueLimit   = "celfn.WithMaxValueBytes"
	costLimit    = "celfn.WithCostLimit"
	timeoutLimit = "celfn.WithTimeout"
)
