package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

// cliCase is one file of testdata/cli: a sequence of cadctl invocations
// with the output and exit code each must give, as Porch's CLI e2e suite
// (test/e2e/cli) describes its cases.
type cliCase struct {
	// Modes restricts the case to "direct" or "server"; default both.
	Modes    []string     `json:"modes"`
	Commands []cliCommand `json:"commands"`
}

type cliCommand struct {
	// Args is cadctl's command line; ${WORK} is the case's working
	// directory, ${BLUEPRINTS} and ${DEPLOY} two empty bare git
	// repositories in it.
	Args []string `json:"args"`
	// Sh, instead of Args, is a shell script run in ${WORK}.
	Sh    string `json:"sh"`
	Stdin string `json:"stdin"`
	// Stdout and Stderr, when set, must equal the output after
	// normalisation (see normalise); StdoutContains and StderrContains
	// must be contained in it. They are not expanded: the output has
	// ${WORK} where the working directory was.
	Stdout         *string `json:"stdout"`
	Stderr         *string `json:"stderr"`
	StdoutContains string  `json:"stdoutContains"`
	StderrContains string  `json:"stderrContains"`
	ExitCode       int     `json:"exitCode"`
	// IgnoreWhitespace compares Stdout and Stderr with every run of
	// spaces and tabs as one space (for tables whose widths depend on
	// the working directory's length).
	IgnoreWhitespace bool `json:"ignoreWhitespace"`
	// Modes restricts the command to "direct" or "server".
	Modes []string `json:"modes"`
}

var (
	shaRe      = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	uidRe      = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	timeRe     = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	durationRe = regexp.MustCompile(`(\[(?:PASS|FAIL)\] "[^"]*") in \S+`)
	spaces     = regexp.MustCompile(`[ \t]+`)
)

// normalise makes output comparable across runs: the working directory
// becomes ${WORK}, git commit ids <sha>, UIDs <uid>, times <time> and
// function durations 0s.
func normalise(s, work string) string {
	s = strings.ReplaceAll(s, work, "${WORK}")
	s = shaRe.ReplaceAllString(s, "<sha>")
	s = uidRe.ReplaceAllString(s, "<uid>")
	s = timeRe.ReplaceAllString(s, "<time>")
	return durationRe.ReplaceAllString(s, "$1 in 0s")
}

func loadCLICases(t *testing.T) map[string]cliCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "cli", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CLI cases in testdata/cli: %v", err)
	}
	cases := map[string]cliCase{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c cliCase
		if err := yaml.UnmarshalStrict(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases[strings.TrimSuffix(filepath.Base(f), ".yaml")] = c
	}
	return cases
}

func wants(modes []string, mode string) bool { return len(modes) == 0 || contains(modes, mode) }

// TestCLIDirect runs testdata/cli in direct mode: a configuration file in
// the case's directory, the library embedded, no server.
func TestCLIDirect(t *testing.T) {
	for name, c := range loadCLICases(t) {
		if !wants(c.Modes, "direct") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			work := newWorkDir(t)
			runCLICase(t, c, "direct", work, []string{"--config", filepath.Join(work, "cadctl.json")})
		})
	}
}

// TestCLIServer runs testdata/cli against the reference server
// (examples/server), built once and started for each case with its own
// data directory.
func TestCLIServer(t *testing.T) {
	bin := serverBinary(t)
	for name, c := range loadCLICases(t) {
		if !wants(c.Modes, "server") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			work := newWorkDir(t)
			url := startServer(t, bin, filepath.Join(work, ".server"))
			global := []string{"--server", url}
			// The server registers a repository of its own on its first
			// start; the cases start from none, as in direct mode.
			var stderr bytes.Buffer
			if code := (cli.Invocation{Args: append(global, "repo", "unreg", "default"), Stderr: &stderr, Dir: work}).Run(context.Background()); code != 0 {
				t.Fatalf("unregistering the server's default repository: %s", stderr.String())
			}
			runCLICase(t, c, "server", work, global)
		})
	}
}

// newWorkDir returns a case's working directory with two empty bare git
// repositories, blueprints.git and deploy.git.
func newWorkDir(t *testing.T) string {
	t.Helper()
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"blueprints.git", "deploy.git"} {
		cmd := exec.Command("git", "init", "-q", "--bare", "-b", "main", filepath.Join(work, r))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	return work
}

