package cli_test

import (
	"bytes"
	"context"
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

	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
	"github.com/configasdata/cad/internal/fixtures"
	"github.com/configasdata/cad/internal/kpttestfns"
)

// minCLIConformancePass is the number of fn-render cases that must pass
// through cadctl when all of them run: the test fails if fewer pass.
const minCLIConformancePass = 91

// cliOnly are the fn-render cases the library's own conformance test cannot
// run (pipeline/conformance_test.go's unrunnable list): they need kpt's
// output modes, fn eval chains or a symlinked package. They must pass here.
var cliOnly = map[string]bool{
	"basicpipeline-out-of-place":          true,
	"basicpipeline-symlink":               true,
	"out-of-place-dir":                    true,
	"out-of-place-dir-exists-error":       true,
	"out-of-place-fnchain-stdout":         true,
	"out-of-place-fnchain-stdout-results": true,
	"out-of-place-fnchain-unwrap":         true,
	"out-of-place-stdout":                 true,
	"out-of-place-unwrap":                 true,
}

// knownFailures are cases that do not pass through cadctl yet, with why.
// The test fails when one starts passing, so the list stays true. None
// today: all 91 pass.
var knownFailures = map[string]string{}

// caseConfig is kpt's .expected/config.yaml.
type caseConfig struct {
	TestType              string   `json:"testType"`
	ExitCode              int      `json:"exitCode"`
	AllowExec             bool     `json:"allowExec"`
	AllowWasm             bool     `json:"allowWasm"`
	ImagePullPolicy       string   `json:"imagePullPolicy"`
	DisableOutputTruncate bool     `json:"disableOutputTruncate"`
	StdErr                string   `json:"stdErr"`
	StdOut                string   `json:"stdOut"`
	StdErrRegEx           string   `json:"stdErrRegEx"`
	StdErrStripLines      []string `json:"stdErrStripLines"`
	ActualStripLines      []string `json:"actualStripLines"`
	DiffStripRegEx        string   `json:"diffStripRegEx"`
}

// envConformanceAll set to "cli" runs only the cliOnly cases (as does
// go test -short); by default every fn-render case runs through cadctl.
// The library's own test already renders the others; here they add kpt's
// CLI output (stderr, stdout) to what is judged.
const envConformanceAll = "CADCTL_CONFORMANCE"

// TestConformanceFnRender runs kpt's fn-render e2e cases through cadctl,
// judged as kpt's own runner judges kpt (exit code, stderr and stdout
// containing the expected CLI output, results.yaml, the git diff of the
// package). Every case must pass; the cases in cliOnly are the ones the
// library's own test cannot run (CADCTL_CONFORMANCE=cli or -short runs
// only those).
func TestConformanceFnRender(t *testing.T) {
	e2e, err := filepath.Abs(fixtures.Dir(t, "kpt", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(e2e, "testdata", "fn-render")
	fixtures.Require(t, root)
	fixtures.RequireTool(t, "git", "the diff witness")
	fixtures.RequireTool(t, "bash", "runs the fixtures' exec.sh")
	shim := kptShim(t)
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
	var mu sync.Mutex
	var passed, failed, skipped []string
	all := true
	t.Run("cases", func(t *testing.T) {
		for _, name := range cases {
			if !cliOnly[name] && (os.Getenv(envConformanceAll) == "cli" || testing.Short()) {
				all = false
				continue
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				iterations := 1
				if cliOnly[name] {
					iterations = 2
				}
				problems, skip := runConformanceCase(t, filepath.Join(root, name), e2e, shim, iterations)
				mu.Lock()
				defer mu.Unlock()
				reason, known := knownFailures[name]
				switch {
				case skip != "":
					skipped = append(skipped, name+": "+skip)
					t.Skip(skip)
				case len(problems) == 0 && known:
					passed = append(passed, name)
					t.Errorf("passes now; remove it from knownFailures (%s)", reason)
				case len(problems) == 0:
					passed = append(passed, name)
				case known:
					failed = append(failed, name+": "+reason)
					t.Skipf("known failure: %s", reason)
				default:
					failed = append(failed, name)
					t.Error(strings.Join(problems, "\n"))
				}
			})
		}
	})
	sort.Strings(passed)
	sort.Strings(failed)
	if all && len(passed)+len(failed)+len(skipped) == len(cases) && len(passed) < minCLIConformancePass {
		t.Errorf("%d fn-render cases pass through cadctl, fewer than the %d that must (minCLIConformancePass)", len(passed), minCLIConformancePass)
	}
	t.Logf("fn-render through cadctl: %d cases run, %d pass, %d fail, %d skipped", len(passed)+len(failed)+len(skipped), len(passed), len(failed), len(skipped))
	for _, s := range failed {
		t.Logf("  failing: %s", s)
	}
	for _, s := range skipped {
		t.Logf("  skipped: %s", s)
	}
	if p := os.Getenv("CADCTL_CONFORMANCE_REPORT"); p != "" {
		var b strings.Builder
		for _, s := range passed {
			b.WriteString("pass " + s + "\n")
		}
		for _, s := range failed {
			b.WriteString("fail " + s + "\n")
		}
		for _, s := range skipped {
			b.WriteString("skip " + s + "\n")
		}
		_ = os.WriteFile(p, []byte(b.String()), 0o644)
	}
}

// kptShim returns a directory holding a "kpt" script that runs this test
// binary as cadctl.
func kptShim(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nexec " + strconv.Quote(self) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "kpt"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	tmpPrefix = regexp.MustCompile(`(?:/[^/\s"]+)*/kpt-pipeline-e2e-\d+/`)
	durations = regexp.MustCompile(`(\[(?:PASS|FAIL)\] "[^"]*") in \S+`)
	indexLine = regexp.MustCompile(`^index [0-9a-f]+\.\.[0-9a-f]+`)
	hunkLine  = regexp.MustCompile(`^@@ .* @@`)
)

