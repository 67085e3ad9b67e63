package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
)

// resourceStorage is the rest.Storage of one resource: the generic API
// server's handlers call it with decoded objects and it calls the
// resource's resourceImpl, which reads and writes the engine or the store.
type resourceStorage struct {
	s      *Server
	def    *resourceDef
	scheme *runtime.Scheme
	gvk    schema.GroupVersionKind
}

var (
	_ rest.Storage                  = (*resourceStorage)(nil)
	_ rest.Scoper                   = (*resourceStorage)(nil)
	_ rest.Getter                   = (*resourceStorage)(nil)
	_ rest.Lister                   = (*resourceStorage)(nil)
	_ rest.Creater                  = (*resourceStorage)(nil)
	_ rest.Updater                  = (*resourceStorage)(nil)
	_ rest.GracefulDeleter          = (*resourceStorage)(nil)
	_ rest.Watcher                  = (*resourceStorage)(nil)
	_ rest.SingularNameProvider     = (*resourceStorage)(nil)
	_ rest.ShortNamesProvider       = (*resourceStorage)(nil)
	_ rest.CategoriesProvider       = (*resourceStorage)(nil)
	_ rest.GroupVersionKindProvider = (*resourceStorage)(nil)
)

// newResourceStorage returns the storage of d. The verbs d does not
// serve are left out of the returned value's method set, so that the
// generic server neither routes nor advertises them.
func newResourceStorage(s *Server, d *resourceDef, sc *runtime.Scheme) rest.Storage {
	rs := &resourceStorage{s: s, def: d, scheme: sc, gvk: schema.GroupVersionKind{Group: d.gr.group, Version: d.version, Kind: d.kind}}
	if hasVerb(d, "create") {
		return rs
	}
	// packagerevisionresources: get, list, update and patch.
	return &readUpdateStorage{rs}
}

// readUpdateStorage serves get, list and update (and so patch) of a
// resource that clients neither create, delete nor watch
// (packagerevisionresources).
type readUpdateStorage struct{ rs *resourceStorage }

func (r *readUpdateStorage) New() runtime.Object   { return r.rs.New() }
func (r *readUpdateStorage) Destroy()              {}
func (r *readUpdateStorage) NamespaceScoped() bool { return r.rs.NamespaceScoped() }
func (r *readUpdateStorage) GetSingularName() string {
	return r.rs.GetSingularName()
}
func (r *readUpdateStorage) ShortNames() []string { return r.rs.ShortNames() }
func (r *readUpdateStorage) Categories() []string { return r.rs.Categories() }
func (r *readUpdateStorage) Get(ctx context.Context, name string, o *metav1.GetOptions) (runtime.Object, error) {
	return r.rs.Get(ctx, name, o)
}
func (r *readUpdateStorage) NewList() runtime.Object { return r.rs.NewList() }
func (r *readUpdateStorage) List(ctx context.Context, o *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.rs.List(ctx, o)
}
func (r *readUpdateStorage) ConvertToTable(ctx context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	return r.rs.ConvertToTable(ctx, obj, opts)
}
func (r *readUpdateStorage) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, cv rest.ValidateObjectFunc, uv rest.ValidateObjectUpdateFunc, force bool, o *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.rs.Update(ctx, name, objInfo, cv, uv, false, o)
}

func (rs *resourceStorage) New() runtime.Object {
	obj, err := rs.scheme.New(rs.gvk)
	must(err)
	return obj
}

func (rs *resourceStorage) NewList() runtime.Object {
	obj, err := rs.scheme.New(rs.gvk.GroupVersion().WithKind(rs.def.listKind))
	must(err)
	return obj
}

func (rs *resourceStorage) Destroy()                {}
func (rs *resourceStorage) NamespaceScoped() bool   { return rs.def.namespaced }
func (rs *resourceStorage) GetSingularName() string { return rs.def.singular }
func (rs *resourceStorage) ShortNames() []string    { return rs.def.shortNames }
func (rs *resourceStorage) Categories() []string    { return rs.def.categories }
func (rs *resourceStorage) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return rs.gvk
}

