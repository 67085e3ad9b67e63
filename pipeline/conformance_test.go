package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/fixtures"
	"github.com/configasdata/cad/internal/kpttestfns"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// conformanceRoot returns kpt's e2e fixtures (see
// shared/conformance/README.md); without them the test skips, or fails in
// CI.
func conformanceRoot(t *testing.T) string {
	return fixtures.Dir(t, "kpt", "e2e")
}

// minConformancePass is the number of fn-render cases that must pass when
// all of them run: the test fails if fewer pass, so a case that stops
// passing (or a function that goes missing) cannot go unnoticed. Raise it
// when more cases pass.
const minConformancePass = 82

// caseConfig is kpt's .expected/config.yaml.
type caseConfig struct {
	TestType         string   `yaml:"testType"`
	ExitCode         int      `yaml:"exitCode"`
	AllowExec        bool     `yaml:"allowExec"`
	AllowWasm        bool     `yaml:"allowWasm"`
	ImagePullPolicy  string   `yaml:"imagePullPolicy"`
	ActualStripLines []string `yaml:"actualStripLines"`
	DiffStripRegEx   string   `yaml:"diffStripRegEx"`
}

// unrunnable lists the cases that need more than a library render, and why.
var unrunnable = map[string]string{
	"basicpipeline-out-of-place":          "kpt CLI: render -o <dir>",
	"basicpipeline-symlink":               "symlinked package directory (revision.Files holds no symlinks)",
	"out-of-place-dir":                    "kpt CLI: render -o <dir>",
	"out-of-place-dir-exists-error":       "kpt CLI: render -o <dir>",
	"out-of-place-fnchain-stdout":         "kpt CLI: render -o stdout | fn eval",
	"out-of-place-fnchain-stdout-results": "kpt CLI: render -o stdout | fn eval",
	"out-of-place-fnchain-unwrap":         "kpt CLI: render -o stdout | fn eval -o unwrap",
	"out-of-place-stdout":                 "kpt CLI: render -o stdout",
	"out-of-place-unwrap":                 "kpt CLI: render -o unwrap",
}

// knownFailures are runnable cases that do not pass yet, with the reason.
// The test fails when one of them starts passing, so the list stays true.
var knownFailures = map[string]string{}

type tally struct {
	mu                        sync.Mutex
	pass, fail, missingFn, un []string
}

func TestConformanceFnRender(t *testing.T) {
	e2e, err := filepath.Abs(conformanceRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(e2e, "testdata", "fn-render")
	fixtures.Require(t, root)
	fixtures.RequireTool(t, "git", "the diff witness")
	var cases []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".expected" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			cases = append(cases, filepath.ToSlash(rel))
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(cases)
	var tl tally
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c, func(t *testing.T) {
				t.Parallel()
				runCase(t, filepath.Join(root, c), c, e2e, &tl)
			})
		}
	})
	t.Logf("fn-render conformance: %d cases, %d pass, %d fail (%d of them for a missing function), %d unrunnable",
		len(cases), len(tl.pass), len(tl.fail), len(tl.missingFn), len(tl.un))
	sort.Strings(tl.missingFn)
	for _, s := range tl.missingFn {
		t.Logf("  missing function: %s", s)
	}
	sort.Strings(tl.fail)
	for _, s := range tl.fail {
		t.Logf("  failing: %s", s)
	}
	if ran := len(tl.pass) + len(tl.fail) + len(tl.un); ran == len(cases) && len(tl.pass) < minConformancePass {
		t.Errorf("%d fn-render cases pass, fewer than the %d that must (minConformancePass)", len(tl.pass), minConformancePass)
	}
	if os.Getenv("CAD_CONFORMANCE_REPORT") != "" {
		var b strings.Builder
		for _, s := range tl.pass {
			b.WriteString("pass " + s + "\n")
		}
		for _, s := range tl.fail {
			b.WriteString("fail " + s + "\n")
		}
		for _, s := range tl.un {
			b.WriteString("unrunnable " + s + "\n")
		}
		_ = os.WriteFile(os.Getenv("CAD_CONFORMANCE_REPORT"), []byte(b.String()), 0o644)
	}
}

