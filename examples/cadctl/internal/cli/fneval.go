package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// mapFlag is a flag of key=value pairs, comma-separated or repeated.
type mapFlag map[string]string

func (m mapFlag) String() string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func (m mapFlag) Set(s string) error {
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not a key=value pair", kv)
		}
		m[k] = v
	}
	return nil
}

// selectorFlags are the --match-* or --exclude-* flags of fn eval.
type selectorFlags struct {
	apiVersion, kind, name, namespace string
	labels, annotations               mapFlag
}

func (s *selectorFlags) register(fsAdd func(name string, p *string, usage string), fsVar func(v mapFlag, name, usage string), prefix, what string) {
	s.labels, s.annotations = mapFlag{}, mapFlag{}
	fsAdd(prefix+"-api-version", &s.apiVersion, what+" resources with this apiVersion")
	fsAdd(prefix+"-kind", &s.kind, what+" resources of this kind")
	fsAdd(prefix+"-name", &s.name, what+" resources with this name")
	fsAdd(prefix+"-namespace", &s.namespace, what+" resources in this namespace")
	fsVar(s.labels, prefix+"-labels", what+" resources with these labels (key=value,...)")
	fsVar(s.annotations, prefix+"-annotations", what+" resources with these annotations (key=value,...)")
}

func (s *selectorFlags) selector() (revision.Selector, bool) {
	sel := revision.Selector{APIVersion: s.apiVersion, Kind: s.kind, Name: s.name, Namespace: s.namespace}
	if len(s.labels) > 0 {
		sel.Labels = s.labels
	}
	if len(s.annotations) > 0 {
		sel.Annotations = s.annotations
	}
	set := sel.APIVersion != "" || sel.Kind != "" || sel.Name != "" || sel.Namespace != "" || sel.Labels != nil || sel.Annotations != nil
	return sel, set
}

