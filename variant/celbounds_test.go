package variant_test

import (
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

// nest wraps base depth times in wrap, whose %[1]s is the expression one
// level down.
func nest(base, wrap string, depth int) string {
	for range depth {
		base = fmt.Sprintf(wrap, base)
	}
	return base
}

// templateAttacks are packageExprs of a PackageVariantSet that ask for far
// more memory than the machine has (upstream.name is 21 bytes).
var templateAttacks = map[string]string{
	// Issue 30: x.replace('', x) three deep, 229 bytes asking for ~55 GB;
	// unbounded, the server died within 2 s at every restart.
	"nested replace": nest("upstream.name", "(%[1]s).replace('', %[1]s)", 3),
	// The same in a comprehension, so the text does not double.
	"replace in comprehension": nest("upstream.name", "[%s].map(a, a.replace('', a))[0]", 3),
	// A string doubled 40 times.
	"string doubling": nest("upstream.name", "[%s].map(a, a + a)[0]", 40),
	// A list doubled 40 times, then joined.
	"list doubling join": nest("[upstream.name]", "[%s].map(a, a + a)[0]", 40) + ".join('')",
	// format doubling its argument.
	"format doubling": nest("repoDefault", "[%s].map(a, '%%s%%s'.format([a, a]))[0]", 40),
}

func attackSet(expr string) *variant.PackageVariantSet {
	return newSet("attack", variant.Target{
		Repositories: []variant.RepositoryTarget{{Name: "deployments"}},
		Template:     &variant.PackageVariantTemplate{Downstream: &variant.DownstreamTemplate{PackageExpr: ptr(expr)}},
	})
}

// A PackageVariantSet whose template asks for a huge value fails with an
// *ExprError matching revision.ErrLimit, writes nothing, and the process
// does not grow in proportion: the value bound refuses the call before it
// allocates.
func TestTemplateValueBound(t *testing.T) {
	for label, expr := range templateAttacks {
		t.Run(strings.ReplaceAll(label, " ", "_"), func(t *testing.T) {
			r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
				v := newEnv(t, backends[0])
				v.publish("blueprints", "bucket", upstreamFiles())
				before := v.version()
				start := time.Now()
				res, err := variant.SyncSet(v.ctx, v.e, attackSet(expr), v.opts)
				var xe *variant.ExprError
				var le *revision.LimitError
				if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &xe) || !errors.As(err, &le) ||
					le.Limit != "variant.Options.MaxCELValueBytes" || le.Max != celfn.DefaultMaxValueBytes || !errors.Is(err, repository.ErrInvalidInput) {
					t.Fatalf("%d-byte template: %v, want an *ExprError with the value bound's *revision.LimitError", len(expr), err)
				}
				if res.Ready() || v.version() != before {
					t.Error("a refused set was synced")
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("refused after %v", d)
				}
				t.Log(err)
			})
			t.Logf("%d-byte template: grew by %d KiB", len(expr), r.Growth()>>10)
			if r.Killed || r.Growth() > 64<<20 {
				t.Errorf("grew by %d MiB (killed: %v), want far under 256 MiB", r.Growth()>>20, r.Killed)
			}
		})
	}
}

// Options.MaxCELValueBytes and CELTimeout reach the evaluation, named in
// the error.
func TestTemplateBoundOptions(t *testing.T) {
	v := newEnv(t, backends[0])
	v.publish("blueprints", "bucket", upstreamFiles())
	opts := *v.opts
	opts.MaxCELValueBytes = 30
	_, err := variant.Unroll(v.ctx, v.e, attackSet("upstream.name + '-' + repoDefault"), &opts)
	var le *revision.LimitError
	if !errors.As(err, &le) || le.Limit != "variant.Options.MaxCELValueBytes" || le.Max != 30 {
		t.Fatalf("a 33-byte name over a 30-byte bound: %v", err)
	}
	opts.MaxCELValueBytes = 33
	pvs, err := variant.Unroll(v.ctx, v.e, attackSet("upstream.name + '-' + repoDefault"), &opts)
	if err != nil || len(pvs) != 1 || pvs[0].Spec.Downstream.Package != "blueprints.bucket.ws1-deployments" {
		t.Fatalf("a 33-byte name at a 33-byte bound: %v", err)
	}
	opts = *v.opts
	opts.CELTimeout = 50 * time.Millisecond
	opts.CostLimit = 1 << 62
	l := "[" + strings.Repeat("1,", 299) + "1]"
	slow := l + ".exists(a, " + l + ".exists(b, " + l + ".exists(c, a + b + c < 0))) ? 'x' : 'y'"
	start := time.Now()
	_, err = variant.Unroll(v.ctx, v.e, attackSet(slow), &opts)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a 50ms timeout stopped the template after %v", d)
	}
	if !errors.Is(err, celfn.ErrTimeout) || !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "variant.Options.CELTimeout" {
		t.Fatalf("a slow template with a 50ms timeout: %v", err)
	}
}

// FuzzVariantTemplate unrolls a PackageVariantSet whose packageExpr is
// the input, with a 64 KiB value bound, and fails when an unroll yields a
// larger name or allocates more than 64 MiB.
func FuzzVariantTemplate(f *testing.F) {
	for _, expr := range templateAttacks {
		f.Add(expr)
	}
	f.Add("packageDefault + '-' + repoDefault")
	f.Add("upstream.name.replace('.', '-')")
	f.Add("'%s-%s'.format([repoDefault, target.repo])")
	f.Add("repository.name.split('').join(upstream.name)")
	v := newEnv(f, backends[0])
	v.publish("blueprints", "bucket", upstreamFiles())
	const max, budget = 64 << 10, 64 << 20
	opts := *v.opts
	opts.MaxCELValueBytes = max
	opts.CostLimit = 100_000
	f.Fuzz(func(t *testing.T, expr string) {
		before := allocated()
		pvs, err := variant.Unroll(v.ctx, v.e, attackSet(expr), &opts)
		if n := allocated() - before; n > budget {
			t.Fatalf("%q allocated %d bytes, budget %d", expr, n, budget)
		}
		if err != nil {
			return
		}
		for _, pv := range pvs {
			if n := len(pv.Spec.Downstream.Package); n > max {
				t.Fatalf("%q yielded a %d-byte name, bound %d", expr, n, max)
			}
		}
	})
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// allocated returns the bytes allocated on the heap so far.
func allocated() int64 {
	metrics.Read(allocSample)
	return int64(allocSample[0].Value.Uint64())
}
