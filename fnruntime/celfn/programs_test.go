package celfn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/revision"
)

// TestProgramsBounded compiles more distinct expressions than the bound:
// the cache never holds more, a kept program is reused, an evicted one is
// compiled again and still works, and a bad expression is not kept.
func TestProgramsBounded(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("x", cel.IntType))
	if err != nil {
		t.Fatal(err)
	}
	ps := celfn.NewPrograms(env, celfn.WithMaxPrograms(3))
	first, err := ps.Compile("x + 0")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := ps.Compile("x + 0"); again != first {
		t.Fatal("a kept expression was compiled again")
	}
	for i := 1; i <= 10; i++ {
		if _, err := ps.Compile(fmt.Sprintf("x + %d", i)); err != nil {
			t.Fatal(err)
		}
		if n := ps.Len(); n > 3 {
			t.Fatalf("%d programs kept, bound 3", n)
		}
	}
	evicted, err := ps.Compile("x + 0")
	if err != nil {
		t.Fatal(err)
	}
	if evicted == first {
		t.Fatal("the least recently used program was not dropped")
	}
	out, err := evicted.Eval(context.Background(), map[string]any{"x": 41})
	if err != nil || out.Value() != int64(41) {
		t.Fatalf("recompiled program: %v, %v", out, err)
	}
	before := ps.Len()
	var ce *celfn.CompileError
	if _, err := ps.Compile("x +"); !errors.As(err, &ce) {
		t.Fatalf("bad expression: %v, want a *CompileError", err)
	}
	if ps.Len() != before {
		t.Fatal("a bad expression changed the cache")
	}
}

// TestProgramsCostLimit: the programs stop at the cost limit given.
func TestProgramsCostLimit(t *testing.T) {
	env, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	p, err := celfn.NewPrograms(env, celfn.WithCostLimit(10)).Compile("[1,2,3,4,5,6,7,8,9,10].map(x, [1,2,3,4,5,6,7,8,9,10].map(y, x*y)).size() > 0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Eval(context.Background(), map[string]any{})
	if !errors.Is(err, celfn.ErrCostLimit) || !errors.Is(err, revision.ErrLimit) {
		t.Fatalf("an evaluation over the cost limit: %v, want ErrCostLimit and revision.ErrLimit", err)
	}
}
