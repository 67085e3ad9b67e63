package fnruntime

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The names the rewrite (starlarkrewrite.go) calls. They are not valid
// Starlark identifiers, so a script can neither name nor shadow them.
const (
	guardOperandName = "cad$operand" // guardOperandName(x) op y
	guardAugName     = "cad$aug"     // x op= guardAugName(y)
	guardAttrName    = "cad$attr"    // guardAttrName(x.name)
	guardSlotName    = "cad$slot"    // x[k] = guardSlotName(x, v)
	guardSliceName   = "cad$slice"   // guardSliceName(x, lo, hi, step)[lo:hi:step]
)

// guardOperand is the operand of a binary operator that may allocate more
// than its operands (+, *, % and |): the rewrite wraps the left operand
// (or, in an augmented assignment, the right one), so that starlark's
// Binary, finding no built-in case for it, hands the operation to its
// Binary method, which sizes the result, reserves it, and applies the
// operator to the real operands.
type guardOperand struct {
	v      starlark.Value
	aug    bool // the right operand of +=, *=: lists are extended in place
	budget *starlarkBudget
}

var _ starlark.HasBinary = (*guardOperand)(nil)

func (g *guardOperand) String() string        { return g.v.String() }
func (g *guardOperand) Type() string          { return g.v.Type() }
func (g *guardOperand) Freeze()               { g.v.Freeze() }
func (g *guardOperand) Truth() starlark.Bool  { return g.v.Truth() }
func (g *guardOperand) Hash() (uint32, error) { return g.v.Hash() }

func (g *guardOperand) Binary(op syntax.Token, other starlark.Value, side starlark.Side) (starlark.Value, error) {
	x, y := g.v, other
	if side == starlark.Right {
		x, y = other, g.v
	}
	if l, ok := x.(*starlark.List); ok && g.aug && op == syntax.PLUS {
		if it, ok := y.(starlark.Iterable); ok {
			return g.extendInPlace(l, it)
		}
	}
	n, err := binarySize(op, x, y, g.budget.limit)
	if err != nil {
		return nil, g.budget.refuse(fmt.Sprintf("%s %s %s: %v", x.Type(), op, y.Type(), err))
	}
	if err := g.budget.reserve(fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()), n); err != nil {
		return nil, err
	}
	return starlark.Binary(op, x, y)
}

// extendInPlace is list += iterable, which extends the list itself, as
// the interpreter does.
func (g *guardOperand) extendInPlace(l *starlark.List, y starlark.Iterable) (starlark.Value, error) {
	m := seqLen(y)
	if err := g.budget.reserve("list += "+y.Type(), sizeMul(int64(l.Len())+m, growBytes)+sizeMul(m, elemCost(y))); err != nil {
		return nil, err
	}
	// Take the elements first: y may be l itself.
	elems := make([]starlark.Value, 0, m)
	it := y.Iterate()
	var v starlark.Value
	for it.Next(&v) {
		elems = append(elems, v)
	}
	it.Done()
	for _, v := range elems {
		if err := l.Append(v); err != nil {
			return nil, fmt.Errorf("cannot apply += to %s", strings.TrimPrefix(err.Error(), "cannot append to "))
		}
	}
	return l, nil
}

// binarySize bounds what x op y allocates.
func binarySize(op syntax.Token, x, y starlark.Value, limit int64) (int64, error) {
	switch op {
	case syntax.PLUS:
		switch x := x.(type) {
		case starlark.String:
			if y, ok := y.(starlark.String); ok {
				return int64(len(x)) + int64(len(y)) + boxBytes, nil
			}
		case starlark.Bytes:
			if y, ok := y.(starlark.Bytes); ok {
				return int64(len(x)) + int64(len(y)) + boxBytes, nil
			}
		case *starlark.List, starlark.Tuple:
			return sizeMul(seqLen(x)+seqLen(y), slotBytes), nil
		}
	case syntax.STAR:
		if _, ok := x.(starlark.Int); ok {
			if _, ok := y.(starlark.Int); !ok {
				x, y = y, x // n * seq
			}
		}
		n, ok := y.(starlark.Int)
		if !ok {
			return 0, nil
		}
		switch x := x.(type) {
		case starlark.Int:
			// Multiplication takes time more than linear in the
			// operands, and cannot be interrupted: a product is held
			// to maxIntBytes.
			if bytes := int64(x.BigInt().BitLen()+n.BigInt().BitLen()) / 8; bytes > maxIntBytes {
				return 0, fmt.Errorf("the product is an integer of %d bytes, over %d", bytes, maxIntBytes)
			} else {
				return bytes * 8, nil
			}
		case starlark.String, starlark.Bytes:
			return sizeMul(int64(starlark.Len(x)), repeatCount(n)), nil
		case *starlark.List, starlark.Tuple:
			return sizeMul(sizeMul(seqLen(x), repeatCount(n)), slotBytes), nil
		}
	case syntax.PERCENT:
		f, ok := x.(starlark.String)
		if !ok {
			return 0, nil
		}
		return formatSize(string(f), y, limit)
	case syntax.PIPE:
		switch x.(type) {
		case *starlark.Dict, *starlark.Set:
			return sizeMul(seqLen(x)+seqLen(y), entryBytes), nil
		}
	}
	return 0, nil
}

