package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// rootAbs is where the package sits in the in-memory file system the render
// works on. Functions see it in the package-path annotation.
const rootAbs = "/pkg"

const (
	resourceIDAnnotation = "internal.config.kubernetes.io/kpt-resource-id"
	bfsAnnotation        = "kpt.dev/bfs-rendering"
)

var matchAllKRM = append([]string{revision.KptfileName}, kio.MatchAll...)

type hydrationState int

const (
	dry hydrationState = iota
	hydrating
	wet
)

type pkgNode struct {
	abs   string // absolute path in the in-memory fs
	rel   string // "." or "./sub/dir", as kpt prints it
	dir   string // "" for the root, else the slash path below it
	kf    *revision.Kptfile
	steps Steps
	state hydrationState
	res   []*yaml.RNode
}

type hydration struct {
	r             *Renderer
	files         revision.Files
	fs            filesys.FileSystem
	root          *pkgNode
	pkgs          map[string]*pkgNode
	inputFiles    map[string]bool
	steps         []StepResult
	saveOnFailure bool
	bfs           bool
}

func newHydration(ctx context.Context, r *Renderer, files revision.Files) (*hydration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fsys := filesys.MakeFsInMemory()
	if err := fsys.MkdirAll(rootAbs); err != nil {
		return nil, err
	}
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		full := path.Join(rootAbs, p)
		if err := fsys.MkdirAll(path.Dir(full)); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if err := fsys.WriteFile(full, data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	h := &hydration{r: r, files: files, fs: fsys, pkgs: map[string]*pkgNode{}, inputFiles: map[string]bool{}}
	root := &pkgNode{abs: rootAbs, rel: ".", dir: ""}
	if data, ok := files.Get(revision.KptfileName); ok {
		kf, err := readKptfile(data, ".")
		if err != nil {
			if r.root == nil {
				return nil, wrapE("pkg.read", ".", err)
			}
		} else {
			root.kf = kf
			root.steps = StepsFromKptfile(kf)
			if v, ok := kf.Metadata.Annotations[SaveOnFailureAnnotation]; ok && strings.EqualFold(v, "true") {
				h.saveOnFailure = true
			}
			if v, ok := kf.Metadata.Annotations[bfsAnnotation]; ok && strings.EqualFold(v, "true") {
				h.bfs = true
			}
		}
	} else if r.root == nil && r.opts.RequireKptfile {
		return nil, invalidf("No Kptfile found at %q", ".")
	} else if data, ok := files.Get(revision.PackageFileName); ok && r.root == nil {
		steps, err := StepsFromPackageFile(data)
		if err != nil {
			return nil, wrapE("pkg.read", ".", err)
		}
		root.steps = steps
	}
	// A root with neither a Kptfile nor a package file runs no step of its
	// own; its subpackages with a Kptfile still run theirs.
	if r.root != nil {
		root.steps = *r.root
	} else if err := validateKptfile(root.kf, files, "", r.opts.Path); err != nil {
		return nil, wrapE("pkg.read", ".", err)
	}
	h.saveOnFailure = h.saveOnFailure || r.opts.SaveOnFailure
	h.root = root
	return h, nil
}

// readKptfile decodes a Kptfile, returning kpt's error texts.
func readKptfile(data []byte, rel string) (*revision.Kptfile, error) {
	var meta struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, invalidf("error reading Kptfile at %q: %v", rel, err)
	}
	if meta.Kind == revision.KptfileKind && strings.HasPrefix(meta.APIVersion, "kpt.dev/") && meta.APIVersion != revision.KptfileAPIVersion {
		return nil, invalidf("error reading Kptfile at %q: Kptfile at %q has an old version (%q) of the Kptfile schema.\nPlease update the package to the latest format by following https://kpt.dev/installation/migration",
			rel, rel, strings.TrimPrefix(meta.APIVersion, "kpt.dev/"))
	}
	if meta.Kind != revision.KptfileKind || meta.APIVersion != revision.KptfileAPIVersion {
		return nil, invalidf("error reading Kptfile at %q: unknown resource type %s/%s", rel, meta.APIVersion, meta.Kind)
	}
	var probe revision.Kptfile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&probe); err != nil && !errors.Is(err, io.EOF) {
		// The decoder's own message, naming cad's Go types; a CLI that
		// imitates kpt words it as kpt does.
		return nil, invalidf("error reading Kptfile at %q: %v", rel, err)
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return nil, fmt.Errorf("error reading Kptfile at %q: %w", rel, err)
	}
	return kf, nil
}

// validateError is kpt's Kptfile validation error.
type validateError struct {
	field, value, reason string
}

func (e *validateError) Error() string {
	return fmt.Sprintf("Kptfile is invalid:\nField: `%s`\nValue: %q\nReason: %s\n", e.field, e.value, e.reason)
}

func (e *validateError) Is(target error) bool { return target == ErrInvalidPackage }

