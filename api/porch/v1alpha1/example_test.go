package v1alpha1_test

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
)

// Decoding a PackageRevision as Porch's API server returns it, and the kind
// a scheme gives it.
func Example() {
	data := []byte(`{"apiVersion":"porch.kpt.dev/v1alpha1","kind":"PackageRevision",
		"metadata":{"name":"blueprints.net.istio.v1","namespace":"default"},
		"spec":{"packageName":"net/istio","repository":"blueprints","workspaceName":"v1","revision":1,"lifecycle":"Published"},
		"status":{"publishedBy":"alice@example.com"}}`)
	var pr porchv1alpha1.PackageRevision
	if err := json.Unmarshal(data, &pr); err != nil {
		panic(err)
	}
	fmt.Println(pr.Spec.PackageName, pr.Spec.Revision, pr.Spec.Lifecycle, pr.Status.PublishedBy)

	s := runtime.NewScheme()
	if err := porchv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, err := s.ObjectKinds(&porchv1alpha1.PackageRevisionResources{})
	fmt.Println(gvks, err)
	// Output:
	// net/istio 1 Published alice@example.com
	// [porch.kpt.dev/v1alpha1, Kind=PackageRevisionResources] <nil>
}
