package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestResourceListRoundTrip(t *testing.T) {
	in := `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a # keep me
    annotations:
      config.kubernetes.io/index: '0'
      config.kubernetes.io/path: 'a.yaml'
      internal.config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/path: 'a.yaml'
      internal.config.kubernetes.io/seqindent: 'compact'
      internal.config.kubernetes.io/package-path: '/pkg'
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: function-input
results:
- message: hello
  severity: warning
  resourceRef:
    apiVersion: v1
    kind: ConfigMap
    name: a
  field:
    path: data.x
  file:
    path: a.yaml
    index: 1
`
	rl, err := pipeline.ParseResourceList([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.Results) != 1 || rl.Results[0].File.Index != 1 || rl.Results[0].Severity != pipeline.SeverityWarning {
		t.Fatalf("results: %+v", rl.Results)
	}
	out, err := rl.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("round trip differs:\n%s", out)
	}
	again, err := pipeline.ParseResourceList(out)
	if err != nil {
		t.Fatal(err)
	}
	a := again.Items[0].GetAnnotations()
	for _, k := range []string{pipeline.PathAnnotation, pipeline.LegacyPathAnnotation, pipeline.IndexAnnotation, pipeline.PackagePathAnnotation, pipeline.SeqIndentAnnotation} {
		if a[k] == "" {
			t.Errorf("annotation %s lost", k)
		}
	}
}

func TestParseResultsLegacy(t *testing.T) {
	n := yaml.MustParse(`items:
- message: old
  resourceRef:
    apiVersion: v1
    kind: Pod
    metadata:
      name: p
      namespace: ns
  field:
    path: spec
    suggestedValue: x
`)
	rs, err := pipeline.ParseResults(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].ResourceRef.Name != "p" || rs[0].ResourceRef.Namespace != "ns" || rs[0].Field.ProposedValue != "x" {
		t.Fatalf("got %+v %+v %+v", rs[0], rs[0].ResourceRef, rs[0].Field)
	}
}

// fns is a tiny resolver over named Go functions.
type fns map[string]pipeline.Function

func (f fns) Resolve(_ context.Context, st pipeline.Step) (pipeline.Function, error) {
	if fn, ok := f[st.Name]; ok {
		return fn, nil
	}
	return nil, pipeline.ErrFunctionNotFound
}

func setData(key, val string) pipeline.Function {
	return pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
		for _, it := range rl.Items {
			if it.GetKind() == "ConfigMap" {
				if err := it.PipeE(yaml.SetField("data", yaml.NewMapRNode(&map[string]string{key: val}))); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

var failing = pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
	rl.Results = append(rl.Results, &pipeline.Result{Message: "bad thing", Severity: pipeline.SeverityError})
	return errors.New("boom")
})

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"

func kptPkg(extraKptfile string) revision.Files {
	return revision.MustFiles(map[string]string{
		"Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n" + extraKptfile,
		"a.yaml":    strings.ReplaceAll(cm, "%s", "a"),
		"notes.txt": "keep",
	})
}

func TestRenderFailureCarriesResultsAndKeepsNothing(t *testing.T) {
	files := kptPkg("pipeline:\n  mutators:\n    - name: set\n      image: x\n    - name: fail\n      image: y\n")
	r := pipeline.NewKptfile(fns{"set": setData("k", "v"), "fail": failing}, nil)
	out, err := r.Render(context.Background(), files)
	if err == nil || out != nil {
		t.Fatalf("want failure, got %v", err)
	}
	var re *pipeline.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("not a RenderError: %v", err)
	}
	steps := re.Steps()
	if len(steps) != 2 || steps[1].ExitCode != 1 || len(steps[1].Results) != 1 || steps[1].Results[0].Message != "bad thing" {
		t.Fatalf("steps: %+v", steps)
	}
	a, _ := re.Output.Files.Get("a.yaml")
	if strings.Contains(string(a), "k: v") {
		t.Errorf("resources changed on failure:\n%s", a)
	}
	kf, _ := re.Output.Files.Get("Kptfile")
	if !strings.Contains(string(kf), "reason: RenderFailed") {
		t.Errorf("no failure status in Kptfile:\n%s", kf)
	}
}

