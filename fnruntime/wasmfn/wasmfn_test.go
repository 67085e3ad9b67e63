package wasmfn_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/wasmfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
`

func newRuntime(t testing.TB, opts *wasmfn.Options) *wasmfn.Runtime {
	t.Helper()
	var o wasmfn.Options
	if opts != nil {
		o = *opts
	}
	o.CacheDir = cacheDir
	r, err := wasmfn.New(context.Background(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// pushKptImage pushes module as kpt alpha wasm push does: a Docker
// manifest list whose js/wasm manifest has one gzipped tar layer holding
// the module file. It returns the image reference.
func pushKptImage(t *testing.T, host, repo string, module []byte) string {
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
	// A linux image beside it, as a multi-platform function would have.
	linux, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: linux, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: types.DockerManifestSchema2, Platform: &v1.Platform{OS: "js", Architecture: "wasm"}}})
	idx = mutate.IndexMediaType(idx, types.DockerManifestList)
	ref, err := name.ParseReference(host + "/" + repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// A package whose pipeline runs the test module twice, once as a local
// .wasm file (exec) and once from an image in kpt's wasm format pulled
// from a registry, renders through a Registry with Options.Wasm: both
// steps annotate the resource.
func TestRenderRunsWasmFileAndImage(t *testing.T) {
	module, err := os.ReadFile(testModule)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	image := pushKptImage(t, strings.TrimPrefix(srv.URL, "http://"), "fns/annotate", module)

	wr := newRuntime(t, nil)
	reg := fnruntime.NewRegistry(&fnruntime.Options{Wasm: wr, AllowExec: true, ExecDir: filepath.Dir(testModule)})
	kptfile := `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
pipeline:
  mutators:
  - exec: ` + filepath.Base(testModule) + `
    configMap:
      key: wasm.cad.dev/file
      value: from-file
  - image: ` + image + `
    configMap:
      key: wasm.cad.dev/image
      value: from-image
`
	files, err := revision.NewFiles(map[string][]byte{"Kptfile": []byte(kptfile), "deploy.yaml": []byte(deployment)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := pipeline.NewKptfile(reg, nil).Render(context.Background(), files)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	got, _ := out.Files.Get("deploy.yaml")
	for _, want := range []string{`wasm.cad.dev/file: "from-file"`, `wasm.cad.dev/image: "from-image"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("deploy.yaml lacks %s:\n%s", want, got)
		}
	}

	// An image without a wasm platform is refused, naming what it has.
	linux, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	plain := strings.TrimPrefix(srv.URL, "http://") + "/fns/plain:v1"
	ref, _ := name.ParseReference(plain)
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: linux, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: plain})
	if err != nil {
		t.Fatal(err)
	}
	err = fn.Run(context.Background(), &pipeline.ResourceList{})
	if !errors.Is(err, wasmfn.ErrNotWasm) || !errors.Is(err, revision.ErrInvalid) || !strings.Contains(err.Error(), "linux/amd64") || !strings.Contains(err.Error(), plain) {
		t.Errorf("image without wasm: %v; want ErrNotWasm naming the image and its platforms", err)
	}
}

