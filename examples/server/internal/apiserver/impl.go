package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/repository"
)

// resourceImpl is what a served resource implements, on the objects of
// its kind as the generic server decodes them (pointers to the resource's
// Go type, which implement runtime.Object and metav1.Object).
type resourceImpl interface {
	get(ctx context.Context, rq *request) (metav1.Object, error)
	list(ctx context.Context, rq *request, lo *listOptions) ([]metav1.Object, string, error)
	update(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error)
}

// fullImpl is a resourceImpl that also creates, deletes and watches; a
// resource whose impl is not one is only read and updated
// (packagerevisionresources).
type fullImpl interface {
	resourceImpl
	create(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error)
	delete(ctx context.Context, rq *request, opts *metav1.DeleteOptions) (metav1.Object, error)
	watch(ctx context.Context, rq *request, lo *listOptions, send func(watchEvent) error) error
}

var (
	_ fullImpl     = (*prImpl)(nil)
	_ fullImpl     = (*storeImpl)(nil)
	_ resourceImpl = (*prrImpl)(nil)
)

// updateFunc updates a subresource (packagerevisions/approval, status)
// of the object its resource's get returns.
type updateFunc func(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error)

// connectImpl serves a read-only subresource of cad's own (dependencies,
// livestatus) whose object is not a kind of the API: it reads the HTTP
// request's query and its answer is written as JSON.
type connectImpl interface {
	connect(ctx context.Context, r *http.Request, ns, name string) (any, error)
}

// resourceDef describes a served resource for routing and discovery.
type resourceDef struct {
	gr           schema.GroupResource
	version      string
	kind         string
	listKind     string
	singular     string
	namespaced   bool
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

// subresourceDef is a subresource: its update, or a GET of cad's own.
type subresourceDef struct {
	update  updateFunc
	connect connectImpl
}

// watchEvent is one event of a watch: type and object. An event with an
// empty type sends nothing but starts the response stream (its headers),
// which clients wait for before they consider the watch established.
type watchEvent struct {
	typ string
	obj metav1.Object
}

// request is one API request being served.
type request struct {
	def      *resourceDef
	ns, name string
	warnings []string
	// dryRun: check and answer, write nothing.
	dryRun bool
	// dry is the write batch a dry run writes into and reads through,
	// discarded at its end (see resourceStorage.writeRequest); nil
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
	sendInitial     bool
	bookmarks       bool
}

// listOptionsOf converts the generic server's list options.
func listOptionsOf(o *metainternalversion.ListOptions) *listOptions {
	lo := &listOptions{label: labels.Everything(), field: fields.Everything()}
	if o == nil {
		return lo
	}
	if o.LabelSelector != nil {
		lo.label = o.LabelSelector
	}
	if o.FieldSelector != nil {
		lo.field = o.FieldSelector
	}
	lo.limit = o.Limit
	lo.continueToken = o.Continue
	lo.resourceVersion = o.ResourceVersion
	lo.watch = o.Watch
	lo.sendInitial = o.SendInitialEvents != nil && *o.SendInitialEvents
	lo.bookmarks = o.AllowWatchBookmarks
	return lo
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

// gvk is the served kind of the resource.
func (d *resourceDef) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: d.gr.Group, Version: d.version, Kind: d.kind}
}

// apiVersion is the served apiVersion of the resource.
func (d *resourceDef) apiVersion() string {
	if d.gr.Group == "" {
		return d.version
	}
	return d.gr.Group + "/" + d.version
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
