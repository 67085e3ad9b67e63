package celfn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/pipeline/pipelinetest"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestEvalString(t *testing.T) {
	e, err := celfn.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for expr, want := range map[string]string{
		`resources[0].data.env`: "prod",
		`"ns-" + resources.filter(r, r.kind == "ConfigMap")[0].data.env`: "ns-prod",
		`size(resources)`: "2",
		`2u`:              "2",
		`1.5`:             "1.5",
		`resources.exists(r, r.kind == "Deployment")`: "true",
	} {
		got, err := e.EvalString(ctx, expr, items())
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
	for _, expr := range []string{
		`resources[`,            // does not compile
		`resources`,             // a list, known when checked
		`resources[0].metadata`, // a map, known when run
		`null`,
	} {
		var ce *celfn.CompileError
		if got, err := e.EvalString(ctx, expr, items()); !errors.As(err, &ce) {
			t.Errorf("%s = %q, %v; want a *CompileError", expr, got, err)
		}
	}
	if got, err := e.EvalString(ctx, `resources[5].data.env`, items()); err == nil {
		t.Errorf("out of range index = %q, want an error", got)
	}
}

func manyItems(n int) []*yaml.RNode {
	out := make([]*yaml.RNode, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, yaml.MustParse(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)))
	}
	return out
}

// cubic over 300 resources is 27 million iterations, far over any budget
// used here; unbounded it runs for many seconds.
const cubic = `string(resources.filter(a, resources.exists(b, resources.exists(c, a.metadata.name + b.metadata.name == c.metadata.name))).size())`

// An expression over its budget fails fast with ErrCostLimit.
func TestEvalStringCostLimit(t *testing.T) {
	e, err := celfn.New(celfn.WithCostLimit(100_000))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = e.EvalString(context.Background(), cubic, manyItems(300))
	if !errors.Is(err, celfn.ErrCostLimit) {
		t.Fatalf("want ErrCostLimit, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

// Evaluation stops when ctx is done.
func TestEvalStringCancel(t *testing.T) {
	e, err := celfn.New(celfn.WithCostLimit(1 << 62))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = e.EvalString(ctx, cubic, manyItems(300))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want context.DeadlineExceeded, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

// The namespace set-namespace gets is computed from a ConfigMap in the
// package, overriding the step's static one (cases under
// testdata/configmapexprs).
func TestConfigMapExprsGolden(t *testing.T) {
	e, err := celfn.New()
	if err != nil {
		t.Fatal(err)
	}
	steps := pipeline.Steps{Mutators: []pipeline.Step{{
		Name:           "set-namespace",
		Image:          "set-namespace:v0.4.1",
		ConfigMap:      map[string]string{"namespace": "static"},
		ConfigMapExprs: map[string]string{"namespace": `resources.filter(r, r.kind == "ConfigMap" && r.metadata.name == "env")[0].data.namespace`},
	}}}
	r := pipeline.New(fnruntime.NewRegistry(nil), steps, &pipeline.Options{Conditions: e, Inputs: e, NoRenderStatus: true})
	pipelinetest.Run(t, "testdata/configmapexprs", r)
}

// A computed input over its budget fails the render with an
// *pipeline.ExprError matching ErrCostLimit, leaving the files as they were.
func TestConfigMapExprsCostLimitFailsRender(t *testing.T) {
	e, err := celfn.New(celfn.WithCostLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i < 50; i++ {
		m[fmt.Sprintf("cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)
	}
	files := revision.MustFiles(m)
	steps := pipeline.Steps{Mutators: []pipeline.Step{{Name: "set-namespace", Image: "set-namespace:v0.4.1", ConfigMapExprs: map[string]string{"namespace": cubic}}}}
	out, err := pipeline.New(fnruntime.NewRegistry(nil), steps, &pipeline.Options{Inputs: e}).Render(context.Background(), files)
	var ee *pipeline.ExprError
	if out != nil || !errors.As(err, &ee) || !errors.Is(err, celfn.ErrCostLimit) || ee.Key != "namespace" || ee.Step != "set-namespace" {
		t.Fatalf("got %v, %v; want an *ExprError matching ErrCostLimit", out, err)
	}
	var re *pipeline.RenderError
	if !errors.As(err, &re) {
		t.Fatal(err)
	}
	for _, p := range files.Paths() {
		want, _ := files.Get(p)
		if got, _ := re.Output.Files.Get(p); string(got) != string(want) {
			t.Errorf("%s changed:\n%s", p, got)
		}
	}
}

func ExampleEvaluator_EvalString() {
	e, err := celfn.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, expr := range []string{
		`resources.filter(r, r.kind == "ConfigMap")[0].data.env`,
		`size(resources)`,
		`resources[0].metadata`,
	} {
		fmt.Println(e.EvalString(context.Background(), expr, items()))
	}
	// Output:
	// prod <nil>
	// 2 <nil>
	//  CEL expression "resources[0].metadata": yields map, want string, number or bool
}

// A step's ConfigMapExprs compute function inputs from the package: here
// set-namespace's namespace comes from the ConfigMap env.
func ExampleEvaluator_configMapExprs() {
	files := revision.MustFiles(map[string]string{
		"env.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: env
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  namespace: prod
`,
		"app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
`,
	})
	e, err := celfn.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	steps := pipeline.Steps{Mutators: []pipeline.Step{{
		Image: "set-namespace:v0.4.1",
		ConfigMapExprs: map[string]string{
			"namespace": `resources.filter(r, r.metadata.name == "env")[0].data.namespace`,
		},
	}}}
	r := pipeline.New(fnruntime.NewRegistry(nil), steps, &pipeline.Options{Conditions: e, Inputs: e})
	out, err := r.Render(context.Background(), files)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := out.Files.Get("app.yaml")
	fmt.Print(string(data))
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   name: web
	//   namespace: prod
}

// kpt's when: a step whose condition is false over the resources it
// selects is skipped, and the root Kptfile's render status records it as
// kpt does (when, skipped: true, exit code 0); one whose condition holds
// runs and records its when (cases under testdata/when).
func TestWhenGolden(t *testing.T) {
	e, err := celfn.New()
	if err != nil {
		t.Fatal(err)
	}
	r := pipeline.NewKptfile(fnruntime.NewRegistry(nil), &pipeline.Options{Conditions: e, KptStyleKptfile: true, RequireKptfile: true})
	pipelinetest.Run(t, "testdata/when", r)
}
