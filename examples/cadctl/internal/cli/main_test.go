package cli_test

import (
	"os"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

// envRunAsMain makes the test binary behave as cadctl itself, so that
// shell scripts of the conformance fixtures can call it (as "kpt").
const envRunAsMain = "CADCTL_TEST_RUN_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunAsMain) == "1" {
		os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if serverDir != "" {
		_ = os.RemoveAll(serverDir)
	}
	os.Exit(code)
}