// sliceCount bounds the elements of x[lo:hi:step] (bounds holds lo, hi
// and step, or nothing when they are not known): the slice's own count
// when the bounds are plain integers, else the length of x.
func sliceCount(x starlark.Value, bounds starlark.Tuple) int64 {
	n := int64(starlark.Len(x))
	if n <= 0 || len(bounds) != 3 {
		return max(n, 0)
	}
	integer := func(v starlark.Value, def int64) (int64, bool) {
		if v == starlark.None {
			return def, true
		}
		if i, ok := v.(starlark.Int); ok {
			return i.Int64()
		}
		return 0, false
	}
	index := func(v starlark.Value, def int64) (int64, bool) {
		j, ok := integer(v, def)
		if ok && v != starlark.None && j < 0 {
			j += n
		}
		return j, ok
	}
	step, ok := integer(bounds[2], 1)
	if !ok || step == 0 {
		return n
	}
	var lo, hi int64
	var ok1, ok2 bool
	if step > 0 {
		lo, ok1 = index(bounds[0], 0)
		hi, ok2 = index(bounds[1], n)
		lo, hi = max(min(lo, n), 0), max(min(hi, n), 0)
	} else {
		hi, ok1 = index(bounds[0], n-1)
		lo, ok2 = index(bounds[1], -1)
		hi, lo = max(min(hi, n-1), -1), max(min(lo, n-1), -1)
		step = -step
	}
	switch {
	case !ok1 || !ok2:
		return n
	case hi <= lo:
		return 0
	}
	return min((hi-lo)/step+1, n)
}

// repeatCount is the count of a repetition, 0 when it is negative.
func repeatCount(n starlark.Int) int64 {
	if n.Sign() <= 0 {
		return 0
	}
	if i, ok := n.Int64(); ok {
		return i
	}
	return 1 << 62
}

// formatSize bounds format % args: the format, plus the rendering of each
// argument a directive consumes (a tuple's elements one each, a single
// value once; a mapping's values may each be named by every directive).
func formatSize(format string, args starlark.Value, limit int64) (int64, error) {
	n := int64(len(format)) + boxBytes
	var m int64
	var err error
	switch args := args.(type) {
	case starlark.Mapping:
		var maxv int64
		maxv, err = maxRender(args, limit)
		m = sizeMul(int64(strings.Count(format, "%")), maxv)
	default:
		m, err = renderSize(args, limit)
	}
	return sizeMul(sizeAdd(n, m), builderFactor), err
}

// maxRender is the largest rendering of the values of a mapping (or of
// the elements of another iterable).
func maxRender(v starlark.Value, limit int64) (int64, error) {
	var maxv int64
	d, ok := v.(*starlark.Dict)
	if !ok {
		return renderSize(v, limit)
	}
	s := newRenderSizer(limit)
	for _, k := range d.Keys() {
		val, _, _ := d.Get(k)
		if val == nil {
			continue
		}
		m, _, err := s.size(val)
		if err != nil {
			return 0, err
		}
		maxv = max(maxv, m)
	}
	return maxv, nil
}

