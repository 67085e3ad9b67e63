package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
)

// buildWasmFunction builds the wasmfn tests' function
// (fnruntime/wasmfn/testdata/fn of the library) with GOOS=wasip1
// GOARCH=wasm into dir.
func buildWasmFunction(t *testing.T, dir string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "fnruntime", "wasmfn"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "fn.wasm")
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", out, "./testdata/fn")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the wasm function: %v\n%s", err, b)
	}
	return out
}

// fn render and fn eval run a wasm function (a test-built WASI module)
// in-process with --allow-alpha-wasm, as kpt does: render for an exec
// step naming a .wasm file (with --allow-exec), eval for --exec. Without
// the flag, render refuses the .wasm step.
func TestFnWasm(t *testing.T) {
	dir := t.TempDir()
	module := buildWasmFunction(t, dir)
	env := []string{cli.EnvWasmCache + "=" + filepath.Join(dir, "cache")}
	pkg := filepath.Join(dir, "pkg")
	writeFile(t, filepath.Join(pkg, "Kptfile"), `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
pipeline:
  mutators:
  - exec: `+module+`
    configMap:
      key: rendered-by
      value: wasm
`)
	writeFile(t, filepath.Join(pkg, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n")
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Invocation{Args: args, Stdout: &stdout, Stderr: &stderr, Dir: dir, Env: env}.Run(context.Background())
		return code, stderr.String()
	}

	if code, stderr := run("fn", "render", "pkg", "--allow-exec"); code == 0 || !strings.Contains(stderr, "WebAssembly") {
		t.Errorf("render of a .wasm step without --allow-alpha-wasm: exit %d, stderr %q; want a refusal naming WebAssembly", code, stderr)
	}
	if code, stderr := run("fn", "render", "pkg", "--allow-exec", "--allow-alpha-wasm"); code != 0 {
		t.Fatalf("render: exit %d\n%s", code, stderr)
	}
	cm, err := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
	if err != nil || !strings.Contains(string(cm), `rendered-by: "wasm"`) {
		t.Errorf("render: cm.yaml is %s (%v); want the wasm function's annotation", cm, err)
	}

	if code, stderr := run("fn", "eval", "pkg", "--allow-alpha-wasm", "--exec", module, "--", "key=evaluated-by", "value=wasm"); code != 0 {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
	cm, _ = os.ReadFile(filepath.Join(pkg, "cm.yaml"))
	if !strings.Contains(string(cm), `evaluated-by: "wasm"`) {
		t.Errorf("eval: cm.yaml is %s; want the wasm function's annotation", cm)
	}

	// A hostile module in eval ends with the bound's error.
	code, stderr := run("fn", "eval", "pkg", "--allow-alpha-wasm", "--exec", module+" flood")
	if code == 0 || !strings.Contains(stderr, "exceeded its cap") {
		t.Errorf("eval of a module flooding stdout: exit %d, stderr %q; want the output cap's error", code, stderr)
	}
}
