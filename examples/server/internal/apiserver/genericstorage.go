package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
)

// resourceStorage is the rest.Storage of one resource, or of one of its
// subresources: the generic API server's handlers call it with decoded
// objects and it calls the resource's resourceImpl, which reads and writes
// the engine or the store.
type resourceStorage struct {
	s      *Server
	def    *resourceDef
	scheme *runtime.Scheme
	// full is def.impl when it also creates, deletes and watches.
	full fullImpl
	// sub is the update of the subresource served (status, approval);
	// nil for the resource itself.
	sub updateFunc
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

// The generic server routes and advertises the verbs of a storage's method
// set. A resource that clients only get, list and update (and so patch),
// packagerevisionresources, is a *resourceStorage seen through readUpdater;
// a subresource through getUpdater.
type (
	readUpdater interface {
		rest.Storage
		rest.Scoper
		rest.Getter
		rest.Lister
		rest.Updater
		rest.TableConvertor
		rest.SingularNameProvider
		rest.ShortNamesProvider
		rest.CategoriesProvider
	}
	getUpdater interface {
		rest.Storage
		rest.Getter
		rest.Updater
	}
)

// newResourceStorage returns the storage of d, which serves create, delete
// and watch only when d's impl does (a fullImpl).
func newResourceStorage(s *Server, d *resourceDef, sc *runtime.Scheme) rest.Storage {
	rs := &resourceStorage{s: s, def: d, scheme: sc}
	if full, ok := d.impl.(fullImpl); ok {
		rs.full = full
		return rs
	}
	return struct{ readUpdater }{rs}
}

// newSubresourceStorage returns the storage of d's subresource sd: a GET
// of cad's own for a connectImpl, else get (the resource's object) and
// update through sd.update.
func newSubresourceStorage(s *Server, d *resourceDef, sd subresourceDef, sc *runtime.Scheme) rest.Storage {
	rs := &resourceStorage{s: s, def: d, scheme: sc, sub: sd.update}
	if sd.connect != nil {
		return &subresourceConnecter{rs, sd.connect}
	}
	return struct{ getUpdater }{rs}
}

func (rs *resourceStorage) New() runtime.Object {
	obj, err := rs.scheme.New(rs.def.gvk())
	must(err)
	return obj
}

func (rs *resourceStorage) NewList() runtime.Object {
	obj, err := rs.scheme.New(rs.def.gvk().GroupVersion().WithKind(rs.def.listKind))
	must(err)
	return obj
}

func (rs *resourceStorage) Destroy()                {}
func (rs *resourceStorage) NamespaceScoped() bool   { return rs.def.namespaced }
func (rs *resourceStorage) GetSingularName() string { return rs.def.singular }
func (rs *resourceStorage) ShortNames() []string    { return rs.def.shortNames }
func (rs *resourceStorage) Categories() []string    { return rs.def.categories }
func (rs *resourceStorage) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return rs.def.gvk()
}

// request builds the resourceImpl's request of a call; dry is the call's
// dryRun option.
func (rs *resourceStorage) request(ctx context.Context, name string, dry []string) *request {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	if !rs.def.namespaced {
		// A request for namespaces/NAME carries NAME as its namespace.
		ns = ""
	}
	return &request{def: rs.def, ns: ns, name: name, dryRun: len(dry) > 0}
}

// finish sends the request's warnings and turns the impl's error into
// the Status error the generic server writes.
func (rs *resourceStorage) finish(ctx context.Context, rq *request, err error) error {
	for _, w := range rq.warnings {
		warning.AddWarning(ctx, "", w)
	}
	rq.warnings = nil
	if err == nil {
		return nil
	}
	return toAPIError(rs.def.gr, rq.name, err)
}

// result returns an impl's object as the runtime.Object it is.
func result(obj metav1.Object, err error) (runtime.Object, error) {
	if err != nil || obj == nil {
		return nil, err
	}
	return obj.(runtime.Object), nil
}

func (rs *resourceStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	rq := rs.request(ctx, name, nil)
	obj, err := rs.def.impl.get(ctx, rq)
	return result(obj, rs.finish(ctx, rq, err))
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
	rq := rs.request(ctx, "", nil)
	lo := listOptionsOf(o)
	if err := rs.checkSelector(lo); err != nil {
		return nil, err
	}
	page, rv, cont, err := listPage(ctx, rq, lo)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, err
	}
	items := make([]runtime.Object, len(page))
	for i, obj := range page {
		items[i] = obj.(runtime.Object)
	}
	list := rs.NewList()
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

