package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configasdata/cad/variant"
)

// kubeObjects is the variant package's ObjectSource over the cluster: the
// objects that injection, bindings and a PackageVariantSet's objectSelector
// name are read from the API server (uncached: a variant reads few objects,
// of kinds known only at sync time, and must see the latest).
type kubeObjects struct {
	reader client.Reader
	mapper meta.RESTMapper
}

var _ variant.ObjectSource = kubeObjects{}

// ListObjects implements variant.ObjectSource. A kind the API server does
// not serve selects nothing; other errors fail the sync that asked.
func (k kubeObjects) ListObjects(ctx context.Context, q variant.ObjectQuery) ([]*unstructured.Unstructured, error) {
	if q.Kind == "" {
		return nil, fmt.Errorf("object query without a kind")
	}
	var versions []string
	if q.Version != "" {
		versions = []string{q.Version}
	}
	m, err := k.mapper.RESTMapping(schema.GroupKind{Group: q.Group, Kind: q.Kind}, versions...)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(q.Kind + "List"))
	var opts []client.ListOption
	if m.Scope.Name() == meta.RESTScopeNameNamespace && q.Namespace != "" {
		opts = append(opts, client.InNamespace(q.Namespace))
	}
	if q.Selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: q.Selector})
	}
	if q.Name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": q.Name})
	}
	if err := k.reader.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		if q.Matches(&list.Items[i]) {
			out = append(out, &list.Items[i])
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