// Eval: the module runs over a ResourceList as a function of its own
// (Function.Run), with its functionConfig; a failing module's exit code
// and stderr reach the caller; without Options.Wasm a .wasm exec step is
// refused as not allowed.
func TestEvalFunction(t *testing.T) {
	wr := newRuntime(t, nil)
	rl, err := pipeline.ParseResourceList([]byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- ` + strings.ReplaceAll(strings.TrimSpace(deployment), "\n", "\n  ") + `
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: fc
  data:
    value: evaluated
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.File(testModule).Run(context.Background(), rl); err != nil {
		t.Fatalf("eval: %v", err)
	}
	if got := rl.Items[0].GetAnnotations()["wasm.cad.dev/ran"]; got != "evaluated" {
		t.Errorf("annotation = %q, want evaluated", got)
	}

	// Concurrent runs of one module share its compiled code, each in an
	// instance of its own.
	var g errgroup.Group
	for i := range 4 {
		g.Go(func() error {
			rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse(deployment)},
				FunctionConfig: yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fc\ndata:\n  value: run-" + strconv.Itoa(i) + "\n")}
			if err := wr.Image("").Run(context.Background(), rl); err == nil {
				return errors.New("an empty image reference ran")
			}
			if err := wr.File(testModule).Run(context.Background(), rl); err != nil {
				return err
			}
			if got := rl.Items[0].GetAnnotations()["wasm.cad.dev/ran"]; got != "run-"+strconv.Itoa(i) {
				return fmt.Errorf("run %d: annotation %q", i, got)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Errorf("concurrent runs: %v", err)
	}

	err = wr.File(testModule, "fail").Run(context.Background(), &pipeline.ResourceList{})
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 3 || !strings.Contains(fe.Stderr, "failing on purpose") {
		t.Errorf("failing module: %v; want a *pipeline.FunctionError with exit code 3 and its stderr", err)
	}

	_, err = fnruntime.NewRegistry(&fnruntime.Options{AllowExec: true}).Resolve(context.Background(), pipeline.Step{Exec: testModule})
	if !errors.Is(err, pipeline.ErrNotAllowed) || !strings.Contains(err.Error(), "WebAssembly") {
		t.Errorf("exec of a .wasm without Options.Wasm: %v; want pipeline.ErrNotAllowed", err)
	}
	_, err = fnruntime.NewRegistry(&fnruntime.Options{Wasm: wr}).Resolve(context.Background(), pipeline.Step{Exec: testModule})
	if !errors.Is(err, pipeline.ErrExecNotAllowed) {
		t.Errorf("exec of a .wasm without AllowExec: %v; want pipeline.ErrExecNotAllowed", err)
	}
}

// Modules this runtime cannot run are refused before they run, saying
// why: a file that is not wasm, a module built for a JavaScript host
// (kpt's GOOS=js ABI), one whose initial memory is over the bound.
func TestUnsupportedModules(t *testing.T) {
	wr := newRuntime(t, &wasmfn.Options{MaxMemory: 1 << 20})
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(p string) error {
		_, err := wr.File(p).RunStream(context.Background(), strings.NewReader(""), io.Discard)
		return err
	}
	if err := run(write("text.wasm", []byte("#!/bin/sh\necho hi\n"))); !errors.Is(err, wasmfn.ErrNotWasm) {
		t.Errorf("a shell script: %v; want ErrNotWasm", err)
	}
	// (module (import "gojs" "runtime.wasmExit" (func (param i32))) (memory (export "mem") 1))
	gojs := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 5, 1, 0x60, 1, 0x7f, 0, // type section: (i32) -> ()
		2, 25, 1, 4, 'g', 'o', 'j', 's', 16, 'r', 'u', 'n', 't', 'i', 'm', 'e', '.', 'w', 'a', 's', 'm', 'E', 'x', 'i', 't', 0, 0, // import
		5, 3, 1, 0, 1, // memory section: min 1
		7, 7, 1, 3, 'm', 'e', 'm', 2, 0, // export "mem"
	}
	if err := run(write("js.wasm", gojs)); !errors.Is(err, wasmfn.ErrUnsupportedModule) || !strings.Contains(err.Error(), "GOOS=wasip1") {
		t.Errorf("a GOOS=js module: %v; want ErrUnsupportedModule saying to build for wasip1", err)
	}
	// (module (memory (export "memory") 32) (func (export "_start")))
	big := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type: () -> ()
		3, 2, 1, 0, // func 0 of type 0
		5, 3, 1, 0, 32, // memory min 32 pages (2 MiB)
		7, 19, 2, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0, 6, '_', 's', 't', 'a', 'r', 't', 0, 0,
		10, 4, 1, 2, 0, 0x0b, // code: empty body
	}
	err := run(write("big.wasm", big))
	var le *revision.LimitError
	if !errors.Is(err, wasmfn.ErrMemoryLimit) || !errors.As(err, &le) || le.Limit != "wasmfn.Options.MaxMemory" {
		t.Errorf("a module declaring 2 MiB under a 1 MiB bound: %v; want a *revision.LimitError matching ErrMemoryLimit", err)
	}
}
