package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// fakeInputs evaluates an expression by looking it up; unknown
// expressions fail. It records how many resources each call saw.
type fakeInputs struct {
	values map[string]string
	seen   []int
}

func (f *fakeInputs) EvalString(_ context.Context, expr string, items []*yaml.RNode) (string, error) {
	f.seen = append(f.seen, len(items))
	if v, ok := f.values[expr]; ok {
		return v, nil
	}
	return "", fmt.Errorf("cannot evaluate %q", expr)
}

var _ pipeline.InputEvaluator = (*fakeInputs)(nil)

var exprFiles = revision.MustFiles(map[string]string{
	"cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
	"dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
})

// captureConfig returns a resolver whose function records the data of its
// functionConfig, and whether it ran.
func captureConfig(data *map[string]string, ran *bool) pipeline.Resolver {
	fn := pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
		*ran = true
		*data = rl.FunctionConfig.GetDataMap()
		return nil
	})
	return pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil })
}

// Computed values overlay the static ConfigMap and win on a clash.
func TestConfigMapExprsOverlay(t *testing.T) {
	var got map[string]string
	var ran bool
	in := &fakeInputs{values: map[string]string{"expr-b": "computed-b", "expr-c": "computed-c"}}
	steps := pipeline.Steps{Mutators: []pipeline.Step{{
		Name:           "fn",
		ConfigMap:      map[string]string{"a": "static-a", "b": "static-b"},
		ConfigMapExprs: map[string]string{"b": "expr-b", "c": "expr-c"},
	}}}
	if _, err := pipeline.New(captureConfig(&got, &ran), steps, &pipeline.Options{Inputs: in}).Render(context.Background(), exprFiles); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "static-a", "b": "computed-b", "c": "computed-c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("function-input data %v, want %v", got, want)
	}
	if fmt.Sprint(in.seen) != "[2 2]" {
		t.Errorf("evaluator saw %v resources per call, want [2 2]", in.seen)
	}
}

// A step with ConfigMapExprs and no evaluator, or whose expression fails,
// fails the render with an *ExprError naming the step and key; the
// function does not run and nothing is changed.
func TestConfigMapExprsErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inputs pipeline.InputEvaluator
		is     error
	}{
		{"no evaluator", nil, pipeline.ErrNoEvaluator},
		{"failing expression", &fakeInputs{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]string
			var ran bool
			steps := pipeline.Steps{Mutators: []pipeline.Step{{
				Name:           "set-ns",
				ConfigMap:      map[string]string{"other": "x"},
				ConfigMapExprs: map[string]string{"namespace": "bad"},
			}}}
			out, err := pipeline.New(captureConfig(&got, &ran), steps, &pipeline.Options{Inputs: tc.inputs}).Render(context.Background(), exprFiles)
			var ee *pipeline.ExprError
			if out != nil || !errors.As(err, &ee) {
				t.Fatalf("got %v, %v; want an *ExprError", out, err)
			}
			if ee.Step != "set-ns" || ee.Key != "namespace" || ee.Expr != "bad" {
				t.Errorf("ExprError %+v", ee)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v does not match %v", err, tc.is)
			}
			if ran {
				t.Error("the function ran")
			}
			var re *pipeline.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("%T is not a *RenderError", err)
			}
			if steps := re.Steps(); len(steps) != 1 || steps[0].Executed || steps[0].ExecutionError == "" {
				t.Errorf("steps %+v", steps)
			}
			for _, p := range exprFiles.Paths() {
				want, _ := exprFiles.Get(p)
				if got, _ := re.Output.Files.Get(p); string(got) != string(want) {
					t.Errorf("%s changed:\n%s", p, got)
				}
			}
		})
	}
}

// ConfigMapExprs build a ConfigMap; with configPath or config it is an
// invalid step.
func TestConfigMapExprsWithOtherConfig(t *testing.T) {
	var got map[string]string
	var ran bool
	in := &fakeInputs{values: map[string]string{"e": "v"}}
	steps := pipeline.Steps{Mutators: []pipeline.Step{{Name: "fn", Config: map[string]any{"kind": "X"}, ConfigMapExprs: map[string]string{"k": "e"}}}}
	_, err := pipeline.New(captureConfig(&got, &ran), steps, &pipeline.Options{Inputs: in}).Render(context.Background(), exprFiles)
	if !errors.Is(err, pipeline.ErrInvalidPackage) || ran {
		t.Errorf("got %v (ran %v), want ErrInvalidPackage", err, ran)
	}
}

// Steps are data: ConfigMapExprs round-trips through YAML.
func TestConfigMapExprsYAML(t *testing.T) {
	st := pipeline.Step{Name: "fn", ConfigMapExprs: map[string]string{"namespace": `resources[0].metadata.name`}}
	data, err := yaml.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back pipeline.Step
	if err := yaml.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.ConfigMapExprs["namespace"] != st.ConfigMapExprs["namespace"] {
		t.Errorf("round trip of\n%s\ngave %+v", data, back)
	}
}