// validateKptfile checks the pipeline as kpt's Kptfile.Validate does. dir is
// the package's directory in files ("" for the root).
//
// shown is how the package directory appears in messages (see
// Options.Path).
func validateKptfile(kf *revision.Kptfile, files revision.Files, dir, shown string) error {
	if kf == nil || kf.Pipeline == nil {
		return nil
	}
	check := func(kind string, fns []revision.Function) error {
		for i, f := range fns {
			field := fmt.Sprintf("pipeline.%s[%d]", kind, i)
			if (f.Image == "") == (f.Exec == "") {
				return &validateError{field: field, reason: "must specify exactly one of `image` or `exec`"}
			}
			if len(f.ConfigMap) > 0 && f.ConfigPath != "" {
				return &validateError{field: field, reason: "functionConfig must not specify both `configMap` and `configPath` at the same time"}
			}
			if len(f.ConfigMapExprs) > 0 && f.ConfigPath != "" {
				return &validateError{field: field, reason: "`configMapExprs` cannot be combined with `configPath`"}
			}
			if f.ConfigPath == "" {
				continue
			}
			field += ".configPath"
			if path.IsAbs(f.ConfigPath) {
				return &validateError{field: field, value: f.ConfigPath, reason: "path must be relative"}
			}
			clean := path.Clean(f.ConfigPath)
			if clean == ".." || strings.HasPrefix(clean, "../") {
				return &validateError{field: field, value: f.ConfigPath, reason: "path must not be outside the package"}
			}
			data, ok := files.Get(path.Join(dir, clean))
			if !ok {
				return &validateError{field: field, value: f.ConfigPath,
					reason: fmt.Sprintf("failed to open functionConfig from path %q: open %s: no such file or directory", f.ConfigPath, path.Join(shown, f.ConfigPath))}
			}
			nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
			if err != nil {
				return &validateError{field: field, value: f.ConfigPath, reason: fmt.Sprintf("failed to read functionConfig %q: %v", f.ConfigPath, err)}
			}
			if len(nodes) != 1 {
				return &validateError{field: field, value: f.ConfigPath,
					reason: fmt.Sprintf("functionConfig %q must not contain more than one config, got %d", f.ConfigPath, len(nodes))}
			}
			if err := isKRM(nodes[0]); err != nil {
				return &validateError{field: field, value: f.ConfigPath, reason: err.Error()}
			}
		}
		return nil
	}
	if err := check("mutators", kf.Pipeline.Mutators); err != nil {
		return err
	}
	return check("validators", kf.Pipeline.Validators)
}

func (h *hydration) run(ctx context.Context) (*Output, error) {
	var hydErr error
	if h.bfs {
		hydErr = h.hydrateBFS(ctx)
	} else {
		_, hydErr = h.hydrate(ctx, h.root)
	}
	if hydErr != nil && !h.saveOnFailure {
		return h.failWithStatus(hydErr)
	}
	if err := h.adjustRelPaths(); err != nil {
		return h.failWithStatus(err)
	}
	if !h.r.opts.NoAttribution {
		attribute(h.root.res)
	}
	outputFiles := map[string]bool{}
	for _, r := range h.root.res {
		p, _, _ := kioutil.GetFileAnnotations(r)
		outputFiles[p] = true
	}
	w := &kio.LocalPackageReadWriter{
		PackagePath:        rootAbs,
		PreserveSeqIndent:  true,
		PackageFileName:    revision.KptfileName,
		IncludeSubpackages: true,
		WrapBareSeqNode:    true,
		FileSystem:         filesys.FileSystemOrOnDisk{FileSystem: h.fs},
		MatchFilesGlob:     matchAllKRM,
	}
	if err := w.Write(h.root.res); err != nil {
		err = fmt.Errorf("failed to save resources: %w", err)
		if hydErr != nil {
			err = fmt.Errorf("%w (original render error: %v)", err, hydErr)
		}
		return h.fail(err)
	}
	if hydErr != nil {
		return h.failWithStatus(hydErr)
	}
	for f := range h.inputFiles {
		if !outputFiles[f] {
			if err := h.fs.RemoveAll(filepath.Join(rootAbs, f)); err != nil {
				return h.fail(fmt.Errorf("failed to delete file: %w", err))
			}
		}
	}
	if err := h.writeStatus(nil); err != nil {
		return h.fail(err)
	}
	files, err := h.collect()
	if err != nil {
		return nil, err
	}
	return &Output{Files: files, Steps: h.steps}, nil
}

// failWithStatus records err as the render status, then fails with it;
// when the status cannot be recorded either, the error says both.
func (h *hydration) failWithStatus(err error) (*Output, error) {
	if serr := h.writeStatus(err); serr != nil {
		err = fmt.Errorf("%w; %w", err, serr)
	}
	return h.fail(err)
}

func (h *hydration) fail(err error) (*Output, error) {
	files, cerr := h.collect()
	if cerr != nil {
		files = h.files
	}
	pkg := "."
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ke, ok := e.(*kptError); ok && ke.path != "" {
			pkg = ke.path
		}
	}
	return nil, &RenderError{Package: pkg, Output: &Output{Files: files, Steps: h.steps}, Err: err}
}

// collect reads the in-memory file system back into Files.
func (h *hydration) collect() (revision.Files, error) {
	m := map[string][]byte{}
	err := h.fs.Walk(rootAbs, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		data, err := h.fs.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootAbs, p)
		if err != nil {
			return err
		}
		m[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return revision.Files{}, err
	}
	return revision.NewFiles(m)
}

func (h *hydration) hydrate(ctx context.Context, pn *pkgNode) ([]*yaml.RNode, error) {
	const op = "pkg.render"
	if curr, ok := h.pkgs[pn.abs]; ok {
		switch curr.state {
		case hydrating:
			return nil, wrapE(op, curr.rel, errors.New("cycle detected in pkg dependencies"))
		case wet:
			return curr.res, nil
		}
	}
	h.pkgs[pn.abs] = pn
	pn.state = hydrating
	if err := ctx.Err(); err != nil {
		return nil, wrapE(op, pn.rel, err)
	}
	local, err := h.localResources(pn)
	if err != nil {
		return nil, wrapE(op, pn.rel, err)
	}
	input := append([]*yaml.RNode(nil), local...)
	subs, err := h.directSubpackages(pn)
	if err != nil {
		return nil, wrapE(op, pn.rel, err)
	}
	for _, sub := range subs {
		res, err := h.hydrate(ctx, sub)
		if err != nil {
			if res != nil && h.saveOnFailure {
				input = append(input, res...)
				pn.res = input
			}
			return nil, wrapE(op, sub.rel, err)
		}
		input = append(input, res...)
	}
	out, err := h.runPipeline(ctx, pn, input)
	if err != nil {
		if h.saveOnFailure {
			if out == nil {
				out = input
			}
			pn.res = out
		}
		return out, wrapE(op, pn.rel, err)
	}
	pn.state = wet
	pn.res = out
	return out, nil
}

