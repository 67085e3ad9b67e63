package cli_test

import (
	"context"
	"os"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
	"github.com/configasdata/cad/internal/kpttestfns"
)

// envRunAsMain makes the test binary behave as cadctl itself, so that
// shell scripts of the conformance fixtures can call it (as "kpt").
const envRunAsMain = "CADCTL_TEST_RUN_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunAsMain) == "1" {
		// As cadctl, with kpt's test images (no-op, drop-comments), which
		// kpt's fixtures use and cadctl itself does not have.
		os.Exit(cli.Invocation{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
			Functions: kpttestfns.Functions()}.Run(context.Background()))
	}
	code := m.Run()
	if serverDir != "" {
		_ = os.RemoveAll(serverDir)
	}
	os.Exit(code)
}
