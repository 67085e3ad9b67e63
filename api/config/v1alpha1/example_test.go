package v1alpha1_test

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
)

// A git Repository with credentials from a Secret, and a PackageVariant
// whose spec is kept as given.
func Example() {
	repo := configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "blueprints", Namespace: "default"},
		Spec: configv1alpha1.RepositorySpec{
			Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{
				Repo:      "https://git.example/blueprints.git",
				Branch:    "main",
				SecretRef: configv1alpha1.SecretRef{Name: "git-creds"},
			},
		},
	}
	data, _ := json.Marshal(repo.Spec)
	fmt.Println(string(data))

	var pv configv1alpha1.PackageVariant
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"istio-edge"},
		"spec":{"upstream":{"repo":"blueprints","package":"istio"},"downstream":{"repo":"edge","package":"istio"}}}`), &pv); err != nil {
		panic(err)
	}
	fmt.Println(string(pv.Spec.Raw))

	s := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, err := s.ObjectKinds(&pv)
	fmt.Println(gvks, err)
	// Output:
	// {"type":"git","git":{"repo":"https://git.example/blueprints.git","branch":"main","secretRef":{"name":"git-creds"}}}
	// {"upstream":{"repo":"blueprints","package":"istio"},"downstream":{"repo":"edge","package":"istio"}}
	// [config.porch.kpt.dev/v1alpha1, Kind=PackageVariant] <nil>
}