func (h *hydration) hydrateBFS(ctx context.Context) error {
	const op = "pkg.render"
	queue := []*pkgNode{h.root}
	var all []*pkgNode
	children := map[string][]*pkgNode{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		all = append(all, cur)
		h.pkgs[cur.abs] = cur
		local, err := h.localResources(cur)
		if err != nil {
			return wrapE(op, h.root.rel, err)
		}
		cur.res = local
		subs, err := h.directSubpackages(cur)
		if err != nil {
			return wrapE(op, h.root.rel, err)
		}
		queue = append(queue, subs...)
		children[cur.abs] = append(children[cur.abs], subs...)
	}
	aggregate := func() {
		var agg []*yaml.RNode
		for _, n := range all {
			agg = append(agg, n.res...)
		}
		h.root.res = agg
	}
	propagate := func(cur *pkgNode) {
		byPkg := map[string][]*yaml.RNode{}
		for _, r := range cur.res {
			p := annotationValue(r, PackagePathAnnotation)
			if p == "" {
				p = cur.abs
			}
			byPkg[p] = append(byPkg[p], r)
		}
		var remaining []*yaml.RNode
		for _, n := range all {
			if rs, ok := byPkg[n.abs]; ok {
				if n == cur {
					remaining = append(remaining, rs...)
				} else {
					n.res = rs
				}
			}
		}
		cur.res = remaining
	}
	for _, n := range all {
		if err := ctx.Err(); err != nil {
			return wrapE(op, h.root.rel, err)
		}
		n.state = hydrating
		input := append([]*yaml.RNode(nil), n.res...)
		var collect func(*pkgNode)
		collect = func(p *pkgNode) {
			for _, c := range children[p.abs] {
				input = append(input, c.res...)
				collect(c)
			}
		}
		collect(n)
		out, err := h.runPipeline(ctx, n, input)
		if err != nil {
			if h.saveOnFailure {
				if out == nil {
					out = input
				}
				n.res = out
				propagate(n)
				aggregate()
			}
			return wrapE(op, h.root.rel, err)
		}
		n.res = out
		n.state = wet
		propagate(n)
	}
	aggregate()
	return nil
}

func (h *hydration) localResources(pn *pkgNode) ([]*yaml.RNode, error) {
	r := kio.LocalPackageReader{
		PackagePath:        pn.abs,
		PackageFileName:    revision.KptfileName,
		IncludeSubpackages: false,
		MatchFilesGlob:     matchAllKRM,
		PreserveSeqIndent:  true,
		SetAnnotations:     map[string]string{PackagePathAnnotation: pn.abs},
		WrapBareSeqNode:    true,
		FileSystem:         filesys.FileSystemOrOnDisk{FileSystem: h.fs},
	}
	nodes, err := r.Read()
	if err != nil {
		return nil, invalidf("%s", strings.ReplaceAll(err.Error(), rootAbs+"/", ""))
	}
	for _, n := range nodes {
		p, _, err := kioutil.GetFileAnnotations(n)
		if err != nil {
			return nil, fmt.Errorf("path annotation missing: %w", err)
		}
		h.inputFiles[path.Join(pn.dir, path.Clean(p))] = true
	}
	return nodes, nil
}