func TestRenderSaveOnFailure(t *testing.T) {
	files := kptPkg("  annotations:\n    kpt.dev/save-on-render-failure: \"true\"\npipeline:\n  mutators:\n    - name: set\n      image: x\n    - name: fail\n      image: y\n")
	r := pipeline.NewKptfile(fns{"set": setData("k", "v"), "fail": failing}, nil)
	_, err := r.Render(context.Background(), files)
	var re *pipeline.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("want RenderError, got %v", err)
	}
	a, _ := re.Output.Files.Get("a.yaml")
	if !strings.Contains(string(a), "k: v") {
		t.Errorf("partial render not saved:\n%s", a)
	}
}

func TestValidatorCannotMutate(t *testing.T) {
	files := kptPkg("pipeline:\n  validators:\n    - name: set\n      image: x\n")
	out, err := pipeline.NewKptfile(fns{"set": setData("k", "v")}, nil).Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := out.Files.Get("a.yaml")
	if strings.Contains(string(a), "k: v") {
		t.Errorf("validator mutated:\n%s", a)
	}
	if n, _ := out.Files.Get("notes.txt"); string(n) != "keep" {
		t.Errorf("non-KRM file changed: %q", n)
	}
}

func TestPanicIsAnError(t *testing.T) {
	boom := pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { panic("oops") })
	_, err := pipeline.New(fns{"p": boom}, pipeline.Steps{Mutators: []pipeline.Step{{Name: "p"}}}, nil).
		Render(context.Background(), revision.MustFiles(map[string]string{"a.yaml": strings.ReplaceAll(cm, "%s", "a")}))
	if !errors.Is(err, pipeline.ErrPanic) {
		t.Fatalf("want ErrPanic, got %v", err)
	}
}

func TestSelectorsAndExclude(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		"a.yaml": strings.ReplaceAll(cm, "%s", "a"),
		"b.yaml": strings.ReplaceAll(cm, "%s", "b"),
		"c.yaml": strings.ReplaceAll(cm, "%s", "c"),
	})
	var seen []string
	spy := pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
		for _, it := range rl.Items {
			seen = append(seen, it.GetName())
		}
		return setData("k", "v").Run(context.Background(), rl)
	})
	steps := pipeline.Steps{Mutators: []pipeline.Step{{
		Name:      "spy",
		Selectors: []pipeline.Selector{{Kind: "ConfigMap"}},
		Exclude:   []pipeline.Selector{{Name: "b"}},
	}}}
	out, err := pipeline.New(fns{"spy": spy}, steps, nil).Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "a,c" {
		t.Errorf("selected %v", seen)
	}
	for name, want := range map[string]bool{"a.yaml": true, "b.yaml": false, "c.yaml": true} {
		d, _ := out.Files.Get(name)
		if got := strings.Contains(string(d), "k: v"); got != want {
			t.Errorf("%s mutated=%v, want %v:\n%s", name, got, want, d)
		}
	}
}

func TestMissingKptfile(t *testing.T) {
	_, err := pipeline.NewKptfile(fns{}, &pipeline.Options{RequireKptfile: true}).Render(context.Background(), revision.MustFiles(map[string]string{"a.yaml": "x: 1\n"}))
	if !errors.Is(err, pipeline.ErrInvalidPackage) {
		t.Fatalf("want ErrInvalidPackage, got %v", err)
	}
	// By default a package with no Kptfile and no package file is left
	// as it is, even with files kpt would not read.
	bare := revision.MustFiles(map[string]string{"a.yaml": "x: 1\n"})
	out, err := pipeline.NewKptfile(fns{}, nil).Render(context.Background(), bare)
	if err != nil || !out.Files.Equal(bare) {
		t.Fatalf("bare package: %v", err)
	}
}