// runConformanceCase runs one case as kpt's e2e runner does and returns
// what did not match, or why it cannot run here.
func runConformanceCase(t *testing.T, dir, e2e, shim string, iterations int) (problems []string, skip string) {
	var cfg caseConfig
	if data, err := os.ReadFile(filepath.Join(dir, ".expected", "config.yaml")); err == nil {
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			t.Fatalf("config.yaml: %v", err)
		}
	}
	if cfg.TestType != "" && cfg.TestType != "render" {
		return nil, "testType " + cfg.TestType
	}
	if cfg.AllowWasm {
		return nil, "needs the wasm runtime"
	}
	expected := func(f string) (string, bool) {
		data, err := os.ReadFile(filepath.Join(dir, ".expected", f))
		return string(data), err == nil
	}
	wantResults, hasResults := expected("results.yaml")
	wantDiff, _ := expected("diff.patch")
	_, hasExec := expected("exec.sh")
	for iter := 0; iter < iterations; iter++ {
		tmp, err := os.MkdirTemp("", "kpt-pipeline-e2e-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(tmp) })
		pkg := filepath.Join(tmp, filepath.Base(dir))
		copyWritable(t, dir, pkg)
		git(t, pkg, "init", "-q")
		git(t, pkg, "add", "--all")
		git(t, pkg, "commit", "-q", "-m", "fixture", "--allow-empty")
		first := strings.TrimSpace(git(t, pkg, "rev-parse", "HEAD"))
		if _, ok := expected("setup.sh"); ok {
			if out, err := bashIn(pkg, filepath.Join(pkg, ".expected", "setup.sh"), shim); err != nil {
				t.Fatalf("setup.sh: %v\n%s", err, out)
			}
		}
		resultsDir := filepath.Join(tmp, "results")
		var stdout, stderr bytes.Buffer
		var exit int
		if hasExec {
			code, err := bashCode(pkg, filepath.Join(pkg, ".expected", "exec.sh"), shim, &stdout, &stderr)
			if err != nil {
				t.Fatalf("exec.sh: %v", err)
			}
			exit = code
		} else {
			args := []string{"fn", "render", pkg}
			if hasResults {
				if err := os.Mkdir(resultsDir, 0o755); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--results-dir", resultsDir)
			}
			if cfg.AllowExec {
				args = append(args, "--allow-exec")
			}
			if cfg.ImagePullPolicy != "" {
				args = append(args, "--image-pull-policy", cfg.ImagePullPolicy)
			}
			if cfg.DisableOutputTruncate {
				args = append(args, "--truncate-output=false")
			}
			exit = cli.Invocation{Args: args, Stdout: &stdout, Stderr: &stderr, Dir: e2e, Functions: kpttestfns.Functions()}.Run(context.Background())
		}
		errText := stderr.String()
		// A function cad lacks fails the case like any other difference
		// (it is a missing feature, never a skip).
		if exit != cfg.ExitCode {
			problems = append(problems, "exit code "+strconv.Itoa(exit)+", want "+strconv.Itoa(cfg.ExitCode)+"\nstderr:\n"+errText)
		}
		for _, l := range cfg.StdErrStripLines {
			errText = strings.ReplaceAll(errText, l+"\n", "")
		}
		errText = tmpPrefix.ReplaceAllString(errText, "")
		errText = durations.ReplaceAllString(errText, "$1 in 0s")
		if want := strings.TrimSpace(cfg.StdErr); want != "" && !strings.Contains(errText, want) {
			problems = append(problems, "stderr does not contain the expected text\n--- got\n"+errText+"\n--- want\n"+want)
		}
		if cfg.StdErrRegEx != "" && !regexp.MustCompile(cfg.StdErrRegEx).MatchString(errText) {
			problems = append(problems, "stderr does not match "+cfg.StdErrRegEx+"\n--- got\n"+errText)
		}
		if want := strings.TrimSpace(cfg.StdOut); want != "" && !strings.Contains(stdout.String(), want) {
			problems = append(problems, "stdout does not contain the expected text\n--- got\n"+stdout.String()+"\n--- want\n"+want)
		}
		if hasResults {
			entries, _ := os.ReadDir(resultsDir)
			if len(entries) != 1 {
				problems = append(problems, "results dir holds "+strconv.Itoa(len(entries))+" files, want 1")
			} else {
				data, _ := os.ReadFile(filepath.Join(resultsDir, entries[0].Name()))
				got := stripLines(string(data), cfg.ActualStripLines)
				if strings.TrimSpace(got) != strings.TrimSpace(wantResults) {
					problems = append(problems, "results.yaml differs\n--- got\n"+got+"\n--- want\n"+wantResults)
				}
			}
		}
		git(t, pkg, "add", "--all")
		git(t, pkg, "commit", "-q", "-m", "render", "--allow-empty")
		diff := gitDiff(t, pkg, first)
		gotD, wantD := strings.TrimSpace(diff), strings.TrimSpace(wantDiff)
		if cfg.DiffStripRegEx != "" {
			re := regexp.MustCompile(cfg.DiffStripRegEx)
			gotD, wantD = normaliseDiff(gotD, re), normaliseDiff(wantD, re)
		}
		if gotD != wantD {
			problems = append(problems, "diff differs\n--- got\n"+diff+"\n--- want\n"+wantDiff)
		}
		if _, ok := expected("teardown.sh"); ok {
			if out, err := bashIn(pkg, filepath.Join(pkg, ".expected", "teardown.sh"), shim); err != nil {
				t.Fatalf("teardown.sh: %v\n%s", err, out)
			}
		}
		if len(problems) > 0 || cfg.ExitCode != 0 {
			break
		}
	}
	return problems, ""
}

