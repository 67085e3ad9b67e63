package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

type resolverFunc func(ctx context.Context, s pipeline.Step) (pipeline.Function, error)

func (f resolverFunc) Resolve(ctx context.Context, s pipeline.Step) (pipeline.Function, error) {
	return f(ctx, s)
}

// A function that reorders the resources of a multi-document file leaves
// each document's comments with its own document.
func TestReorderKeepsComments(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		"Kptfile":  "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n    - image: reorder\n",
		"all.yaml": "# header comment\n#\n# more header\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
	})
	for _, perm := range [][]int{{0, 2, 1}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}, {1, 0, 2}} {
		res := resolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
			return pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
				out := make([]*yaml.RNode, len(rl.Items))
				for i, j := range perm {
					out[i] = rl.Items[j]
				}
				rl.Items = out
				return nil
			}), nil
		})
		r := pipeline.NewKptfile(res, nil)
		o, err := r.Render(context.Background(), files)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := o.Files.Get("all.yaml")
		if n := strings.Count(string(got), "# header comment"); n != 1 {
			t.Errorf("perm %v: header comment appears %d times:\n%s", perm, n, got)
		}
	}
}
