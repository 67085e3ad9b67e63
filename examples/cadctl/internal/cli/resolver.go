package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/pipeline"
)

// builtinVersions are the facts fnruntime keeps about its builtins'
// catalog functions, among them which sort their output.
var builtinVersions = fnruntime.BuiltinVersions()

// catalogName returns the catalog function name of an image:
// "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2" is "set-labels".
func catalogName(image string) string {
	name := imageref.Split(image).Name
	return name[strings.LastIndex(name, "/")+1:]
}

// sortsOutput reports whether the catalog function of image sorts its
// output, as every function on the kpt functions SDK does
// (fnruntime.CatalogVersion.SortsOutput). cadctl sorts the printed output
// of such a function after the render rather than the builtin sorting
// its own output: the order of the package's files is the same either
// way.
func sortsOutput(image string) bool {
	return image != "" && builtinVersions[catalogName(image)].SortsOutput
}

func sortItems(items []*kyaml.RNode) {
	id := func(n *kyaml.RNode) string {
		return n.GetApiVersion() + " " + n.GetKind() + " " + n.GetNamespace() + " " + n.GetName()
	}
	sort.SliceStable(items, func(i, j int) bool { return id(items[i]) < id(items[j]) })
}

// fnCall is one run of a function, as the recorder saw it.
type fnCall struct {
	id        string        // the image or exec
	selective bool          // the step had selectors or excludes
	in        int           // the number of resources it was given
	dur       time.Duration // how long it ran
	out       []itemKey     // where its output resources live, in order
	// nodes are the output resources themselves, for a function that ran
	// in-process: the renderer keeps working on these nodes, so after the
	// render they are its final in-memory state.
	nodes []*kyaml.RNode
	// inIDs are the kpt-resource-id annotations of the resources a
	// selective run was given: the positions in its package's list.
	inIDs []string
}

// itemKey locates a resource: the package-path annotation of the
// renderer, the package-relative path and the index in the file.
type itemKey struct{ pkg, path, index string }

func keyOf(n *kyaml.RNode) itemKey {
	a := n.GetAnnotations()
	p, idx := a[kioutil.PathAnnotation], a[kioutil.IndexAnnotation]
	if p == "" {
		p = a[kioutil.LegacyPathAnnotation]
	}
	if idx == "" {
		idx = a[kioutil.LegacyIndexAnnotation]
	}
	return itemKey{pkg: a[pipeline.PackagePathAnnotation], path: p, index: idx}
}

// recorder is a Resolver that records every function run: what kpt prints
// live ([RUNNING] on N resources, [PASS] in a duration) and the order of
// the output, which the library's Output does not carry.
type recorder struct {
	inner pipeline.Resolver

	mu    sync.Mutex
	calls []*fnCall
}

func (r *recorder) Resolve(ctx context.Context, step pipeline.Step) (pipeline.Function, error) {
	fn, err := r.inner.Resolve(ctx, step)
	if err != nil {
		return nil, kptResolveError(err)
	}
	id := step.Image
	if id == "" {
		id = step.Exec
	}
	rf := recordedFn{r: r, fn: fn, id: id, selective: len(step.Selectors) > 0 || len(step.Exclude) > 0}
	if sf, ok := fn.(pipeline.StreamFunction); ok {
		return &recordedStream{recordedFn: rf, sf: sf}, nil
	}
	return &rf, nil
}

func (r *recorder) add(c *fnCall) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) recorded() []*fnCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*fnCall(nil), r.calls...)
}

type recordedFn struct {
	r         *recorder
	fn        pipeline.Function
	id        string
	selective bool
}

func (f *recordedFn) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	c := &fnCall{id: f.id, selective: f.selective, in: len(rl.Items)}
	if f.selective {
		for _, n := range rl.Items {
			c.inIDs = append(c.inIDs, n.GetAnnotations()[resourceIDAnnotation])
		}
	}
	start := time.Now()
	err := f.fn.Run(ctx, rl)
	c.dur = time.Since(start)
	for _, n := range rl.Items {
		if n != nil {
			c.out = append(c.out, keyOf(n))
		}
	}
	c.nodes = append([]*kyaml.RNode(nil), rl.Items...)
	f.r.add(c)
	return err
}

type recordedStream struct {
	recordedFn
	sf pipeline.StreamFunction
}

func (f *recordedStream) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	input, err := io.ReadAll(in)
	if err != nil {
		return "", err
	}
	c := &fnCall{id: f.id, selective: f.selective}
	if rl, err := pipeline.ParseResourceList(input); err == nil {
		c.in = len(rl.Items)
	}
	var buf bytes.Buffer
	start := time.Now()
	stderr, runErr := f.sf.RunStream(ctx, bytes.NewReader(input), io.MultiWriter(out, &buf))
	c.dur = time.Since(start)
	if rl, err := pipeline.ParseResourceList(buf.Bytes()); err == nil {
		for _, n := range rl.Items {
			c.out = append(c.out, keyOf(n))
		}
	}
	f.r.add(c)
	return stderr, runErr
}

// matchCalls pairs each step of a render with the recorded run of its
// function, nil for the steps whose function never ran. Runs happen in
// step order and the render stops at the first failure, so each step that
// ran takes the next recorded run with its image or exec.
func matchCalls(steps []pipeline.StepResult, calls []*fnCall) []*fnCall {
	out := make([]*fnCall, len(steps))
	next := 0
	for i, s := range steps {
		if s.Skipped || next >= len(calls) {
			continue
		}
		id := s.Image
		if id == "" {
			id = s.Exec
		}
		if calls[next].id == id {
			out[i] = calls[next]
			next++
		}
	}
	return out
}

// execNotAllowedError is the library's pipeline.ErrExecNotAllowed in
// kpt's words, which name the CLI's flag; the render records it in the
// Kptfile's status as kpt does.
type execNotAllowedError struct{ err error }

func (e *execNotAllowedError) Error() string {
	return "must run with `--allow-exec` option to allow running function binaries"
}

func (e *execNotAllowedError) Unwrap() error { return e.err }

// kptResolveError words a resolution error as kpt's CLI does.
func kptResolveError(err error) error {
	if errors.Is(err, pipeline.ErrExecNotAllowed) {
		return &execNotAllowedError{err: err}
	}
	return err
}
