package celfn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func items() []*yaml.RNode {
	return []*yaml.RNode{
		yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  env: prod\n"),
		yaml.MustParse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"),
	}
}

func TestEval(t *testing.T) {
	e, err := celfn.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for expr, want := range map[string]bool{
		`resources.exists(r, r.kind == "Deployment")`:                           true,
		`resources.exists(r, r.kind == "ConfigMap" && r.data.env == "staging")`: false,
		`size(resources) == 2`:                    true,
		`resources.all(r, r.metadata.name != "")`: true,
	} {
		got, err := e.Eval(ctx, expr, items())
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
	var ce *celfn.CompileError
	if _, err := e.Eval(ctx, `resources.size(`, items()); !errors.As(err, &ce) {
		t.Errorf("syntax error: %v", err)
	}
	if _, err := e.Eval(ctx, `"x"`, items()); !errors.As(err, &ce) {
		t.Errorf("non-bool: %v", err)
	}
}

func TestCostLimit(t *testing.T) {
	e, err := celfn.New(celfn.WithCostLimit(100))
	if err != nil {
		t.Fatal(err)
	}
	many := make([]*yaml.RNode, 0, 200)
	for i := 0; i < 200; i++ {
		many = append(many, yaml.MustParse(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)))
	}
	_, err = e.Eval(context.Background(), `resources.all(r, resources.all(s, r.metadata.name != s.metadata.name || r == s))`, many)
	if !errors.Is(err, celfn.ErrCostLimit) {
		t.Fatalf("want ErrCostLimit, got %v", err)
	}
}

// A step whose condition is false is skipped and reported so.
func TestConditionSkipsStep(t *testing.T) {
	e, _ := celfn.New()
	ran := false
	fn := pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { ran = true; return nil })
	resolver := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil })
	steps := pipeline.Steps{Mutators: []pipeline.Step{{Name: "only-with-deployments", Condition: `resources.exists(r, r.kind == "Deployment")`}}}
	files := revision.MustFiles(map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"})
	out, err := pipeline.New(resolver, steps, &pipeline.Options{Conditions: e}).Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if ran || len(out.Steps) != 1 || !out.Steps[0].Skipped {
		t.Errorf("ran=%v steps=%+v", ran, out.Steps)
	}
}

func ExampleEvaluator() {
	e, err := celfn.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	ok, err := e.Eval(context.Background(), `resources.exists(r, r.kind == "Deployment" && r.metadata.name.startsWith("web"))`, items())
	fmt.Println(ok, err)
	// Output:
	// true <nil>
}

func TestValidator(t *testing.T) {
	e, _ := celfn.New()
	v := &celfn.Validator{Evaluator: e, Rules: []celfn.Rule{
		{Expression: `object.kind != "Deployment" || has(object.spec)`, Message: "deployments need a spec"},
		{Expression: `object.metadata.name.size() < 10`},
	}}
	rl := &pipeline.ResourceList{Items: items()}
	err := v.Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || len(rl.Results) != 1 || rl.Results[0].Message != "deployments need a spec" || rl.Results[0].ResourceRef.Name != "web" {
		t.Fatalf("err %v results %v", err, rl.Results)
	}
	rl = &pipeline.ResourceList{Items: items()[:1]}
	if err := v.Run(context.Background(), rl); err != nil || len(rl.Results) != 0 {
		t.Fatalf("valid input: %v %v", err, rl.Results)
	}
}
