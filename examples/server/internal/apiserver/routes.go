package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// routes builds the handler: discovery, health, version and the resources.
func (s *Server) routes() http.Handler {
	defs := s.resourceDefs()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/livez", healthz)
	mux.HandleFunc("/readyz", healthz)
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, versionInfo())
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, groupList(defs))
	})
	mux.HandleFunc("/openapi/v3", s.serveOpenAPI(defs))
	mux.HandleFunc("/openapi/v3/", s.serveOpenAPI(defs))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.serveAPI(w, r, defs)
	})
	return s.authenticate(s.limits(mux))
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok"))
}

// limits bounds non-watch requests in time.
func (s *Server) limits(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" || strings.Contains(r.URL.Path, "/watch/") {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.RequestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

func versionInfo() map[string]string {
	return map[string]string{
		"major": "1", "minor": "34", "gitVersion": "v1.34.0-cad", "gitCommit": "", "gitTreeState": "clean",
		"buildDate": "", "goVersion": "", "compiler": "gc", "platform": "", "emulationMajor": "1",
		"emulationMinor": "34",
	}
}

// serveAPI routes /api/v1/... and /apis/<group>/<version>/... paths.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, defs []*resourceDef) {
	rq := &request{r: r, w: w}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group, version string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		version, parts = parts[1], parts[2:]
	case len(parts) >= 2 && parts[0] == "apis":
		group = parts[1]
		if len(parts) == 2 {
			if g, ok := apiGroup(defs, group); ok {
				writeJSON(w, http.StatusOK, g)
				return
			}
			s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
			return
		}
		version, parts = parts[2], parts[3:]
	default:
		s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	if len(parts) == 0 {
		if rl, ok := resourceList(defs, group, version); ok {
			writeJSON(w, http.StatusOK, rl)
			return
		}
		s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	watchPath := false
	if parts[0] == "watch" {
		watchPath, parts = true, parts[1:]
	}
	// [namespaces/<ns>/]<resource>[/<name>[/<sub>]]; namespaces/<name> is
	// the namespace resource itself.
	if len(parts) >= 3 && parts[0] == "namespaces" && !(group == "" && len(parts) == 2) {
		rq.ns, parts = parts[1], parts[2:]
	}
	var resource string
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) > 1 {
		rq.name = parts[1]
	}
	if len(parts) > 2 {
		rq.sub = parts[2]
	}
	if len(parts) > 3 || resource == "" {
		s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	for _, d := range defs {
		if d.gr.group == group && d.version == version && d.gr.resource == resource {
			rq.def = d
		}
	}
	if rq.def == nil {
		s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	if !rq.def.namespaced && rq.ns != "" {
		s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	if watchPath {
		q := r.URL.Query()
		q.Set("watch", "true")
		if rq.name != "" {
			q.Set("fieldSelector", "metadata.name="+rq.name)
			rq.name = ""
		}
		r.URL.RawQuery = q.Encode()
	}
	s.dispatch(rq)
}

// dispatch serves a resource request by method.
func (s *Server) dispatch(rq *request) {
	ctx := rq.r.Context()
	d := rq.def
	if err := s.authorize(rq); err != nil {
		s.writeError(rq, err)
		return
	}
	if rq.r.Method != http.MethodGet && rq.r.URL.Query().Get("dryRun") != "" {
		s.writeError(rq, errBadRequest("dry run is not supported by cad's reference server"))
		return
	}
	if rq.sub != "" {
		sd, ok := d.subresources[rq.sub]
		if !ok || rq.name == "" {
			s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
			return
		}
		switch rq.r.Method {
		case http.MethodGet:
			s.respond(rq, http.StatusOK, func() (metav1.Object, error) { return sd.impl.getSub(ctx, rq) })
		case http.MethodPut:
			s.respond(rq, http.StatusOK, func() (metav1.Object, error) {
				body, err := s.readBody(rq)
				if err != nil {
					return nil, err
				}
				return sd.impl.updateSub(ctx, rq, body)
			})
		case http.MethodPatch:
			s.respond(rq, http.StatusOK, func() (metav1.Object, error) {
				return s.patch(ctx, rq, func() (metav1.Object, error) { return sd.impl.getSub(ctx, rq) },
					func(b []byte) (metav1.Object, error) { return sd.impl.updateSub(ctx, rq, b) })
			})
		default:
			s.writeError(rq, errMethodNotAllowed(rq.r.Method, d.gr))
		}
		return
	}
	if rq.name == "" {
		switch rq.r.Method {
		case http.MethodGet:
			lo, err := s.parseListOptions(rq)
			if err != nil {
				s.writeError(rq, err)
				return
			}
			if lo.watch {
				if !hasVerb(d, "watch") {
					s.writeError(rq, errMethodNotAllowed("watch", d.gr))
					return
				}
				s.serveWatch(rq, lo)
				return
			}
			s.serveList(ctx, rq, lo)
		case http.MethodPost:
			if !hasVerb(d, "create") || (d.namespaced && rq.ns == "") {
				s.writeError(rq, errMethodNotAllowed("create", d.gr))
				return
			}
			s.respond(rq, http.StatusCreated, func() (metav1.Object, error) {
				body, err := s.readBody(rq)
				if err != nil {
					return nil, err
				}
				if err := s.checkBodyNamespace(rq, body); err != nil {
					return nil, err
				}
				return d.impl.create(ctx, rq, body)
			})
		default:
			s.writeError(rq, errMethodNotAllowed(rq.r.Method, d.gr))
		}
		return
	}
	if d.namespaced && rq.ns == "" {
		s.writeError(rq, newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	switch rq.r.Method {
	case http.MethodGet:
		s.respond(rq, http.StatusOK, func() (metav1.Object, error) { return d.impl.get(ctx, rq) })
	case http.MethodPut:
		if !hasVerb(d, "update") {
			s.writeError(rq, errMethodNotAllowed("update", d.gr))
			return
		}
		s.respond(rq, http.StatusOK, func() (metav1.Object, error) {
			body, err := s.readBody(rq)
			if err != nil {
				return nil, err
			}
			if err := s.checkBodyName(rq, body); err != nil {
				return nil, err
			}
			return d.impl.update(ctx, rq, body)
		})
	case http.MethodPatch:
		if !hasVerb(d, "patch") {
			s.writeError(rq, errMethodNotAllowed("patch", d.gr))
			return
		}
		s.respond(rq, http.StatusOK, func() (metav1.Object, error) {
			return s.patch(ctx, rq, func() (metav1.Object, error) { return d.impl.get(ctx, rq) },
				func(b []byte) (metav1.Object, error) { return d.impl.update(ctx, rq, b) })
		})
	case http.MethodDelete:
		if !hasVerb(d, "delete") {
			s.writeError(rq, errMethodNotAllowed("delete", d.gr))
			return
		}
		opts := &metav1.DeleteOptions{}
		if rq.r.ContentLength != 0 && rq.r.Body != nil && rq.r.Body != http.NoBody {
			body, err := s.readBody(rq)
			if err == nil {
				err = json.Unmarshal(body, opts)
				if err != nil {
					err = errBadRequest("invalid DeleteOptions: %v", err)
				}
			}
			var ae *apiError
			if err != nil && !(errors.As(err, &ae) && ae.status.Message == "the request body is empty") {
				s.writeError(rq, err)
				return
			}
		}
		obj, err := d.impl.delete(ctx, rq, opts)
		if err != nil {
			s.writeError(rq, err)
			return
		}
		s.writeWarnings(rq)
		if obj != nil {
			writeJSON(rq.w, http.StatusOK, obj)
			return
		}
		writeJSON(rq.w, http.StatusOK, metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details:  &metav1.StatusDetails{Name: rq.name, Group: d.gr.group, Kind: d.gr.resource},
		})
	default:
		s.writeError(rq, errMethodNotAllowed(rq.r.Method, d.gr))
	}
}

func hasVerb(d *resourceDef, verb string) bool {
	for _, v := range d.verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// respond runs fn and writes its object, or its error.
func (s *Server) respond(rq *request, code int, fn func() (metav1.Object, error)) {
	obj, err := fn()
	if err != nil {
		s.writeError(rq, err)
		return
	}
	s.writeWarnings(rq)
	if wantsTable(rq.r) {
		writeJSON(rq.w, code, s.table(rq.def, []metav1.Object{obj}, "", "", true))
		return
	}
	writeJSON(rq.w, code, obj)
}

// checkBodyNamespace refuses a created object whose namespace differs from
// the request's.
func (s *Server) checkBodyNamespace(rq *request, body []byte) error {
	var m struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return errBadRequest("the request body is not a valid %s: %v", rq.kind(), err)
	}
	if m.Metadata.Namespace != "" && m.Metadata.Namespace != rq.ns {
		return errBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// checkBodyName refuses an update whose body names another object.
func (s *Server) checkBodyName(rq *request, body []byte) error {
	var m struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return errBadRequest("the request body is not a valid %s: %v", rq.kind(), err)
	}
	if m.Metadata.Name != "" && m.Metadata.Name != rq.name {
		return errBadRequest("the name of the object (%s) does not match the name on the URL (%s)", m.Metadata.Name, rq.name)
	}
	if m.Metadata.Namespace != "" && m.Metadata.Namespace != rq.ns {
		return errBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// patch applies the request's patch to the current object and updates it,
// retrying when the object changed meanwhile and the patch did not name a
// resourceVersion.
func (s *Server) patch(ctx context.Context, rq *request, get func() (metav1.Object, error), update func([]byte) (metav1.Object, error)) (metav1.Object, error) {
	body, err := s.readBody(rq)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := get()
		if err != nil {
			return nil, err
		}
		curJSON, err := json.Marshal(cur)
		if err != nil {
			return nil, err
		}
		out, err := applyPatch(rq, curJSON, body)
		if err != nil {
			return nil, err
		}
		if err := s.checkBodyName(rq, out); err != nil {
			return nil, err
		}
		obj, err := update(out)
		if err == nil {
			return obj, nil
		}
		lastErr = err
		ae := toAPIError(rq.def.gr, rq.name, err)
		if ae.status.Reason != metav1.StatusReasonConflict || patchNamesVersion(body) {
			return nil, err
		}
	}
	return nil, lastErr
}

// patchNamesVersion reports whether a patch sets metadata.resourceVersion.
func patchNamesVersion(patch []byte) bool {
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	return json.Unmarshal(patch, &m) == nil && m.Metadata.ResourceVersion != "" ||
		strings.Contains(string(patch), "/metadata/resourceVersion")
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

// serveWatch streams watch events as newline-separated JSON.
func (s *Server) serveWatch(rq *request, lo *listOptions) {
	ctx, cancel := context.WithTimeout(rq.r.Context(), lo.timeout)
	defer cancel()
	flusher, _ := rq.w.(http.Flusher)
	rc := http.NewResponseController(rq.w)
	// A watch outlives the server's read and write timeouts: lift them for
	// this connection (a read deadline would cancel the request when it
	// passes).
	rc.SetWriteDeadline(time.Time{})
	rc.SetReadDeadline(time.Time{})
	table := wantsTable(rq.r)
	started := false
	first := true
	start := func() {
		if started {
			return
		}
		started = true
		s.writeWarnings(rq)
		rq.w.Header().Set("Content-Type", "application/json")
		rq.w.Header().Set("Cache-Control", "no-cache, private")
		rq.w.Header().Set("Transfer-Encoding", "chunked")
		rq.w.WriteHeader(http.StatusOK)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send := func(ev watchEvent) error {
		start()
		if ev.typ == "" {
			return nil // only start the stream
		}
		var obj any = ev.obj
		if ev.raw != nil {
			obj = ev.raw
		} else if ev.typ == "BOOKMARK" {
			bm := map[string]any{
				"kind":       rq.def.kind,
				"apiVersion": rq.def.apiVersion(),
				"metadata": map[string]any{
					"resourceVersion": ev.obj.GetResourceVersion(),
					"annotations":     ev.obj.GetAnnotations(),
				},
			}
			obj = bm
		} else if table {
			obj = s.table(rq.def, []metav1.Object{ev.obj}, "", "", first)
			first = false
		}
		data, err := json.Marshal(metav1.WatchEvent{Type: ev.typ, Object: runtime.RawExtension{Raw: mustJSON(obj)}})
		if err != nil {
			return err
		}
		if _, err := rq.w.Write(append(data, '\n')); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	err := rq.def.impl.watch(ctx, rq, lo, send)
	if err != nil && !started && ctx.Err() == nil {
		s.writeError(rq, err)
		return
	}
	if err != nil && started && ctx.Err() == nil {
		ae := toAPIError(rq.def.gr, "", err)
		send(watchEvent{typ: "ERROR", raw: ae.status})
		return
	}
	start()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
