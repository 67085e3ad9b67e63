package apiserver

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/internal/benchpkg"
	"github.com/configasdata/cad/revision"
)

// BenchmarkYAMLBody measures what the YAML bound costs a request body: a
// PackageRevisionResources update in YAML (application/yaml) carrying an
// ordinary package of 20 files, 60 resources with anchors (a 22 KB body:
// the files are block strings in it).
// "check" is revision.CheckYAML of the body, what readBody adds; "decode"
// is what readBody and the handler did before it and still do: the YAML
// converted to JSON and decoded into the object.
func BenchmarkYAMLBody(b *testing.B) {
	prr := porchapi.PackageRevisionResources{
		TypeMeta:   metav1.TypeMeta{APIVersion: "porch.kpt.dev/v1alpha1", Kind: "PackageRevisionResources"},
		ObjectMeta: metav1.ObjectMeta{Name: "blueprints.app.ws", Namespace: "default", ResourceVersion: "42"},
		Spec:       porchapi.PackageRevisionResourcesSpec{Resources: map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"}},
	}
	for name, data := range benchpkg.Resources(20, 3) {
		prr.Spec.Resources[name] = data
	}
	body, err := yaml.Marshal(prr)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := revision.CheckYAML(ctx, "request body", body, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(body)), "body-bytes")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			j, err := yaml.YAMLToJSON(body)
			if err != nil {
				b.Fatal(err)
			}
			var out porchapi.PackageRevisionResources
			if err := json.Unmarshal(j, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
