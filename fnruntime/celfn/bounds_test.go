package celfn_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/revision"
)

// name is a 21-byte string of the resources.
const name = "resources[0].metadata.name"

func named(t testing.TB) []*yaml.RNode {
	t.Helper()
	return []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blueprints-bucket-ws1\n")}
}

// nest wraps base depth times in the format wrap, whose %[1]s is the
// expression one level down.
func nest(base, wrap string, depth int) string {
	for range depth {
		base = fmt.Sprintf(wrap, base)
	}
	return base
}

// attacks are expressions whose values grow far past memory from a few
// hundred bytes of text, each refused by the value bound before the
// allocation that would exceed it.
var attacks = map[string]string{
	// Issue 30: x.replace('', x) three deep asks for ~55 GB from 21 bytes.
	"nested replace": nest(name, "(%[1]s).replace('', %[1]s)", 3),
	// A string doubled 40 times in a comprehension: 2^40 * 21 bytes.
	"string doubling": nest(name, "[%s].map(a, a + a)[0]", 40),
	// A list doubled 40 times (lazily, sharing its elements), then joined.
	"list doubling join": nest("["+name+"]", "[%s].map(a, a + a)[0]", 40) + ".join('')",
	// Splitting into characters and joining with the string squares it.
	"split join": nest(name, "[%s].map(a, a.split('').join(a))[0]", 3),
	// format doubling its argument.
	"format doubling": nest(name, "[%s].map(a, '%%s%%s'.format([a, a]))[0]", 40),
	// A list of a large list formatted.
	"format list": "'%s'.format([" + nest("["+nest(name, "[%s].map(a, a + a)[0]", 14)+"]", "[%s].map(a, a + a)[0]", 15) + "])",
	// strings.quote doubles every backslash.
	"quote doubling": nest(`'\\'`, "strings.quote(%s)", 40),
	// replace limited to a count still grows.
	"replace count": nest(name, "[%s].map(a, a.replace('', a, 100000))[0]", 3),
}