// renderArgs bounds the rendering of all positional and keyword
// arguments together, as print and fail join them.
func renderArgs(args starlark.Tuple, kwargs []starlark.Tuple, limit int64) (int64, error) {
	s := newRenderSizer(limit)
	var n int64
	for _, a := range args {
		m, _, err := s.size(a)
		if err != nil {
			return 0, err
		}
		n = sizeAdd(n, m+1)
	}
	for _, kv := range kwargs {
		m, _, err := s.size(kv[1])
		if err != nil {
			return 0, err
		}
		n = sizeAdd(n, m+1)
	}
	return n, nil
}

// guardedCall is a builtin's cost: what a call with these arguments
// allocates, bounded before the call.
type guardedCall func(b *starlarkBudget, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error)

// guardedBuiltins are the universe builtins that may allocate more than
// their arguments hold; the run predeclares guarded replacements of the
// same names (predeclared names take precedence over the universe).
var guardedBuiltins = map[string]guardedCall{
	"str": func(b *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) == 1 {
			if _, ok := args[0].(starlark.String); ok {
				return 0, nil
			}
		}
		n, err := renderArgs(args, nil, b.limit)
		return sizeMul(n, builderFactor), err
	},
	"repr": func(b *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		n, err := renderArgs(args, nil, b.limit)
		return sizeMul(n, builderFactor), err
	},
	"print": func(b *starlarkBudget, _ starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
		// The message, and the standard error that keeps it.
		n, err := renderArgs(args, kwargs, b.limit)
		return sizeMul(n, builderFactor+1), err
	},
	"fail": func(b *starlarkBudget, _ starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
		n, err := renderArgs(args, kwargs, b.limit)
		return sizeMul(n, builderFactor), err
	},
	"list":     iterableCost(0, 1),
	"tuple":    iterableCost(0, 1),
	"sorted":   iterableCost(0, 2),
	"reversed": iterableCost(0, 1),
	"set":      entriesCost,
	"dict":     entriesCost,
	"enumerate": func(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) == 0 {
			return 0, nil
		}
		// A list of (int, value) pairs.
		return sizeMul(seqLen(args[0]), slotBytes+boxBytes+2*slotBytes), nil
	},
	"zip": func(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) == 0 {
			return 0, nil
		}
		n := seqLen(args[0])
		for _, a := range args[1:] {
			n = min(n, seqLen(a))
		}
		return sizeMul(n, slotBytes+boxBytes+int64(len(args))*slotBytes), nil
	},
	"bytes": func(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) == 0 {
			return 0, nil
		}
		if s, ok := args[0].(starlark.String); ok {
			return int64(len(s)), nil
		}
		return seqLen(args[0]), nil
	},
}

// iterableCost is the cost of a builtin that copies its argument i into
// a new list or tuple, factor times.
func iterableCost(i int, factor int64) guardedCall {
	return func(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) <= i {
			return 0, nil
		}
		return sizeMul(sizeMul(seqLen(args[i]), elemCost(args[i])), factor), nil
	}
}

// entriesCost is the cost of set(iterable) or dict(pairs, **kwargs).
func entriesCost(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	n := int64(len(kwargs))
	if len(args) > 0 {
		n += seqLen(args[0])
	}
	return sizeMul(n, entryBytes), nil
}

// guardedMethods are the methods of built-in types that may allocate more
// than their receiver and arguments hold, by receiver type and name. The
// rewrite wraps every x.name whose name is here (guardAttrName), so a
// method is guarded whether it is called at once or kept and called later.
var guardedMethods = map[string]map[string]guardedCall{
	"string": {
		"join":       stringJoinCost,
		"replace":    stringReplaceCost,
		"format":     stringFormatCost,
		"split":      stringSplitCost,
		"rsplit":     stringSplitCost,
		"splitlines": stringSplitCost,
		"upper":      stringCaseCost,
		"lower":      stringCaseCost,
		"title":      stringCaseCost,
		"capitalize": stringCaseCost,
	},
	"list": {
		"append": listGrowCost,
		"insert": listGrowCost,
		"extend": listGrowCost,
	},
	"dict": {
		"items":      dictViewCost(slotBytes + boxBytes + 2*slotBytes),
		"keys":       dictViewCost(slotBytes),
		"values":     dictViewCost(slotBytes),
		"update":     tableGrowCost,
		"setdefault": tableInsertCost,
	},
	"set": {
		"union":                tableGrowCost,
		"intersection":         tableGrowCost,
		"difference":           tableGrowCost,
		"symmetric_difference": tableGrowCost,
		"update":               tableGrowCost,
		"add":                  tableInsertCost,
	},
}

