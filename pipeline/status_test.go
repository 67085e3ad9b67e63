package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestRenderStatusThatCannotBeWrittenFailsTheRender has a function leave
// the root Kptfile unreadable (an old schema version), so the render status
// cannot be recorded in it: the render fails and says so, instead of
// succeeding with the Kptfile's stale Rendered=False condition.
func TestRenderStatusThatCannotBeWrittenFailsTheRender(t *testing.T) {
	const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n" +
		"status:\n  conditions:\n  - type: Rendered\n    status: \"False\"\n    reason: RenderFailed\n"
	in := revision.MustFiles(map[string]string{
		"Kptfile": kptfile,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	breakKptfile := pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
		for _, it := range rl.Items {
			if it.GetKind() == revision.KptfileKind {
				if err := it.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("kpt.dev/v1alpha2"))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	resolver := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return breakKptfile, nil })
	p := pipeline.New(resolver, pipeline.Steps{Mutators: []pipeline.Step{{Name: "fn"}}}, nil)
	out, err := p.Render(context.Background(), in)
	if err == nil {
		kf, _ := out.Files.Get(revision.KptfileName)
		t.Fatalf("render succeeded without recording its status; Kptfile:\n%s", kf)
	}
	if !strings.Contains(err.Error(), "render status") || !strings.Contains(err.Error(), "Kptfile") {
		t.Fatalf("error %q does not say the render status could not be recorded in the Kptfile", err)
	}
}