func runCLICase(t *testing.T, c cliCase, mode, work string, global []string) {
	t.Helper()
	vars := map[string]string{
		"WORK":       work,
		"BLUEPRINTS": filepath.Join(work, "blueprints.git"),
		"DEPLOY":     filepath.Join(work, "deploy.git"),
	}
	expand := func(s string) string { return os.Expand(s, func(k string) string { return vars[k] }) }
	for i, cmd := range c.Commands {
		if !wants(cmd.Modes, mode) {
			continue
		}
		var stdout, stderr bytes.Buffer
		var code int
		label := fmt.Sprintf("command %d", i+1)
		if cmd.Sh != "" {
			sh := exec.Command("bash", "-c", expand(cmd.Sh))
			sh.Dir = work
			sh.Stdout, sh.Stderr = &stdout, &stderr
			if err := sh.Run(); err != nil {
				t.Fatalf("%s: sh: %v\n%s", label, err, stderr.String())
			}
			continue
		}
		var args []string
		for _, a := range cmd.Args {
			args = append(args, expand(a))
		}
		label += " (cadctl " + strings.Join(cmd.Args, " ") + ")"
		inv := cli.Invocation{Args: append(append([]string(nil), global...), args...), Stdin: strings.NewReader(expand(cmd.Stdin)),
			Stdout: &stdout, Stderr: &stderr, Dir: work}
		code = inv.Run(context.Background())
		gotOut, gotErr := normalise(stdout.String(), work), normalise(stderr.String(), work)
		if code != cmd.ExitCode {
			t.Errorf("%s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", label, code, cmd.ExitCode, gotOut, gotErr)
			continue
		}
		same := func(got, want string) bool {
			if cmd.IgnoreWhitespace {
				got, want = spaces.ReplaceAllString(got, " "), spaces.ReplaceAllString(want, " ")
			}
			return got == want
		}
		if cmd.Stdout != nil && !same(gotOut, *cmd.Stdout) {
			t.Errorf("%s: stdout differs\n--- got\n%s\n--- want\n%s", label, gotOut, *cmd.Stdout)
		}
		if cmd.Stderr != nil && !same(gotErr, *cmd.Stderr) {
			t.Errorf("%s: stderr differs\n--- got\n%s\n--- want\n%s", label, gotErr, *cmd.Stderr)
		}
		if cmd.StdoutContains != "" && !strings.Contains(gotOut, cmd.StdoutContains) {
			t.Errorf("%s: stdout does not contain %q\n--- got\n%s", label, cmd.StdoutContains, gotOut)
		}
		if cmd.StderrContains != "" && !strings.Contains(gotErr, cmd.StderrContains) {
			t.Errorf("%s: stderr does not contain %q\n--- got\n%s", label, cmd.StderrContains, gotErr)
		}
	}
}

var (
	serverOnce sync.Once
	serverBin  string
	serverDir  string // removed by TestMain
	serverErr  error
)

// serverBinary builds examples/server once, or skips the test when it
// cannot be built.
func serverBinary(t *testing.T) string {
	t.Helper()
	serverOnce.Do(func() {
		if bin := os.Getenv("CADCTL_TEST_SERVER_BIN"); bin != "" {
			serverBin = bin
			return
		}
		if _, err := os.Stat(filepath.Join("..", "..", "..", "server", "main.go")); err != nil {
			serverErr = fmt.Errorf("examples/server does not exist yet: %w", err)
			return
		}
		if _, err := exec.LookPath("go"); err != nil {
			serverErr = fmt.Errorf("no go command to build examples/server: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "cadctl-server-*")
		if err != nil {
			serverErr = err
			return
		}
		serverDir = dir
		serverBin = filepath.Join(dir, "server")
		cmd := exec.Command("go", "build", "-o", serverBin, "github.com/configasdata/cad/examples/server")
		if out, err := cmd.CombinedOutput(); err != nil {
			serverErr = fmt.Errorf("building examples/server: %v\n%s", err, out)
		}
	})
	if serverErr != nil {
		t.Skipf("server mode not tested: %v", serverErr)
	}
	return serverBin
}

var listenLine = regexp.MustCompile(`listening on (https?://\S+)`)

// startServer starts the reference server on a free loopback port with
// its own data directory and returns its URL; it is stopped when the test
// ends.
func startServer(t *testing.T, bin, dataDir string, extra ...string) string {
	t.Helper()
	// The cases' repositories live in the work directory, beside the
	// data directory.
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--data-dir", dataDir, "--repository-root", filepath.Dir(dataDir)}, extra...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not start: %s", stderr.String())
	}
	return ""
}