// directSubpackages returns the packages directly below pn, sorted, with
// their Kptfiles read and validated.
func (h *hydration) directSubpackages(pn *pkgNode) ([]*pkgNode, error) {
	var dirs []string
	for _, p := range h.files.Paths() {
		if path.Base(p) != revision.KptfileName {
			continue
		}
		d := path.Dir(p)
		if d == "." {
			continue
		}
		if pn.dir != "" {
			if !strings.HasPrefix(d, pn.dir+"/") {
				continue
			}
		}
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var direct []string
	for _, d := range dirs {
		nested := false
		for _, o := range dirs {
			if o != d && strings.HasPrefix(d, o+"/") && (pn.dir == "" || strings.HasPrefix(o, pn.dir+"/")) {
				nested = true
				break
			}
		}
		if !nested {
			direct = append(direct, d)
		}
	}
	var out []*pkgNode
	for _, d := range direct {
		rel := "./" + d
		data, _ := h.files.Get(path.Join(d, revision.KptfileName))
		kf, err := readKptfile(data, rel)
		if err != nil {
			return nil, wrapE("pkg.Subpackages", rel, err)
		}
		if err := validateKptfile(kf, h.files, d, path.Join(h.r.opts.Path, d)); err != nil {
			return nil, wrapE("pkg.read", rel, err)
		}
		out = append(out, &pkgNode{abs: path.Join(rootAbs, d), rel: rel, dir: d, kf: kf, steps: StepsFromKptfile(kf)})
	}
	return out, nil
}

func (h *hydration) runPipeline(ctx context.Context, pn *pkgNode, input []*yaml.RNode) ([]*yaml.RNode, error) {
	if pn.steps.Empty() {
		if err := areKRM(input); err != nil {
			return nil, fmt.Errorf("input resource list must contain only KRM resources: %w", err)
		}
		return input, nil
	}
	if err := h.validatePipeline(pn, input); err != nil {
		return nil, err
	}
	out, err := h.runMutators(ctx, pn, input)
	if err != nil {
		return out, wrapE("pipeline.run", pn.rel, err)
	}
	if err := h.runValidators(ctx, pn, out); err != nil {
		return out, wrapE("pipeline.run", pn.rel, err)
	}
	return out, nil
}

// validatePipeline checks that every configPath is one of the package's own
// resources.
func (h *hydration) validatePipeline(pn *pkgNode, input []*yaml.RNode) error {
	check := func(kind string, steps []Step) error {
		for i, st := range steps {
			if st.ConfigPath == "" {
				continue
			}
			if findConfig(input, pn.abs, st.ConfigPath) == nil {
				return &validateError{
					field: fmt.Sprintf("pipeline.%s[%d].configPath", kind, i), value: st.ConfigPath,
					reason: fmt.Sprintf("functionConfig resource for %s %q is missing from path %q, this also occurs if %q is part of a subpackage",
						strings.TrimSuffix(kind, "s"), stepShortName(st), st.ConfigPath, st.ConfigPath),
				}
			}
		}
		return nil
	}
	if err := check("mutators", pn.steps.Mutators); err != nil {
		return err
	}
	return check("validators", pn.steps.Validators)
}

func stepShortName(st Step) string {
	if st.Name != "" {
		return st.Name
	}
	if st.Image == "" {
		return st.Exec
	}
	name := imageref.Split(st.Image).Name
	return name[strings.LastIndex(name, "/")+1:]
}

func findConfig(input []*yaml.RNode, pkgAbs, configPath string) *yaml.RNode {
	want := path.Clean(configPath)
	for _, r := range input {
		if annotationValue(r, PackagePathAnnotation) != pkgAbs {
			continue
		}
		p, _ := fileAnnotations(r)
		if path.Clean(p) == want {
			return r
		}
	}
	return nil
}

func (h *hydration) normalise(st Step) Step {
	st.Image = normaliseImage(h.r.opts.ImagePrefix, st.Image, st.Tag)
	return st
}

func (h *hydration) newResult(pn *pkgNode, st Step, validator bool) StepResult {
	return StepResult{Package: pn.rel, Validator: validator, Name: st.Name, Image: st.Image, Exec: st.Exec, When: stepWhen(st)}
}

func preExecFailure(sr StepResult, err error) StepResult {
	sr.ExecutionError = err.Error()
	sr.ExitCode = 1
	return sr
}

func (h *hydration) runMutators(ctx context.Context, pn *pkgNode, input []*yaml.RNode) ([]*yaml.RNode, error) {
	steps := pn.steps.Mutators
	if len(steps) == 0 {
		return input, nil
	}
	fns := make([]Function, len(steps))
	norm := make([]Step, len(steps))
	for i, st := range steps {
		norm[i] = h.normalise(st)
		fn, err := h.r.resolver.Resolve(ctx, norm[i])
		if err != nil {
			h.steps = append(h.steps, preExecFailure(h.newResult(pn, norm[i], false), err))
			return nil, err
		}
		fns[i] = fn
	}
	for i, st := range norm {
		if err := ctx.Err(); err != nil {
			return input, err // the caller has gone: run no further step
		}
		sr := h.newResult(pn, st, false)
		if skip, err := h.skip(ctx, st, input); err != nil {
			h.steps = append(h.steps, preExecFailure(sr, err))
			return input, err
		} else if skip {
			sr.Skipped = true
			h.steps = append(h.steps, sr)
			continue
		}
		cfg, err := h.fnConfig(ctx, pn, st, input)
		if err != nil {
			h.steps = append(h.steps, preExecFailure(sr, err))
			return input, err
		}
		selecting := len(st.Selectors) > 0 || len(st.Exclude) > 0
		if selecting {
			setResourceIDs(input)
		}
		selected := selectInput(input, st.Selectors, st.Exclude)
		run := &runner{ctx: ctx, files: h.packageFiles(pn), fn: fns[i], pkgAbs: pn.abs, config: cfg, result: &sr, limits: h.r.opts.YAMLLimits}
		out := &kio.PackageBuffer{}
		if _, stream := fns[i].(StreamFunction); stream {
			err = kio.Pipeline{
				Inputs:  []kio.Reader{&kio.PackageBuffer{Nodes: selected}},
				Filters: []kio.Filter{run},
				Outputs: []kio.Writer{out},
			}.Execute()
		} else {
			// In-process functions reconcile the path annotations
			// themselves (see inProcess), so kio.Pipeline's bookkeeping
			// is not needed.
			out.Nodes, err = run.Filter(selected)
		}
		h.steps = append(h.steps, run.finish(err))
		if err != nil {
			clearRunAnnotations(input)
			return input, err
		}
		if err := h.writeFiles(pn, run.writes); err != nil {
			clearRunAnnotations(input)
			return input, err
		}
		if selecting {
			input = mergeWithInput(out.Nodes, selected, input)
			deleteResourceIDs(input)
		} else {
			input = out.Nodes
		}
	}
	return input, nil
}

func (h *hydration) runValidators(ctx context.Context, pn *pkgNode, input []*yaml.RNode) error {
	for _, st := range pn.steps.Validators {
		if err := ctx.Err(); err != nil {
			return err // the caller has gone: run no further step
		}
		st = h.normalise(st)
		sr := h.newResult(pn, st, true)
		fn, err := h.r.resolver.Resolve(ctx, st)
		if err != nil {
			h.steps = append(h.steps, preExecFailure(sr, err))
			return err
		}
		if skip, err := h.skip(ctx, st, input); err != nil {
			h.steps = append(h.steps, preExecFailure(sr, err))
			return err
		} else if skip {
			sr.Skipped = true
			h.steps = append(h.steps, sr)
			continue
		}
		cfg, err := h.fnConfig(ctx, pn, st, input)
		if err != nil {
			h.steps = append(h.steps, preExecFailure(sr, err))
			return err
		}
		selected := selectInput(input, st.Selectors, st.Exclude)
		copies := make([]*yaml.RNode, len(selected))
		for i, r := range selected {
			copies[i] = r.Copy()
		}
		run := &runner{ctx: ctx, files: h.packageFiles(pn), fn: fn, pkgAbs: pn.abs, config: cfg, result: &sr, limits: h.r.opts.YAMLLimits}
		_, err = run.Filter(copies)
		h.steps = append(h.steps, run.finish(err))
		if err != nil {
			return err
		}
	}
	return nil
}

// skip evaluates a step's conditions: Condition over the whole input,
// When (kpt's) over the resources the step selects. It reports whether
// one of them is false.
func (h *hydration) skip(ctx context.Context, st Step, input []*yaml.RNode) (bool, error) {
	if st.Condition == "" && st.When == "" {
		return false, nil
	}
	if h.r.opts.Conditions == nil {
		return false, fmt.Errorf("step %q has a condition but no condition evaluator is configured", stepShortName(st))
	}
	if st.Condition != "" {
		ok, err := h.r.opts.Conditions.Eval(ctx, st.Condition, input)
		if err != nil {
			return false, fmt.Errorf("condition of step %q: %w", stepShortName(st), err)
		}
		if !ok {
			return true, nil
		}
	}
	if st.When != "" {
		ok, err := h.r.opts.Conditions.Eval(ctx, st.When, selectInput(input, st.Selectors, st.Exclude))
		if err != nil {
			return false, fmt.Errorf("failed to evaluate condition for function %q: %w", stepShortName(st), err)
		}
		if !ok {
			return true, nil
		}
	}
	return false, nil
}

// stepWhen is the condition a step's status records.
func stepWhen(st Step) string {
	if st.When != "" {
		return st.When
	}
	return st.Condition
}

// fnConfig returns the functionConfig of a step: the in-memory copy of the
// configPath resource, a ConfigMap function-input for configMap overlaid
// with the values of configMapExprs, the inline Config, or nil.
func (h *hydration) fnConfig(ctx context.Context, pn *pkgNode, st Step, input []*yaml.RNode) (*yaml.RNode, error) {
	if len(st.ConfigMapExprs) > 0 {
		if st.ConfigPath != "" || st.Config != nil {
			return nil, invalidf("step %q: configMapExprs cannot be combined with configPath or config", stepShortName(st))
		}
		data, err := h.computeConfigMap(ctx, st, input)
		if err != nil {
			return nil, err
		}
		return newConfigMap(data)
	}
	switch {
	case st.ConfigPath != "":
		if n := findConfig(input, pn.abs, st.ConfigPath); n != nil {
			return n, nil
		}
		data, ok := h.files.Get(path.Join(pn.dir, path.Clean(st.ConfigPath)))
		if !ok {
			return nil, invalidf("functionConfig %q not found", st.ConfigPath)
		}
		return yaml.Parse(string(data))
	case len(st.ConfigMap) > 0:
		return newConfigMap(st.ConfigMap)
	case st.Config != nil:
		return yaml.FromMap(st.Config)
	}
	return nil, nil
}

// computeConfigMap returns the step's static ConfigMap overlaid with the
// values of its ConfigMapExprs, evaluated over input in key order.
func (h *hydration) computeConfigMap(ctx context.Context, st Step, input []*yaml.RNode) (map[string]string, error) {
	data := make(map[string]string, len(st.ConfigMap)+len(st.ConfigMapExprs))
	maps.Copy(data, st.ConfigMap)
	for _, k := range slices.Sorted(maps.Keys(st.ConfigMapExprs)) {
		expr := st.ConfigMapExprs[k]
		if h.r.opts.Inputs == nil {
			return nil, &ExprError{Step: stepShortName(st), Key: k, Expr: expr, Err: ErrNoEvaluator}
		}
		v, err := h.r.opts.Inputs.EvalString(ctx, expr, input)
		if err != nil {
			return nil, &ExprError{Step: stepShortName(st), Key: k, Expr: expr, Err: err}
		}
		data[k] = v
	}
	return data, nil
}

// newConfigMap builds kpt's ConfigMap function-input with every value a
// string.
func newConfigMap(data map[string]string) (*yaml.RNode, error) {
	cm := yaml.NewMapRNode(nil)
	if err := cm.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("v1"))); err != nil {
		return nil, err
	}
	if err := cm.PipeE(yaml.SetField("kind", yaml.NewStringRNode("ConfigMap"))); err != nil {
		return nil, err
	}
	if err := cm.PipeE(yaml.SetK8sName("function-input")); err != nil {
		return nil, err
	}
	if err := cm.PipeE(yaml.SetAnnotation(LocalConfigAnnotation, "true")); err != nil {
		return nil, err
	}
	d := yaml.NewMapRNode(nil)
	for _, k := range slices.Sorted(mapsKeys(data)) {
		v := yaml.NewScalarRNode(data[k])
		v.YNode().Tag = yaml.NodeTagString
		if err := d.PipeE(yaml.SetField(k, v)); err != nil {
			return nil, err
		}
	}
	if err := cm.PipeE(yaml.SetField("data", d)); err != nil {
		return nil, err
	}
	return cm, nil
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// adjustRelPaths makes every path relative to the root and drops the
// package-path annotation.
func (h *hydration) adjustRelPaths() error {
	for _, r := range h.root.res {
		pkgPath := annotationValue(r, PackagePathAnnotation)
		p, _, err := kioutil.GetFileAnnotations(r)
		if err != nil {
			return err
		}
		// As kpt's filepath.Join(".", ...) for the root: a path a function
		// made absolute is relative to the package.
		newPath := path.Join(".", path.Clean(p))
		if pkgPath != "" && pkgPath != rootAbs {
			rel, err := filepath.Rel(rootAbs, pkgPath)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				return fmt.Errorf("subpackage %q is not a descendant of the root package", pkgPath)
			}
			newPath = path.Join(filepath.ToSlash(rel), path.Clean(p))
		}
		if err := r.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, newPath)); err != nil {
			return err
		}
		if err := r.PipeE(yaml.SetAnnotation(kioutil.LegacyPathAnnotation, newPath)); err != nil {
			return err
		}
		if err := r.PipeE(yaml.ClearAnnotation(PackagePathAnnotation)); err != nil {
			return err
		}
	}
	return nil
}