func runCase(t *testing.T, dir, name, e2e string, tl *tally) {
	record := func(list *[]string, s string) {
		tl.mu.Lock()
		*list = append(*list, s)
		tl.mu.Unlock()
	}
	if why, ok := unrunnable[name]; ok {
		record(&tl.un, name+": "+why)
		t.Skip("unrunnable: " + why)
	}
	var cfg caseConfig
	if data, err := os.ReadFile(filepath.Join(dir, ".expected", "config.yaml")); err == nil {
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			t.Fatalf("config.yaml: %v", err)
		}
	}
	if cfg.TestType != "" && cfg.TestType != "render" {
		record(&tl.un, name+": testType "+cfg.TestType)
		t.Skip("not a render case")
	}
	pkg := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(pkg, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	// The fixtures may be read-only; the copy must be writable.
	_ = filepath.WalkDir(pkg, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			if info, ierr := d.Info(); ierr == nil {
				_ = os.Chmod(p, info.Mode().Perm()|0o200)
			}
		}
		return nil
	})
	git(t, pkg, "init", "-q")
	git(t, pkg, "add", "--all")
	git(t, pkg, "commit", "-q", "-m", "fixture", "--allow-empty")
	first := strings.TrimSpace(git(t, pkg, "rev-parse", "HEAD"))

	files := readDir(t, pkg)
	reg := fnruntime.NewRegistry(&fnruntime.Options{AllowExec: cfg.AllowExec, ExecDir: e2e, Env: os.Environ()})
	kpttestfns.Register(reg) // kpt's test images no-op and drop-comments
	out, err := pipeline.NewKptfile(kptWords(reg), &pipeline.Options{RequireKptfile: true, KptStyleKptfile: true}).Render(context.Background(), files)
	var steps []pipeline.StepResult
	result := files
	if err != nil {
		var re *pipeline.RenderError
		if !errors.As(err, &re) {
			t.Fatalf("render error is not a *RenderError: %v", err)
		}
		if errors.Is(err, pipeline.ErrFunctionNotFound) {
			// A function cad lacks is a missing feature: the case fails
			// (unless knownFailures says why), it is never skipped.
			var nf *fnruntime.NotFoundError
			img := err.Error()
			if errors.As(err, &nf) {
				img = nf.Image
			}
			record(&tl.missingFn, name+": needs "+img)
		}
		steps = re.Steps()
		if re.Output != nil {
			result = re.Output.Files
		}
	} else {
		steps = out.Steps
		result = out.Files
	}
	exit := 0
	if err != nil {
		exit = 1
	}
	var problems []string
	if exit != cfg.ExitCode {
		problems = append(problems, "exit code "+itoa(exit)+", want "+itoa(cfg.ExitCode)+" (err: "+errString(err)+")")
	}
	if want, rerr := os.ReadFile(filepath.Join(dir, ".expected", "results.yaml")); rerr == nil {
		got, eerr := pipeline.EncodeResultList(steps, err != nil)
		if eerr != nil {
			t.Fatal(eerr)
		}
		g := stripLines(string(got), cfg.ActualStripLines)
		if strings.TrimSpace(g) != strings.TrimSpace(string(want)) {
			problems = append(problems, "results.yaml differs:\n--- got\n"+g+"\n--- want\n"+string(want))
		}
	}
	writeDir(t, pkg, result)
	git(t, pkg, "add", "--all")
	git(t, pkg, "commit", "-q", "-m", "render", "--allow-empty")
	diff := gitDiff(t, pkg, first)
	wantDiff, _ := os.ReadFile(filepath.Join(dir, ".expected", "diff.patch"))
	gotD, wantD := strings.TrimSpace(diff), strings.TrimSpace(string(wantDiff))
	if cfg.DiffStripRegEx != "" {
		re := regexp.MustCompile(cfg.DiffStripRegEx)
		gotD, wantD = normaliseDiff(gotD, re), normaliseDiff(wantD, re)
	}
	if gotD != wantD {
		problems = append(problems, "diff differs:\n--- got\n"+diff+"\n--- want\n"+string(wantDiff))
	}
	reason, known := knownFailures[name]
	switch {
	case len(problems) == 0 && known:
		record(&tl.pass, name)
		t.Errorf("case passes now; remove it from knownFailures (%s)", reason)
	case len(problems) == 0:
		record(&tl.pass, name)
	case known:
		record(&tl.fail, name+": "+reason)
		t.Skipf("known failure: %s", reason)
	default:
		record(&tl.fail, name)
		t.Error(strings.Join(problems, "\n"))
	}
}

// kptWords wraps a resolver as the kpt CLI words its errors: the render
// records them in the Kptfile's status, and kpt's fixtures expect the
// CLI's text, which names its --allow-exec flag where the library has
// none. This harness stands in for kpt's CLI, so the wording is its.
func kptWords(r pipeline.Resolver) pipeline.Resolver {
	return pipeline.ResolverFunc(func(ctx context.Context, step pipeline.Step) (pipeline.Function, error) {
		fn, err := r.Resolve(ctx, step)
		if errors.Is(err, pipeline.ErrExecNotAllowed) {
			err = kptExecNotAllowed{err}
		}
		return fn, err
	})
}

type kptExecNotAllowed struct{ error }

func (kptExecNotAllowed) Error() string {
	return "must run with `--allow-exec` option to allow running function binaries"
}
func (e kptExecNotAllowed) Unwrap() error { return e.error }

func itoa(i int) string { return strconv.Itoa(i) }

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func stripLines(s string, strip []string) string {
	if len(strip) == 0 {
		return s
	}
	var out []string
	for _, l := range strings.Split(s, "\n") {
		skip := false
		for _, x := range strip {
			if l == x {
				skip = true
			}
		}
		if !skip {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var indexLine = regexp.MustCompile(`^index [0-9a-f]+\.\.[0-9a-f]+`)
var hunkLine = regexp.MustCompile(`^@@ .* @@`)

func normaliseDiff(s string, re *regexp.Regexp) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			continue
		}
		l = indexLine.ReplaceAllString(l, "index x..y")
		l = hunkLine.ReplaceAllString(l, "@@ x @@")
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=cad", "-c", "user.email=cad@example.com", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

func gitDiff(t *testing.T, dir, first string) string {
	t.Helper()
	cmd := exec.Command("git", "diff", first, "HEAD")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_DIFF_OPTS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git diff: %v", err)
	}
	return string(out)
}

// readDir reads a package directory into Files, leaving out .git.
func readDir(t *testing.T, dir string) revision.Files {
	t.Helper()
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
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := revision.NewFiles(m)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeDir makes dir hold exactly files (besides .git).
func writeDir(t *testing.T, dir string, files revision.Files) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			if !files.Has(filepath.ToSlash(rel)) {
				_ = os.Remove(p)
			}
		}
		return nil
	})
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		full := filepath.Join(dir, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
