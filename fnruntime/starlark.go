package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// DefaultStarlarkSteps bounds a starlark script when
// StarlarkFunction.MaxSteps is zero: about a second or two of CPU.
const DefaultStarlarkSteps = 100_000_000

// DefaultStarlarkMemory bounds the heap growth of a starlark run when
// StarlarkFunction.MaxMemory is zero.
const DefaultStarlarkMemory = 256 << 20

// ErrMemoryLimit matches the failure of a starlark run stopped because it
// would have grown the heap beyond StarlarkFunction.MaxMemory. The error
// that carries it is a *revision.LimitError (Limit
// "StarlarkFunction.MaxMemory"), so it also matches revision.ErrLimit.
var ErrMemoryLimit = errors.New("starlark memory limit exceeded")

// memoryCheckInterval is how often a run's memory watchdog samples the heap.
const memoryCheckInterval = 5 * time.Millisecond

// StarlarkFunction is the catalog's starlark function: it runs the
// Starlark script of its functionConfig over the resources.
//
// The functionConfig is a StarlarkRun (fn.kpt.dev/v1alpha1) with the
// script in `source` and optional `params`, or a ConfigMap with the script
// in data.source. The script gets the global `ctx` with
// `ctx.resource_list`, a dict with "apiVersion", "kind", "items" (a list
// of dicts, one per resource) and "functionConfig"; it mutates the items
// in place or replaces ctx.resource_list["items"], and the resulting items
// are the output. `ctx.environment` is an empty dict (the catalog exposes
// its container's environment; a library does not leak its process's), and
// `ctx.open_api` is kyaml's Kubernetes OpenAPI document, converted on first
// use. load() provides the catalog's libraries encoding/json.star,
// math.star and time.star (go.starlark.net's), encoding/base64.star
// (encode, decode with encoding standard, standard_raw, url, url_raw),
// encoding/yaml.star (loads, dumps), hash.star (md5, sha1, sha256, as hex)
// and krmfn.star (match_gvk, match_name, match_namespace); the others
// (bsoup, csv, geo, html, http, re, xlsx, zipfile) fail the step with an
// error naming the module. The dialect allows set,
// while, top-level control flow, global reassignment and recursion, as
// the catalog does.
//
// As in the catalog, values cross as YAML data: mappings become dicts in
// document order, !!int scalars ints, !!float floats, !!bool bools,
// !!null None and everything else strings; on the way back the output is
// re-serialised with every mapping's keys sorted and without comments.
// Over the wire (RunStream, which the renderer uses) kyaml's function
// filter then restores the comments and field order of the resources that
// kept their identity, exactly as kpt does for the catalog's container;
// resources the script creates keep the sorted order.
//
// print writes to the function's standard error. A script error (syntax,
// runtime, fail()) is a failure with the error message as an error result,
// as the catalog reports it. The run is bounded by MaxSteps and MaxMemory
// and cancelled with ctx. A StarlarkFunction is safe for concurrent use.
//
// # Memory
//
// Steps do not bound memory: one step may build a string or list of up to
// a GiB, and a few doublings (x = x + x) need only a handful of steps.
// go.starlark.net has no allocation accounting (its Thread offers only a
// step limit and Cancel), so the bound has two parts, both measured
// against the heap of the process when the run starts (collected first
// when more than MaxMemory/16 of it may be garbage):
//
// Guards reserve every allocation that can be larger than the values it
// is made from, before it happens. The parsed script is rewritten (its
// positions kept, so errors and backtraces point at the script's own lines
// and frames): the operands of +, *, % and | go through a guard that sizes
// the result (x + y, x * n, the rendering of format % args, a union) and
// then applies the operator, += keeps extending a list in place, and the
// methods that build (str.join, replace, format, split, rsplit,
// splitlines, upper, lower, title, capitalize; list.append, insert,
// extend; dict.items, keys, values, update, setdefault; set.union,
// intersection, difference, symmetric_difference, update, add) are
// replaced by guarded ones wherever x.name is read, so a method kept in a
// variable is guarded too, as is getattr's result. x[k] = v reserves the
// doubled table of a dict the insertion grows, and a slice reserves its
// copy. The universe builtins that build (str, repr, print, fail, list,
// tuple, sorted, reversed, set, dict, enumerate, zip, bytes) are
// predeclared as guarded replacements, and so are json.encode, decode and
// indent, yaml.loads and dumps and base64.encode of load(). A rendering
// (str, repr, %, format, print, json, yaml, and the conversion of the
// output items) is sized by a walk that counts each shared container once
// and stops at the bound, so a list that holds the same list twice, forty
// levels deep, is refused in microseconds instead of rendered to a TB; a
// value nested more than 1000 levels deep is refused. An integer product
// is held to 1 MiB (multiplying takes time that cannot be interrupted). A
// reservation compares the heap's growth, counting garbage, plus the new
// allocation with MaxMemory; only when that is over does it collect (at
// most every 10ms) and count the live heap, and refuse if that is still
// over. Allocations under 64 KiB are not reserved one by one.
//
// A watchdog catches growth in small steps (appending in a loop, a
// comprehension): every 5ms it reads the heap and, when the growth may be
// over MaxMemory, collects (at most every 50ms) and cancels the thread if
// the live heap is still over. Either way the script fails with a
// *revision.LimitError matching ErrMemoryLimit and revision.ErrLimit, as
// an error result.
//
// Measured with the default bound of 256 MiB, the list doubling
// grows the process by 242 MiB and string doubling by 257 MiB before they
// are refused (they reached 8.4 and 4.2 GB unguarded). The bound is on
// the whole process's heap, so allocations of other goroutines during the
// run count against it (in a server, a concurrent large request can stop
// a script) and their garbage freed during the run hides as much of its
// growth. What is not reserved is left to the watchdog, which sees it
// within 5ms: small allocations, the growth of a dict or set by a
// comprehension, x %= y where x names a call, and the CPU time of
// rendering or converting a large integer. The caller's context cancels
// the thread at its next step, and no guarded operation runs for long.
type StarlarkFunction struct {
	// MaxSteps bounds the Starlark computation steps of one run; zero
	// means DefaultStarlarkSteps. A run over it fails with a
	// *revision.LimitError matching ErrStepLimit and revision.ErrLimit.
	MaxSteps uint64
	// MaxMemory bounds, in bytes, how much the heap may grow during one
	// run (see Memory above); zero means DefaultStarlarkMemory, negative
	// means no bound (and no rewrite). A run over it fails with a
	// *revision.LimitError matching ErrMemoryLimit and revision.ErrLimit.
	MaxMemory int64
}

