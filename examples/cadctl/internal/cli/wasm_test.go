package cli_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

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

// fn eval --mount gives a wasm function (an image in kpt's wasm format,
// pulled from a registry on loopback) the mounted directory at its dst:
// the function reads a file there. Without the mount the module has no
// file system and fails; a file as src is refused, as WASI mounts
// directories only.
func TestFnEvalWasmMount(t *testing.T) {
	dir := t.TempDir()
	module, err := os.ReadFile(buildWasmFunction(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	image := pushWasmImage(t, strings.TrimPrefix(srv.URL, "http://")+"/fns/read-file:v1", module)

	data := filepath.Join(dir, "data")
	writeFile(t, filepath.Join(data, "colour.txt"), "teal\n")
	pkg := filepath.Join(dir, "pkg")
	writeFile(t, filepath.Join(pkg, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n")
	writeFile(t, filepath.Join(pkg, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n")
	env := []string{cli.EnvWasmCache + "=" + filepath.Join(dir, "cache")}
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Invocation{Args: args, Stdout: &stdout, Stderr: &stderr, Dir: dir, Env: env}.Run(context.Background())
		return code, stderr.String()
	}
	eval := []string{"fn", "eval", "pkg", "--allow-alpha-wasm", "--image", image}
	fnArgs := []string{"--", "key=colour", "file=/mnt/config/colour.txt"}

	if code, stderr := run(append(eval, fnArgs...)...); code == 0 {
		t.Errorf("eval without --mount: exit 0, want a failure (no file system); stderr %q", stderr)
	}
	if code, stderr := run(append(append(eval, "--mount", "type=bind,src="+filepath.Join(data, "colour.txt")+",dst=/mnt/config"), fnArgs...)...); code == 0 || !strings.Contains(stderr, "directory") {
		t.Errorf("eval mounting a file: exit %d, stderr %q; want a refusal saying a directory is needed", code, stderr)
	}
	if code, stderr := run(append(append(eval, "--mount", "type=bind,src=data,dst=/mnt/config"), fnArgs...)...); code != 0 {
		t.Fatalf("eval with --mount: exit %d\n%s", code, stderr)
	}
	cm, err := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
	if err != nil || !strings.Contains(string(cm), `colour: "teal"`) {
		t.Errorf("cm.yaml is %s (%v); want the annotation read from the mounted file", cm, err)
	}
}

// pushWasmImage pushes module to ref in kpt's wasm image format: a Docker
// manifest list whose js/wasm manifest has one gzipped tar layer holding
// the module.
func pushWasmImage(t *testing.T, ref string, module []byte) string {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: "fn.wasm", Size: int64(len(module)), Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(module); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tb.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.DockerManifestSchema2)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: types.DockerManifestSchema2, Platform: &v1.Platform{OS: "js", Architecture: "wasm"}}})
	idx = mutate.IndexMediaType(idx, types.DockerManifestList)
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	return r.String()
}
