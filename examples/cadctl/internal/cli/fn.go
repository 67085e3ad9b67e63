package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/fnruntime/wasmfn"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

func fnCommands() []command {
	return []command{
		{name: "render", short: "Render a package: run the pipelines of its Kptfiles, as kpt fn render", run: runRender},
		{name: "eval", short: "Run one function on a package or a ResourceList, as kpt fn eval", run: runEval},
		{name: "source", short: "Source resources from a local directory, as kpt fn source", run: runSource},
		{name: "sink", short: "Write resources to a local directory, as kpt fn sink", run: runSink},
	}
}

// registry returns the function registry of the fn commands: the builtins,
// render-helm-chart (helmfn, in-process), the invocation's own Functions,
// exec functions when allowed, and other images in a container when docker
// or podman is installed; with wasm (--allow-alpha-wasm), other images and
// .wasm exec files run in-process as wasm instead (wasmfn), as kpt runs
// every image as wasm with the flag.
func (c *cmdEnv) registry(allowExec, network, wasm bool, container ...containerOpts) (*fnruntime.Registry, error) {
	var co containerOpts
	if len(container) > 0 {
		co = container[0]
	}
	var wr fnruntime.WasmRuntime
	if wasm {
		mounts, err := wasmMounts(co.mounts, c.abs)
		if err != nil {
			return nil, err
		}
		r, err := c.wasmRuntime(mounts)
		if err != nil {
			return nil, err
		}
		wr = r
	}
	_, noEngine := fnruntime.FindContainerEngine("")
	reg := fnruntime.NewRegistry(&fnruntime.Options{
		Wasm:             wr,
		ContainerEnv:     co.env,
		ContainerMounts:  co.mounts,
		ContainerUser:    containerUser(co.asCurrentUser),
		AllowExec:        allowExec,
		ExecDir:          c.dir,
		Env:              c.env,
		Containers:       noEngine == nil,
		ContainerNetwork: network,
	})
	// Local charts and values files are read from the package being
	// rendered (helmfn.Options.Files nil: pipeline.PackageFiles).
	if err := helmfn.Register(reg, nil); err != nil {
		return nil, fmt.Errorf("registering %s: %w", helmfn.Image, err)
	}
	for name, fn := range c.functions {
		reg.Register(name, fn)
	}
	return reg, nil
}

// wasmRuntime returns the invocation's wasm runtime, created on first
// use with mounts (fn eval's --mount), which keeps compiled modules in
// EnvWasmCache (default cadctl/wasm in the user's cache directory, none
// when there is no such directory).
func (c *cmdEnv) wasmRuntime(mounts []wasmfn.Mount) (*wasmfn.Runtime, error) {
	if c.wasm != nil {
		return c.wasm, nil
	}
	dir := c.getenv(EnvWasmCache)
	if dir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "cadctl", "wasm")
		}
	}
	r, err := wasmfn.New(c.ctx, &wasmfn.Options{CacheDir: dir, Mounts: mounts})
	if err != nil {
		return nil, err
	}
	c.wasm = r
	return r, nil
}

// wasmMounts returns fn eval's --mount values as a wasm function's
// mounts: each src directory seen at its dst, read-only unless the value
// says rw=true (kpt's default for its storage mounts). A mount that
// cannot be parsed, or whose src is not a directory (WASI mounts
// directories only), is an error naming it.
func wasmMounts(mounts []string, abs func(string) string) ([]wasmfn.Mount, error) {
	out := make([]wasmfn.Mount, 0, len(mounts))
	for _, m := range mounts {
		mt, err := parseMount(m, abs)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(mt.src); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--mount %q: a wasm function can mount a directory only, and %s is not one", m, mt.src)
		}
		rw := false
		for _, part := range strings.Split(m, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			if k == "rw" {
				rw = v == "true"
			}
		}
		out = append(out, wasmfn.Mount{Source: mt.src, Target: "/" + mt.dst, Writable: rw})
	}
	return out, nil
}