func (rs *resourceStorage) ConvertToTable(_ context.Context, obj, _ runtime.Object) (*metav1.Table, error) {
	items, rv, cont := []runtime.Object{obj}, "", ""
	if lm, err := meta.ListAccessor(obj); err == nil && meta.IsListType(obj) {
		rv, cont = lm.GetResourceVersion(), lm.GetContinue()
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
	} else if m, err := meta.Accessor(obj); err == nil {
		rv = m.GetResourceVersion()
	}
	objs := make([]metav1.Object, len(items))
	for i, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		objs[i] = m
	}
	return table(rs.def, objs, rv, cont, true), nil
}

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
	repo := ""
	if pr, ok := obj.(*porchapi.PackageRevision); ok {
		repo = pr.Spec.RepositoryName
	}
	rq, end, err := rs.writeRequest(ctx, m.GetName(), o.DryRun, repo)
	if err != nil {
		return nil, err
	}
	defer end()
	out, err := rs.full.create(ctx, rq, obj)
	return result(out, rs.finish(ctx, rq, err))
}

// Update serves an update (and so a patch) of the resource or of the
// subresource. Server-side apply of a resource that does not exist
// creates it, where the resource creates.
func (rs *resourceStorage) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, o *metav1.UpdateOptions) (runtime.Object, bool, error) {
	rq, end, err := rs.writeRequest(ctx, name, o.DryRun, repositoryOfName(name))
	if err != nil {
		return nil, false, err
	}
	defer end()
	cur, err := rs.def.impl.get(ctx, rq)
	if err = rs.finish(ctx, rq, err); err != nil {
		if !forceAllowCreate || rs.full == nil || rs.sub != nil || !apierrors.IsNotFound(err) {
			return nil, false, err
		}
		obj, err := objInfo.UpdatedObject(ctx, nil)
		if err != nil {
			return nil, false, err
		}
		// Create takes its own request, and its own dry run's batch.
		out, err := rs.Create(ctx, obj, createValidation, &metav1.CreateOptions{DryRun: o.DryRun})
		return out, err == nil, err
	}
	old := cur.(runtime.Object)
	obj, err := objInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, false, err
	}
	update := rs.sub
	if update == nil {
		update = rs.def.impl.update
		if rs.def.gr == grPackageRevisions {
			// As Porch: no unconditional update of a package revision (a
			// patch or an apply carries the current resourceVersion).
			if m, err := meta.Accessor(obj); err == nil && m.GetResourceVersion() == "" {
				return nil, false, errResourceVersionRequired(grPackageRevisions, porchapi.KindPackageRevision, name)
			}
		}
	}
	if updateValidation != nil {
		if err := updateValidation(ctx, obj, old); err != nil {
			return nil, false, err
		}
	}
	out, err := update(ctx, rq, obj)
	t, err := result(out, rs.finish(ctx, rq, err))
	return t, false, err
}

// errResourceVersionRequired refuses an update without
// metadata.resourceVersion: Invalid, with the field in its causes, in
// Porch's words.
func errResourceVersionRequired(gr schema.GroupResource, kind, name string) error {
	e := errInvalid(gr, kind, name, "metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")
	e.ErrStatus.Message = porchapi.ResourceVersionRequiredMessage
	return e
}

func (rs *resourceStorage) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, o *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if o == nil {
		o = &metav1.DeleteOptions{}
	}
	rq, end, err := rs.writeRequest(ctx, name, o.DryRun, repositoryOfName(name))
	if err != nil {
		return nil, false, err
	}
	defer end()
	if deleteValidation != nil {
		cur, err := result(rs.def.impl.get(ctx, rq))
		if err = rs.finish(ctx, rq, err); err != nil {
			return nil, false, err
		}
		if err := deleteValidation(ctx, cur); err != nil {
			return nil, false, err
		}
	}
	out, err := rs.full.delete(ctx, rq, o)
	if err = rs.finish(ctx, rq, err); err != nil {
		return nil, false, err
	}
	if out == nil {
		return &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: name, Group: rs.def.gr.Group, Kind: rs.def.gr.Resource}}, true, nil
	}
	// An object that still has finalizers is returned as it is now, not
	// deleted yet.
	return out.(runtime.Object), out.GetDeletionTimestamp() == nil, nil
}

