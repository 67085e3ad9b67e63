// Package openapi holds the OpenAPI definitions of the kinds the reference
// server serves (cad's api module, core v1 and meta v1), from which the
// server's /openapi/v2 and /openapi/v3 documents and server-side apply's
// type information are built.
//
// zz_generated.openapi.go is written by openapi-gen (k8s.io/kube-openapi,
// pinned by the api module's tools/gen module); regenerate it with
//
//	go generate ./server/internal/openapi
//
// run in the examples directory; never edit it by hand.
package openapi

//go:generate sh -c "$(cd ../../../../api/tools/gen && GOWORK=off go tool -n openapi-gen) --output-dir . --output-pkg github.com/configasdata/cad/examples/server/internal/openapi --output-file zz_generated.openapi.go --go-header-file /dev/null --report-filename /dev/null github.com/configasdata/cad/api/porch/v1alpha1 github.com/configasdata/cad/api/porch/v1alpha2 github.com/configasdata/cad/api/config/v1alpha1 github.com/configasdata/cad/api/config/v1alpha2 k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/util/intstr k8s.io/apimachinery/pkg/api/resource k8s.io/api/core/v1"
