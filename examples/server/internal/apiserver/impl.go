package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/configasdata/cad/repository"
)

// groupResource names a resource for messages: "packagerevisions.porch.kpt.dev".
type groupResource struct{ group, resource string }

func (g groupResource) String() string {
	if g.group == "" {
		return g.resource
	}
	return g.resource + "." + g.group
}

// resourceImpl is what a served resource implements. Objects are pointers to
// types that implement metav1.Object and marshal to the served JSON.
type resourceImpl interface {
	get(ctx context.Context, rq *request) (metav1.Object, error)
	list(ctx context.Context, rq *request, lo *listOptions) ([]metav1.Object, string, error)
	watch(ctx context.Context, rq *request, lo *listOptions, send func(watchEvent) error) error
	create(ctx context.Context, rq *request, body []byte) (metav1.Object, error)
	update(ctx context.Context, rq *request, body []byte) (metav1.Object, error)
	delete(ctx context.Context, rq *request, opts *metav1.DeleteOptions) (metav1.Object, error)
}

// subresourceImpl serves a subresource (packagerevisions/approval).
type subresourceImpl interface {
	getSub(ctx context.Context, rq *request) (metav1.Object, error)
	updateSub(ctx context.Context, rq *request, body []byte) (metav1.Object, error)
}

// resourceDef describes a served resource for routing and discovery.
type resourceDef struct {
	gr           groupResource
	version      string
	kind         string
	listKind     string
	singular     string
	namespaced   bool
	verbs        []string
	shortNames   []string
	categories   []string
	subresources map[string]subresourceDef
	// checkFields checks a field selector of a list or watch (its error
	// is a 400); nil accepts only metadata.name and metadata.namespace.
	checkFields func(fields.Selector) error
	// fieldFn returns an object's selectable fields besides
	// metadata.name and metadata.namespace.
	fieldFn func(metav1.Object) fields.Set
	columns []metav1.TableColumnDefinition
	row     func(metav1.Object) []any
	impl    resourceImpl
}

type subresourceDef struct {
	verbs []string
	impl  subresourceImpl
}

// watchEvent is one event of a watch: type and object. An event with an
// empty type sends nothing but starts the response stream (its headers),
// which clients wait for before they consider the watch established.
type watchEvent struct {
	typ string
	obj metav1.Object
	raw any // sent instead of obj when set (an ERROR's Status)
}

// request is one API request being served.
type request struct {
	r        *http.Request
	w        http.ResponseWriter
	def      *resourceDef
	ns, name string
	sub      string
	warnings []string
	// dryRun: check and answer, write nothing.
	dryRun bool
	// dry is the write batch a dry run writes into and reads through,
	// discarded at its end (see resourceStorage.beginDryRun); nil
	// otherwise.
	dry repository.Batch
}

func (rq *request) warn(format string, args ...any) {
	rq.warnings = append(rq.warnings, fmt.Sprintf(format, args...))
}

// listOptions are the query parameters of list and watch.
type listOptions struct {
	label           labels.Selector
	field           fields.Selector
	limit           int64
	continueToken   string
	resourceVersion string
	watch           bool
	timeout         time.Duration
	sendInitial     bool
	bookmarks       bool
}

func (s *Server) parseListOptions(rq *request) (*listOptions, error) {
	q := rq.r.URL.Query()
	lo := &listOptions{label: labels.Everything(), field: fields.Everything()}
	if v := q.Get("labelSelector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return nil, errBadRequest("unable to parse requirement: %v", err)
		}
		lo.label = sel
	}
	if v := q.Get("fieldSelector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err != nil {
			return nil, errBadRequest("invalid field selector %q: %v", v, err)
		}
		if rq.def.checkFields != nil {
			if err := rq.def.checkFields(sel); err != nil {
				return nil, errBadRequest("%v", err)
			}
		} else {
			for _, r := range sel.Requirements() {
				if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
					return nil, errBadRequest("field label not supported: %s", r.Field)
				}
			}
		}
		lo.field = sel
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, errBadRequest("invalid limit %q", v)
		}
		lo.limit = n
	}
	lo.continueToken = q.Get("continue")
	lo.resourceVersion = q.Get("resourceVersion")
	lo.watch = q.Get("watch") == "true" || q.Get("watch") == "1"
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, errBadRequest("invalid timeoutSeconds %q", v)
		}
		lo.timeout = time.Duration(n) * time.Second
	}
	if lo.timeout <= 0 || lo.timeout > s.opts.MaxWatch {
		lo.timeout = s.opts.MaxWatch
	}
	lo.sendInitial = q.Get("sendInitialEvents") == "true"
	lo.bookmarks = q.Get("allowWatchBookmarks") == "true"
	return lo, nil
}

