// Package livek8s is a live.Reader over client-go: objects are read with
// the dynamic client, kinds are mapped to resources (and told namespaced or
// not) by a REST mapper over the cluster's discovery, cached in memory and
// refreshed once when a kind is not found, so that a CRD installed after
// the Reader was made is seen.
//
// It maps client-go's errors to the library's: a missing object matches
// repository.ErrNotFound and a kind the cluster does not serve
// repository.ErrNotSupported, which package live reports as NotFound and
// Unknown.
package livek8s

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/repository"
)

// Reader reads objects of one cluster. It is safe for concurrent use.
type Reader struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

var (
	_ live.Reader = (*Reader)(nil)
	_ live.Scoper = (*Reader)(nil)
)

// New returns a Reader of the cluster cfg reaches. It contacts nothing
// until the first Get; it returns an error for a cfg client-go refuses.
// A cfg without a rate limit (QPS and Burst zero) gets 50 requests a
// second with bursts of 100 instead of client-go's 5 and 10, so that
// polling a package of a few dozen resources is not throttled.
func New(cfg *rest.Config) (*Reader, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("livek8s: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("livek8s: %w", err)
	}
	return &Reader{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// FromKubeconfig returns a Reader of the cluster of the current context of
// the kubeconfig file at path (its server, TLS settings and credentials).
// It returns an error when the file does not load.
func FromKubeconfig(path string) (*Reader, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return New(cfg)
}

// mapping returns how gvk is served, refreshing the discovery cache once
// when the kind is unknown.
func (r *Reader) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		r.mapper.Reset()
		m, err = r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("%w: %w", repository.ErrNotSupported, err)
	}
	return m, err
}

// Namespaced reports whether gvk is a namespaced kind. It returns an error
// matching repository.ErrNotSupported for a kind the cluster does not
// serve, and discovery's errors.
func (r *Reader) Namespaced(_ context.Context, gvk schema.GroupVersionKind) (bool, error) {
	m, err := r.mapping(gvk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Get returns the object. It returns an error matching
// repository.ErrNotFound when there is none, repository.ErrNotSupported
// for a kind the cluster does not serve, and client-go's other errors.
func (r *Reader) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	m, err := r.mapping(gvk)
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = r.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = r.dyn.Resource(m.Resource).Namespace(namespace)
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %w", repository.ErrNotFound, err)
	}
	return u, err
}