// runner runs one Function as kpt's FunctionRunner does: KRM checks, the
// kyaml function filter (ids, comments, default paths), package paths and
// path invariants.
type runner struct {
	ctx      context.Context
	files    fs.FS // the package's files, for ResourceList.PackageFiles
	fn       Function
	pkgAbs   string
	config   *yaml.RNode
	result   *StepResult
	recorded bool
	limits   *revision.YAMLLimits // the render's, for the function's output
	writes   map[string][]byte    // ResourceList.WriteFiles of a successful in-process run
}

var _ kio.Filter = (*runner)(nil)

func (r *runner) Filter(input []*yaml.RNode) ([]*yaml.RNode, error) {
	if err := areKRM(input); err != nil {
		return nil, fmt.Errorf("input resource list must contain only KRM resources: %w", err)
	}
	var output []*yaml.RNode
	var results Results
	var err error
	if _, stream := r.fn.(StreamFunction); stream {
		ff := &runtimeutil.FunctionFilter{Run: r.run, FunctionConfig: r.config, GlobalScope: true}
		output, err = ff.Filter(input)
		var fe *FunctionError
		if err != nil && !errors.As(err, &fe) {
			// The function's output could not be read.
			return nil, fmt.Errorf("function %s: %w", r.result.ID(), err)
		}
		var perr error
		if results, perr = ParseResults(ff.Results); perr != nil {
			return output, perr
		}
	} else {
		output, results, err = r.inProcess(input)
		var fe *FunctionError
		if err != nil && !errors.As(err, &fe) {
			return nil, err
		}
	}
	var fe *FunctionError
	errors.As(err, &fe)
	for _, o := range output {
		if annotationValue(o, PackagePathAnnotation) == "" {
			if e := o.PipeE(yaml.SetAnnotation(PackagePathAnnotation, r.pkgAbs)); e != nil {
				return output, e
			}
		}
	}
	if e := enforcePathInvariants(output); e != nil {
		return output, e
	}
	if e := areKRM(output); e != nil {
		return output, fmt.Errorf("output resource list must contain only KRM resources: %w", e)
	}
	r.result.Results = results
	r.result.Executed = true
	r.recorded = true
	if err != nil {
		r.result.ExitCode = fe.ExitCode
		if r.result.ExitCode == 0 {
			r.result.ExitCode = 1
		}
		r.result.Stderr = fe.Stderr
		return output, &handledError{fn: fe}
	}
	r.result.ExitCode = 0
	return output, nil
}