// request builds the resourceImpl's request of a call.
func (rs *resourceStorage) request(ctx context.Context, name string) *request {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if !rs.def.namespaced {
		// A request for namespaces/NAME carries NAME as its namespace.
		ns = ""
	}
	return &request{r: syntheticRequest(ctx), def: rs.def, ns: ns, name: name}
}

// finish sends the request's warnings and turns the impl's error into
// the Status error the generic server writes.
func (rs *resourceStorage) finish(ctx context.Context, rq *request, err error) error {
	for _, w := range rq.warnings {
		warning.AddWarning(ctx, "", w)
	}
	if err == nil {
		return nil
	}
	return statusError(rs.def.gr, rq.name, err)
}

// statusError is the *apierrors.StatusError of an impl's error.
func statusError(gr groupResource, name string, err error) error {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se
	}
	ae := toAPIError(gr, name, err)
	return &apierrors.StatusError{ErrStatus: ae.status}
}

// typed returns obj as the resource's Go type.
func (rs *resourceStorage) typed(obj metav1.Object) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		ro, ok := obj.(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not a runtime.Object", obj)
		}
		return ro, nil
	}
	out := rs.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(rs.gvk)
	return out, nil
}

// body is the JSON an impl reads of a decoded object.
func (rs *resourceStorage) body(obj runtime.Object) ([]byte, error) {
	obj.GetObjectKind().SetGroupVersionKind(rs.gvk)
	return json.Marshal(obj)
}

func (rs *resourceStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	rq := rs.request(ctx, name)
	obj, err := rs.def.impl.get(ctx, rq)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, err
	}
	return rs.typed(obj)
}

// listOptions converts the generic server's list options.
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
	if o.TimeoutSeconds != nil {
		lo.timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	lo.sendInitial = o.SendInitialEvents != nil && *o.SendInitialEvents
	lo.bookmarks = o.AllowWatchBookmarks
	return lo
}

// checkSelector checks lo's field selector as the resource does (400).
func (rs *resourceStorage) checkSelector(lo *listOptions) error {
	if rs.def.checkFields == nil || lo.field.Empty() {
		return nil
	}
	if err := rs.def.checkFields(lo.field); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

func (rs *resourceStorage) List(ctx context.Context, o *metainternalversion.ListOptions) (runtime.Object, error) {
	rq := rs.request(ctx, "")
	lo := listOptionsOf(o)
	if err := rs.checkSelector(lo); err != nil {
		return nil, err
	}
	if lo.continueToken != "" {
		if _, _, err := parseContinue(lo); err != nil {
			return nil, rs.finish(ctx, rq, err)
		}
	}
	objs, rv, err := rs.def.impl.list(ctx, rq, lo)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, err
	}
	page, cont, err := paginate(objs, lo, rv)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, err
	}
	list := rs.NewList()
	items := make([]runtime.Object, 0, len(page))
	for _, obj := range page {
		t, err := rs.typed(obj)
		if err != nil {
			return nil, err
		}
		items = append(items, t)
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(rv)
	lm.SetContinue(cont)
	return list, nil
}

func (rs *resourceStorage) ConvertToTable(ctx context.Context, obj, _ runtime.Object) (*metav1.Table, error) {
	var objs []metav1.Object
	var rv, cont string
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			m, err := meta.Accessor(it)
			if err != nil {
				return nil, err
			}
			objs = append(objs, m)
		}
		if lm, err := meta.ListAccessor(obj); err == nil {
			rv, cont = lm.GetResourceVersion(), lm.GetContinue()
		}
	} else {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		objs = []metav1.Object{m}
		rv = m.GetResourceVersion()
	}
	// The generic server chooses what each row carries of its object
	// (includeObject): it needs the object itself.
	originals := make([]runtime.Object, len(objs))
	for i, o := range objs {
		originals[i], _ = o.(runtime.Object)
	}
	if _, stored := rs.def.impl.(*storeImpl); stored {
		// The rows of stored objects read them unstructured.
		for i, o := range objs {
			ro, ok := o.(runtime.Object)
			if !ok {
				continue
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ro)
			if err != nil {
				return nil, err
			}
			objs[i] = &unstructured.Unstructured{Object: m}
		}
	}
	t := rs.s.table(rs.def, objs, rv, cont, true)
	for i := range t.Rows {
		t.Rows[i].Object = runtime.RawExtension{Object: originals[i]}
	}
	return t, nil
}