// guardedAttr reports whether the rewrite wraps x.name.
func guardedAttr(name string) bool {
	for _, m := range guardedMethods {
		if m[name] != nil {
			return true
		}
	}
	return false
}

func stringJoinCost(_ *starlarkBudget, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	sep := int64(len(recv.(starlark.String)))
	if len(args) == 0 {
		return 0, nil
	}
	it, ok := args[0].(starlark.Iterable)
	if !ok {
		return 0, nil
	}
	var n, count int64
	iter := it.Iterate()
	defer iter.Done()
	var v starlark.Value
	for iter.Next(&v) {
		if s, ok := v.(starlark.String); ok {
			n = sizeAdd(n, int64(len(s)))
		}
		count++
	}
	return sizeMul(sizeAdd(sizeAdd(n, sizeMul(sep, count)), boxBytes), builderFactor), nil
}

func stringReplaceCost(_ *starlarkBudget, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	s := string(recv.(starlark.String))
	if len(args) < 2 {
		return 0, nil
	}
	old, ok1 := args[0].(starlark.String)
	repl, ok2 := args[1].(starlark.String)
	if !ok1 || !ok2 {
		return 0, nil
	}
	var n int64
	if old == "" {
		n = int64(utf8.RuneCountInString(s)) + 1
	} else {
		n = int64(strings.Count(s, string(old)))
	}
	if len(args) > 2 {
		if c, ok := args[2].(starlark.Int); ok {
			if c, ok := c.Int64(); ok && c >= 0 {
				n = min(n, c)
			}
		}
	}
	return sizeAdd(int64(len(s)), sizeMul(n, int64(len(repl)))), nil
}

func stringFormatCost(b *starlarkBudget, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	f := string(recv.(starlark.String))
	// Each field may name any argument: count the largest for each.
	fields := int64(strings.Count(f, "{"))
	if fields == 0 {
		return int64(len(f)), nil
	}
	s := newRenderSizer(b.limit)
	var maxv int64
	for _, a := range args {
		m, _, err := s.size(a)
		if err != nil {
			return 0, err
		}
		maxv = max(maxv, m)
	}
	for _, kv := range kwargs {
		m, _, err := s.size(kv[1])
		if err != nil {
			return 0, err
		}
		maxv = max(maxv, m)
	}
	return sizeMul(sizeAdd(int64(len(f)), sizeMul(fields, maxv)), builderFactor), nil
}

func stringSplitCost(_ *starlarkBudget, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	s := string(recv.(starlark.String))
	pieces := int64(len(s))/2 + 1 // split on white space
	if len(args) > 0 {
		if sep, ok := args[0].(starlark.String); ok && sep != "" {
			pieces = int64(strings.Count(s, string(sep))) + 1
		}
	}
	return sizeMul(pieces, slotBytes+boxBytes), nil
}

func stringCaseCost(_ *starlarkBudget, recv starlark.Value, _ starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	s := string(recv.(starlark.String))
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			// Case mapping may grow a rune, and an invalid byte becomes
			// U+FFFD: at most three bytes for one.
			return sizeMul(int64(len(s)), 3), nil
		}
	}
	return int64(len(s)), nil
}

// listGrowCost is the cost of growing a list: its array may be
// reallocated, 1.25 times as large, while the old one is still held.
//
// A list that is small beside the limit is left to the watchdog when it
// grows by one element (append, insert): its growth takes steps.
func listGrowCost(b *starlarkBudget, recv starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	var m int64 = 1
	if len(args) == 1 {
		if _, ok := args[0].(starlark.Iterable); ok {
			m = max(seqLen(args[0]), 1) // extend; append of a list counts one more element
		}
	}
	n := sizeMul(seqLen(recv)+m, growBytes)
	if m == 1 && n < b.limit/16 {
		return 0, nil
	}
	return n, nil
}

func dictViewCost(per int64) guardedCall {
	return func(_ *starlarkBudget, recv starlark.Value, _ starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		return sizeMul(seqLen(recv), per), nil
	}
}

// tableInsertCost is the cost of inserting one entry into a dict or set:
// nothing, unless the insertion grows its table.
func tableInsertCost(_ *starlarkBudget, recv starlark.Value, _ starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	return tableInsertBytes(seqLen(recv)), nil
}

