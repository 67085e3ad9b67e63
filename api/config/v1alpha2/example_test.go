package v1alpha2_test

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
)

// A PackageVariantSet read from Porch's JSON: one upstream, two target
// repositories, the downstream package named by a CEL expression.
func Example() {
	var pvs configv1alpha2.PackageVariantSet
	if err := json.Unmarshal([]byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha2","kind":"PackageVariantSet",
		"metadata":{"name":"istio-fleet"},
		"spec":{"upstream":{"repo":"blueprints","package":"istio"},"targets":[{"repositories":[{"name":"edge1"},{"name":"edge2"}],
		"template":{"downstream":{"packageExpr":"target.package + '-edge'"}}}]}}`), &pvs); err != nil {
		panic(err)
	}
	t := pvs.Spec.Targets[0]
	fmt.Println(pvs.Spec.Upstream.Package, len(t.Repositories), *t.Template.Downstream.PackageExpr)

	s := runtime.NewScheme()
	if err := configv1alpha2.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, err := s.ObjectKinds(pvs.DeepCopyObject())
	fmt.Println(gvks, err)
	// Output:
	// istio 2 target.package + '-edge'
	// [config.porch.kpt.dev/v1alpha2, Kind=PackageVariantSet] <nil>
}
