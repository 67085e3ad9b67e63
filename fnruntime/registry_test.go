package fnruntime_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/fixtures"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestResolveImageNames(t *testing.T) {
	r := fnruntime.NewRegistry(nil)
	for _, img := range []string{
		"ghcr.io/kptdev/krm-functions-catalog/set-labels:latest",
		"gcr.io/kpt-fn/set-labels:v0.2",
		"set-labels",
		"ghcr.io/kptdev/krm-functions-catalog/set-labels@sha256:0000",
	} {
		if _, err := r.Resolve(context.Background(), pipeline.Step{Image: img}); err != nil {
			t.Errorf("%s: %v", img, err)
		}
	}
	_, err := r.Resolve(context.Background(), pipeline.Step{Image: "example.com/unknown:v1"})
	var nf *fnruntime.NotFoundError
	if !errors.Is(err, pipeline.ErrFunctionNotFound) || !errors.As(err, &nf) {
		t.Errorf("unknown image: %v", err)
	}
}

func TestAllowDeny(t *testing.T) {
	r := fnruntime.NewRegistry(&fnruntime.Options{Allow: []string{"set-*"}, Deny: []string{"set-annotations"}})
	ctx := context.Background()
	if _, err := r.Resolve(ctx, pipeline.Step{Image: "set-labels:v0.2.0"}); err != nil {
		t.Errorf("allowed: %v", err)
	}
	for _, img := range []string{"set-annotations", "no-op"} {
		if _, err := r.Resolve(ctx, pipeline.Step{Image: img}); !errors.Is(err, pipeline.ErrNotAllowed) {
			t.Errorf("%s: want ErrNotAllowed, got %v", img, err)
		}
	}
}

func TestExecGating(t *testing.T) {
	ctx := context.Background()
	_, err := fnruntime.NewRegistry(nil).Resolve(ctx, pipeline.Step{Exec: "sed -e s/a/b/"})
	// The library's words: it has no --allow-exec flag (that is kpt's CLI).
	if !errors.Is(err, pipeline.ErrNotAllowed) || !errors.Is(err, pipeline.ErrExecNotAllowed) ||
		strings.Contains(err.Error(), "--allow-exec") || !strings.Contains(err.Error(), "AllowExec") || !strings.Contains(err.Error(), "sed -e s/a/b/") {
		t.Errorf("exec without AllowExec: %v", err)
	}
	_, err = fnruntime.NewRegistry(&fnruntime.Options{AllowExec: true, ExecAllow: []string{"/bin/cat"}}).Resolve(ctx, pipeline.Step{Exec: "sed"})
	if !errors.Is(err, pipeline.ErrNotAllowed) {
		t.Errorf("exec outside allow list: %v", err)
	}
}

func TestExecFunction(t *testing.T) {
	sh := fixtures.RequireTool(t, "sh", "the exec function")
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n")}}
	ctx := context.Background()
	sed := &fnruntime.ExecFunction{Path: "sed", Args: []string{"-e", "s/foo/bar/"}}
	if err := sed.Run(ctx, rl); err != nil {
		t.Fatal(err)
	}
	if rl.Items[0].GetName() != "bar" {
		t.Errorf("name %q", rl.Items[0].GetName())
	}
	fail := &fnruntime.ExecFunction{Path: sh, Args: []string{"-c", "cat >/dev/null; echo broken >&2; exit 3"}}
	err := fail.Run(ctx, rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 3 || fe.Stderr != "broken\n" {
		t.Errorf("failure: %#v", err)
	}
	slow := &fnruntime.ExecFunction{Path: sh, Args: []string{"-c", "sleep 10"}, Timeout: 100 * time.Millisecond}
	start := time.Now()
	if err := slow.Run(ctx, rl); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("timeout not enforced: %v after %v", err, time.Since(start))
	}
	big := &fnruntime.ExecFunction{Path: sh, Args: []string{"-c", "cat >/dev/null; yes | head -c 100000"}, MaxOutput: 1000}
	if err := big.Run(ctx, rl); !errors.Is(err, fnruntime.ErrOutputTooLarge) {
		t.Errorf("output cap: %v", err)
	}
}