// matches reports whether obj is selected by lo's selectors.
func (lo *listOptions) matches(def *resourceDef, obj metav1.Object) bool {
	if !lo.label.Empty() && !lo.label.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	if !lo.field.Empty() {
		set := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
		if def.fieldFn != nil {
			for k, v := range def.fieldFn(obj) {
				set[k] = v
			}
		}
		if !lo.field.Matches(set) {
			return false
		}
	}
	return true
}

// ServeHTTP-level plumbing.

// writeJSON writes v with the status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		data, _ = json.Marshal(newStatus(int32(code), metav1.StatusReasonInternalError, err.Error()).status)
	}
	writeBody(w, code, append(data, '\n'))
}

// writeBody writes a JSON body that is already encoded, with the headers
// of every JSON answer.
func writeBody(w http.ResponseWriter, code int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	w.Write(data)
}

// writeError writes err as a Status.
func (s *Server) writeError(rq *request, err error) {
	gr, name := groupResource{}, ""
	if rq.def != nil {
		gr, name = rq.def.gr, rq.name
	}
	ae := toAPIError(gr, name, err)
	if ae.status.Code >= 500 && ae.status.Code != http.StatusNotImplemented && ae.status.Code != http.StatusServiceUnavailable {
		s.log.Error("request failed", "method", rq.r.Method, "path", rq.r.URL.Path, "err", err)
	} else {
		s.log.Debug("request refused", "method", rq.r.Method, "path", rq.r.URL.Path, "code", ae.status.Code, "err", err)
	}
	s.writeWarnings(rq)
	writeJSON(rq.w, int(ae.status.Code), ae.status)
}

func (s *Server) writeWarnings(rq *request) {
	for _, w := range rq.warnings {
		rq.w.Header().Add("Warning", `299 - `+strconv.Quote(w))
	}
	rq.warnings = nil
}

// decodeStrict decodes data into v, honouring the fieldValidation query
// parameter: Strict refuses unknown fields with 400, Warn (the default)
// adds a warning, Ignore ignores them.
func decodeStrict(rq *request, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return errBadRequest("the request body is not a valid %s: %v", rq.kind(), err)
	}
	mode := rq.r.URL.Query().Get("fieldValidation")
	if mode == "Ignore" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if mode == "Strict" {
			return errBadRequest("strict decoding error: %s", msg)
		}
		rq.warn("%s", msg)
		// Decode again leniently: the strict pass may have stopped half way.
		return json.Unmarshal(data, v)
	}
	return nil
}

func (rq *request) kind() string {
	if rq.def == nil {
		return "object"
	}
	return rq.def.kind
}

// typeMeta of the served resource.
func (d *resourceDef) apiVersion() string {
	if d.gr.group == "" {
		return d.version
	}
	return d.gr.group + "/" + d.version
}

// continueToken is the position after which a list page continues.
type continueToken struct {
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name"`
	// RV is the resourceVersion of the list the first page came from;
	// where the server kept that list (see snapshots), later pages come
	// from it, consistent with the first and without listing again.
	RV string `json:"rv,omitempty"`
}

// parseContinue decodes lo's continue token; ok is false without one.
func parseContinue(lo *listOptions) (tok continueToken, ok bool, err error) {
	if lo.continueToken == "" {
		return continueToken{}, false, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(lo.continueToken)
	if err == nil {
		err = json.Unmarshal(raw, &tok)
	}
	if err != nil {
		return continueToken{}, false, errBadRequest("invalid continue token")
	}
	return tok, true, nil
}

// paginate sorts items by namespace and name and cuts the page lo asks
// for; rv, the list's resourceVersion, goes into the continue token.
func paginate(items []metav1.Object, lo *listOptions, rv string) ([]metav1.Object, string, error) {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	tok, ok, err := parseContinue(lo)
	if err != nil {
		return nil, "", err
	}
	if ok {
		i := sort.Search(len(items), func(i int) bool {
			o := items[i]
			if o.GetNamespace() != tok.Namespace {
				return o.GetNamespace() > tok.Namespace
			}
			return o.GetName() > tok.Name
		})
		items = items[i:]
	}
	if lo.limit > 0 && int64(len(items)) > lo.limit {
		last := items[lo.limit-1]
		raw, _ := json.Marshal(continueToken{Namespace: last.GetNamespace(), Name: last.GetName(), RV: rv})
		return items[:lo.limit], base64.RawURLEncoding.EncodeToString(raw), nil
	}
	return items, "", nil
}