// inProcess runs a Go function on copies of the items, without the
// serialisation round trip an external process needs. Comments survive
// because the nodes do; generated items get kyaml's default path.
func (r *runner) inProcess(input []*yaml.RNode) ([]*yaml.RNode, Results, error) {
	items := make([]*yaml.RNode, len(input))
	for i, n := range input {
		items[i] = n.Copy()
		unwrapDocument(items[i])
	}
	rl := &ResourceList{Items: items, PackageFiles: r.files}
	if r.config != nil {
		rl.FunctionConfig = r.config.Copy()
	}
	// The path and index annotations as the function receives them, to
	// tell afterwards which spelling it changed (an in-process function
	// changes the items in place).
	before := make(map[*yaml.Node]pathIndex, len(items))
	for _, c := range items {
		before[c.YNode()] = readPathIndex(c)
	}
	runErr := safeRun(r.ctx, r.fn, rl)
	for i, o := range rl.Items {
		if o == nil || o.YNode() == nil || o.YNode().Kind != yaml.MappingNode {
			return nil, rl.Results, fmt.Errorf("function %s: %w: item %d is not a YAML mapping", r.result.ID(), ErrBadOutput, i)
		}
	}
	// Restore comments the function dropped, as kyaml does for the items
	// that keep their identity.
	byNode := make(map[*yaml.Node]*yaml.RNode, len(items))
	for i, c := range items {
		byNode[c.YNode()] = input[i]
	}
	for _, o := range rl.Items {
		if in, ok := byNode[o.YNode()]; ok {
			from := in.Document()
			if from.Kind == yaml.DocumentNode && len(from.Content) > 0 {
				copyEmptyComments(from, o.YNode())
				from = from.Content[0]
			}
			restoreComments(from, o.YNode())
		}
	}
	for _, o := range rl.Items {
		var b *pathIndex
		if pi, ok := before[o.YNode()]; ok {
			b = &pi
		}
		if err := reconcilePathIndex(o, b); err != nil {
			return nil, rl.Results, err
		}
	}
	if runErr != nil {
		var fe *FunctionError
		if !errors.As(runErr, &fe) {
			fe = &FunctionError{ExitCode: 1, Stderr: runErr.Error(), Err: runErr}
		}
		return rl.Items, rl.Results, fe
	}
	if err := kioutil.DefaultPathAnnotation(functionScope(r.config), rl.Items); err != nil {
		return nil, rl.Results, err
	}
	for p := range rl.WriteFiles {
		if err := CheckWriteFile(p); err != nil {
			return nil, rl.Results, fmt.Errorf("function %s: %w: %w", r.result.ID(), ErrBadOutput, err)
		}
	}
	r.writes = rl.WriteFiles
	return rl.Items, rl.Results, nil
}

// CheckWriteFile returns an error when p cannot be a path of
// ResourceList.WriteFiles: not a local slash path (absolute, empty, with
// ..), or naming a file read as KRM (Kptfile, cad's package file, *.yaml,
// *.yml, *.json). Tools that run functions outside a render, as cadctl's
// fn eval does, check with it before writing.
func CheckWriteFile(p string) error {
	if p == "" || !fs.ValidPath(p) || p == "." {
		return fmt.Errorf("file %q is not a path inside the package", p)
	}
	base := path.Base(p)
	if base == revision.KptfileName || base == revision.PackageFileName {
		return fmt.Errorf("file %q is a package file: change it as a resource", p)
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".yaml", ".yml", ".json":
		return fmt.Errorf("file %q is read as KRM: change it as a resource", p)
	}
	return nil
}

// writeFiles writes a mutator's ResourceList.WriteFiles into package pn.
func (h *hydration) writeFiles(pn *pkgNode, files map[string][]byte) error {
	for p, data := range files {
		full := path.Join(pn.abs, p)
		if err := h.fs.MkdirAll(path.Dir(full)); err != nil {
			return fmt.Errorf("failed to write %s: %w", path.Join(pn.dir, p), err)
		}
		if err := h.fs.WriteFile(full, data); err != nil {
			return fmt.Errorf("failed to write %s: %w", path.Join(pn.dir, p), err)
		}
	}
	return nil
}