// containerOpts are fn eval's settings for container functions.
type containerOpts struct {
	env, mounts   []string
	asCurrentUser bool // run containers as this process's uid:gid
}

// outputMode is the -o value of fn render and fn eval.
type outputMode struct {
	kind string // "" (in place), "stdout", "unwrap" or "dir"
	dir  string
}

func (c *cmdEnv) parseOutputMode(s string) (outputMode, error) {
	switch s {
	case "":
		return outputMode{}, nil
	case "stdout", "unwrap":
		return outputMode{kind: s}, nil
	}
	dir := c.abs(s)
	if _, err := os.Lstat(dir); err == nil {
		return outputMode{}, fmt.Errorf("directory %q already exists, please delete the directory and retry", s)
	}
	return outputMode{kind: "dir", dir: dir}, nil
}

func runRender(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "render [PKG_PATH]", short: "Render a package: run the function pipelines of its Kptfiles.", long: `
Subpackages are rendered first (depth-first, or breadth-first with the
kpt.dev/bfs-rendering annotation), then each package's mutators and
validators run over its resources and its subpackages'. The package is
written back in place, with the root Kptfile's render status, unless -o
says otherwise. Functions are cad's builtins, exec functions with
--allow-exec, and other images in docker or podman when one is installed.`}
	fs := c.newFlagSet("fn render")
	allowExec := fs.Bool("allow-exec", false, "allow running function binaries (exec functions)")
	allowNetwork := fs.Bool("allow-network", false, "give container functions network access")
	allowWasm := fs.Bool("allow-alpha-wasm", false, "run images that are not built in, and exec functions that are .wasm files (with --allow-exec), as WebAssembly in-process")
	fs.String("image-pull-policy", "IfNotPresent", "accepted for kpt compatibility; images are run as the container engine finds them")
	output := fs.String("output", "", "where to write the rendered package: stdout (a ResourceList), unwrap (plain YAML) or a new directory")
	fs.StringVar(output, "o", "", "shorthand for --output")
	resultsDir := fs.String("results-dir", "", "write the function results to results.yaml in this directory")
	truncate := fs.Bool("truncate-output", true, "truncate each function's printed results")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("too many arguments; PKG_PATH is the only accepted positional argument")
	}
	arg := "."
	if len(pos) == 1 {
		arg = pos[0]
	}
	out, err := c.parseOutputMode(*output)
	if err != nil {
		return err
	}
	dir, err := c.packageDir(arg)
	if err != nil {
		return err
	}
	files, err := readPackage(dir)
	if err != nil {
		return err
	}
	reg, err := c.registry(*allowExec, *allowNetwork, *allowWasm)
	if err != nil {
		return err
	}
	rec := &recorder{inner: reg}
	// Messages show paths under the directory as given, as kpt's do.
	res, rerr := pipeline.NewKptfile(rec, stdfn.Options(reg, &pipeline.Options{NoRenderStatus: out.kind != "", Path: filepath.ToSlash(filepath.Clean(arg)), RequireKptfile: true, KptStyleKptfile: true})).Render(c.ctx, files)
	var steps []pipeline.StepResult
	result := files
	var re *pipeline.RenderError
	switch {
	case rerr == nil:
		steps, result = res.Steps, res.Files
	case errors.As(rerr, &re):
		steps = re.Steps()
		if re.Output != nil {
			result = re.Output.Files
		}
	default:
		return rerr
	}
	root := filepath.Base(dir)
	calls := rec.recorded()
	printRender(c.stderr, steps, calls, root, *truncate)
	if out.kind == "" {
		if err := writeBack(dir, files, result); err != nil {
			return err
		}
		executed := 0
		for _, s := range steps {
			// A step skipped by its condition (when false) did not run:
			// kpt counts it as not executed ("Successfully executed 0
			// function(s)" in its e2e case fn-render/condition/
			// condition-not-met, kpt PR 4469).
			if s.Executed && !s.Skipped && s.ExitCode == 0 && s.ExecutionError == "" {
				executed++
			}
		}
		packages := countPackages(files)
		switch {
		case rerr == nil:
			c.stderrf("Successfully executed %d function(s) in %d package(s).\n", executed, packages)
		case !saveOnFailure(files):
		case executed == 0:
			c.stderrf("Failed to execute any functions in %d package(s).\n", packages)
		default:
			c.stderrf("Partially executed %d function(s) in %d package(s).\n", executed, packages)
		}
	} else if rerr == nil {
		items, err := orderOf(steps, calls, result)
		if err != nil {
			return err
		}
		if err := c.emit(out, items); err != nil {
			return err
		}
	}
	if *resultsDir != "" {
		if err := c.saveResults(*resultsDir, steps, rerr != nil); err != nil {
			return err
		}
	}
	if rerr != nil {
		msg, handled := renderCause(rerr)
		if !handled {
			c.stderrf("Error: %s\n", msg)
		}
		return errReported
	}
	return nil
}