func shellEnv(shim string) []string {
	return append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"), envRunAsMain+"=1")
}

func bashIn(dir, script, shim string) ([]byte, error) {
	cmd := exec.Command("bash", script)
	cmd.Dir = dir
	cmd.Env = shellEnv(shim)
	return cmd.CombinedOutput()
}

// bashCode runs a script and returns its exit code.
func bashCode(dir, script, shim string, stdout, stderr *bytes.Buffer) (int, error) {
	cmd := exec.Command("bash", script)
	cmd.Dir = dir
	cmd.Env = shellEnv(shim)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}

func copyWritable(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(to, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			if info, ierr := d.Info(); ierr == nil {
				_ = os.Chmod(p, info.Mode().Perm()|0o200)
			}
		}
		return nil
	})
}

func stripLines(s string, strip []string) string {
	if len(strip) == 0 {
		return s
	}
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !contains(strip, l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

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
	cmd := exec.Command("git", append([]string{"-c", "user.name=cad", "-c", "user.email=cad@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
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

// envCasesDir names a directory of test cases in kpt's e2e layout (a
// directory with .expected/ is a case) outside this repository, such as
// the catalog's tests/<fn> and examples/<fn>-* of one release exported
// with their "unstable" images pinned to that release. Unset, the test is
// skipped: the cases are not fixtures of this repository.
const envCasesDir = "CADCTL_CASES_DIR"

// TestCasesDir runs the cases under $CADCTL_CASES_DIR through cadctl,
// judged as TestConformanceFnRender judges kpt's (exit code, stderr,
// results.yaml, the package's git diff), each from its own directory.
func TestCasesDir(t *testing.T) {
	root := os.Getenv(envCasesDir)
	if root == "" {
		t.Skip(envCasesDir + " is not set")
	}
	fixtures.RequireTool(t, "git", "the diff witness")
	shim := kptShim(t)
	var cases []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".expected" {
			cases = append(cases, filepath.Dir(p))
			return filepath.SkipDir
		}
		return nil
	})
	sort.Strings(cases)
	for _, dir := range cases {
		rel, _ := filepath.Rel(root, dir)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			problems, skip := runConformanceCase(t, dir, dir, shim, 1)
			if skip != "" {
				t.Skip(skip)
			}
			// Cases older than kpt v1.0.0-beta.62 expect no render
			// status in the root Kptfile: a difference that is only
			// that hunk is not counted.
			var kept []string
			for _, p := range problems {
				if !statusOnlyDiff(p) {
					kept = append(kept, p)
				}
			}
			if len(kept) > 0 {
				t.Error(strings.Join(kept, "\n"))
			}
		})
	}
}

// statusOnlyDiff reports whether problem is a diff difference whose got
// side differs from its want side only by a Kptfile section adding the
// render status.
func statusOnlyDiff(problem string) bool {
	rest, ok := strings.CutPrefix(problem, "diff differs\n--- got\n")
	if !ok {
		return false
	}
	got, want, ok := strings.Cut(rest, "\n--- want\n")
	if !ok {
		return false
	}
	var kept []string
	for _, sec := range strings.Split("\n"+got, "\ndiff --git ") {
		if strings.HasPrefix(sec, "a/Kptfile b/Kptfile") && strings.Contains(sec, "renderStatus") {
			continue
		}
		if strings.TrimSpace(sec) != "" {
			kept = append(kept, "diff --git "+sec)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n")) == strings.TrimSpace(want)
}