var _ pipeline.StreamFunction = (*StarlarkFunction)(nil)

const defaultStarlarkProgramName = "starlark-function-run"

// Run implements pipeline.Function. The standard error of print calls is
// returned only in a failure's *pipeline.FunctionError; use RunStream to
// get it on success as well.
func (s *StarlarkFunction) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	_, err := s.run(ctx, rl)
	return err
}

// RunStream implements pipeline.StreamFunction over a serialised
// ResourceList.
func (s *StarlarkFunction) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	data, err := io.ReadAll(in)
	if err != nil {
		return "", err
	}
	rl, err := pipeline.ParseResourceList(data)
	if err != nil {
		return "", err
	}
	stderr, runErr := s.run(ctx, rl)
	b, err := rl.Encode()
	if err != nil {
		return stderr, err
	}
	if _, err := out.Write(b); err != nil {
		return stderr, err
	}
	return stderr, runErr
}

func (s *StarlarkFunction) run(ctx context.Context, rl *pipeline.ResourceList) (string, error) {
	var stderr strings.Builder
	fail := func(msg string, cause error) (string, error) {
		rl.Results = append(rl.Results, errorResult(msg))
		stderr.WriteString("failed to evaluate function: error: function failure")
		err := errFunctionFailure
		if cause != nil {
			err = fmt.Errorf("%w: %w", errFunctionFailure, cause)
		}
		return stderr.String(), &pipeline.FunctionError{ExitCode: 1, Stderr: stderr.String(), Err: err}
	}
	name, source, err := starlarkConfig(rl.FunctionConfig)
	if err != nil {
		// The release reports a config error as one result of message
		// and severity only: no resourceRef.
		ferr := reportConfigError(rl, len(rl.Results), &configError{msg: err.Error(), noRef: true})
		return ferr.(*pipeline.FunctionError).Stderr, ferr
	}
	resourceList := starlark.NewDict(4)
	items := make([]starlark.Value, 0, len(rl.Items))
	for _, it := range rl.Items {
		v, err := nodeToStarlark(it.YNode())
		if err != nil {
			return fail(err.Error(), nil)
		}
		items = append(items, v)
	}
	_ = resourceList.SetKey(starlark.String("apiVersion"), starlark.String(pipeline.ResourceListAPIVersion))
	_ = resourceList.SetKey(starlark.String("kind"), starlark.String(pipeline.ResourceListKind))
	_ = resourceList.SetKey(starlark.String("items"), starlark.NewList(items))
	if !rl.FunctionConfig.IsNilOrEmpty() {
		fc, err := nodeToStarlark(rl.FunctionConfig.YNode())
		if err != nil {
			return fail(err.Error(), nil)
		}
		_ = resourceList.SetKey(starlark.String("functionConfig"), fc)
	}
	predeclared := starlark.StringDict{
		"ctx": starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
			"resource_list": resourceList,
			"environment":   starlark.NewDict(0),
			"open_api":      &lazyOpenAPI{},
		}),
	}
	thread := &starlark.Thread{
		Name:  name,
		Print: func(_ *starlark.Thread, msg string) { stderr.WriteString(msg + "\n") },
		Load:  starlarkLoad,
	}
	steps := s.MaxSteps
	if steps == 0 {
		steps = DefaultStarlarkSteps
	}
	thread.SetMaxExecutionSteps(steps)
	stop := context.AfterFunc(ctx, func() { thread.Cancel(context.Cause(ctx).Error()) })
	defer stop()
	maxMem := s.MaxMemory
	if maxMem == 0 {
		maxMem = DefaultStarlarkMemory
	}
	budget := newStarlarkBudget(name, maxMem, thread.Cancel)
	thread.SetLocal(starlarkBudgetKey, budget)
	defer budget.watch()()
	for k, v := range guardPredeclared(budget) {
		predeclared[k] = v
	}
	runErr := func(err error) (string, error) {
		switch {
		case budget.over.Load() != nil:
			return fail(err.Error(), budget.over.Load())
		case ctx.Err() != nil:
			return fail(err.Error(), context.Cause(ctx))
		case thread.ExecutionSteps() >= steps && strings.Contains(err.Error(), "too many steps"):
			return fail(err.Error(), &revision.LimitError{What: fmt.Sprintf("starlark script %q", name),
				Limit: "StarlarkFunction.MaxSteps", Max: int64(min(steps, math.MaxInt64)), Err: ErrStepLimit})
		}
		return fail(err.Error(), nil)
	}
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	f, err := opts.Parse(name, source, 0)
	if err != nil {
		return fail(err.Error(), nil)
	}
	if maxMem > 0 {
		rewriteStarlark(f)
	}
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return fail(err.Error(), nil)
	}
	if _, err := prog.Init(thread, predeclared); err != nil {
		return runErr(err)
	}
	// The items are converted to Go data and then YAML: reserve that
	// first (a list holding one dict many times converts each copy).
	if items, found, _ := resourceList.Get(starlark.String("items")); found {
		n, err := renderSize(items, maxMem)
		if err == nil {
			err = budget.reserve("converting the items", sizeMul(n, 4))
		} else {
			err = budget.refuse("the items: " + err.Error())
		}
		if err != nil {
			return runErr(err)
		}
	}
	out, err := starlarkItems(resourceList)
	if err != nil {
		return fail(err.Error(), nil)
	}
	rl.Items = out
	// kpt reports a container's standard error without the final newline.
	return strings.TrimSuffix(stderr.String(), "\n"), nil
}