func strictEvaluator(t testing.TB, opts ...celfn.Option) *celfn.Evaluator {
	t.Helper()
	e, err := celfn.New(append([]celfn.Option{celfn.WithEnvOptions(ext.Strings())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Each attack fails with a *revision.LimitError matching revision.ErrLimit
// from the value bound, and the process does not grow in proportion to
// the value asked for: the bound is checked from the arguments before the
// function allocates.
func TestValueBoundAttacks(t *testing.T) {
	for label, expr := range attacks {
		t.Run(strings.ReplaceAll(label, " ", "_"), func(t *testing.T) {
			r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
				e := strictEvaluator(t)
				start := time.Now()
				_, err := e.EvalString(context.Background(), expr, named(t))
				var le *revision.LimitError
				if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "celfn.WithMaxValueBytes" || le.Max != celfn.DefaultMaxValueBytes {
					t.Fatalf("%d-byte expression: %v, want the value bound's *revision.LimitError", len(expr), err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("refused after %v", d)
				}
				t.Log(err)
			})
			t.Logf("%d-byte expression: grew by %d KiB", len(expr), r.Growth()>>10)
			if r.Killed || r.Growth() > 64<<20 {
				t.Errorf("grew by %d MiB (killed: %v), want far under 256 MiB", r.Growth()>>20, r.Killed)
			}
		})
	}
}

// Values up to the bound are made; one byte more is refused, for each
// function the bound guards.
func TestValueBoundExact(t *testing.T) {
	const max = 1000
	e := strictEvaluator(t, celfn.WithMaxValueBytes(max))
	s500 := "'" + strings.Repeat("a", 500) + "'"
	s100 := "'" + strings.Repeat("a", 100) + "'"
	for _, tc := range []struct {
		ok, over string
	}{
		{s500 + " + " + s500, s500 + " + " + s500 + " + 'a'"},
		{"b'" + strings.Repeat("a", 500) + "' + b'" + strings.Repeat("a", 500) + "' == b'' ? 'y' : 'n'", "b'" + strings.Repeat("a", 501) + "' + b'" + strings.Repeat("a", 500) + "' == b'' ? 'y' : 'n'"},
		{s100 + ".replace('a', 'aaaaaaaaaa')", s100 + ".replace('a', 'aaaaaaaaaaa')"},
		{s100 + ".replace('a', " + s100 + ", 9)", s100 + ".replace('a', " + s100 + ", 10)"},
		{"string(size(" + s100 + ".split('', 62)))", "string(size(" + s100 + ".split('', 63)))"},
		{"[" + s500 + ", " + s500 + "].join()", "[" + s500 + ", " + s500 + "].join(',')"},
		{"string(size([" + strings.Repeat("1,", 31) + "1] + [" + strings.Repeat("1,", 29) + "1]))", "string(size([" + strings.Repeat("1,", 31) + "1] + [" + strings.Repeat("1,", 30) + "1]))"},
		{"strings.quote('" + strings.Repeat("a", 332) + "')", "strings.quote('" + strings.Repeat("a", 333) + "')"},
		{"'%s'.format([" + s100 + "])", "'%s'.format([" + s500 + "])"},
	} {
		if _, err := e.EvalString(context.Background(), tc.ok, nil); err != nil {
			t.Errorf("%.60s...: %v", tc.ok, err)
		}
		if _, err := e.EvalString(context.Background(), tc.over, nil); !errors.Is(err, revision.ErrLimit) {
			t.Errorf("%.60s...: %v, want revision.ErrLimit", tc.over, err)
		}
	}
}

// Ordinary expressions with the guarded functions give cel-go's results.
func TestValueBoundOrdinary(t *testing.T) {
	e := strictEvaluator(t)
	for expr, want := range map[string]string{
		name + ".replace('-', '.')":                      "blueprints.bucket.ws1",
		name + ".replace('-', '.', 1)":                   "blueprints.bucket-ws1",
		name + ".split('-').join('/')":                   "blueprints/bucket/ws1",
		"string(size(" + name + ".split('-', 2)))":       "2",
		"'%s-%d-%.2f'.format([" + name + ", 3, 1.5])":    "blueprints-bucket-ws1-3-1.50",
		"strings.quote('a\"b')":                          `"a\"b"`,
		"(['a'] + ['b', 'c']).join()":                    "abc",
		name + " + '-x'":                                 "blueprints-bucket-ws1-x",
		"string(b'ab' + b'c')":                           "abc",
		"resources.map(r, r.metadata.name + '!').join()": "blueprints-bucket-ws1!",
		"dyn(" + name + ") + dyn('!')":                   "blueprints-bucket-ws1!",
		"string(1 + 2)":                                  "3",
	} {
		got, err := e.EvalString(context.Background(), expr, named(t))
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
	// Errors of the arguments and of the functions are cel-go's.
	for _, expr := range []string{"(" + name + " + 1).replace('a', 'b')", "dyn(1) + dyn('a')", "dyn([1]).join()"} {
		if _, err := e.EvalString(context.Background(), expr, named(t)); err == nil || errors.Is(err, revision.ErrLimit) {
			t.Errorf("%s: %v, want cel-go's error", expr, err)
		}
	}
}

// deep is a list of 2^40 nested elements from 300 bytes: list literals
// share their elements.
var deep = nest("[1]", "[%s].map(a, [a, a])[0]", 40)

// traversalAttacks compare deep values: one call each, which neither the
// cost tracker nor the context could stop before it was bounded.
var traversalAttacks = map[string]string{
	"equal":     "[" + deep + "].map(e, e == e)[0]",
	"not equal": "[" + deep + "].map(e, e != e)[0]",
	"in":        "[" + deep + "].map(e, e in [e])[0]",
	"exists":    "[" + deep + "].map(e, [e].exists(z, z == e))[0]",
	"map":       "[" + nest("{'k': 1}", "[%s].map(a, {'a': a, 'b': a})[0]", 40) + "].map(e, e == e)[0]",
}

// Comparing values of more nested elements than the cost limit is refused
// before the comparison, with ErrCostLimit; smaller ones compare.
func TestTraversalBound(t *testing.T) {
	// The cost limit, not the clock, must refuse the attacks: their
	// evaluator's timeout is far away, so that a loaded machine cannot
	// turn the refusal into ErrTimeout.
	costOnly, err := celfn.New(celfn.WithCostLimit(100_000), celfn.WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	e, err := celfn.New(celfn.WithCostLimit(100_000), celfn.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for label, expr := range traversalAttacks {
		start := time.Now()
		_, err := costOnly.Eval(context.Background(), expr, nil)
		var le *revision.LimitError
		if !errors.Is(err, celfn.ErrCostLimit) || !errors.As(err, &le) || le.Limit != "celfn.WithCostLimit" {
			t.Errorf("%s: %v, want ErrCostLimit", label, err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: refused after %v", label, d)
		}
	}
	// Refused comparisons in a loop: the timeout still stops it.
	l := "[" + strings.Repeat("1,", 99) + "1]"
	start := time.Now()
	_, err = e.Eval(context.Background(), "["+deep+"].map(e, "+l+".map(i, "+l+".map(j, e == e)))[0].size() > 0", nil)
	if !errors.Is(err, celfn.ErrTimeout) && !errors.Is(err, celfn.ErrCostLimit) {
		t.Errorf("refused comparisons in a loop: %v, want ErrTimeout or ErrCostLimit", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused comparisons in a loop: stopped after %v at a 1s timeout", d)
	}
	small := nest("[1]", "[%s].map(a, [a, a])[0]", 10)
	for _, expr := range []string{small + " == " + small, small + " != [] && " + small + " in [" + small + "]", "{'a': [1, 2]} == {'a': [1, 2]}", "[1, [2]] in [[1, [2]]]"} {
		if ok, err := e.Eval(context.Background(), expr, nil); err != nil || !ok {
			t.Errorf("%.60s...: %v, %v", expr, ok, err)
		}
	}
}

// A comprehension that would run for long stops at the timeout with
// ErrTimeout (matching revision.ErrLimit), and the caller's context stops
// it earlier.
func TestTimeout(t *testing.T) {
	e, err := celfn.New(celfn.WithCostLimit(1<<62), celfn.WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = e.EvalString(context.Background(), cubic, manyItems(300))
	if !errors.Is(err, celfn.ErrTimeout) || !errors.Is(err, revision.ErrLimit) {
		t.Fatalf("want ErrTimeout matching revision.ErrLimit, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v to stop at a 100ms timeout", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := e.EvalString(ctx, cubic, manyItems(300)); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, celfn.ErrTimeout) {
		t.Fatalf("the caller's deadline: %v, want context.DeadlineExceeded", err)
	}
}

// The cost-limit sentinel is a limit.
func TestCostLimitIsLimit(t *testing.T) {
	if !errors.Is(celfn.ErrCostLimit, revision.ErrLimit) || !errors.Is(celfn.ErrTimeout, revision.ErrLimit) {
		t.Fatal("ErrCostLimit or ErrTimeout does not match revision.ErrLimit")
	}
}

// fuzzMax and fuzzAllocs are FuzzCELExpr's value bound and allocation
// budget: an evaluation may allocate at most fuzzAllocs bytes in all.
const (
	fuzzMax    = 64 << 10
	fuzzCost   = 100_000
	fuzzAllocs = 64 << 20
)

// FuzzCELExpr evaluates expressions with the strings library under a
// 64 KiB value bound and fails when an evaluation returns a larger value
// or allocates more than 64 MiB.
func FuzzCELExpr(f *testing.F) {
	for _, expr := range attacks {
		f.Add(expr)
	}
	for _, expr := range traversalAttacks {
		f.Add(expr)
	}
	for _, expr := range []string{
		name + ".replace('-', '.')",
		name + ".split('').join(" + name + ")",
		"'%s%s'.format([" + name + ", " + name + "])",
		nest("'ab'", "(%[1]s + %[1]s)", 10),
		"lists.range(1000000).size()",
		"base64.encode(bytes(" + nest(name, "[%s].map(a, a + a)[0]", 15) + "))",
		"resources.map(r, [r, r, r]).size()",
	} {
		f.Add(expr)
	}
	programs, err := fuzzPrograms()
	if err != nil {
		f.Fatal(err)
	}
	items := []any{map[string]any{"metadata": map[string]any{"name": "blueprints-bucket-ws1"}}}
	f.Fuzz(func(t *testing.T, expr string) {
		p, err := programs.Compile(expr)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		before := allocated()
		out, err := p.Eval(ctx, map[string]any{"resources": items, "object": items[0]})
		if n := allocated() - before; n > fuzzAllocs {
			t.Fatalf("%q allocated %d bytes, budget %d", expr, n, fuzzAllocs)
		}
		if err != nil {
			return
		}
		if n := sizeOf(out); n > fuzzMax {
			t.Fatalf("%q returned %d bytes, bound %d", expr, n, fuzzMax)
		}
	})
}

func fuzzPrograms() (*celfn.Programs, error) {
	env, err := cel.NewEnv(
		cel.Variable("resources", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable("object", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(), ext.Encoders(), ext.Lists(),
	)
	if err != nil {
		return nil, err
	}
	return celfn.NewPrograms(env, celfn.WithMaxValueBytes(fuzzMax), celfn.WithCostLimit(fuzzCost), celfn.WithMaxPrograms(16)), nil
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// allocated returns the bytes allocated on the heap so far.
func allocated() int64 {
	metrics.Read(allocSample)
	return int64(allocSample[0].Value.Uint64())
}

// sizeOf is the size of a result as the value bound counts it.
func sizeOf(v any) int64 {
	switch v := v.(type) {
	case types.String:
		return int64(len(v))
	case types.Bytes:
		return int64(len(v))
	case traits.Lister:
		n, _ := v.Size().(types.Int)
		return 16 * int64(n)
	}
	return 0
}