func dryRun(opts []string) bool { return len(opts) > 0 }

func (rs *resourceStorage) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, o *metav1.CreateOptions) (runtime.Object, error) {
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rq := rs.request(ctx, m.GetName())
	rq.dryRun = o != nil && dryRun(o.DryRun)
	body, err := rs.body(obj)
	if err != nil {
		return nil, err
	}
	if rq.dryRun {
		var spec struct {
			Spec struct {
				Repository string `json:"repository"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(body, &spec)
		end, err := rs.beginDryRun(ctx, rq, spec.Spec.Repository)
		if err != nil {
			return nil, rs.finish(ctx, rq, err)
		}
		defer end()
	}
	out, err := rs.def.impl.create(ctx, rq, body)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, err
	}
	return rs.typed(out)
}

func (rs *resourceStorage) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, o *metav1.UpdateOptions) (runtime.Object, bool, error) {
	rq := rs.request(ctx, name)
	rq.dryRun = o != nil && dryRun(o.DryRun)
	if rq.dryRun {
		end, err := rs.beginDryRun(ctx, rq, repositoryOfName(name))
		if err != nil {
			return nil, false, rs.finish(ctx, rq, err)
		}
		defer end()
	}
	cur, err := rs.def.impl.get(ctx, rq)
	var old runtime.Object
	switch {
	case err == nil:
		if old, err = rs.typed(cur); err != nil {
			return nil, false, err
		}
	case forceAllowCreate && apierrors.IsNotFound(statusError(rs.def.gr, name, err)):
		// Server-side apply of an object that does not exist creates it.
		obj, err := objInfo.UpdatedObject(ctx, nil)
		if err != nil {
			return nil, false, err
		}
		// Create takes its own request, and its own dry run's batch.
		out, err := rs.Create(ctx, obj, createValidation, &metav1.CreateOptions{DryRun: optsDryRun(o)})
		return out, err == nil, err
	default:
		return nil, false, rs.finish(ctx, rq, err)
	}
	obj, err := objInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, false, err
	}
	if rs.def.gr == grPackageRevisions {
		// As Porch: no unconditional update of a package revision (a
		// patch or an apply carries the current resourceVersion).
		if m, err := meta.Accessor(obj); err == nil && m.GetResourceVersion() == "" {
			e := errInvalid(grPackageRevisions, porchapi.KindPackageRevision, name,
				"metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")
			e.status.Message = porchapi.ResourceVersionRequiredMessage
			return nil, false, rs.finish(ctx, rq, e)
		}
	}
	if updateValidation != nil {
		if err := updateValidation(ctx, obj, old); err != nil {
			return nil, false, err
		}
	}
	body, err := rs.body(obj)
	if err != nil {
		return nil, false, err
	}
	out, err := rs.def.impl.update(ctx, rq, body)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, false, err
	}
	t, err := rs.typed(out)
	return t, false, err
}

func optsDryRun(o *metav1.UpdateOptions) []string {
	if o == nil {
		return nil
	}
	return o.DryRun
}

func (rs *resourceStorage) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, o *metav1.DeleteOptions) (runtime.Object, bool, error) {
	rq := rs.request(ctx, name)
	if o == nil {
		o = &metav1.DeleteOptions{}
	}
	rq.dryRun = dryRun(o.DryRun)
	if rq.dryRun {
		end, err := rs.beginDryRun(ctx, rq, repositoryOfName(name))
		if err != nil {
			return nil, false, rs.finish(ctx, rq, err)
		}
		defer end()
	}
	if deleteValidation != nil {
		cur, err := rs.def.impl.get(ctx, rq)
		if err = rs.finish(ctx, rq, err); err != nil {
			return nil, false, err
		}
		t, err := rs.typed(cur)
		if err != nil {
			return nil, false, err
		}
		if err := deleteValidation(ctx, t); err != nil {
			return nil, false, err
		}
	}
	out, err := rs.def.impl.delete(ctx, rq, o)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, false, err
	}
	if out == nil {
		return &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: name, Group: rs.def.gr.group, Kind: rs.def.gr.resource}}, true, nil
	}
	t, err := rs.typed(out)
	if err != nil {
		return nil, false, err
	}
	// An object that still has finalizers is returned as it is now, not
	// deleted yet.
	m, _ := meta.Accessor(t)
	return t, m == nil || m.GetDeletionTimestamp() == nil, nil
}

func (rs *resourceStorage) Watch(ctx context.Context, o *metainternalversion.ListOptions) (watch.Interface, error) {
	rq := rs.request(ctx, "")
	lo := listOptionsOf(o)
	if err := rs.checkSelector(lo); err != nil {
		return nil, err
	}
	// Options.MaxWatch bounds a watch whatever timeoutSeconds it asked.
	ctx, cancel := context.WithTimeout(ctx, rs.s.opts.MaxWatch)
	w := &implWatch{ch: make(chan watch.Event), cancel: cancel, done: make(chan struct{})}
	started := make(chan error, 1)
	var once sync.Once
	start := func(err error) { once.Do(func() { started <- err }) }
	go func() {
		defer close(w.ch)
		defer close(w.done)
		err := rs.def.impl.watch(ctx, rq, lo, func(ev watchEvent) error {
			start(nil)
			if ev.typ == "" {
				return nil
			}
			var obj runtime.Object
			if ev.typ == string(watch.Bookmark) {
				// The end of the initial events is a bookmark only a
				// watch list asked for; other bookmarks only a watch
				// that allows them.
				if !lo.bookmarks || (!lo.sendInitial && ev.obj != nil && ev.obj.GetAnnotations()["k8s.io/initial-events-end"] != "") {
					return nil
				}
				t := rs.New()
				m, _ := meta.Accessor(t)
				if m != nil && ev.obj != nil {
					m.SetResourceVersion(ev.obj.GetResourceVersion())
					m.SetAnnotations(ev.obj.GetAnnotations())
				}
				obj = t
			} else {
				t, err := rs.typed(ev.obj)
				if err != nil {
					return err
				}
				obj = t
			}
			select {
			case w.ch <- watch.Event{Type: watch.EventType(ev.typ), Object: obj}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && ctx.Err() == nil {
			start(rs.finish(ctx, rq, err))
			se := statusError(rs.def.gr, "", err)
			var st *apierrors.StatusError
			if errors.As(se, &st) {
				select {
				case w.ch <- watch.Event{Type: watch.Error, Object: &st.ErrStatus}:
				case <-ctx.Done():
				}
			}
			return
		}
		start(nil)
	}()
	if err := <-started; err != nil {
		cancel()
		return nil, err
	}
	return w, nil
}

// implWatch is the watch.Interface of a resourceImpl's watch.
type implWatch struct {
	ch     chan watch.Event
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *implWatch) Stop() {
	w.cancel()
	<-w.done
}

func (w *implWatch) ResultChan() <-chan watch.Event { return w.ch }

// subresourceStorage serves a subresource: get and update (and so patch
// and apply) through the subresource's impl.
type subresourceStorage struct {
	rs  *resourceStorage
	sub string
	sd  subresourceDef
}

func newSubresourceStorage(s *Server, d *resourceDef, name string, sd subresourceDef, sc *runtime.Scheme) rest.Storage {
	rs := &resourceStorage{s: s, def: d, scheme: sc, gvk: schema.GroupVersionKind{Group: d.gr.group, Version: d.version, Kind: d.kind}}
	ss := &subresourceStorage{rs: rs, sub: name, sd: sd}
	if slices.Contains(sd.verbs, "update") {
		return ss
	}
	return &subresourceConnecter{ss}
}

// subresourceConnecter serves a read-only subresource of cad's own
// (dependencies, livestatus) whose object is not a kind of the API: the
// impl reads the request's query parameters and the object is written as
// JSON.
type subresourceConnecter struct{ ss *subresourceStorage }

var _ rest.Connecter = (*subresourceConnecter)(nil)

func (c *subresourceConnecter) New() runtime.Object { return c.ss.New() }
func (c *subresourceConnecter) Destroy()            {}
func (c *subresourceConnecter) NewConnectOptions() (runtime.Object, bool, string) {
	return nil, false, ""
}
func (c *subresourceConnecter) ConnectMethods() []string { return []string{"GET"} }

func (c *subresourceConnecter) Connect(ctx context.Context, name string, _ runtime.Object, r rest.Responder) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ns, _ := genericapirequest.NamespaceFrom(ctx)
		rq := &request{r: req, w: w, def: c.ss.rs.def, ns: ns, name: name, sub: c.ss.sub}
		obj, err := c.ss.sd.impl.getSub(req.Context(), rq)
		if err != nil {
			r.Error(statusError(c.ss.rs.def.gr, name, err))
			return
		}
		writeJSON(w, http.StatusOK, obj)
	}), nil
}

func (ss *subresourceStorage) New() runtime.Object { return ss.rs.New() }
func (ss *subresourceStorage) Destroy()            {}

func (ss *subresourceStorage) request(ctx context.Context, name string) *request {
	rq := ss.rs.request(ctx, name)
	rq.sub = ss.sub
	return rq
}

func (ss *subresourceStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	rq := ss.request(ctx, name)
	obj, err := ss.sd.impl.getSub(ctx, rq)
	if err = ss.rs.finish(ctx, rq, err); err != nil {
		return nil, err
	}
	if ro, ok := obj.(runtime.Object); ok {
		if _, isU := obj.(*unstructured.Unstructured); !isU {
			return ro, nil
		}
	}
	return ss.rs.typed(obj)
}

func (ss *subresourceStorage) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, o *metav1.UpdateOptions) (runtime.Object, bool, error) {
	rq := ss.request(ctx, name)
	rq.dryRun = o != nil && dryRun(o.DryRun)
	if rq.dryRun {
		end, err := ss.rs.beginDryRun(ctx, rq, repositoryOfName(name))
		if err != nil {
			return nil, false, ss.rs.finish(ctx, rq, err)
		}
		defer end()
	}
	cur, err := ss.sd.impl.getSub(ctx, rq)
	if err = ss.rs.finish(ctx, rq, err); err != nil {
		return nil, false, err
	}
	old, err := ss.rs.typed(cur)
	if err != nil {
		return nil, false, err
	}
	obj, err := objInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, false, err
	}
	if updateValidation != nil {
		if err := updateValidation(ctx, obj, old); err != nil {
			return nil, false, err
		}
	}
	body, err := ss.rs.body(obj)
	if err != nil {
		return nil, false, err
	}
	out, err := ss.sd.impl.updateSub(ctx, rq, body)
	if err = ss.rs.finish(ctx, rq, err); err != nil {
		return nil, false, err
	}
	t, err := ss.rs.typed(out)
	return t, false, err
}

// beginDryRun starts the dry run of a write to a package revision of
// repository repoName: it sets rq.dry to a write batch of the repository
// (repository.Batch), through which the request's Engine (engineFor)
// writes and reads, and returns the function that ends the dry run by
// discarding the batch, so that the dry run checks and answers everything
// a write would without writing anything. A repository that cannot batch
// refuses the dry run (400): its writes could not be taken back. Stored
// objects (storeImpl) do their dry runs themselves; for them, and when
// the repository is not open (the write fails on its own), rq is left as
// it is.
func (rs *resourceStorage) beginDryRun(ctx context.Context, rq *request, repoName string) (func(), error) {
	if _, stored := rs.def.impl.(*storeImpl); stored {
		return func() {}, nil
	}
	e, ok := rs.s.entry(rq.ns, repoName)
	if !ok || e.repo == nil {
		return func() {}, nil
	}
	b, err := repository.BeginBatch(ctx, e.repo)
	switch {
	case errors.Is(err, repository.ErrNotSupported):
		return nil, errBadRequest("dry run: repository %q cannot hold writes in a batch, so cad's server cannot run a write to it without making it", repoName)
	case err != nil:
		return nil, err
	}
	rq.dry = b
	return b.Discard, nil
}

// repositoryOfName is the repository a package revision's name starts
// with; "" when the name is not one.
func repositoryOfName(name string) string {
	k, err := porchapi.ParseName(name)
	if err != nil {
		return ""
	}
	return k.Repository
}