// starlarkConfig reads a StarlarkRun or ConfigMap functionConfig as the
// catalog does, with its messages.
func starlarkConfig(fc *yaml.RNode) (name, source string, err error) {
	switch {
	case fc.IsNilOrEmpty():
		return "", "", errors.New("FunctionConfig is missing. Expect `ConfigMap` or `StarlarkRun`")
	case isGVK(fc, "", "v1", "ConfigMap"):
		source = configData(fc)["source"]
	case isGVK(fc, "fn.kpt.dev", "v1alpha1", "StarlarkRun"):
		source, _ = nestedString(fc, "source")
	default:
		g, v := groupVersion(fc.GetApiVersion())
		return "", "", fmt.Errorf("`functionConfig` must be either /v1, Kind=ConfigMap or fn.kpt.dev/v1alpha1, Kind=StarlarkRun, but we got: %s/%s, Kind=%s", g, v, fc.GetKind())
	}
	name = fc.GetName()
	if name == "" {
		name = defaultStarlarkProgramName
	}
	if source == "" {
		return "", "", errors.New("`source` must not be empty")
	}
	return name, source, nil
}

// starlarkItems converts ctx.resource_list["items"] back to resources: to
// plain data, then YAML with sorted keys, as the catalog's conversion does.
func starlarkItems(resourceList *starlark.Dict) ([]*yaml.RNode, error) {
	v, found, err := resourceList.Get(starlark.String("items"))
	if err != nil {
		return nil, err
	}
	if !found || v == starlark.None {
		return nil, nil
	}
	iter, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("resource_list items must be a list, got %s", v.Type())
	}
	var out []*yaml.RNode
	it := iter.Iterate()
	defer it.Done()
	var x starlark.Value
	for it.Next(&x) {
		d, err := starlarkToData(x)
		if err != nil {
			return nil, err
		}
		if _, ok := d.(map[string]any); !ok {
			return nil, fmt.Errorf("resource_list items must be dicts, got %s", x.Type())
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		n, err := yaml.Parse(string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// nodeToStarlark converts YAML to a Starlark value, with the types a
// decode into interface{} gives.
func nodeToStarlark(n *yaml.Node) (starlark.Value, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return starlark.None, nil
		}
		return nodeToStarlark(n.Content[0])
	case yaml.AliasNode:
		return nodeToStarlark(n.Alias)
	case yaml.MappingNode:
		d := starlark.NewDict(len(n.Content) / 2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := nodeToStarlark(n.Content[i])
			if err != nil {
				return nil, err
			}
			v, err := nodeToStarlark(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(k, v); err != nil {
				return nil, err
			}
		}
		return d, nil
	case yaml.SequenceNode:
		els := make([]starlark.Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeToStarlark(c)
			if err != nil {
				return nil, err
			}
			els = append(els, v)
		}
		return starlark.NewList(els), nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case nil:
			return starlark.None, nil
		case bool:
			return starlark.Bool(v), nil
		case int:
			return starlark.MakeInt(v), nil
		case int64:
			return starlark.MakeInt64(v), nil
		case uint64:
			return starlark.MakeUint64(v), nil
		case float64:
			return starlark.Float(v), nil
		case string:
			return starlark.String(v), nil
		default:
			return starlark.String(n.Value), nil
		}
	}
	return nil, fmt.Errorf("unsupported YAML node kind %v", n.Kind)
}

// starlarkToData converts a Starlark value to the plain Go data that YAML
// encodes: maps, slices, strings, numbers, bools and nil. A value nested
// deeper than maxNesting (a list that holds itself, for one) is refused.
func starlarkToData(v starlark.Value) (any, error) {
	return starlarkToDataDepth(v, 0)
}

func starlarkToDataDepth(v starlark.Value, depth int) (any, error) {
	if depth > maxNesting {
		return nil, errTooDeep
	}
	depth++
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return i, nil
		}
		if u, ok := v.Uint64(); ok {
			return u, nil
		}
		return nil, fmt.Errorf("integer %s is out of range", v)
	case starlark.Float:
		return float64(v), nil
	case starlark.String:
		return string(v), nil
	case starlark.Bytes:
		return string(v), nil
	case *starlark.Dict:
		m := make(map[string]any, v.Len())
		for _, kv := range v.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is not a string", kv[0])
			}
			d, err := starlarkToDataDepth(kv[1], depth)
			if err != nil {
				return nil, err
			}
			m[string(k)] = d
		}
		return m, nil
	case starlark.Indexable: // list, tuple
		out := make([]any, 0, v.Len())
		for i := 0; i < v.Len(); i++ {
			d, err := starlarkToDataDepth(v.Index(i), depth)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	case *starlark.Set:
		var out []any
		it := v.Iterate()
		defer it.Done()
		var x starlark.Value
		for it.Next(&x) {
			d, err := starlarkToDataDepth(x, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot convert a starlark %s to YAML", v.Type())
}
