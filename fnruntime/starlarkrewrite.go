package fnruntime

import (
	"go.starlark.net/syntax"
)

// rewriteStarlark rewrites a parsed script, before it is resolved and
// compiled, so that every operation that may allocate more than its
// operands hold goes through a guard (starlarkguard.go) that sizes the
// result and reserves it first:
//
//   - x + y, x * y, x % y and x | y become cad$operand(x) op y, unless
//     the operands are literals or a number literal makes the result a
//     number (i + 1); x += y and x *= y become x op= cad$aug(y), which
//     keeps += on a list in place; x %= y becomes x = cad$operand(x) % y
//     when x names no call (its operands are evaluated twice), and is
//     left alone otherwise;
//   - x[k] = v becomes x[k] = cad$slot(x, v) when x names no call, which
//     reserves the new table of a dict that the insertion would grow;
//   - x[lo:hi:step] becomes cad$slice(x, lo, hi, step)[lo:hi:step], which
//     reserves the copy (of all of x when a bound calls something);
//   - x.name, for a name of guardedMethods, becomes cad$attr(x.name),
//     which returns the method guarded (so a method kept and called later
//     is guarded as well).
//
// The guarded builtins (str, list, ...) need no rewrite: the run
// predeclares guarded replacements of them. The rewritten nodes keep the
// positions of the originals, so errors and backtraces point at the
// script's own lines and columns.
func rewriteStarlark(f *syntax.File) {
	f.Stmts = rewriteStmts(f.Stmts)
}

func rewriteStmts(stmts []syntax.Stmt) []syntax.Stmt {
	for i, s := range stmts {
		stmts[i] = rewriteStmt(s)
	}
	return stmts
}

func rewriteStmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.LHS = rewriteLHS(s.LHS)
		s.RHS = rewriteExpr(s.RHS)
		switch s.Op {
		case syntax.EQ:
			// x[k] = v may grow a dict's table.
			if ix, ok := s.LHS.(*syntax.IndexExpr); ok && pureExpr(ix.X) {
				start, end := s.RHS.Span()
				s.RHS = &syntax.CallExpr{Fn: &syntax.Ident{NamePos: start, Name: guardSlotName}, Lparen: start,
					Args: []syntax.Expr{cloneExpr(ix.X), s.RHS}, Rparen: end}
			}
		case syntax.PLUS_EQ, syntax.STAR_EQ:
			s.RHS = guardCall(guardAugName, s.RHS)
		case syntax.PERCENT_EQ:
			// The interpreter formats x % y for a string x whatever y
			// is, so y cannot carry the guard: wrap x, read once more.
			if pureExpr(s.LHS) {
				return &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: s.LHS,
					RHS: &syntax.BinaryExpr{X: guardCall(guardOperandName, cloneExpr(s.LHS)), OpPos: s.OpPos, Op: syntax.PERCENT, Y: s.RHS}}
			}
		}
	case *syntax.DefStmt:
		rewriteParams(s.Params)
		s.Body = rewriteStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rewriteExpr(s.X)
	case *syntax.ForStmt:
		s.Vars = rewriteLHS(s.Vars)
		s.X = rewriteExpr(s.X)
		s.Body = rewriteStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rewriteExpr(s.Cond)
		s.Body = rewriteStmts(s.Body)
	case *syntax.IfStmt:
		s.Cond = rewriteExpr(s.Cond)
		s.True = rewriteStmts(s.True)
		s.False = rewriteStmts(s.False)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rewriteExpr(s.Result)
		}
	}
	return s
}

// rewriteParams rewrites the default values of parameters.
func rewriteParams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rewriteExpr(b.Y)
		}
	}
}

// rewriteLHS rewrites the expressions inside an assignment's target,
// not the target itself.
func rewriteLHS(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X = rewriteExpr(e.X)
		e.Y = rewriteExpr(e.Y)
	case *syntax.DotExpr:
		e.X = rewriteExpr(e.X)
	case *syntax.ParenExpr:
		e.X = rewriteLHS(e.X)
	case *syntax.TupleExpr:
		for i, x := range e.List {
			e.List[i] = rewriteLHS(x)
		}
	case *syntax.ListExpr:
		for i, x := range e.List {
			e.List[i] = rewriteLHS(x)
		}
	}
	return e
}

func rewriteExprs(list []syntax.Expr) {
	for i, x := range list {
		list[i] = rewriteExpr(x)
	}
}

func rewriteExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X = rewriteExpr(e.X)
		e.Y = rewriteExpr(e.Y)
		if guardedBinary(e) {
			e.X = guardCall(guardOperandName, e.X)
		}
	case *syntax.CallExpr:
		e.Fn = rewriteExpr(e.Fn)
		for i, a := range e.Args {
			switch a := a.(type) {
			case *syntax.BinaryExpr:
				if a.Op == syntax.EQ { // name=value
					a.Y = rewriteExpr(a.Y)
					continue
				}
			case *syntax.UnaryExpr:
				if a.Op == syntax.STAR || a.Op == syntax.STARSTAR {
					a.X = rewriteExpr(a.X)
					continue
				}
			}
			e.Args[i] = rewriteExpr(a)
		}
	case *syntax.DotExpr:
		e.X = rewriteExpr(e.X)
		if guardedAttr(e.Name.Name) {
			return guardCall(guardAttrName, e)
		}
	case *syntax.Comprehension:
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = rewriteLHS(c.Vars)
				c.X = rewriteExpr(c.X)
			case *syntax.IfClause:
				c.Cond = rewriteExpr(c.Cond)
			}
		}
		e.Body = rewriteExpr(e.Body)
	case *syntax.DictEntry:
		e.Key = rewriteExpr(e.Key)
		e.Value = rewriteExpr(e.Value)
	case *syntax.DictExpr:
		rewriteExprs(e.List)
	case *syntax.ListExpr:
		rewriteExprs(e.List)
	case *syntax.TupleExpr:
		rewriteExprs(e.List)
	case *syntax.CondExpr:
		e.Cond = rewriteExpr(e.Cond)
		e.True = rewriteExpr(e.True)
		e.False = rewriteExpr(e.False)
	case *syntax.IndexExpr:
		e.X = rewriteExpr(e.X)
		e.Y = rewriteExpr(e.Y)
	case *syntax.SliceExpr:
		e.X = rewriteExpr(e.X)
		args := []syntax.Expr{e.X}
		pure := true
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = rewriteExpr(*p)
				pure = pure && pureExpr(*p)
			}
		}
		if pure { // the bounds are read once more, to size the copy
			for _, p := range []syntax.Expr{e.Lo, e.Hi, e.Step} {
				if p == nil {
					p = &syntax.Ident{Name: "None"}
				}
				args = append(args, cloneExpr(p))
			}
		}
		start, end := e.X.Span()
		e.X = &syntax.CallExpr{Fn: &syntax.Ident{NamePos: start, Name: guardSliceName}, Lparen: start, Args: args, Rparen: end}
	case *syntax.ParenExpr:
		e.X = rewriteExpr(e.X)
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = rewriteExpr(e.X)
		}
	case *syntax.LambdaExpr:
		rewriteParams(e.Params)
		e.Body = rewriteExpr(e.Body)
	}
	return e
}

// guardedBinary reports whether a binary expression may allocate more
// than its operands hold, so that it needs the guard.
func guardedBinary(e *syntax.BinaryExpr) bool {
	switch e.Op {
	case syntax.PLUS, syntax.PIPE, syntax.PERCENT:
		// With a number literal the result is a number (or an error);
		// with two literals it is bounded by the source.
		return !numberLiteral(e.X) && !numberLiteral(e.Y) && !(literal(e.X) && literal(e.Y))
	case syntax.STAR:
		return !(numberLiteral(e.X) && numberLiteral(e.Y))
	}
	return false
}

func literal(e syntax.Expr) bool {
	_, ok := e.(*syntax.Literal)
	return ok
}

func numberLiteral(e syntax.Expr) bool {
	l, ok := e.(*syntax.Literal)
	return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT)
}

// guardCall is name(arg), at arg's position.
func guardCall(name string, arg syntax.Expr) syntax.Expr {
	start, end := arg.Span()
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: start, Name: name}, Lparen: start, Args: []syntax.Expr{arg}, Rparen: end}
}

// pureExpr reports whether evaluating e twice is the same as once: it
// calls nothing.
func pureExpr(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.Ident, *syntax.Literal:
		return true
	case *syntax.DotExpr:
		return pureExpr(e.X) && !guardedAttr(e.Name.Name)
	case *syntax.IndexExpr:
		return pureExpr(e.X) && pureExpr(e.Y)
	case *syntax.ParenExpr:
		return pureExpr(e.X)
	}
	return false
}

// cloneExpr copies a pure expression, so that the resolver sees two
// distinct nodes.
func cloneExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}
	case *syntax.Literal:
		c := *e
		return &c
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: cloneExpr(e.X), Dot: e.Dot, NamePos: e.NamePos, Name: &syntax.Ident{NamePos: e.Name.NamePos, Name: e.Name.Name}}
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: cloneExpr(e.X), Lbrack: e.Lbrack, Y: cloneExpr(e.Y), Rbrack: e.Rbrack}
	case *syntax.ParenExpr:
		return &syntax.ParenExpr{Lparen: e.Lparen, X: cloneExpr(e.X), Rparen: e.Rparen}
	}
	return e
}
