package pipeline_test

import (
	"context"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// renderWith renders files with fn as the only mutator of the root.
func renderWith(t *testing.T, files map[string]string, fn pipeline.FunctionFunc) *pipeline.Output {
	t.Helper()
	resolver := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil })
	p := pipeline.New(resolver, pipeline.Steps{Mutators: []pipeline.Step{{Name: "fn"}}}, &pipeline.Options{NoRenderStatus: true})
	out, err := p.Render(context.Background(), revision.MustFiles(files))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return out
}

func fileOf(t *testing.T, out *pipeline.Output, name string) string {
	t.Helper()
	d, ok := out.Files.Get(name)
	if !ok {
		t.Fatalf("%s: no such file (files %v)", name, out.Files.Paths())
	}
	return string(d)
}

// A function may emit a kustomization.yaml without apiVersion and kind,
// as kpt accepts it (kpt's KRM check exempts Kustomization files, on a
// function's output as on its input).
func TestFunctionOutputsKustomizationWithoutAPIVersion(t *testing.T) {
	out := renderWith(t, map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	}, func(_ context.Context, rl *pipeline.ResourceList) error {
		k := yaml.MustParse("resources:\n- cm.yaml\nnamePrefix: prod-\n")
		if err := k.PipeE(yaml.SetAnnotation("config.kubernetes.io/path", "kustomization.yaml")); err != nil {
			return err
		}
		rl.Items = append(rl.Items, k)
		return nil
	})
	if got, want := fileOf(t, out, "kustomization.yaml"), "resources:\n- cm.yaml\nnamePrefix: prod-\n"; got != want {
		t.Errorf("kustomization.yaml:\n%s\nwant:\n%s", got, want)
	}
}

// A function that sets only the legacy config.kubernetes.io/path (and
// index) annotation moves the resource to that file, as kpt mirrors the
// legacy annotations to the internal ones.
func TestFunctionMovesResourceWithLegacyPathAnnotation(t *testing.T) {
	out := renderWith(t, map[string]string{
		"Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"all.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
		"keep.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\n",
	}, func(_ context.Context, rl *pipeline.ResourceList) error {
		for _, it := range rl.Items {
			if it.GetName() == "b" {
				if err := it.PipeE(yaml.SetAnnotation("config.kubernetes.io/path", "moved/b.yaml")); err != nil {
					return err
				}
				if err := it.PipeE(yaml.SetAnnotation("config.kubernetes.io/index", "0")); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if got, want := fileOf(t, out, "moved/b.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"; got != want {
		t.Errorf("moved/b.yaml:\n%s\nwant:\n%s", got, want)
	}
	if got, want := fileOf(t, out, "all.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"; got != want {
		t.Errorf("all.yaml:\n%s\nwant:\n%s", got, want)
	}
}