func TestSetLabelsWithoutConfigFails(t *testing.T) {
	fn := fnruntime.Builtins()["set-labels"]
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n")}}
	err := fn.Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 1 || len(rl.Results) != 1 || rl.Results[0].Message != "`FunctionConfig` is not given" {
		t.Fatalf("err %v results %v", err, rl.Results)
	}
}

func TestContainerEngineMissing(t *testing.T) {
	r := fnruntime.NewRegistry(&fnruntime.Options{Containers: true, ContainerEngine: "no-such-engine-binary"})
	_, err := r.Resolve(context.Background(), pipeline.Step{Image: "example.com/fn:v1"})
	if !errors.Is(err, fnruntime.ErrNoContainerEngine) {
		t.Fatalf("want ErrNoContainerEngine, got %v", err)
	}
}

// TestContainerFunction runs a real image in a real engine; it needs a
// working engine (a daemon that answers) and the image already pulled
// (tests never use the network). Without them it skips, CI included:
// TestContainerFunctionFakeEngine and TestRegistryContainersFakeEngine
// run the same code (ContainerFunction and the registry's container
// fallback) against a fake docker-compatible engine everywhere.
func TestContainerFunction(t *testing.T) {
	const covered = "; the same code path (the engine's command line, stdin and stdout, exit codes, the registry's fallback) " +
		"is tested against a fake engine by TestContainerFunctionFakeEngine and TestRegistryContainersFakeEngine, which run under CI"
	engine, err := fnruntime.FindContainerEngine("")
	if err != nil {
		t.Skip("no container engine: ", err, covered)
	}
	if out, err := exec.Command(engine, "image", "inspect", "ghcr.io/kptdev/krm-functions-catalog/no-op:latest").CombinedOutput(); err != nil {
		t.Skipf("container engine not usable (no daemon) or image not present locally: %v: %s%s", err, strings.TrimSpace(string(out)), covered)
	}
	fn := &fnruntime.ContainerFunction{Engine: engine, Image: "ghcr.io/kptdev/krm-functions-catalog/no-op:latest", Timeout: time.Minute}
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}}
	if err := fn.Run(context.Background(), rl); err != nil {
		t.Fatal(err)
	}
	if len(rl.Items) != 1 {
		t.Fatalf("items: %d", len(rl.Items))
	}
}

// noop is a function that changes nothing.
var noop = pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil })

func TestResolveVersionConstraints(t *testing.T) {
	ctx := context.Background()
	r := fnruntime.NewRegistry(nil)
	if err := r.RegisterVersion("example.com/fns/mine", noop, "v1.3.0"); err != nil {
		t.Fatal(err)
	}
	r.Register("example.com/fns/any", noop)
	const ns = "ghcr.io/kptdev/krm-functions-catalog/set-namespace" // v0.2.0, v0.3.4 and v0.4.1
	for _, tc := range []struct {
		image, tag string
		want       error // nil, pipeline.ErrFunctionNotFound or revision.ErrInvalid
	}{
		{ns, "", nil},
		{ns, "latest", nil},
		{ns, "unstable", nil},
		{ns, "v0.4.1", nil},
		{ns, "v0.4", nil},
		{ns, "~0.4", nil},
		{ns, "^0.4.1", nil},
		{ns, ">=0.3, <1", nil},
		{ns, "v0.3 || v0.4", nil},
		{ns, "0.4.0 - 0.4.3", nil},
		{ns, "0.3.0 - 0.4.0", nil}, // v0.3.4
		{ns, "0.4.2 - 0.4.9", pipeline.ErrFunctionNotFound}, // no implemented release in it
		{ns, "v0.4.0", nil},       // a patch of an implemented line
		{ns, "v0.4.2", nil},       // an implemented line: patches are not gated
		{ns, "v0.4.3", nil},       // released, untagged in git (Porch's blueprints pull it)
		{ns + ":v0.4.3", "", nil}, // the same, as the image's own tag
		{ns, "v0.4.99", nil},      // not known not to exist
		{ns, "v0.3.0", nil},       // v0.3's own implementation
		{ns, "v0.2.0", nil},       // its own implementation
		{ns, "v0.1.4", pipeline.ErrFunctionNotFound},
		{ns, "v0.5.0", pipeline.ErrFunctionNotFound},
		{ns, "~0.1", pipeline.ErrFunctionNotFound},
		{ns, "^0.5", pipeline.ErrFunctionNotFound},
		{ns, ">=1.0, <2", pipeline.ErrFunctionNotFound},
		{ns, "~1.2", pipeline.ErrFunctionNotFound},
		{ns, ">=", revision.ErrInvalid},
		{ns, "v1.2.3.4", revision.ErrInvalid},
		{ns + ":v0.1.5", "", pipeline.ErrFunctionNotFound}, // the image's own tag is checked
		{ns + ":v0.4.1", "", nil},
		{ns + ":v0.4", "", nil},
		{ns + "@sha256:0000", "", nil},
		{ns + ":v0.1.5", "^0.4", nil},                          // Tag overrides the image's tag
		{ns + ":v0.4.1", "v0.1", pipeline.ErrFunctionNotFound}, // Tag overrides the image's tag
		{"example.com/fns/mine:v1", "", nil},
		{"example.com/fns/mine", "~1.3", nil},
		{"example.com/fns/mine", "~1.2", pipeline.ErrFunctionNotFound},
		{"example.com/fns/any", "v9.9.9", nil}, // registered without a version
		{"example.com/fns/any", ">=", revision.ErrInvalid},
		{"no-op", "", pipeline.ErrFunctionNotFound}, // kpt's test image is no builtin
		{"drop-comments", "", pipeline.ErrFunctionNotFound},
	} {
		_, err := r.Resolve(ctx, pipeline.Step{Image: tc.image, Tag: tc.tag})
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s tag %q: %v", tc.image, tc.tag, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s tag %q: got %v, want %v", tc.image, tc.tag, err, tc.want)
		}
	}

	_, err := r.Resolve(ctx, pipeline.Step{Image: ns, Tag: "~1.2"})
	var ve *fnruntime.VersionError
	if !errors.As(err, &ve) || ve.Constraint != "~1.2" || ve.Version != "v0.4.1" || ve.Image != ns ||
		strings.Join(ve.Implemented, ",") != "v0.2.0,v0.3.4,v0.4.1" {
		t.Errorf("VersionError fields: %#v", err)
	}
	for _, want := range []string{ns, "~1.2", "v0.2.x, v0.3.x, v0.4.x"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
	// A user's implementation has no release list: any version of its lines.
	if _, err := r.Resolve(ctx, pipeline.Step{Image: "example.com/fns/mine:v1.3.99"}); err != nil {
		t.Errorf("a registered implementation's line: %v", err)
	}
	if err := r.RegisterVersion("bad", noop, "one"); !errors.Is(err, revision.ErrInvalid) {
		t.Errorf("RegisterVersion with a malformed version: %v", err)
	}
	if err := r.RegisterVersion("bad", noop); !errors.Is(err, revision.ErrInvalid) {
		t.Errorf("RegisterVersion without a release: %v", err)
	}
}

