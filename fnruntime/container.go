package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/configasdata/cad/pipeline"
)

// ErrNoContainerEngine matches the error of a container function when no
// docker or podman binary is available.
var ErrNoContainerEngine = errors.New("no container engine (docker or podman) found")

// ContainerFunction runs a function image with a container engine, as kpt
// does: `run --rm -i --network none --user nobody
// --security-opt=no-new-privileges IMAGE`, the ResourceList on stdin. It
// is safe for concurrent use.
type ContainerFunction struct {
	// Engine is the container engine: docker, or any binary whose run
	// command takes docker's flags (podman, nerdctl, a wrapper), as a name
	// looked up on PATH or as a path. Empty means the first of docker and
	// podman on PATH. The engine is run as `ENGINE run --rm -i ...`,
	// arguments as above and in this order, so a test can stand in a fake
	// engine for it.
	Engine string
	// Image is the function image.
	Image string
	// Network gives the container the host network; default none.
	Network bool
	// Env is the engine's environment; nil means this process's.
	Env []string
	// FunctionEnv are environment variables of the function's container,
	// as docker run -e takes them: KEY=VALUE, or KEY to pass the engine
	// environment's value.
	FunctionEnv []string
	// Mounts are storage mounts of the function's container, as docker run
	// --mount takes them ("type=bind,src=/data,dst=/data").
	Mounts []string
	// User is the container's user (docker run --user). Empty means
	// nobody, kpt's default; kpt's --as-current-user passes the caller's
	// "uid:gid".
	User string
	// Timeout, MaxOutput and MaxStderr bound a run as in ExecFunction.
	Timeout              time.Duration
	MaxOutput, MaxStderr int64
}

var _ pipeline.StreamFunction = (*ContainerFunction)(nil)

// FindContainerEngine returns the path of engine (a name on PATH or a
// path), or with engine empty of docker or podman, or an error matching
// ErrNoContainerEngine.
func FindContainerEngine(engine string) (string, error) {
	names := []string{"docker", "podman"}
	if engine != "" {
		names = []string{engine}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w on PATH", ErrNoContainerEngine)
}

func (c *ContainerFunction) exec() (*ExecFunction, error) {
	engine, err := FindContainerEngine(c.Engine)
	if err != nil {
		return nil, err
	}
	network := "none"
	if c.Network {
		network = "host"
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	user := c.User
	if user == "" {
		user = "nobody"
	}
	args := []string{"run", "--rm", "-i", "--network", network, "--user", user, "--security-opt=no-new-privileges"}
	for _, e := range c.FunctionEnv {
		args = append(args, "-e", e)
	}
	for _, m := range c.Mounts {
		args = append(args, "--mount", m)
	}
	return &ExecFunction{
		Path: engine,
		Args: append(args, c.Image),
		Env:  env, Timeout: c.Timeout, MaxOutput: c.MaxOutput, MaxStderr: c.MaxStderr,
	}, nil
}

// Run implements pipeline.Function.
func (c *ContainerFunction) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	e, err := c.exec()
	if err != nil {
		return err
	}
	return e.Run(ctx, rl)
}

// RunStream implements pipeline.StreamFunction.
func (c *ContainerFunction) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	e, err := c.exec()
	if err != nil {
		return "", err
	}
	return e.RunStream(ctx, in, out)
}