// restoreComments copies comments from one node tree to another where the
// destination has none: map values by key, sequence items by position.
func restoreComments(from, to *yaml.Node) {
	if from == nil || to == nil {
		return
	}
	copyEmptyComments(from, to)
	if from.Kind != to.Kind {
		return
	}
	switch to.Kind {
	case yaml.DocumentNode:
		for i := 0; i < len(to.Content) && i < len(from.Content); i++ {
			restoreComments(from.Content[i], to.Content[i])
		}
	case yaml.MappingNode:
		find := firstKey(from)
		for i := 0; i+1 < len(to.Content); i += 2 {
			if j := find(to.Content[i].Value); j >= 0 {
				restoreComments(from.Content[j], to.Content[i])
				restoreComments(from.Content[j+1], to.Content[i+1])
			}
		}
	case yaml.SequenceNode:
		for i := 0; i < len(to.Content) && i < len(from.Content); i++ {
			if to.Content[i].Value == from.Content[i].Value {
				restoreComments(from.Content[i], to.Content[i])
			}
		}
	}
}

// firstKey returns a lookup of the position of the first key of the
// mapping m with a given value, -1 when there is none: a scan for a small
// mapping, an index for a large one, so that matching two mappings key by
// key costs time linear in their size.
func firstKey(m *yaml.Node) func(string) int {
	const small = 16 // keys
	if len(m.Content) <= 2*small {
		return func(k string) int {
			for j := 0; j+1 < len(m.Content); j += 2 {
				if m.Content[j].Value == k {
					return j
				}
			}
			return -1
		}
	}
	index := make(map[string]int, len(m.Content)/2)
	for j := 0; j+1 < len(m.Content); j += 2 {
		if _, dup := index[m.Content[j].Value]; !dup {
			index[m.Content[j].Value] = j
		}
	}
	return func(k string) int {
		if j, ok := index[k]; ok {
			return j
		}
		return -1
	}
}

func copyEmptyComments(from, to *yaml.Node) {
	if to.HeadComment == "" {
		to.HeadComment = from.HeadComment
	}
	if to.LineComment == "" {
		to.LineComment = from.LineComment
	}
	if to.FootComment == "" {
		to.FootComment = from.FootComment
	}
}

// unwrapDocument turns an item read from a file (a document node) into the
// bare mapping a function gets over the wire, keeping the document's
// comments on the mapping as kyaml's comment copy does.
func unwrapDocument(rn *yaml.RNode) {
	d := rn.Document()
	if d == nil || d.Kind != yaml.DocumentNode || len(d.Content) == 0 {
		return
	}
	m := d.Content[0]
	copyEmptyComments(d, m)
	rn.SetYNode(m)
}

var errMismatchedAnnotations = errors.New("resource input to function has mismatched legacy and internal path annotations")

// ErrBadOutput matches a function output that is not a list of KRM
// objects.
var ErrBadOutput = errors.New("malformed function output")

// functionScope is kyaml's getFunctionScope: the directory of the
// functionConfig's path, one up when it is named "functions".
func functionScope(cfg *yaml.RNode) string {
	if cfg == nil {
		return ""
	}
	a := cfg.GetAnnotations()
	p, ok := a[kioutil.PathAnnotation]
	if !ok {
		if p, ok = a[kioutil.LegacyPathAnnotation]; !ok {
			return ""
		}
	}
	dir := path.Clean(path.Dir(p))
	if path.Base(dir) == "functions" {
		dir = path.Dir(dir)
	}
	return dir
}

// finish completes the step result after a run that returned err.
func (r *runner) finish(err error) StepResult {
	sr := *r.result
	if err != nil {
		var he *handledError
		if !errors.As(err, &he) {
			sr.ExecutionError = err.Error()
			if !r.recorded || sr.ExitCode == 0 {
				sr.ExitCode = 1
			}
		}
	}
	return sr
}

// run is the function's process: ResourceList bytes in, bytes out.
func (r *runner) run(in io.Reader, out io.Writer) (err error) {
	if sf, ok := r.fn.(StreamFunction); ok {
		return r.runStream(sf, in, out)
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	rl, err := ParseResourceList(data)
	if err != nil {
		return err
	}
	runErr := safeRun(r.ctx, r.fn, rl)
	b, err := rl.Encode()
	if err != nil {
		return &FunctionError{ExitCode: 1, Stderr: "invalid function output: " + err.Error(), Err: err}
	}
	if _, err := out.Write(b); err != nil {
		return err
	}
	if runErr != nil {
		var fe *FunctionError
		if errors.As(runErr, &fe) {
			return fe
		}
		return &FunctionError{ExitCode: 1, Stderr: runErr.Error(), Err: runErr}
	}
	return nil
}

// ErrPanic matches the error of a function that panicked.
var ErrPanic = errors.New("function panicked")

func safeRun(ctx context.Context, fn Function, rl *ResourceList) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &FunctionError{ExitCode: 1, Stderr: fmt.Sprintf("panic: %v\n%s", p, debug.Stack()), Err: fmt.Errorf("%w: %v", ErrPanic, p)}
		}
	}()
	return fn.Run(ctx, rl)
}

// StreamFunction is a Function that can also run over the serialised
// ResourceList directly, as an external process does. The renderer uses
// RunStream when a function has it.
type StreamFunction interface {
	Function
	// RunStream reads a ResourceList from in and writes the resulting
	// ResourceList to out, returning the standard error text. A
	// *FunctionError reports a failed run; its output is still read for
	// results.
	RunStream(ctx context.Context, in io.Reader, out io.Writer) (stderr string, err error)
}