func TestResolveImageTags(t *testing.T) {
	ctx := context.Background()
	for _, ignore := range []bool{false, true} {
		r := fnruntime.NewRegistry(&fnruntime.Options{IgnoreImageTags: ignore})
		for img, want := range map[string]error{
			"gcr.io/kpt-fn/set-namespace:v0.4.1":      nil,
			"gcr.io/kpt-fn/set-namespace:v0.4":        nil,
			"gcr.io/kpt-fn/set-namespace:v0.3.4":      nil, // pinned by kpt's fixtures
			"gcr.io/kpt-fn/set-namespace:latest":      nil,
			"gcr.io/kpt-fn/set-namespace":             nil,
			"gcr.io/kpt-fn/set-namespace@sha256:0000": nil,
			"gcr.io/kpt-fn/set-namespace:v0.2.0":      nil,
			"gcr.io/kpt-fn/set-namespace:v0.1.3":      pipeline.ErrFunctionNotFound,
			"gcr.io/kpt-fn/set-labels:v0.1.5":         pipeline.ErrFunctionNotFound,
			"gcr.io/kpt-fn/set-labels:v0.2.0":         nil,
			"gcr.io/kpt-fn/apply-setters:v0.1":        pipeline.ErrFunctionNotFound,
			"gcr.io/kpt-fn/apply-replacements:v0.1.0": nil,
		} {
			if ignore {
				want = nil
			}
			_, err := r.Resolve(ctx, pipeline.Step{Image: img})
			if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
				t.Errorf("IgnoreImageTags=%v %s: got %v, want %v", ignore, img, err, want)
			}
		}
	}
	_, err := fnruntime.NewRegistry(nil).Resolve(ctx, pipeline.Step{Image: "gcr.io/kpt-fn/set-labels:v0.1.5"})
	const want = `function "gcr.io/kpt-fn/set-labels:v0.1.5": version "v0.1.5" is not implemented in-process (cad implements v0.2.x); pin one of those, or enable container functions`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestBuiltinVersionsAreValid(t *testing.T) {
	builtins := fnruntime.Builtins()
	for name, v := range fnruntime.BuiltinVersions() {
		if _, ok := builtins[name]; !ok {
			t.Errorf("version for unknown builtin %q", name)
		}
		if v.Unreleased {
			continue // no release to register (TestResolveUnreleasedBuiltin)
		}
		if err := fnruntime.NewRegistry(&fnruntime.Options{NoBuiltins: true}).RegisterVersion(name, builtins[name], v.Releases...); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRenderRefusesUnimplementedVersion renders a Kptfile pinning a
// release whose behaviour cad does not implement (set-namespace v0.1): the
// render fails with the typed error, naming the image and the lines cad
// implements, and changes nothing.
func TestRenderRefusesUnimplementedVersion(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n" +
			"    - image: gcr.io/kpt-fn/set-namespace:v0.1.4\n      configMap:\n        namespace: prod\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	out, err := pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil).Render(context.Background(), files)
	var ve *fnruntime.VersionError
	if !errors.As(err, &ve) || !errors.Is(err, pipeline.ErrFunctionNotFound) {
		t.Fatalf("render: %v", err)
	}
	if ve.Image != "gcr.io/kpt-fn/set-namespace:v0.1.4" || strings.Join(ve.Implemented, ",") != "v0.2.0,v0.3.4,v0.4.1" {
		t.Errorf("VersionError: %#v", ve)
	}
	if !strings.Contains(err.Error(), "v0.2.x, v0.3.x, v0.4.x") {
		t.Errorf("error does not name the implemented versions: %v", err)
	}
	if out != nil {
		if d, _ := out.Files.Get("cm.yaml"); strings.Contains(string(d), "prod") {
			t.Errorf("a refused step changed the package: %s", d)
		}
	}
}

// TestContainerEnvAndMounts runs a fake engine that prints its command
// line: the registry's container env and mounts reach docker run as -e
// and --mount, before the image.
func TestContainerEnvAndMounts(t *testing.T) {
	dir := t.TempDir()
	engine := filepath.Join(dir, "fake-engine")
	if err := os.WriteFile(engine, []byte("#!/bin/sh\necho \"$@\" >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := fnruntime.NewRegistry(&fnruntime.Options{Containers: true, ContainerEngine: engine,
		ContainerEnv: []string{"KEY=value", "HOME"}, ContainerMounts: []string{"type=bind,src=/data,dst=/data"}})
	fn, err := r.Resolve(context.Background(), pipeline.Step{Image: "example.com/fn:v1"})
	if err != nil {
		t.Fatal(err)
	}
	err = fn.Run(context.Background(), &pipeline.ResourceList{})
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 3 {
		t.Fatalf("want the engine's exit code 3, got %v", err)
	}
	want := "run --rm -i --network none --user nobody --security-opt=no-new-privileges -e KEY=value -e HOME --mount type=bind,src=/data,dst=/data example.com/fn:v1"
	if strings.TrimSpace(fe.Stderr) != want {
		t.Errorf("engine command line:\n got %s\nwant %s", strings.TrimSpace(fe.Stderr), want)
	}
}

// generate-kpt-pkg-docs was never released with a version (the catalog
// documents it as generate-kpt-pkg-docs:unstable): plain tags resolve to
// the builtin, any version or constraint is refused as never released,
// and a user's own registration takes any tag.
func TestResolveUnreleasedBuiltin(t *testing.T) {
	ctx := context.Background()
	r := fnruntime.NewRegistry(nil)
	const img = "gcr.io/kpt-fn/generate-kpt-pkg-docs"
	for _, ok := range []pipeline.Step{{Image: img + ":unstable"}, {Image: img}, {Image: img + ":latest"}, {Image: "ghcr.io/kptdev/krm-functions-catalog/generate-kpt-pkg-docs:unstable"}} {
		if _, err := r.Resolve(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok.Image, err)
		}
	}
	for _, bad := range []pipeline.Step{{Image: img + ":v0.1.0"}, {Image: img + ":v0.1"}, {Image: img, Tag: "^0.1"}, {Image: img, Tag: ">=0.0.1"}} {
		_, err := r.Resolve(ctx, bad)
		var ve *fnruntime.VersionError
		if !errors.As(err, &ve) || !ve.NotReleased || !errors.Is(err, pipeline.ErrFunctionNotFound) || !strings.Contains(err.Error(), "never released") {
			t.Errorf("%s tag %q: %v", bad.Image, bad.Tag, err)
		}
	}
	if !fnruntime.BuiltinVersions()["generate-kpt-pkg-docs"].Unreleased {
		t.Error("BuiltinVersions does not mark generate-kpt-pkg-docs unreleased")
	}
	r.Register("generate-kpt-pkg-docs", pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil }))
	if _, err := r.Resolve(ctx, pipeline.Step{Image: img + ":v0.1.0"}); err != nil {
		t.Errorf("a registered implementation: %v", err)
	}
}

