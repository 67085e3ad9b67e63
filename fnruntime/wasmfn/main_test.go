package wasmfn_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime/wasmfn"
)

// moduleDirEnv names, for the child processes peakmem.Measure starts, the
// directory where the parent built the test module and keeps wazero's
// compiled code.
const moduleDirEnv = "CAD_WASMFN_TEST_MODULE_DIR"

// testModule is testdata/fn built with GOOS=wasip1 GOARCH=wasm, and
// cacheDir the compilation cache that holds its compiled code.
var testModule, cacheDir string

// TestMain builds testdata/fn for WASI once per test binary (the children
// of peakmem reuse the parent's build) and compiles it into an on-disk
// compilation cache, so that each test's Runtime loads compiled code
// instead of compiling again (slow under the race detector).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir := os.Getenv(moduleDirEnv)
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "wasmfn-test-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv(moduleDirEnv, dir)
	}
	testModule, cacheDir = filepath.Join(dir, "fn.wasm"), filepath.Join(dir, "cache")
	return m.Run()
}

func build(dir string) error {
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", filepath.Join(dir, "fn.wasm"), "./testdata/fn")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the test module with GOOS=wasip1: %v\n%s", err, out)
	}
	// Compile it once into the cache the tests share.
	ctx := context.Background()
	r, err := wasmfn.New(ctx, &wasmfn.Options{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	if _, err := r.File(filepath.Join(dir, "fn.wasm"), "fail").RunStream(ctx, strings.NewReader(""), io.Discard); err == nil {
		return fmt.Errorf("the test module's fail mode succeeded")
	}
	return nil
}