func TestPackageFilePipeline(t *testing.T) {
	pf := "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: p\nspec:\n  pipeline:\n    mutators:\n    - name: set\n      image: set\n      selectors:\n      - name: a\n"
	files := revision.MustFiles(map[string]string{
		revision.PackageFileName: pf,
		"a.yaml":                 strings.ReplaceAll(cm, "%s", "a"),
		"b.yaml":                 strings.ReplaceAll(cm, "%s", "b"),
	})
	out, err := pipeline.NewKptfile(fns{"set": setData("k", "v")}, nil).Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := out.Files.Get("a.yaml"); !strings.Contains(string(a), "k: v") {
		t.Fatalf("a.yaml not mutated:\n%s", a)
	}
	if b, _ := out.Files.Get("b.yaml"); strings.Contains(string(b), "k: v") {
		t.Fatalf("b.yaml mutated despite the selector:\n%s", b)
	}
	if got, _ := out.Files.Get(revision.PackageFileName); string(got) != pf {
		t.Fatalf("package file changed:\n%s", got)
	}
	// A bad pipeline is a package error.
	bad, _ := files.With(revision.PackageFileName, []byte(strings.Replace(pf, "image: set", "image: set\n      exec: x", 1)))
	if _, err := pipeline.NewKptfile(fns{}, nil).Render(context.Background(), bad); !errors.Is(err, pipeline.ErrInvalidPackage) {
		t.Fatalf("step with image and exec: %v", err)
	}
	if _, err := pipeline.StepsFromPackageFile([]byte("apiVersion: v1\nkind: ConfigMap\n")); !errors.Is(err, pipeline.ErrInvalidPackage) {
		t.Fatalf("not a package file: %v", err)
	}
}

func TestKptStyleKptfile(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # the package\npipeline:\n  mutators:\n  - name: set\n    image: x\n",
		"a.yaml":  strings.ReplaceAll(cm, "%s", "a"),
	})
	for _, keep := range []bool{false, true} {
		out, err := pipeline.NewKptfile(fns{"set": setData("k", "v")}, &pipeline.Options{KptStyleKptfile: !keep}).Render(context.Background(), files)
		if err != nil {
			t.Fatal(err)
		}
		kf, _ := out.Files.Get("Kptfile")
		if got := strings.Contains(string(kf), "# the package"); got != keep {
			t.Errorf("keep=%v: comment kept=%v:\n%s", keep, got, kf)
		}
		if !strings.Contains(string(kf), "reason: RenderSuccess") {
			t.Errorf("keep=%v: no status:\n%s", keep, kf)
		}
	}
}

// With kpt.dev/bfs-rendering the parent runs before its subpackages and
// sees their resources; by default (DFS) subpackages run first.
func TestRenderOrder(t *testing.T) {
	for _, bfs := range []bool{false, true} {
		var order []string
		spy := func(name string) pipeline.Function {
			return pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
				order = append(order, fmt.Sprintf("%s:%d", name, len(rl.Items)))
				return nil
			})
		}
		ann := ""
		if bfs {
			ann = "  annotations:\n    kpt.dev/bfs-rendering: \"true\"\n"
		}
		files := revision.MustFiles(map[string]string{
			"Kptfile":     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: root\n" + ann + "pipeline:\n  mutators:\n    - name: root\n      image: x\n",
			"a.yaml":      strings.ReplaceAll(cm, "%s", "a"),
			"sub/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\npipeline:\n  mutators:\n    - name: sub\n      image: x\n",
			"sub/b.yaml":  strings.ReplaceAll(cm, "%s", "b"),
		})
		out, err := pipeline.NewKptfile(fns{"root": spy("root"), "sub": spy("sub")}, nil).Render(context.Background(), files)
		if err != nil {
			t.Fatal(err)
		}
		want := "sub:2,root:4"
		if bfs {
			want = "root:4,sub:2"
		}
		if got := strings.Join(order, ","); got != want {
			t.Errorf("bfs=%v: order %s, want %s", bfs, got, want)
		}
		if b, _ := out.Files.Get("sub/b.yaml"); !strings.Contains(string(b), "name: b") {
			t.Errorf("bfs=%v: sub/b.yaml lost: %q", bfs, b)
		}
	}
}

