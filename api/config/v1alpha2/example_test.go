package v1alpha2_test

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
)

// A PackageVariantSet keeps its spec as the JSON it was given, fields this
// module does not know included.
func Example() {
	var pvs configv1alpha2.PackageVariantSet
	if err := json.Unmarshal([]byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha2","kind":"PackageVariantSet",
		"metadata":{"name":"istio-fleet"},
		"spec":{"upstream":{"repo":"blueprints","package":"istio"},"targets":[{"repositories":[{"name":"edge1"},{"name":"edge2"}]}]}}`), &pvs); err != nil {
		panic(err)
	}
	fmt.Println(string(pvs.Spec.Raw))

	s := runtime.NewScheme()
	if err := configv1alpha2.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, err := s.ObjectKinds(pvs.DeepCopyObject())
	fmt.Println(gvks, err)
	// Output:
	// {"upstream":{"repo":"blueprints","package":"istio"},"targets":[{"repositories":[{"name":"edge1"},{"name":"edge2"}]}]}
	// [config.porch.kpt.dev/v1alpha2, Kind=PackageVariantSet] <nil>
}
