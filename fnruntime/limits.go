package fnruntime

import (
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Defaults of [Limits].
const (
	// DefaultMaxOutputBytes caps what one builtin run may add to its
	// input.
	DefaultMaxOutputBytes = 128 << 20
	// DefaultOutputFactor is how many times its input a builtin run may
	// add, beyond DefaultOutputSlack.
	DefaultOutputFactor = 4
	// DefaultOutputSlack is what a builtin run may add beyond
	// OutputFactor times its input, so that small packages can grow.
	DefaultOutputSlack = 16 << 20
	// DefaultMaxPathDepth caps the segments of a field path a builtin's
	// config writes through.
	DefaultMaxPathDepth = 100
)

// Limits bound what a builtin function (see [Builtins]) may add to its
// input. Each field's zero value means its default; a negative value
// means no bound. A run over a bound fails with a *pipeline.FunctionError
// whose cause is a *revision.LimitError (errors.Is matches
// revision.ErrLimit and revision.ErrInvalid) and reports one error result
// saying which bound; the step fails, so the render writes nothing.
//
// Sizes are those of the YAML the items, results and written files would
// encode to (values, keys, comments and block indentation, so a deep path
// counts by its depth as well as its length), estimated without encoding,
// plus 160 bytes for every node (what a node holds in memory), so that the
// bounds hold the memory of many small fields as well as the text of
// large ones. What a run adds is its output's size less its input's: the
// input is already bounded where it is read (revision.YAMLLimits), and a
// run that does not grow its input is never refused. The builtins that
// multiply their config (a put-value with capture groups, labels and
// annotations set on every resource, a value replaced into many fields, a
// field path created) charge what they write before writing it; after the
// run, the output is measured once more before any caller encodes it.
//
// A Limits is a value, read and never changed by the functions.
type Limits struct {
	// MaxOutputBytes caps what one run adds to its input (items, results
	// and written files); zero means DefaultMaxOutputBytes (128 MiB).
	// Limit name in errors: "fnruntime.Limits.MaxOutputBytes".
	MaxOutputBytes int64
	// OutputFactor and OutputSlack bound what a run adds by its input: at
	// most OutputFactor × its input's size + OutputSlack bytes (and never
	// more than MaxOutputBytes). Zero means DefaultOutputFactor (4) and
	// DefaultOutputSlack (16 MiB). Limit name in errors:
	// "fnruntime.Limits.OutputFactor".
	OutputFactor int64
	OutputSlack  int64
	// MaxPathDepth caps the number of segments of a field path that a
	// builtin writes through: search-replace's by-path,
	// apply-replacements' fieldPaths (with or without create). Zero means
	// DefaultMaxPathDepth (100). A deeper path is refused before any
	// resource is touched, as a config error (see DESIGN.md beside
	// this package, "Config errors") that also matches revision.ErrLimit.
	// Limit name in errors: "fnruntime.Limits.MaxPathDepth".
	MaxPathDepth int
}

func (l Limits) withDefaults() Limits {
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.OutputFactor == 0 {
		l.OutputFactor = DefaultOutputFactor
	}
	if l.OutputSlack == 0 {
		l.OutputSlack = DefaultOutputSlack
	}
	if l.MaxPathDepth == 0 {
		l.MaxPathDepth = DefaultMaxPathDepth
	}
	return l
}

type limitsKey struct{}

// withLimits returns fn running with l: the builtins among fn read them
// from the run's context.
func withLimits(fn pipeline.Function, l Limits) pipeline.Function {
	if _, ok := fn.(pipeline.StreamFunction); ok {
		return fn
	}
	return pipeline.FunctionFunc(func(ctx context.Context, rl *pipeline.ResourceList) error {
		return fn.Run(context.WithValue(ctx, limitsKey{}, l), rl)
	})
}

func limitsFrom(ctx context.Context) Limits {
	l, _ := ctx.Value(limitsKey{}).(Limits)
	return l.withDefaults()
}

// budget is what one builtin run may add to its input. A builtin charges what it
// is about to write; charge also checks the run's context every so often,
// so that a builtin's loops end soon after ctx does.
type budget struct {
	ctx   context.Context
	what  string
	max   int64 // bytes; < 0: no bound
	limit string
	used  int64
	calls int
}

type budgetKey struct{}

// newBudget sizes the budget of a run over input of size in bytes.
func newBudget(ctx context.Context, what string, l Limits, in int64) *budget {
	b := &budget{ctx: ctx, what: what, max: -1, limit: "fnruntime.Limits.MaxOutputBytes"}
	if l.MaxOutputBytes > 0 {
		b.max = l.MaxOutputBytes
	}
	if l.OutputFactor > 0 && l.OutputSlack >= 0 {
		if byInput := satMul(l.OutputFactor, in) + l.OutputSlack; byInput >= 0 && (b.max < 0 || byInput < b.max) {
			b.max, b.limit = byInput, "fnruntime.Limits.OutputFactor"
		}
	}
	return b
}

// satAdd is a+b, or no bound (-1) when b is none.
func satAdd(a, b int64) int64 {
	if b < 0 {
		return -1
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > (1<<62)/a {
		return 1 << 62
	}
	return a * b
}

// budgetFrom returns the run's budget; a builtin called outside strict
// gets one with the default limits and no input.
func budgetFrom(ctx context.Context) *budget {
	if b, ok := ctx.Value(budgetKey{}).(*budget); ok {
		return b
	}
	return newBudget(ctx, "builtin output", limitsFrom(ctx), 0)
}

// charge accounts for n more bytes added and refuses them when the
// total would pass the budget. It returns ctx's error once ctx is done.
func (b *budget) charge(n int64) error {
	b.calls++
	if b.calls&255 == 0 {
		if err := b.ctx.Err(); err != nil {
			return err
		}
	}
	if n < 0 {
		n = 0
	}
	if b.max >= 0 && b.used+n > b.max {
		return b.refuse(b.used + n)
	}
	b.used += n
	return nil
}

// check refuses n bytes added over the budget without charging them.
func (b *budget) check(n int64) error {
	if b.max >= 0 && n > b.max {
		return b.refuse(n)
	}
	return nil
}

func (b *budget) refuse(n int64) error {
	return &revision.LimitError{What: b.what, Limit: b.limit, Max: b.max,
		Err: fmt.Errorf("the run would add at least %d bytes to its input", n)}
}

// pathDepth refuses a field path of more than l.MaxPathDepth segments.
func pathDepth(l Limits, what string, segments int) error {
	if l.MaxPathDepth > 0 && segments > l.MaxPathDepth {
		return &revision.LimitError{What: what, Limit: "fnruntime.Limits.MaxPathDepth", Max: int64(l.MaxPathDepth),
			Err: fmt.Errorf("the path has %d segments", segments)}
	}
	return nil
}

// limitFailure reports a refused run in the builtins' shape: one error
// result and a *pipeline.FunctionError of exit code 1 whose cause is err.
func limitFailure(rl *pipeline.ResourceList, before int, err error) error {
	if before > len(rl.Results) {
		before = len(rl.Results)
	}
	rl.Results = append(rl.Results[:before], errorResult(err.Error()))
	return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: err}
}

// listSize estimates the YAML size of rl's items, function config and
// results, and the size of its WriteFiles (see yamlSize), stopping early once it passes stop (< 0: never).
func listSize(rl *pipeline.ResourceList, stop int64) int64 {
	var n int64
	for _, it := range rl.Items {
		if it != nil {
			n += yamlSize(it.YNode(), 0)
		}
		if stop >= 0 && n > stop {
			return n
		}
	}
	if !rl.FunctionConfig.IsNilOrEmpty() {
		n += yamlSize(rl.FunctionConfig.YNode(), 0)
	}
	for p, b := range rl.WriteFiles {
		n += int64(len(p) + len(b))
	}
	for _, r := range rl.Results {
		if r == nil {
			continue
		}
		n += int64(len(r.Message)) + 32
		if r.Field != nil {
			n += int64(len(r.Field.Path))
		}
		if r.File != nil {
			n += int64(len(r.File.Path))
		}
	}
	return n
}

// yamlSize estimates, without encoding, the bytes of n's YAML at block
// depth: every scalar, key, tag, anchor and comment, plus the indentation
// of each node's line and nodeOverhead. Aliases count as
// written (*name), not expanded.
func yamlSize(n *yaml.Node, depth int64) int64 {
	if n == nil {
		return 0
	}
	size := int64(len(n.Value)+len(n.Tag)+len(n.Anchor)+len(n.HeadComment)+len(n.LineComment)+len(n.FootComment)) + 2*depth + nodeOverhead
	if n.Kind == yaml.AliasNode {
		return size
	}
	child := depth + 1
	if n.Kind == yaml.DocumentNode {
		child = depth
	}
	for _, c := range n.Content {
		size += yamlSize(c, child)
	}
	return size
}

// nodeOverhead is what one node counts for beyond its text: a few bytes
// of YAML syntax, and a share of the memory a node holds, so that the
// budget bounds the nodes a builtin creates as well as the text.
const nodeOverhead = 160

// scalarSize is what writing one scalar of value v at path depth d costs.
func scalarSize(v string, d int) int64 { return int64(len(v)) + 2*int64(d) + nodeOverhead }

// refusedByLimit reports whether err is a bound's refusal.
func refusedByLimit(err error) bool { return errors.Is(err, revision.ErrLimit) }
