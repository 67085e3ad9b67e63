// Package api is the root of cad's Kubernetes API module,
// github.com/configasdata/cad/api: Go types whose JSON is that of Porch's
// API objects, with deep-copy methods, runtime.Object and scheme
// registration, and the CustomResourceDefinitions generated from them.
//
// # Packages
//
//   - porch/v1alpha1: porch.kpt.dev/v1alpha1 PackageRevision and
//     PackageRevisionResources, as Porch's aggregated API server serves
//     them (and cad's reference server, examples/server).
//   - porch/v1alpha2: porch.kpt.dev/v1alpha2 PackageRevision, the custom
//     resource that cad's operator (examples/operator) reconciles.
//   - config/v1alpha1: config.porch.kpt.dev/v1alpha1 Repository and
//     PackageVariant.
//   - config/v1alpha2: config.porch.kpt.dev/v1alpha2 PackageVariantSet.
//   - crds: the CustomResourceDefinition manifests of the custom resources
//     (porch.kpt.dev/v1alpha2 PackageRevision, Repository, PackageVariant,
//     PackageVariantSet), for kubectl apply.
//
// # Why a module of its own
//
// Controllers, CLIs and tests import these types without importing the
// cad library, and the library's go.mod stays free of k8s.io modules: the
// core of cad does not need Kubernetes, and a k8s.io requirement in it
// would set a floor on the k8s.io versions of every program that embeds
// cad. This module requires only k8s.io/apimachinery. It holds types and
// no I/O; converting between these types and cad's (revision.Key,
// repository.Spec, ...) is the job of the program that uses both.
//
// # Generated code
//
// zz_generated.deepcopy.go in each package and every file under crds/ are
// written by controller-gen (sigs.k8s.io/controller-tools, pinned by the
// tools/gen module, which go.work leaves out) from the kubebuilder markers
// on the types; zz_generated.model_name.go (each type's OpenAPI model name,
// which servers of these types use to name their schemas) by openapi-gen
// (k8s.io/kube-openapi, pinned by the same module). Regenerate them with
//
//	go generate ./...
//
// run in this directory; never edit them by hand.
package api

//go:generate sh -c "$(cd tools/gen && GOWORK=off go tool -n controller-gen) object paths=./porch/... paths=./config/..."
//go:generate sh -c "$(cd tools/gen && GOWORK=off go tool -n controller-gen) crd:crdVersions=v1 paths=./porch/v1alpha2/... paths=./config/... output:crd:artifacts:config=crds"
//go:generate sh -c "$(cd tools/gen && GOWORK=off go tool -n openapi-gen) --output-dir $(mktemp -d) --output-pkg example.com/discard --output-file discard.go --output-model-name-file zz_generated.model_name.go --go-header-file /dev/null --report-filename /dev/null ./porch/v1alpha1 ./porch/v1alpha2 ./config/v1alpha1 ./config/v1alpha2"