func (rs *resourceStorage) Watch(ctx context.Context, o *metainternalversion.ListOptions) (watch.Interface, error) {
	rq := rs.request(ctx, "", nil)
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
		err := rs.full.watch(ctx, rq, lo, func(ev watchEvent) error {
			start(nil)
			if ev.typ == "" {
				return nil
			}
			obj, _ := ev.obj.(runtime.Object)
			if obj != nil && ev.typ != string(watch.Bookmark) {
				// apiserver's watch encoder sets the object's kind in
				// place, and the object may be one the list caches
				// encode at the same time: it gets its own copy.
				obj = obj.DeepCopyObject()
			}
			if ev.typ == string(watch.Bookmark) {
				// The end of the initial events is a bookmark only a
				// watch list asked for; other bookmarks only a watch
				// that allows them.
				if !lo.bookmarks || (!lo.sendInitial && ev.obj.GetAnnotations()["k8s.io/initial-events-end"] != "") {
					return nil
				}
				obj = rs.New()
				m, _ := meta.Accessor(obj)
				m.SetResourceVersion(ev.obj.GetResourceVersion())
				m.SetAnnotations(ev.obj.GetAnnotations())
			}
			select {
			case w.ch <- watch.Event{Type: watch.EventType(ev.typ), Object: obj}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && ctx.Err() == nil {
			err = rs.finish(ctx, rq, err)
			start(err)
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				s := st.Status()
				select {
				case w.ch <- watch.Event{Type: watch.Error, Object: &s}:
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

// subresourceConnecter serves a connectImpl's GET.
type subresourceConnecter struct {
	rs *resourceStorage
	c  connectImpl
}

var _ rest.Connecter = (*subresourceConnecter)(nil)

func (c *subresourceConnecter) New() runtime.Object { return c.rs.New() }
func (c *subresourceConnecter) Destroy()            {}
func (c *subresourceConnecter) NewConnectOptions() (runtime.Object, bool, string) {
	return nil, false, ""
}
func (c *subresourceConnecter) ConnectMethods() []string { return []string{"GET"} }

func (c *subresourceConnecter) Connect(ctx context.Context, name string, _ runtime.Object, r rest.Responder) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ns, _ := genericapirequest.NamespaceFrom(ctx)
		obj, err := c.c.connect(req.Context(), req, ns, name)
		var data []byte
		if err == nil {
			data, err = json.Marshal(obj)
		}
		if err != nil {
			r.Error(toAPIError(c.rs.def.gr, name, err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache, private")
		w.Write(append(data, '\n'))
	}), nil
}

// writeRequest builds the request of a write to object name, a package
// revision of repository repoName for the engine's resources, and returns
// it with the function that ends it. A dry run (dry, the call's dryRun
// option) of a write to a package revision sets rq.dry to a write batch of
// the repository (repository.Batch), through which the request's Engine
// (engineFor) writes and reads, and the function ends it by discarding the
// batch, so that the dry run checks and answers everything a write would
// without writing anything. A repository that cannot batch refuses the
// dry run (400): its writes could not be taken back. Stored objects
// (storeImpl) do their dry runs themselves; for them, and when the
// repository is not open (the write fails on its own), rq.dry stays nil.
func (rs *resourceStorage) writeRequest(ctx context.Context, name string, dry []string, repoName string) (*request, func(), error) {
	rq := rs.request(ctx, name, dry)
	if _, stored := rs.def.impl.(*storeImpl); stored || !rq.dryRun {
		return rq, func() {}, nil
	}
	e, ok := rs.s.entry(rq.ns, repoName)
	if !ok {
		return rq, func() {}, nil
	}
	repo, err := rs.s.acquire(ctx, e)
	if err != nil {
		return rq, func() {}, nil
	}
	b, err := repository.BeginBatch(ctx, repo)
	switch {
	case errors.Is(err, repository.ErrNotSupported):
		err = errBadRequest("dry run: repository %q cannot hold writes in a batch, so cad's server cannot run a write to it without making it", repoName)
	case err != nil:
		err = toAPIError(rs.def.gr, name, err)
	default:
		rq.dry = b
		return rq, b.Discard, nil
	}
	return nil, nil, err
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
