package pipeline_test

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// A package without a Kptfile, rendered with a step given in code and a
// resolver that maps it to a Go function.
func ExampleNew() {
	files := revision.MustFiles(map[string]string{
		"app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: app # the app's settings
data:
  color: blue
`,
		"README.md": "not KRM: carried through untouched\n",
	})
	annotate := pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
		for _, it := range rl.Items {
			if err := it.PipeE(yaml.SetAnnotation("example.com/owner", "team-a")); err != nil {
				return err
			}
		}
		rl.Results = append(rl.Results, &pipeline.Result{Message: "annotated", Severity: pipeline.SeverityInfo})
		return nil
	})
	resolver := pipeline.ResolverFunc(func(_ context.Context, st pipeline.Step) (pipeline.Function, error) {
		if st.Name == "annotate" {
			return annotate, nil
		}
		return nil, pipeline.ErrFunctionNotFound
	})
	r := pipeline.New(resolver, pipeline.Steps{Mutators: []pipeline.Step{{Name: "annotate"}}}, nil)
	out, err := r.Render(context.Background(), files)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := out.Files.Get("app.yaml")
	fmt.Print(string(data))
	fmt.Println(out.Results())
	// Output:
	// apiVersion: v1
	// kind: ConfigMap
	// metadata:
	//   name: app # the app's settings
	//   annotations:
	//     example.com/owner: 'team-a'
	// data:
	//   color: blue
	// [info]: annotated
}

// A ResourceList round-trips kpt's wire format, annotations included.
func ExampleParseResourceList() {
	rl, err := pipeline.ParseResourceList([]byte(`apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: prod
    annotations:
      config.kubernetes.io/path: ns.yaml
      internal.config.kubernetes.io/path: ns.yaml
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: function-input
  data:
    namespace: prod
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(rl.Items), rl.Items[0].GetAnnotations()[pipeline.PathAnnotation], rl.FunctionConfig.GetName())
	// Output:
	// 1 ns.yaml function-input
}
