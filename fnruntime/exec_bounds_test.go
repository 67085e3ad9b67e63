//go:build linux

package fnruntime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone waits up to two seconds for pid to end.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Errorf("process %d is still running", pid)
}

// grandchild is a function that starts a grandchild holding stdout open,
// writes its pid to the file named by $1, and waits for it.
const grandchild = `cat >/dev/null; sleep 1000 & echo $! > "$1"; trap "" TERM INT; wait`

// A run that times out kills the function's whole process group, the
// grandchild that holds stdout open included, and returns at once.
func TestExecTimeoutKillsGrandchild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	fn := &fnruntime.ExecFunction{Path: "sh", Args: []string{"-c", grandchild, "sh", pidFile}, Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := fn.RunStream(context.Background(), strings.NewReader("{}"), &bytes.Buffer{})
	elapsed := time.Since(start)
	var fe *pipeline.FunctionError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &fe) {
		t.Fatalf("got %v, want a *pipeline.FunctionError matching context.DeadlineExceeded", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("the run returned %v after its 300ms timeout", elapsed)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

// The caller's context ends a run within about a second, whatever the
// function does with signals, and through the registry's wrapping too.
func TestExecCallerCancel(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	reg := fnruntime.NewRegistry(&fnruntime.Options{AllowExec: true})
	fn, err := reg.Resolve(context.Background(), pipeline.Step{Exec: "sh -c '" + grandchild + "' sh " + pidFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	err = fn.Run(ctx, &pipeline.ResourceList{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the run returned %v after its context was cancelled at 300ms", elapsed)
	}
	b, _ := os.ReadFile(pidFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		waitGone(t, pid)
	} else {
		t.Errorf("no grandchild pid: %v", err)
	}
}

// Stdout and stderr over their caps are refused with a
// *revision.LimitError; the odd stderr of a function (binary, no newline)
// reaches the error as valid text.
func TestExecOddOutput(t *testing.T) {
	run := func(script string, fn *fnruntime.ExecFunction) (string, string, error) {
		if fn == nil {
			fn = &fnruntime.ExecFunction{}
		}
		fn.Path, fn.Args = "sh", []string{"-c", script}
		var out bytes.Buffer
		stderr, err := fn.RunStream(context.Background(), strings.NewReader("{}"), &out)
		return out.String(), stderr, err
	}
	checkText := func(stderr string) {
		t.Helper()
		if !utf8.ValidString(stderr) || strings.ContainsAny(stderr, "\x00\x1b\r") {
			t.Errorf("stderr %q is not clean text", stderr)
		}
	}

	t.Run("binary-stderr-fails", func(t *testing.T) {
		_, stderr, err := run(`cat >/dev/null; printf '\000\377\376 broken \033[31m red' >&2; exit 3`, nil)
		var fe *pipeline.FunctionError
		if !errors.As(err, &fe) || fe.ExitCode != 3 {
			t.Fatalf("got %v, want exit code 3", err)
		}
		checkText(stderr)
		checkText(fe.Stderr)
		if !strings.Contains(stderr, "broken") || !strings.Contains(stderr, "red") {
			t.Errorf("stderr %q lost its text", stderr)
		}
	})
	t.Run("binary-stderr-succeeds", func(t *testing.T) {
		out, stderr, err := run(`cat; printf '\377\000warning' >&2`, nil)
		if err != nil || out != "{}" {
			t.Fatalf("got %q, %v", out, err)
		}
		checkText(stderr)
	})
	t.Run("huge-stderr", func(t *testing.T) {
		_, stderr, err := run(`cat >/dev/null; head -c 3000000 /dev/zero >&2; echo done`, nil)
		var le *revision.LimitError
		if !errors.Is(err, fnruntime.ErrOutputTooLarge) || !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "fnruntime.Options.MaxStderr" || le.Max != fnruntime.DefaultMaxExecStderr {
			t.Fatalf("got %v, want a LimitError of MaxStderr", err)
		}
		checkText(stderr)
		if len(stderr) > fnruntime.DefaultMaxExecStderr+1000 {
			t.Errorf("stderr of %d bytes kept", len(stderr))
		}
	})
	t.Run("huge-stdout", func(t *testing.T) {
		r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
			out, _, err := run(`cat >/dev/null; head -c 1000000000 /dev/zero`, &fnruntime.ExecFunction{MaxOutput: 16 << 20})
			var le *revision.LimitError
			if !errors.Is(err, fnruntime.ErrOutputTooLarge) || !errors.As(err, &le) || le.Limit != "fnruntime.Options.MaxOutput" || out != "" {
				t.Fatalf("got %v and %d bytes, want a LimitError of MaxOutput and nothing written", err, len(out))
			}
		})
		checkGrowth(t, r, "1 GB of stdout")
	})
}

// An exec function run under a context without deadline gets
// DefaultExecTimeout; the caller's deadline or its own Timeout replace it.
func TestExecDefaultTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, tc := range []struct {
		fn   *fnruntime.ExecFunction
		ctx  context.Context
		want time.Duration
	}{
		{&fnruntime.ExecFunction{}, context.Background(), fnruntime.DefaultExecTimeout},
		{&fnruntime.ExecFunction{}, ctx, 0},
		{&fnruntime.ExecFunction{Timeout: time.Second}, context.Background(), time.Second},
		{&fnruntime.ExecFunction{Timeout: -1}, context.Background(), 0},
	} {
		if got := fnruntime.ExecTimeout(tc.fn, tc.ctx); got != tc.want {
			t.Errorf("Timeout %v: %v, want %v", tc.fn.Timeout, got, tc.want)
		}
	}
}
