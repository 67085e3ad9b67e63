package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hasVerb(d *resourceDef, verb string) bool {
	for _, v := range d.verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// serveList writes a list (or a Table of it). A list of PackageRevisions
// comes from the list cache when its repositories did not change since
// an identical request (listcache.go).
func (s *Server) serveList(ctx context.Context, rq *request, lo *listOptions) {
	if !hasVerb(rq.def, "list") {
		s.writeError(rq, errMethodNotAllowed("list", rq.def.gr))
		return
	}
	table := wantsTable(rq.r)
	build := func() (*listCacheEntry, bool, error) {
		body, rv, err := s.encodeList(ctx, rq, lo, table)
		if err != nil {
			return nil, false, err
		}
		e := &listCacheEntry{body: body, rv: rv}
		e.snap, _ = s.snaps.get(rv)
		if table {
			e.expires = time.Now().Add(tableTTL)
		}
		return e, len(rq.warnings) == 0, nil
	}
	var e *listCacheEntry
	var err error
	if state, ok := s.listState(ctx, rq, lo); ok {
		e, err = s.lists.do(ctx, listRequestKey(rq, lo, table), state, build)
		if err == nil && e.snap != nil {
			// Later pages and watches name the list by its rv.
			s.snaps.keep(e.rv, e.snap)
		}
	} else {
		e, _, err = build()
	}
	if err != nil {
		s.writeError(rq, err)
		return
	}
	s.writeWarnings(rq)
	s.writeListBody(rq, e)
}

// encodeList lists and encodes the page lo asks for, as a Table when
// table is set, and returns the body and the list's resourceVersion.
func (s *Server) encodeList(ctx context.Context, rq *request, lo *listOptions, table bool) ([]byte, string, error) {
	items, rv, err := rq.def.impl.list(ctx, rq, lo)
	if err != nil {
		return nil, "", err
	}
	items, cont, err := paginate(items, lo, rv)
	if err != nil {
		return nil, "", err
	}
	if table {
		b, err := json.Marshal(s.table(rq.def, items, rv, cont, true))
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

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