// tableBuckets is the number of buckets of a go.starlark.net hash table
// that holds n entries: the least power of two that keeps the load under
// 6.5 entries a bucket (its grow rule).
func tableBuckets(n int64) int64 {
	var nb int64 = 1
	for n >= 8 && float64(n) >= 6.5*float64(nb) {
		nb <<= 1
	}
	return nb
}

// tableInsertBytes is what inserting one more entry into a hash table of
// n entries allocates: the doubled bucket array when it grows.
func tableInsertBytes(n int64) int64 {
	if nb := tableBuckets(n + 1); nb > tableBuckets(n) {
		return sizeMul(nb, bucketBytes)
	}
	return 0
}

// tableGrowCost is the cost of a set or dict operation that builds or
// grows a hash table from the receiver and the arguments.
func tableGrowCost(_ *starlarkBudget, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	n := seqLen(recv) + int64(len(kwargs)) + 1
	for _, a := range args {
		n += seqLen(a)
	}
	return sizeMul(n, entryBytes), nil
}

// guardBuiltin returns a builtin of the same name that reserves cost
// before it calls real.
func guardBuiltin(real *starlark.Builtin, cost guardedCall) *starlark.Builtin {
	g := starlark.NewBuiltin(real.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if b := budgetOf(thread); b != nil && b.limit > 0 {
			n, err := cost(b, real.Receiver(), args, kwargs)
			if err != nil {
				return nil, b.refuse(fmt.Sprintf("%s: %v", real.Name(), err))
			}
			if err := b.reserve(real.Name(), n); err != nil {
				return nil, err
			}
		}
		return real.CallInternal(thread, args, kwargs)
	})
	if r := real.Receiver(); r != nil {
		return g.BindReceiver(r)
	}
	return g
}

// guardPredeclared returns the names a guarded run predeclares: the
// guarded replacements of universe builtins and the functions the
// rewrite calls.
func guardPredeclared(budget *starlarkBudget) starlark.StringDict {
	d := starlark.StringDict{}
	for name, cost := range guardedBuiltins {
		d[name] = guardBuiltin(starlark.Universe[name].(*starlark.Builtin), cost)
	}
	realGetattr := starlark.Universe["getattr"].(*starlark.Builtin)
	d["getattr"] = starlark.NewBuiltin("getattr", func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := realGetattr.CallInternal(thread, args, kwargs)
		if err != nil {
			return nil, err
		}
		return guardMethod(v), nil
	})
	d[guardOperandName] = starlark.NewBuiltin(guardOperandName, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return &guardOperand{v: args[0], budget: budget}, nil
	})
	d[guardAugName] = starlark.NewBuiltin(guardAugName, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return &guardOperand{v: args[0], aug: true, budget: budget}, nil
	})
	d[guardSlotName] = starlark.NewBuiltin(guardSlotName, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if d, ok := args[0].(*starlark.Dict); ok {
			if err := budget.reserve("dict insertion", tableInsertBytes(int64(d.Len()))); err != nil {
				return nil, err
			}
		}
		return args[1], nil
	})
	d[guardSliceName] = starlark.NewBuiltin(guardSliceName, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x := args[0]
		n := sliceCount(x, args[1:])
		per := int64(slotBytes)
		switch x.(type) {
		case starlark.String, starlark.Bytes:
			per = 1
		}
		if err := budget.reserve("a slice of a "+x.Type(), sizeMul(n, per)); err != nil {
			return nil, err
		}
		return x, nil
	})
	d[guardAttrName] = starlark.NewBuiltin(guardAttrName, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return guardMethod(args[0]), nil
	})
	return d
}

// guardMethod returns v, or a guarded builtin in its place when v is a
// method of guardedMethods bound to its receiver.
func guardMethod(v starlark.Value) starlark.Value {
	b, ok := v.(*starlark.Builtin)
	if !ok || b.Receiver() == nil {
		return v
	}
	var typ string
	switch b.Receiver().(type) {
	case starlark.String:
		typ = "string"
	case *starlark.List:
		typ = "list"
	case *starlark.Dict:
		typ = "dict"
	case *starlark.Set:
		typ = "set"
	}
	cost := guardedMethods[typ][b.Name()]
	if cost == nil {
		return v
	}
	return guardBuiltin(b, cost)
}