// TestRealReleasesResolve: a real release is never refused. Porch's test
// blueprints and kpt's fixtures pin set-namespace:v0.4.3,
// set-labels:v0.2.5 and apply-setters:v0.2.2, published by the catalog
// without a git tag; they, and every release cad records in an implemented
// minor line, resolve to the builtin, under both catalog prefixes.
func TestRealReleasesResolve(t *testing.T) {
	ctx := context.Background()
	r := fnruntime.NewRegistry(nil)
	for _, img := range []string{"set-namespace:v0.4.3", "set-labels:v0.2.5", "apply-setters:v0.2.2"} {
		for _, prefix := range []string{"", "gcr.io/kpt-fn/", "ghcr.io/kptdev/krm-functions-catalog/"} {
			if _, err := r.Resolve(ctx, pipeline.Step{Image: prefix + img}); err != nil {
				t.Errorf("%s%s: %v", prefix, img, err)
			}
		}
	}
	for name, cv := range fnruntime.BuiltinVersions() {
		lines := map[string]bool{}
		for _, rel := range cv.Releases {
			lines[rel[:strings.LastIndex(rel, ".")]] = true
		}
		for _, rel := range cv.Released {
			if !lines[rel[:strings.LastIndex(rel, ".")]] {
				continue // a line cad does not implement
			}
			if _, err := r.Resolve(ctx, pipeline.Step{Image: name + ":" + rel}); err != nil {
				t.Errorf("%s:%s, a release of an implemented line: %v", name, rel, err)
			}
		}
	}
	// A function never released with a version is still refused one.
	var ve *fnruntime.VersionError
	if _, err := r.Resolve(ctx, pipeline.Step{Image: "generate-kpt-pkg-docs:v0.1.0"}); !errors.As(err, &ve) || !ve.NotReleased {
		t.Errorf("generate-kpt-pkg-docs:v0.1.0: %v", err)
	}
}
