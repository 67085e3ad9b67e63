package v1alpha2_test

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// A PackageRevision that clones an upstream revision into a new draft, and
// how a scheme resolves its kind.
func Example() {
	pr := &porchv1alpha2.PackageRevision{
		TypeMeta:   metav1.TypeMeta{APIVersion: porchv1alpha2.SchemeGroupVersion.String(), Kind: porchv1alpha2.KindPackageRevision},
		ObjectMeta: metav1.ObjectMeta{Name: "deployments.istio.ws1", Namespace: "default"},
		Spec: porchv1alpha2.PackageRevisionSpec{
			PackageName:    "istio",
			RepositoryName: "deployments",
			WorkspaceName:  "ws1",
			Lifecycle:      porchv1alpha2.LifecycleDraft,
			Source: &porchv1alpha2.PackageSource{
				CloneFrom: &porchv1alpha2.UpstreamPackage{
					UpstreamRef: &porchv1alpha2.PackageRevisionRef{Name: "blueprints.istio.v1"},
				},
			},
		},
	}
	data, _ := json.Marshal(pr.Spec)
	fmt.Println(string(data))

	s := runtime.NewScheme()
	if err := porchv1alpha2.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, err := s.ObjectKinds(pr.DeepCopy())
	fmt.Println(gvks, err)
	// Output:
	// {"packageName":"istio","repository":"deployments","workspaceName":"ws1","lifecycle":"Draft","source":{"cloneFrom":{"upstreamRef":{"name":"blueprints.istio.v1"}}}}
	// [porch.kpt.dev/v1alpha2, Kind=PackageRevision] <nil>
}