func matches(n *kyaml.RNode, s revision.Selector) bool {
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
	labels, annotations := n.GetLabels(), n.GetAnnotations()
	for k, v := range s.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for k, v := range s.Annotations {
		if got, ok := annotations[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// normalizeImage applies kpt's defaults to an image: the catalog prefix
// for a bare name and ":latest" without tag or digest.
func normalizeImage(img string) string {
	if !strings.Contains(img, "/") {
		img = pipeline.DefaultImagePrefix + "/" + img
	}
	if r := imageref.Split(img); r.Tag == "" && r.Digest == "" {
		img += ":latest"
	}
	return img
}

const resourceIDAnnotation = "internal.config.kubernetes.io/kpt-resource-id"

func runEval(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "eval [DIR|-] --image IMAGE | --exec PATH [flags] [-- key=value...]", short: "Run one function on a package or a ResourceList.", long: `
Reads the resources of DIR (default ".", subpackages included) or a
ResourceList from standard input ("-"), runs the function on them (or on
those the --match-* and --exclude-* flags select) and writes the result back
to DIR, or to standard output for "-", or where -o says. The function's
configuration is --fn-config, or a ConfigMap of the key=value arguments
after "--".`}
	fs := c.newFlagSet("fn eval")
	image := fs.String("image", "", "container image of the function (cad's builtins run in-process)")
	fs.StringVar(image, "i", "", "shorthand for --image")
	execPath := fs.String("exec", "", "command line of a local function binary")
	fnConfig := fs.String("fn-config", "", "file holding the functionConfig")
	meta := fs.Bool("include-meta-resources", false, "removed, as in kpt: meta resources (Kptfile, function configs) are always included")
	fs.BoolVar(meta, "m", false, "shorthand for --include-meta-resources")
	fs.Bool("allow-exec", true, "accepted for kpt compatibility; --exec runs the named binary")
	allowWasm := fs.Bool("allow-alpha-wasm", false, "run the image, or the --exec file when it ends in .wasm, as a WebAssembly module in-process (cad's builtins still run as builtins)")
	network := fs.Bool("network", false, "give a container function network access")
	asCurrentUser := fs.Bool("as-current-user", false, "run a container function as this process's uid and gid instead of nobody, as kpt does; meaningless for a function that runs in-process (a builtin, render-helm-chart, wasm), which already runs as this process: accepted and ignored")
	fs.String("image-pull-policy", "IfNotPresent", "accepted for kpt compatibility")
	save := fs.Bool("save", false, "save the function and its arguments to the Kptfile pipeline (needs --type)")
	fs.BoolVar(save, "s", false, "shorthand for --save")
	fnType := fs.String("type", "", "`mutator` or `validator`: where --save adds the function")
	fs.StringVar(fnType, "t", "", "shorthand for --type")
	tag := fs.String("tag", "", "semantic version constraint for the image tag, or an exact tag")
	var envs, mounts stringsFlag
	fs.Var(&envs, "env", "an environment variable (KEY=VALUE, or KEY to pass this process's) for a container function; repeatable")
	fs.Var(&envs, "e", "shorthand for --env")
	fs.Var(&mounts, "mount", "a storage mount (type=bind,src=DIR,dst=DIR[,rw=true]); repeatable. A container function gets it; a wasm function (--allow-alpha-wasm) sees the src directory at dst, read-only unless rw=true; an in-process function (builtin, render-helm-chart) reads src at dst, read-only, and sees only its mounts (the package alone at /tmp changes nothing)")
	output := fs.String("output", "", "where to write the result: stdout (a ResourceList), unwrap (plain YAML) or a new directory")
	fs.StringVar(output, "o", "", "shorthand for --output")
	resultsDir := fs.String("results-dir", "", "write the function results to results.yaml in this directory")
	truncate := fs.Bool("truncate-output", true, "truncate the printed results")
	var match, exclude selectorFlags
	add := func(name string, p *string, usage string) { fs.StringVar(p, name, "", usage) }
	addMap := func(v mapFlag, name, usage string) { fs.Var(v, name, usage) }
	match.register(add, addMap, "match", "select")
	exclude.register(add, addMap, "exclude", "leave out")
	pos, rest, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("too many arguments; DIR is the only accepted positional argument (function arguments go after --)")
	}
	if *meta {
		return errors.New(errMetaResources)
	}
	if *save {
		if *fnType == "" {
			return errors.New("--type must be specified if saving functions to Kptfile (--save=true)")
		}
		if *fnType != "mutator" && *fnType != "validator" {
			return errors.New("--type must be either `mutator` or `validator`")
		}
	}
	if (*image == "") == (*execPath == "") {
		return usagef("must specify exactly one of --image and --exec")
	}
	if *execPath != "" && (len(envs) > 0 || len(mounts) > 0 || *network || *asCurrentUser) {
		return errors.New("--mount, --as-current-user, --network and --env can only be used with container functions")
	}
	if *fnConfig != "" && len(rest) > 0 {
		return usagef("function config file (--fn-config) and key=value arguments cannot be used together")
	}
	arg := "."
	if len(pos) == 1 {
		arg = pos[0]
	}
	out, err := c.parseOutputMode(*output)
	if err != nil {
		return err
	}
	cfg, err := c.functionConfig(*fnConfig, rest)
	if err != nil {
		return err
	}

	var items []*kyaml.RNode
	var rw *kio.LocalPackageReadWriter
	if arg == "-" {
		items, err = c.readBoundedYAML("standard input", c.stdin, kio.ByteReader{PreserveSeqIndent: true, WrapBareSeqNode: true})
		if err != nil {
			return fmt.Errorf("reading a ResourceList from standard input: %w", err)
		}
		if out.kind == "" {
			out.kind = "stdout"
		}
	} else {
		if st, err := os.Stat(c.abs(arg)); err != nil || !st.IsDir() {
			return fmt.Errorf("%q is not a directory", arg)
		}
		// A symbolic link to the package reads the package, as in kpt.
		dir, err := c.packageDir(arg)
		if err != nil {
			return err
		}
		if err := c.checkYAMLDir(dir); err != nil {
			return err
		}
		rw = &kio.LocalPackageReadWriter{PackagePath: dir, IncludeSubpackages: true, PackageFileName: revision.KptfileName,
			MatchFilesGlob: krmFiles, PreserveSeqIndent: true, WrapBareSeqNode: true}
		if items, err = rw.Read(); err != nil {
			return err
		}
	}

	// As kpt: a --fn-config file inside the package is the function's
	// config, not one of its input resources; it is written back as it was.
	var fnConfigNode *kyaml.RNode
	if *fnConfig != "" && rw != nil {
		cfgAbs := c.abs(*fnConfig)
		items = slices.DeleteFunc(items, func(n *kyaml.RNode) bool {
			p, _, _ := kioutil.GetFileAnnotations(n)
			if p != "" && filepath.Join(rw.PackagePath, filepath.FromSlash(p)) == cfgAbs {
				fnConfigNode = n
				return true
			}
			return false
		})
	}

	if *save && *fnConfig != "" && arg != "-" {
		pkgAbs, cfgAbs := c.abs(arg), c.abs(*fnConfig)
		if rel, err := filepath.Rel(pkgAbs, cfgAbs); err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("--fn-config must be under %v if saving functions to Kptfile (--save=true)", pkgAbs)
		}
	}

	step := pipeline.Step{Exec: *execPath}
	id := *execPath
	if *image != "" {
		step = pipeline.Step{Image: normalizeImage(*image), Tag: *tag}
		id = step.Image
	}
	reg, err := c.registry(true, *network, *allowWasm, containerOpts{env: envs, mounts: mounts, asCurrentUser: *asCurrentUser})
	if err != nil {
		return err
	}
	fn, err := reg.Resolve(c.ctx, step)
	if err != nil {
		return err
	}
	// An in-process function reading a directory sees the package's files
	// and may write non-KRM ones (pipeline.ResourceList.PackageFiles and
	// WriteFiles), as in a render. --mount maps each mount's source to its
	// target in the function's view (mountFS), which then is what the
	// mounts show, as a container sees it:
	// the catalog's render-helm-chart examples mount the package at
	// /tmp/charts and name /tmp/charts/... files. The one exception is the
	// package mounted at /tmp, as the catalog's documentation runs
	// generate-kpt-pkg-docs: /tmp already is the package to an in-process
	// function, so that mount alone changes nothing (beside other mounts,
	// it is mapped as they are).
	files := &evalFiles{}
	if _, container := fn.(*fnruntime.ContainerFunction); !container {
		var pkg iofs.FS
		if rw != nil {
			pkg = os.DirFS(rw.PackagePath)
		}
		files.pkg = pkg
		atTmp := true // every mount is the package at /tmp
		for _, m := range mounts {
			atTmp = atTmp && rw != nil && mountsAtTmp(m, rw.PackagePath, c.abs)
		}
		if !atTmp {
			mapped := make([]mount, 0, len(mounts))
			for _, m := range mounts {
				mt, err := parseMount(m, c.abs)
				if err != nil {
					return err
				}
				mapped = append(mapped, mt)
			}
			files.pkg = newMountFS(mapped)
		}
	}

	msel, matching := match.selector()
	esel, excluding := exclude.selector()
	selective := matching || excluding
	var selected []*kyaml.RNode
	for i, n := range items {
		if selective {
			if err := n.PipeE(kyaml.SetAnnotation(resourceIDAnnotation, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		if !matching || matches(n, msel) {
			if !excluding || !matches(n, esel) {
				selected = append(selected, n)
			}
		}
	}

	var stderr string
	ff := &runtimeutil.FunctionFilter{Run: streamRunner(c.ctx, fn, &stderr, files), FunctionConfig: cfg, GlobalScope: true}
	start := time.Now()
	var result []*kyaml.RNode
	// As kpt, the input is checked before the function runs: a resource
	// that is not KRM fails the step and nothing runs.
	runErr := pipeline.CheckKRM(selected)
	if runErr != nil {
		runErr = fmt.Errorf("input resource list must contain only KRM resources: %w", runErr)
	} else {
		// Through kio.Pipeline, as kpt runs it: the pipeline reconciles
		// the legacy and internal path and index annotations, so a
		// function that changes either moves the resource.
		out := &kio.PackageBuffer{}
		runErr = kio.Pipeline{Inputs: []kio.Reader{&kio.PackageBuffer{Nodes: selected}}, Filters: []kio.Filter{ff},
			Outputs: []kio.Writer{out}, ContinueOnEmptyResult: true}.Execute()
		result = out.Nodes
	}
	if runErr == nil {
		for p := range files.writes {
			if err := pipeline.CheckWriteFile(p); err != nil {
				runErr = fmt.Errorf("function %s: %w: %w", id, pipeline.ErrBadOutput, err)
				break
			}
		}
	}
	call := &fnCall{id: id, selective: selective, in: len(selected), dur: time.Since(start)}
	results, perr := pipeline.ParseResults(ff.Results)
	if runErr == nil && perr != nil {
		runErr = perr
	}
	if runErr == nil {
		runErr = checkOutput(result)
	}
	sr := pipeline.StepResult{Image: step.Image, Exec: step.Exec, Executed: true, Stderr: stderr, Results: results}
	var fe *pipeline.FunctionError
	handled := errors.As(runErr, &fe)
	if handled {
		sr.ExitCode = fe.ExitCode
		if sr.ExitCode == 0 {
			sr.ExitCode = 1
		}
		if sr.Stderr == "" {
			sr.Stderr = fe.Stderr
		}
	} else if runErr != nil {
		sr.ExitCode, sr.ExecutionError = 1, runErr.Error()
	}
	stepView{id: id, call: call, exitCode: sr.ExitCode, stderr: sr.Stderr, results: results,
		failed: runErr != nil, handled: handled}.print(c.stderr, *truncate)

	if runErr == nil {
		if sortsOutput(step.Image) {
			sortItems(result)
		}
		if selective {
			result = mergeSelected(result, selected, items)
		}
		for _, n := range result {
			if err := n.PipeE(kyaml.ClearAnnotation(resourceIDAnnotation)); err != nil {
				return err
			}
		}
		if fnConfigNode != nil {
			result = append(result, fnConfigNode)
		}
		if out.kind == "" {
			err = rw.Write(result)
		} else {
			err = c.emit(out, result)
		}
		if err != nil {
			return err
		}
		if err := files.write(rw); err != nil {
			return err
		}
	}
	if *resultsDir != "" {
		if err := c.saveResults(*resultsDir, []pipeline.StepResult{sr}, runErr != nil); err != nil {
			return err
		}
	}
	if runErr != nil {
		if !handled {
			c.stderrf("Error: %s\n", runErr)
		}
		return errReported
	}
	if *save {
		saved := savedFunction{image: resolveImagePrefix(*image), tag: *tag, exec: *execPath, args: rest, selector: msel, exclusion: esel}
		if *fnConfig != "" {
			saved.configPath, _ = filepath.Rel(c.abs(arg), c.abs(*fnConfig))
		}
		if arg == "-" {
			c.stderrf("function not added: Kptfile not exists\n")
			return nil
		}
		c.saveFunction(c.abs(arg), *fnType, saved)
	}
	return nil
}

// functionConfig returns fn eval's functionConfig: the file's object, or a
// ConfigMap named function-input holding the key=value arguments, or nil.
func (c *cmdEnv) functionConfig(file string, kvs []string) (*kyaml.RNode, error) {
	if file != "" {
		// As kpt reads --fn-config: one document, not unwrapped (a
		// kind: List is one config), and a KRM resource.
		f, err := os.Open(c.abs(file))
		if err != nil {
			return nil, fmt.Errorf("failed to open functionConfig from path %q: %w", c.abs(file), err)
		}
		defer f.Close()
		nodes, err := c.readBoundedYAML(c.abs(file), f, kio.ByteReader{PreserveSeqIndent: true, WrapBareSeqNode: true, DisableUnwrapping: true})
		if err != nil {
			return nil, fmt.Errorf("failed to read functionConfig %q: %w", c.abs(file), err)
		}
		switch {
		case len(nodes) > 1:
			return nil, fmt.Errorf("functionConfig %q must not contain more than one config, got %d", c.abs(file), len(nodes))
		case len(nodes) == 0:
			return nil, fmt.Errorf("functionConfig %q: resource must have `apiVersion`", c.abs(file))
		}
		if err := pipeline.CheckKRM(nodes); err != nil {
			return nil, fmt.Errorf("functionConfig %q: %w", c.abs(file), trimPathPrefix(err))
		}
		return nodes[0], nil
	}
	// As kpt: the key=value arguments in a ConfigMap function-input, its
	// data empty when there are none; a first argument without "=" is the
	// config's kind.
	cm := kyaml.MustParse("metadata:\n  name: function-input\ndata: {}\n")
	kind := "ConfigMap"
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if i == 0 && !ok {
			kind = kv
			continue
		}
		if !ok {
			return nil, usagef("args must have keys and values separated by =")
		}
		if err := cm.PipeE(kyaml.Lookup("data"), kyaml.SetField(k, kyaml.NewStringRNode(v))); err != nil {
			return nil, err
		}
	}
	if err := cm.PipeE(kyaml.SetField("kind", kyaml.NewScalarRNode(kind))); err != nil {
		return nil, err
	}
	if err := cm.PipeE(kyaml.SetField("apiVersion", kyaml.NewScalarRNode("v1"))); err != nil {
		return nil, err
	}
	return cm, nil
}

// trimPathPrefix drops the "<path>: " CheckKRM puts before what a
// resource lacks, for a resource read from a file named already.
func trimPathPrefix(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// streamRunner runs fn over a serialised ResourceList, as an external
// function process runs: in-process functions are given the decoded list.
// The function's standard error is stored in stderr.
// evalFiles are the package files an in-process function run by fn eval
// reads (pkg, nil for standard input) and the files it wrote.
type evalFiles struct {
	pkg    iofs.FS
	writes map[string][]byte
}

// write writes the files the function wrote into the package read by rw,
// as the catalog's function does through its /tmp mount, whatever the
// output mode; their paths were checked when the function returned.
func (f *evalFiles) write(rw *kio.LocalPackageReadWriter) error {
	if rw == nil || len(f.writes) == 0 {
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(f.writes)) {
		full := filepath.Join(rw.PackagePath, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.writes[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// mountsAtTmp reports whether the --mount m binds directory dir at /tmp
// (type=bind,src=DIR,dst=/tmp[,rw=true]); abs resolves a relative src.
func mountsAtTmp(m, dir string, abs func(string) string) bool {
	var src, dst string
	for _, part := range strings.Split(m, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "type":
			if v != "bind" {
				return false
			}
		case "src", "source":
			src = v
		case "dst", "target", "destination":
			dst = v
		}
	}
	return src != "" && filepath.Clean(abs(src)) == filepath.Clean(dir) && path.Clean(dst) == "/tmp"
}

func streamRunner(ctx context.Context, fn pipeline.Function, stderr *string, files *evalFiles) func(io.Reader, io.Writer) error {
	return func(in io.Reader, out io.Writer) error {
		if sf, ok := fn.(pipeline.StreamFunction); ok {
			s, err := sf.RunStream(ctx, in, out)
			*stderr = s
			return err
		}
		data, err := io.ReadAll(in)
		if err != nil {
			return err
		}
		rl, err := pipeline.ParseResourceList(data)
		if err != nil {
			return err
		}
		rl.PackageFiles = files.pkg
		runErr := runSafely(ctx, fn, rl)
		if runErr == nil {
			files.writes = rl.WriteFiles
		}
		b, err := rl.Encode()
		if err != nil {
			return &pipeline.FunctionError{ExitCode: 1, Stderr: "invalid function output: " + err.Error(), Err: err}
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
		if runErr != nil {
			var fe *pipeline.FunctionError
			if !errors.As(runErr, &fe) {
				fe = &pipeline.FunctionError{ExitCode: 1, Stderr: runErr.Error(), Err: runErr}
			}
			*stderr = fe.Stderr
			return fe
		}
		return nil
	}
}

func runSafely(ctx context.Context, fn pipeline.Function, rl *pipeline.ResourceList) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &pipeline.FunctionError{ExitCode: 1, Stderr: fmt.Sprintf("panic: %v\n%s", p, debug.Stack()), Err: fmt.Errorf("%w: %v", pipeline.ErrPanic, p)}
		}
	}()
	return fn.Run(ctx, rl)
}

// checkOutput applies kpt's checks to a function's output: every item is a
// KRM resource, none lives outside the package, no two share a file and
// index.
func checkOutput(items []*kyaml.RNode) error {
	if err := pipeline.CheckKRM(items); err != nil {
		return fmt.Errorf("output resource list must contain only KRM resources: %w", err)
	}
	seen := map[string]bool{}
	for _, n := range items {
		p, idx, _ := kioutil.GetFileAnnotations(n)
		clean := path.Clean(p)
		if strings.HasPrefix(clean, "../") {
			return fmt.Errorf("function must not modify resources outside of package: resource has path %s", p)
		}
		k := n.GetAnnotations()[pipeline.PackagePathAnnotation] + "\x00" + clean + "\x00" + idx
		if p != "" && seen[k] {
			return fmt.Errorf("resource at path %q and index %q already exists", clean, idx)
		}
		seen[k] = true
	}
	return nil
}

// mergeSelected puts a function's output over the selected resources back
// among the unselected ones, as kpt does: a selected resource the function
// returned replaces it in place, one it dropped is deleted, new ones are
// appended.
func mergeSelected(output, selected, input []*kyaml.RNode) []*kyaml.RNode {
	byID := map[string]*kyaml.RNode{}
	var generated []*kyaml.RNode
	for _, n := range output {
		if id := n.GetAnnotations()[resourceIDAnnotation]; id != "" {
			byID[id] = n
		} else {
			generated = append(generated, n)
		}
	}
	isSelected := map[string]bool{}
	for _, n := range selected {
		isSelected[n.GetAnnotations()[resourceIDAnnotation]] = true
	}
	var out []*kyaml.RNode
	for _, n := range input {
		id := n.GetAnnotations()[resourceIDAnnotation]
		if !isSelected[id] {
			out = append(out, n)
			continue
		}
		if o, ok := byID[id]; ok {
			out = append(out, o)
		}
	}
	return append(out, generated...)
}
