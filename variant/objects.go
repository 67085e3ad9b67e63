package variant

import (
	"context"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// ObjectQuery selects objects of an ObjectSource.
type ObjectQuery struct {
	// Namespace is the namespace of the variant asking; "" for variants
	// without one. Implementations over Kubernetes list in it.
	Namespace string
	// Group and Version of the objects; an empty Version matches any.
	Group, Version string
	// Kind of the objects; required.
	Kind string
	// Name, when set, selects the object of that name only.
	Name string
	// Selector, when not nil, selects by labels.
	Selector labels.Selector
}

// Matches reports whether u is selected by q.
func (q ObjectQuery) Matches(u *unstructured.Unstructured) bool {
	g, v := splitAPIVersion(u.GetAPIVersion())
	switch {
	case u.GetKind() != q.Kind, g != q.Group, q.Version != "" && v != q.Version:
		return false
	case q.Namespace != "" && u.GetNamespace() != "" && u.GetNamespace() != q.Namespace:
		return false
	case q.Name != "" && u.GetName() != q.Name:
		return false
	case q.Selector != nil && !q.Selector.Matches(labels.Set(u.GetLabels())):
		return false
	}
	return true
}

// ObjectSource is where injection, bindings and a PackageVariantSet's
// objectSelector read objects: in a Kubernetes controller a client over the
// cluster, in a test a fixed set (Objects). Implementations must be safe
// for concurrent use and must not modify returned objects afterwards; the
// variant package does not modify them either.
type ObjectSource interface {
	// ListObjects returns the objects q selects, in a stable order. An error
	// fails the sync that asked.
	ListObjects(ctx context.Context, q ObjectQuery) ([]*unstructured.Unstructured, error)
}

// Objects is an in-memory ObjectSource: a set of objects, safe for
// concurrent use. The zero value is empty and ready to use.
type Objects struct {
	mu   sync.RWMutex
	objs []*unstructured.Unstructured
}

var _ ObjectSource = (*Objects)(nil)

// NewObjects returns an Objects holding deep copies of objs.
func NewObjects(objs ...map[string]any) *Objects {
	o := &Objects{}
	for _, m := range objs {
		o.Add(m)
	}
	return o
}

// Add adds (or, for the same apiVersion, kind, namespace and name,
// replaces) a deep copy of the object m.
func (o *Objects) Add(m map[string]any) {
	u := (&unstructured.Unstructured{Object: m}).DeepCopy()
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, x := range o.objs {
		if sameObject(x, u) {
			o.objs[i] = u
			return
		}
	}
	o.objs = append(o.objs, u)
}

// Remove removes the object with that apiVersion, kind, namespace and name,
// and reports whether there was one.
func (o *Objects) Remove(apiVersion, kind, namespace, name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, x := range o.objs {
		if x.GetAPIVersion() == apiVersion && x.GetKind() == kind && x.GetNamespace() == namespace && x.GetName() == name {
			o.objs = slices.Delete(o.objs, i, i+1)
			return true
		}
	}
	return false
}

// ListObjects returns the objects q selects, sorted by namespace and name.
// It never fails.
func (o *Objects) ListObjects(_ context.Context, q ObjectQuery) ([]*unstructured.Unstructured, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []*unstructured.Unstructured
	for _, u := range o.objs {
		if q.Matches(u) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		if c := strings.Compare(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out, nil
}

func sameObject(a, b *unstructured.Unstructured) bool {
	return a.GetAPIVersion() == b.GetAPIVersion() && a.GetKind() == b.GetKind() &&
		a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName()
}

// splitAPIVersion splits "group/version" ("v1" is the core group).
func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}
