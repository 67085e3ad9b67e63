package stdfn_test

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/revision"
)

// A Kptfile whose step runs only when its CEL condition holds, with an
// input computed by CEL, and a CEL validation, rendered with the standard
// wiring over the builtin functions.
func ExampleKptfile() {
	kf := `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: set-namespace:v0.4.1
    condition: resources.exists(r, r.kind == "ConfigMap")
    configMapExprs:
      namespace: resources.filter(r, r.kind == "ConfigMap")[0].data.ns
  validators:
  - image: cad.configasdata.dev/validate-cel
    configMap:
      expression: object.kind == "Kptfile" || object.metadata.namespace == "prod"
`
	files := revision.MustFiles(map[string]string{
		revision.KptfileName: kf,
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env\ndata:\n  ns: prod\n",
	})
	out, err := stdfn.Kptfile(fnruntime.NewRegistry(nil), nil).Render(context.Background(), files)
	if err != nil {
		fmt.Println(err)
		return
	}
	cm, _ := out.Files.Get("cm.yaml")
	fmt.Print(string(cm))
	// Output:
	// apiVersion: v1
	// kind: ConfigMap
	// metadata:
	//   name: env
	//   namespace: prod
	// data:
	//   ns: prod
}