// TestKptfileDecodeErrorIsTheLibrarys: a Kptfile with an unknown field
// fails with the decoder's message naming cad's own Go type; kpt's
// wording (v1.Function) is a CLI's to choose.
func TestKptfileDecodeErrorIsTheLibrarys(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - image: set-labels\n    targetResources: []\n",
	})
	_, err := pipeline.NewKptfile(pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
		t.Fatal("nothing may be resolved")
		return nil, nil
	}), nil).Render(context.Background(), files)
	if err == nil || !errors.Is(err, pipeline.ErrInvalidPackage) {
		t.Fatalf("want an invalid-package error, got %v", err)
	}
	if !strings.Contains(err.Error(), "field targetResources not found in type revision.Function") || strings.Contains(err.Error(), "v1.Function") {
		t.Errorf("error does not give the decoder's own words: %v", err)
	}
}

// TestResultListRecordsSkippedSteps: kpt's results file has an entry for
// a step whose condition was false (exit code 0, skipped: true), and none
// for a step that neither ran nor was skipped.
func TestResultListRecordsSkippedSteps(t *testing.T) {
	out, err := pipeline.EncodeResultList([]pipeline.StepResult{
		{Image: "ghcr.io/kptdev/krm-functions-catalog/no-op:latest", Skipped: true, When: "false"},
		{Image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:latest", Executed: true},
		{Image: "ghcr.io/kptdev/krm-functions-catalog/never-ran:latest"},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: kpt.dev/v1
kind: FunctionResultList
metadata:
  name: fnresults
exitCode: 0
items:
  - image: ghcr.io/kptdev/krm-functions-catalog/no-op:latest
    exitCode: 0
    skipped: true
  - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:latest
    exitCode: 0
`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// TestRenderAttributesConfigConnectorResources: as kpt's render does,
// every resource whose apiVersion has ".cnrm." records "krm-fn" in
// cnrm.cloud.google.com/blueprint, merged with what it said; other
// resources are untouched; Options.NoAttribution turns it off.
func TestRenderAttributesConfigConnectorResources(t *testing.T) {
	res := `apiVersion: storage.cnrm.cloud.google.com/v1beta1
kind: StorageBucket
metadata:
  name: plain
---
apiVersion: storage.cnrm.cloud.google.com/v1beta1
kind: StorageBucket
metadata:
  name: other-tool
  annotations:
    cnrm.cloud.google.com/blueprint: cft
---
apiVersion: storage.cnrm.cloud.google.com/v1beta1
kind: StorageBucket
metadata:
  name: fetched
  annotations:
    cnrm.cloud.google.com/blueprint: cft,krm-pkg
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-cnrm
`
	files := revision.MustFiles(map[string]string{
		"Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n",
		"resources.yaml": res,
	})
	nothing := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
		return nil, pipeline.ErrFunctionNotFound
	})
	for _, off := range []bool{false, true} {
		out, err := pipeline.NewKptfile(nothing, &pipeline.Options{NoAttribution: off, NoRenderStatus: true}).Render(context.Background(), files)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := out.Files.Get("resources.yaml")
		want := res
		if !off {
			want = strings.Replace(want, "  name: plain\n", "  name: plain\n  annotations:\n    cnrm.cloud.google.com/blueprint: 'krm-fn'\n", 1)
			want = strings.Replace(want, "blueprint: cft\n", "blueprint: cft,krm-fn\n", 1)
			want = strings.Replace(want, "blueprint: cft,krm-pkg\n", "blueprint: cft,krm-pkg-fn\n", 1)
		}
		if string(got) != want {
			t.Errorf("NoAttribution=%v: got\n%s\nwant\n%s", off, got, want)
		}
	}
}
