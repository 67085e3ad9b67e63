package fnruntime_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Render a kpt package whose Kptfile uses catalog functions; the registry
// runs them in-process.
func ExampleRegistry() {
	files := revision.MustFiles(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
    - image: set-namespace:v0.4.1
      configMap:
        namespace: prod
    - image: gcr.io/kpt-fn/set-labels:v0.2
      configMap:
        tier: web
`,
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
`,
	})
	reg := fnruntime.NewRegistry(nil)
	out, err := pipeline.NewKptfile(reg, nil).Render(context.Background(), files)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := out.Files.Get("deploy.yaml")
	fmt.Print(string(d))
	for _, s := range out.Steps {
		fmt.Println(s.Image, "->", s.Results)
	}
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   name: web
	//   namespace: prod
	//   labels:
	//     tier: web
	// spec:
	//   replicas: 2
	//   selector:
	//     matchLabels:
	//       tier: web
	// ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1 -> [info]: namespace "" updated to "prod", 1 value(s) changed
	// gcr.io/kpt-fn/set-labels:v0.2 -> [info]: set 3 labels in total
}

// Each builtin declares the catalog releases it implements; a step pinning
// another version is refused with a *VersionError instead of silently
// running other behaviour.
func ExampleBuiltinVersions() {
	fmt.Println(fnruntime.BuiltinVersions()["set-labels"].Releases)

	reg := fnruntime.NewRegistry(nil)
	_, err := reg.Resolve(context.Background(), pipeline.Step{Image: "gcr.io/kpt-fn/set-labels:v0.1.5"})
	var ve *fnruntime.VersionError
	fmt.Println(errors.As(err, &ve), ve.Implemented)
	fmt.Println(err)
	_, err = reg.Resolve(context.Background(), pipeline.Step{Image: "gcr.io/kpt-fn/set-labels:v0.2.0"})
	fmt.Println(err)
	// Output:
	// [v0.2.0]
	// true [v0.2.0]
	// function "gcr.io/kpt-fn/set-labels:v0.1.5": version "v0.1.5" is not implemented in-process (cad implements v0.2.x); pin one of those, or enable container functions
	// <nil>
}
