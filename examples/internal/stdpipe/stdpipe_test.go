package stdpipe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/internal/stdpipe"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/revision"
)

// The binaries' pipeline evaluates a Kptfile's condition and
// configMapExprs and resolves the CEL validator.
func TestKptfileWithCEL(t *testing.T) {
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
	out, err := stdpipe.Kptfile(fnruntime.NewRegistry(nil), nil).Render(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if cm, _ := out.Files.Get("cm.yaml"); !strings.Contains(string(cm), "namespace: prod") {
		t.Fatalf("cm.yaml:\n%s", cm)
	}
}
