package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/warning"
)

// serveList writes a PackageRevision list (or a Table of it) from the
// list cache when its repositories did not change since an identical
// request (listcache.go).
func (s *Server) serveList(ctx context.Context, w http.ResponseWriter, r *http.Request, rq *request, lo *listOptions) {
	asTable := wantsTable(r)
	build := func() (*listCacheEntry, bool, error) {
		body, rv, err := s.encodeList(ctx, rq, lo, asTable)
		if err != nil {
			return nil, false, err
		}
		e := &listCacheEntry{body: body, rv: rv}
		e.snap, _ = s.snaps.get(rv)
		if asTable {
			e.expires = time.Now().Add(tableTTL)
		}
		return e, len(rq.warnings) == 0, nil
	}
	var e *listCacheEntry
	var err error
	if state, ok := s.listState(ctx, rq, lo); ok {
		e, err = s.lists.do(ctx, listRequestKey(rq, lo, asTable), state, build)
		if err == nil && e.snap != nil {
			// Later pages and watches name the list by its rv.
			s.snaps.keep(e.rv, e.snap)
		}
	} else {
		e, _, err = build()
	}
	for _, w := range rq.warnings {
		warning.AddWarning(ctx, "", w)
	}
	if err != nil {
		responsewriters.ErrorNegotiated(toAPIError(rq.def.gr, "", err), s.codecs, schema.GroupVersion{}, w, r)
		return
	}
	s.writeListBody(w, r, e)
}

// listPage lists the objects of rq's resource that lo selects and cuts
// the page lo asks for; it returns the page, the list's resourceVersion
// and the continue token of the next page.
func listPage(ctx context.Context, rq *request, lo *listOptions) ([]metav1.Object, string, string, error) {
	items, rv, err := rq.def.impl.list(ctx, rq, lo)
	if err != nil {
		return nil, "", "", err
	}
	items, cont, err := paginate(items, lo, rv)
	return items, rv, cont, err
}

// encodeList lists and encodes the page lo asks for, as a Table when
// table is set, and returns the body and the list's resourceVersion.
func (s *Server) encodeList(ctx context.Context, rq *request, lo *listOptions, asTable bool) ([]byte, string, error) {
	items, rv, cont, err := listPage(ctx, rq, lo)
	if err != nil {
		return nil, "", err
	}
	if asTable {
		t := table(rq.def, items, rv, cont, true)
		for i, o := range items {
			// What kubectl asks for: the rows' object metadata.
			t.Rows[i].Object = runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{
					Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
					ResourceVersion: o.GetResourceVersion(), CreationTimestamp: o.GetCreationTimestamp(),
					Labels: o.GetLabels(), Annotations: o.GetAnnotations(), Generation: o.GetGeneration(),
				}}}
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, "", err
		}
		return append(b, '\n'), rv, nil
	}
	// The list is written item by item: each item's JSON once (from the
	// server's memo for shared objects), never encoded a second time as
	// part of the list.
	head, err := json.Marshal(struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta `json:"metadata"`
	}{
		TypeMeta: metav1.TypeMeta{APIVersion: rq.def.apiVersion(), Kind: rq.def.listKind},
		Metadata: metav1.ListMeta{ResourceVersion: rv, Continue: cont},
	})
	if err != nil {
		return nil, "", err
	}
	encoded := make([][]byte, len(items))
	size := len(head) + 16
	for i, it := range items {
		b, err := s.jsons.encode(it)
		if err != nil {
			return nil, "", err
		}
		encoded[i] = b
		size += len(b) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"items":[`)
	for i, b := range encoded {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), rv, nil
}
