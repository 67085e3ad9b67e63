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
)

// ExecFunction runs a local program as a KRM function: the ResourceList on
// stdin, the result on stdout, no shell. It is safe for concurrent use.
type ExecFunction struct {
	// Path is the program; a relative path is resolved against Dir.
	Path string
	// Args are its arguments.
	Args []string
	// Dir is the working directory; empty means the process's.
	Dir string
	// Env is the environment; nil means only PATH and HOME.
	Env []string
	// Timeout bounds a run; zero means none beyond ctx.
	Timeout time.Duration
	// MaxOutput and MaxStderr cap stdout and stderr; zero means no cap.
	MaxOutput, MaxStderr int64
}

var _ pipeline.StreamFunction = (*ExecFunction)(nil)

// ErrOutputTooLarge matches a run whose stdout or stderr exceeded its cap.
// Such a run writes nothing to its output: the error (a
// *pipeline.FunctionError whose Stderr says which stream and which cap)
// reaches the caller through the pipeline's *pipeline.RenderError, where
// errors.Is finds it.
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

// RunStream implements pipeline.StreamFunction. A non-zero exit is a
// *pipeline.FunctionError with the exit code and stderr.
func (e *ExecFunction) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
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
	if e.MaxOutput > 0 {
		stdoutTarget = &outBuf
	}
	stdout := &capWriter{w: stdoutTarget, max: e.MaxOutput}
	var errBuf bytes.Buffer
	stderrW := &capWriter{w: &errBuf, max: e.MaxStderr}
	cmd.Stdout = stdout
	cmd.Stderr = stderrW
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	stderr := errBuf.String()
	switch {
	case stdout.over || stderrW.over:
		which, limit := "stdout", e.MaxOutput
		if !stdout.over {
			which, limit = "stderr", e.MaxStderr
		}
		cause := fmt.Errorf("exec %s: %w: %s exceeded its cap of %d bytes", e.Path, ErrOutputTooLarge, which, limit)
		if stderr != "" && !strings.HasSuffix(stderr, "\n") {
			stderr += "\n"
		}
		stderr += cause.Error()
		return stderr, &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: cause}
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