// packageDir resolves a package argument to an absolute directory,
// following a symbolic link as kpt does (with its warning).
func (c *cmdEnv) packageDir(arg string) (string, error) {
	p := c.abs(arg)
	info, err := os.Lstat(p)
	if err != nil {
		return "", fmt.Errorf("No Kptfile found at %q: %w", arg, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(c.dir, resolved)
		if err != nil {
			rel = resolved
		}
		c.stderrf("[WARN] resolved symlink %q to %q, please note that the symlinks within the package are ignored\n", arg, rel)
		p = resolved
	}
	p = filepath.Clean(p)
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%q is not a directory", arg)
	}
	return p, nil
}

// readPackage reads the regular files under dir, leaving out .git
// directories and symbolic links.
func readPackage(dir string) (revision.Files, error) {
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
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

// writeBack makes dir hold after where it held before: changed and new
// files are written, files that are gone are removed. Files that were not
// read (.git, symbolic links) are left alone.
func writeBack(dir string, before, after revision.Files) error {
	for _, p := range before.Paths() {
		if !after.Has(p) {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	for _, p := range after.Paths() {
		data, _ := after.Get(p)
		if old, ok := before.Get(p); ok && bytes.Equal(old, data) {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// packageDirs returns the directories of files that hold a Kptfile, ""
// for the root, sorted.
func packageDirs(files revision.Files) []string {
	var dirs []string
	for _, p := range files.Paths() {
		if p == revision.KptfileName {
			dirs = append(dirs, "")
		} else if d, ok := strings.CutSuffix(p, "/"+revision.KptfileName); ok {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func countPackages(files revision.Files) int { return len(packageDirs(files)) }

// saveOnFailure reports whether the root Kptfile asks for the partial
// render to be saved when the render fails.
func saveOnFailure(files revision.Files) bool {
	data, ok := files.Get(revision.KptfileName)
	if !ok {
		return false
	}
	kf, err := revision.ParseKptfile(data)
	return err == nil && strings.EqualFold(kf.Metadata.Annotations[pipeline.SaveOnFailureAnnotation], "true")
}

// saveResults writes kpt's results file and says where it is.
func (c *cmdEnv) saveResults(dir string, steps []pipeline.StepResult, failed bool) error {
	data, err := pipeline.EncodeResultList(steps, failed)
	if err != nil {
		return err
	}
	abs := c.abs(dir)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("failed to save function results: %w", err)
	}
	file := filepath.Join(abs, "results.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return fmt.Errorf("failed to save function results: %w", err)
	}
	c.stderrf("For complete results, see %s\n", filepath.Join(dir, "results.yaml"))
	return nil
}

// containerUser is the user function containers run as: this process's
// "uid:gid" with --as-current-user, else "" (fnruntime's default, nobody).
func containerUser(asCurrentUser bool) string {
	if !asCurrentUser {
		return ""
	}
	return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
}
