package fnrunner_test

import (
	"context"
	"fmt"
	"log"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnrunner/internal/evaluatorpb"
	"github.com/configasdata/cad/fnrunner/internal/testrunner"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Render a package whose Kptfile runs a function cad does not build in,
// example.com/fns/stamp, on a function runner, and a catalog function
// in-process. The runner here is the package's test runner on a loopback
// port; in a cluster it is the function runner Porch deploys, as
// grpc://function-runner.porch-system.svc:9445.
func ExampleClient_Resolver() {
	srv, err := testrunner.Listen(testrunner.Options{Handlers: map[string]testrunner.Handler{
		"example.com/fns/stamp": stamp,
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()

	rc, err := fnrunner.New(srv.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	// Builtins first; an image the registry has no function for goes to
	// the runner.
	resolver := rc.Resolver(fnruntime.NewRegistry(nil))

	files := revision.MustFiles(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: example.com/fns/stamp:v1
  - image: set-namespace:v0.4
    configMap:
      namespace: prod
`,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
	})
	out, err := pipeline.NewKptfile(resolver, nil).Render(context.Background(), files)
	if err != nil {
		log.Fatal(err)
	}
	cm, _ := out.Files.Get("cm.yaml")
	fmt.Print(string(cm))
	fmt.Printf("log of %s: %s", out.Steps[0].Image, out.Steps[0].Stderr)
	// Output:
	// apiVersion: v1
	// kind: ConfigMap
	// metadata:
	//   name: settings
	//   annotations:
	//     example.com/stamped: 'true'
	//   namespace: prod
	// log of example.com/fns/stamp:v1: stamped 2 items
}

// stamp is the runner's implementation of example.com/fns/stamp: it
// annotates every item (the Kptfile is an item too, as in kpt).
func stamp(_ context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	rl, err := pipeline.ParseResourceList(req.ResourceList)
	if err != nil {
		return nil, err
	}
	for _, it := range rl.Items {
		if err := it.PipeE(yaml.SetAnnotation("example.com/stamped", "true")); err != nil {
			return nil, err
		}
	}
	b, err := rl.Encode()
	if err != nil {
		return nil, err
	}
	return &evaluatorpb.EvaluateFunctionResponse{ResourceList: b, Log: fmt.Appendf(nil, "stamped %d items\n", len(rl.Items))}, nil
}