func enforcePathInvariants(nodes []*yaml.RNode) error {
	seen := map[string]map[string]map[string]bool{}
	for _, n := range nodes {
		pkgPath := annotationValue(n, PackagePathAnnotation)
		if seen[pkgPath] == nil {
			seen[pkgPath] = map[string]map[string]bool{}
		}
		p, idx := fileAnnotations(n)
		fp := path.Clean(p)
		if strings.HasPrefix(fp, "../") {
			return fmt.Errorf("function must not modify resources outside of package: resource has path %s", p)
		}
		if seen[pkgPath][fp] == nil {
			seen[pkgPath][fp] = map[string]bool{}
		}
		if seen[pkgPath][fp][idx] {
			return fmt.Errorf("resource at path %q and index %q already exists", fp, idx)
		}
		seen[pkgPath][fp][idx] = true
	}
	return nil
}

func clearRunAnnotations(nodes []*yaml.RNode) {
	for _, n := range nodes {
		for _, a := range []string{kioutil.LegacyIdAnnotation, kioutil.InternalAnnotationsMigrationResourceIDAnnotation, kioutil.IdAnnotation, resourceIDAnnotation} {
			_ = n.PipeE(yaml.ClearAnnotation(a))
		}
	}
}

func setResourceIDs(nodes []*yaml.RNode) {
	for i, n := range nodes {
		_ = n.PipeE(yaml.SetAnnotation(resourceIDAnnotation, strconv.Itoa(i)))
	}
}

func deleteResourceIDs(nodes []*yaml.RNode) {
	for _, n := range nodes {
		_ = n.PipeE(yaml.ClearAnnotation(resourceIDAnnotation))
	}
}

// mergeWithInput merges a selective function's output back into the full
// input by kpt-resource-id.
func mergeWithInput(output, selected, input []*yaml.RNode) []*yaml.RNode {
	outByID := map[string]*yaml.RNode{}
	var generated []*yaml.RNode
	for _, o := range output {
		id := annotationValue(o, resourceIDAnnotation)
		if id == "" {
			generated = append(generated, o)
			continue
		}
		outByID[id] = o
	}
	selIDs := map[string]bool{}
	for _, s := range selected {
		selIDs[annotationValue(s, resourceIDAnnotation)] = true
	}
	var result []*yaml.RNode
	for _, in := range input {
		id := annotationValue(in, resourceIDAnnotation)
		if !selIDs[id] {
			result = append(result, in)
			continue
		}
		if o, ok := outByID[id]; ok {
			result = append(result, o)
		}
	}
	return append(result, generated...)
}

// selectInput applies selectors (ORed) then excludes, as kpt does: an item
// matching two selectors is selected twice.
func selectInput(input []*yaml.RNode, selectors, exclude []Selector) []*yaml.RNode {
	if len(selectors) == 0 && len(exclude) == 0 {
		return input
	}
	var sel []*yaml.RNode
	if len(selectors) == 0 {
		sel = input
	} else {
		for _, n := range input {
			for _, s := range selectors {
				if isMatch(n, s) {
					sel = append(sel, n)
				}
			}
		}
	}
	if len(exclude) == 0 {
		return sel
	}
	var out []*yaml.RNode
	for _, n := range sel {
		excluded := false
		for _, e := range exclude {
			if !selectorEmpty(e) && isMatch(n, e) {
				excluded = true
				break
			}
		}
		if !excluded {
			out = append(out, n)
		}
	}
	return out
}

func selectorEmpty(s Selector) bool {
	return s.APIVersion == "" && s.Kind == "" && s.Name == "" && s.Namespace == "" && len(s.Labels) == 0 && len(s.Annotations) == 0
}

// isMatch reports whether n matches every field that s sets.
func isMatch(n *yaml.RNode, s Selector) bool {
	if s.APIVersion != "" && n.GetApiVersion() != s.APIVersion {
		return false
	}
	if s.Kind != "" && n.GetKind() != s.Kind {
		return false
	}
	if s.Name != "" && n.GetName() != s.Name {
		return false
	}
	if s.Namespace != "" && n.GetNamespace() != s.Namespace {
		return false
	}
	labels := n.GetLabels()
	for k, v := range s.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	ann := n.GetAnnotations()
	for k, v := range s.Annotations {
		if got, ok := ann[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// CheckKRM reports the first of nodes that is not a KRM resource (it
// lacks apiVersion, kind or metadata.name) as kpt checks a function's
// input and output: the error names the resource's path annotation and
// what it lacks ("a.yaml: resource must have `apiVersion`"). Kustomization
// files are exempt (by file name, by a kustomize.config.k8s.io
// apiVersion, or kind Kustomization without apiVersion). It returns nil
// when all are KRM.
func CheckKRM(nodes []*yaml.RNode) error { return areKRM(nodes) }

// areKRM checks that every node has apiVersion, kind and metadata.name,
// exempting Kustomization files.
func areKRM(nodes []*yaml.RNode) error {
	for _, n := range nodes {
		p, _ := fileAnnotations(n)
		if isKustomization(n, p) {
			continue
		}
		if err := isKRM(n); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

func isKustomization(n *yaml.RNode, p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	av := n.GetApiVersion()
	if strings.HasPrefix(av, "kustomize.config.k8s.io/") {
		return true
	}
	return av == "" && n.GetKind() == "Kustomization"
}

func isKRM(n *yaml.RNode) error {
	switch {
	case n.GetApiVersion() == "":
		return errors.New("resource must have `apiVersion`")
	case n.GetKind() == "":
		return errors.New("resource must have `kind`")
	case n.GetName() == "":
		return errors.New("resource must have `metadata.name`")
	}
	return nil
}

// invalidError is an error about the package that matches
// ErrInvalidPackage without saying so in its text.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalidPackage }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// packageFiles returns the files of package pn for its functions (see
// ResourceList.PackageFiles); nil when its directory cannot be read.
func (h *hydration) packageFiles(pn *pkgNode) fs.FS {
	if pn.dir == "" {
		return h.files
	}
	sub, err := h.files.Sub(pn.dir)
	if err != nil {
		return nil
	}
	return sub
}
