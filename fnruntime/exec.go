package fnruntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Defaults of ExecFunction's bounds.
const (
	// DefaultExecTimeout bounds an exec function's run when neither
	// ExecFunction.Timeout nor the caller's context sets a deadline.
	DefaultExecTimeout = 5 * time.Minute
	// DefaultMaxExecOutput caps an exec function's stdout.
	DefaultMaxExecOutput = 64 << 20
	// DefaultMaxExecStderr caps an exec function's stderr.
	DefaultMaxExecStderr = 1 << 20
)

// ExecFunction runs a local program as a KRM function: the ResourceList on
// stdin, the result on stdout, no shell. It is safe for concurrent use.
//
// A run is bounded: it ends at Timeout, or at DefaultExecTimeout when
// neither Timeout nor the caller's context sets a deadline, and the
// caller's context ends it sooner. On Unix the program runs in a process
// group of its own, and the end of a run kills the whole group (the
// program and every process it started that stayed in the group) with
// SIGKILL; the run returns within about a second of its context ending,
// even when a grandchild holds stdout open. Elsewhere only the program
// itself is killed. Stdout and stderr are capped (MaxOutput, MaxStderr).
type ExecFunction struct {
	// Path is the program; a relative path is resolved against Dir.
	Path string
	// Args are its arguments.
	Args []string
	// Dir is the working directory; empty means the process's.
	Dir string
	// Env is the environment; nil means only PATH and HOME.
	Env []string
	// Timeout bounds a run; zero means DefaultExecTimeout (5 minutes)
	// when ctx has no deadline and ctx's deadline otherwise; a negative
	// Timeout means none beyond ctx. A run that times out fails with a
	// *pipeline.FunctionError matching context.DeadlineExceeded.
	Timeout time.Duration
	// MaxOutput caps stdout; zero means DefaultMaxExecOutput (64 MiB), a
	// negative value no cap. MaxStderr caps stderr; zero means
	// DefaultMaxExecStderr (1 MiB), a negative value no cap. A run over
	// either fails with a *pipeline.FunctionError whose cause is a
	// *revision.LimitError (Limit "fnruntime.Options.MaxOutput" or
	// "fnruntime.Options.MaxStderr") matching ErrOutputTooLarge and
	// revision.ErrLimit; nothing of its stdout reaches the caller.
	MaxOutput, MaxStderr int64
}

var _ pipeline.StreamFunction = (*ExecFunction)(nil)

// ErrOutputTooLarge matches a run whose stdout or stderr exceeded its cap.
// Such a run writes nothing to its output: the error (a
// *pipeline.FunctionError whose Stderr says which stream and which cap,
// and whose cause is a *revision.LimitError, so it matches
// revision.ErrLimit too) reaches the caller through the pipeline's
// *pipeline.RenderError, where errors.Is finds it.
var ErrOutputTooLarge = errors.New("function output too large")

// Run implements pipeline.Function by encoding rl, running the program and
// decoding its output into rl.
func (e *ExecFunction) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	in, err := rl.Encode()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	stderr, runErr := e.RunStream(ctx, bytes.NewReader(in), &out)
	if out.Len() > 0 {
		got, err := pipeline.ParseResourceList(out.Bytes())
		if err != nil {
			if runErr != nil {
				return runErr
			}
			return &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: fmt.Errorf("exec %s: malformed output: %w", e.Path, err)}
		}
		*rl = *got
	}
	return runErr
}

// timeout is the run's own deadline: Timeout, or DefaultExecTimeout when
// neither Timeout nor ctx sets one; zero means ctx's alone.
func (e *ExecFunction) timeout(ctx context.Context) time.Duration {
	if _, ok := ctx.Deadline(); e.Timeout == 0 && !ok {
		return DefaultExecTimeout
	}
	return max(e.Timeout, 0)
}

// orDefault returns v, or def when v is zero; a negative v is no bound (0).
func orDefault(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// RunStream implements pipeline.StreamFunction. A non-zero exit is a
// *pipeline.FunctionError with the exit code and stderr.
func (e *ExecFunction) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	if timeout := e.timeout(ctx); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	maxOut, maxErr := orDefault(e.MaxOutput, DefaultMaxExecOutput), orDefault(e.MaxStderr, DefaultMaxExecStderr)
	cmd := exec.CommandContext(ctx, e.Path, e.Args...)
	cmd.Dir = e.Dir
	cmd.Env = e.Env
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	}
	cmd.Stdin = in
	// With a cap, stdout is held until the program ends so that a run
	// over the cap writes nothing to out: a truncated ResourceList would
	// otherwise reach the caller's parser and hide the real failure.
	var outBuf bytes.Buffer
	stdoutTarget := out
	if maxOut > 0 {
		stdoutTarget = &outBuf
	}
	stdout := &capWriter{w: stdoutTarget, max: maxOut}
	var errBuf bytes.Buffer
	stderrW := &capWriter{w: &errBuf, max: maxErr}
	cmd.Stdout = stdout
	cmd.Stderr = stderrW
	// The group is killed when ctx ends (cmd.Cancel) and after a run
	// whose pipes a straggler held open; WaitDelay then closes the pipes
	// within a second whatever the processes do.
	ownProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil || errors.Is(err, exec.ErrWaitDelay) {
		killProcessGroup(cmd)
	}
	stderr := cleanStderr(errBuf.Bytes())
	switch {
	case stdout.over || stderrW.over:
		which, limit, name := "stdout", maxOut, "fnruntime.Options.MaxOutput"
		if !stdout.over {
			which, limit, name = "stderr", maxErr, "fnruntime.Options.MaxStderr"
		}
		msg := fmt.Sprintf("exec %s: %s: %s exceeded its cap of %d bytes", e.Path, ErrOutputTooLarge, which, limit)
		cause := &revision.LimitError{What: which + " of exec " + e.Path, Limit: name, Max: limit, Err: ErrOutputTooLarge}
		if stderr != "" && !strings.HasSuffix(stderr, "\n") {
			stderr += "\n"
		}
		stderr += msg
		return stderr, &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: fmt.Errorf("%s: %w", msg, cause)}
	case err == nil:
		if stdoutTarget != out {
			if _, werr := out.Write(outBuf.Bytes()); werr != nil {
				return stderr, werr
			}
		}
		return stderr, nil
	case ctx.Err() != nil:
		return stderr, &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: fmt.Errorf("exec %s: %w", e.Path, ctx.Err())}
	}
	// A failing program's output still carries its results.
	if stdoutTarget != out {
		if _, werr := out.Write(outBuf.Bytes()); werr != nil {
			return stderr, werr
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stderr, &pipeline.FunctionError{ExitCode: ee.ExitCode(), Stderr: stderr, Err: err}
	}
	return stderr, fmt.Errorf("unexpected function error: %w", err)
}

// cleanStderr makes a program's stderr safe to carry in errors and
// results: invalid UTF-8 becomes U+FFFD and control characters other than
// newline and tab are dropped.
func cleanStderr(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0)) {
			return r
		}
		return -1
	}, s)
}

type capWriter struct {
	w    io.Writer
	max  int64
	n    int64
	over bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.max > 0 && c.n+int64(len(p)) > c.max {
		c.over = true
		return 0, ErrOutputTooLarge
	}
	c.n += int64(len(p))
	return c.w.Write(p)
}

// splitCommand splits a command line as a POSIX shell would split words
// (quotes and backslashes), without any expansion.
func splitCommand(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, errors.New("unterminated quote or escape")
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}
