package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/server/internal/store"
	"github.com/configasdata/cad/repository"
)

// Store resource keys.
const (
	resNamespaces         = "namespaces"
	resSecrets            = "secrets"
	resRepositories       = "repositories"
	resPackageVariants    = "packagevariants"
	resPackageVariantSets = "packagevariantsets"
)

// toUnstructured returns the object or struct v points to as unstructured.
func toUnstructured(v any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	return &unstructured.Unstructured{Object: m}, err
}

// fromUnstructured fills the object or struct v points to from u.
func fromUnstructured(u *unstructured.Unstructured, v any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v)
}

func repositoryFrom(u *unstructured.Unstructured) (*porchapi.Repository, error) {
	var r porchapi.Repository
	if err := fromUnstructured(u, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func newNamespace(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"finalizers": []any{"kubernetes"}},
		"status":   map[string]any{"phase": "Active"},
	}}
}

func sortEntries(es []*repoEntry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].ns != es[j].ns {
			return es[i].ns < es[j].ns
		}
		return es[i].name < es[j].name
	})
}

// storeImpl serves a resource kept in the store, which holds its objects
// unstructured. Hooks specialise it.
type storeImpl struct {
	s   *Server
	res string
	def *resourceDef // set by resourceDefs
	// keepStatus: the client's status is ignored, the stored one kept.
	keepStatus bool
	// prepare checks and completes an object of the resource's Go type
	// before it is written; old is nil on create.
	prepare func(ctx context.Context, rq *request, obj, old runtime.Object) error
	// written runs after a successful create or update; a non-nil result
	// replaces the object returned to the client.
	written func(ctx context.Context, rq *request, obj, old *unstructured.Unstructured) *unstructured.Unstructured
	// deleting runs before a delete; deleted after it.
	deleting func(ctx context.Context, rq *request, obj *unstructured.Unstructured) error
	deleted  func(ctx context.Context, rq *request, obj *unstructured.Unstructured)
}

// typed returns a stored object as the resource's Go type.
func (si *storeImpl) typed(u *unstructured.Unstructured, err error) (metav1.Object, error) {
	if err != nil {
		return nil, err
	}
	gvk := si.def.gvk()
	obj, err := si.s.scheme.New(gvk)
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
	}
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj.(metav1.Object), nil
}

// unstructured returns obj, of the resource's Go type, as the store keeps
// it in namespace ns.
func (si *storeImpl) unstructured(obj runtime.Object, ns string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(si.def.apiVersion())
	u.SetKind(si.def.kind)
	u.SetNamespace(ns)
	return u, nil
}

func (si *storeImpl) get(ctx context.Context, rq *request) (metav1.Object, error) {
	return si.typed(si.s.store.Get(si.res, rq.ns, rq.name))
}

func (si *storeImpl) list(ctx context.Context, rq *request, lo *listOptions) ([]metav1.Object, string, error) {
	ns := rq.ns
	if ns == "" {
		ns = "*"
	}
	objs, rv := si.s.store.List(si.res, ns)
	var out []metav1.Object
	for _, u := range objs {
		if lo.matches(rq.def, u) {
			o, err := si.typed(u, nil)
			if err != nil {
				return nil, "", err
			}
			out = append(out, o)
		}
	}
	return out, rv, nil
}

func (si *storeImpl) watch(ctx context.Context, rq *request, lo *listOptions, send func(watchEvent) error) error {
	rv := lo.resourceVersion
	ch, err := si.s.store.Watch(ctx, si.res, rv)
	if errors.Is(err, store.ErrInvalid) {
		return errBadRequest("invalid resourceVersion %q: %v", rv, err)
	}
	if err != nil {
		return err
	}
	if err := send(watchEvent{}); err != nil {
		return err
	}
	inScope := func(u *unstructured.Unstructured) bool {
		return (rq.ns == "" || u.GetNamespace() == rq.ns) && lo.matches(rq.def, u)
	}
	sendObj := func(typ string, u *unstructured.Unstructured) error {
		o, err := si.typed(u, nil)
		if err != nil {
			return err
		}
		return send(watchEvent{typ: typ, obj: o})
	}
	var seen map[string]string // the objects and resourceVersions sent, to skip their replays
	if rv == "" || rv == "0" || lo.sendInitial {
		// Start with the current state, as Kubernetes does for a watch
		// without a resourceVersion.
		objs, listRV := si.s.store.List(si.res, "*")
		seen = map[string]string{}
		for _, u := range objs {
			if inScope(u) {
				seen[objKey(u.GetNamespace(), u.GetName())] = u.GetResourceVersion()
				if err := sendObj("ADDED", u); err != nil {
					return err
				}
			}
		}
		if lo.sendInitial {
			bm := &metav1.ObjectMeta{ResourceVersion: listRV, Annotations: map[string]string{"k8s.io/initial-events-end": "true"}}
			if err := send(watchEvent{typ: "BOOKMARK", obj: bm}); err != nil {
				return err
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if !inScope(ev.Object) {
				continue
			}
			k := objKey(ev.Object.GetNamespace(), ev.Object.GetName())
			if seen != nil && ev.Type != store.Deleted && seen[k] == ev.Object.GetResourceVersion() {
				continue
			}
			if err := sendObj(string(ev.Type), ev.Object); err != nil {
				return err
			}
		}
	}
}

// namespaceExists refuses objects in a namespace that does not exist.
func (si *storeImpl) namespaceExists(rq *request) error {
	if !si.def.namespaced {
		return nil
	}
	if _, err := si.s.store.Get(resNamespaces, "", rq.ns); err != nil {
		return errNotFound(schema.GroupResource{Resource: "namespaces"}, rq.ns)
	}
	return nil
}

func (si *storeImpl) create(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	m := obj.(metav1.Object)
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	rq.name = m.GetName()
	if m.GetName() == "" {
		return nil, errInvalid(si.def.gr, si.def.kind, "", "metadata.name", "Required value: name or generateName is required")
	}
	if err := si.namespaceExists(rq); err != nil {
		return nil, err
	}
	if si.prepare != nil {
		if err := si.prepare(ctx, rq, obj, nil); err != nil {
			return nil, err
		}
	}
	u, err := si.unstructured(obj, rq.ns)
	if err != nil {
		return nil, err
	}
	u.SetResourceVersion("")
	if si.keepStatus {
		delete(u.Object, "status")
	}
	if rq.dryRun {
		if _, err := si.s.store.Get(si.res, u.GetNamespace(), u.GetName()); err == nil {
			return nil, apierrors.NewAlreadyExists(si.def.gr, u.GetName())
		}
		u.SetCreationTimestamp(metav1.NewTime(time.Now().UTC().Truncate(time.Second)))
		u.SetGeneration(1)
		return si.typed(u, nil)
	}
	out, err := si.s.store.Create(si.res, u)
	if err != nil {
		return nil, err
	}
	if si.written != nil {
		if o := si.written(ctx, rq, out, nil); o != nil {
			out = o
		}
	}
	return si.typed(out, nil)
}

func (si *storeImpl) update(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	m := obj.(metav1.Object)
	m.SetName(rq.name)
	old, err := si.s.store.Get(si.res, rq.ns, rq.name)
	if err != nil {
		return nil, err
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return nil, errConflict(si.def.gr, rq.name, staleMessage)
	}
	if err := keepDeletion(si.def, m, old); err != nil {
		return nil, err
	}
	if si.prepare != nil {
		oldObj, err := si.typed(old, nil)
		if err != nil {
			return nil, err
		}
		if err := si.prepare(ctx, rq, obj, oldObj.(runtime.Object)); err != nil {
			return nil, err
		}
	}
	u, err := si.unstructured(obj, rq.ns)
	if err != nil {
		return nil, err
	}
	if si.keepStatus {
		if st, ok := old.Object["status"]; ok {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
	}
	if rq.dryRun {
		u.SetUID(old.GetUID())
		u.SetCreationTimestamp(old.GetCreationTimestamp())
		u.SetGeneration(old.GetGeneration())
		u.SetResourceVersion(old.GetResourceVersion())
		return si.typed(u, nil)
	}
	out, err := si.s.store.Update(si.res, u)
	if err != nil {
		return nil, err
	}
	if done, err := si.finishDeletion(ctx, rq, out); done || err != nil {
		return si.typed(out, err)
	}
	if si.written != nil && out.GetResourceVersion() != old.GetResourceVersion() {
		if o := si.written(ctx, rq, out, old); o != nil {
			out = o
		}
	}
	return si.typed(out, nil)
}

// keepDeletion keeps old's deletionTimestamp on u, the object replacing
// it, which clients neither set nor clear, and refuses, as Kubernetes
// does, finalizers added to an object being deleted.
func keepDeletion(d *resourceDef, u metav1.Object, old *unstructured.Unstructured) error {
	u.SetDeletionTimestamp(old.GetDeletionTimestamp())
	if old.GetDeletionTimestamp() == nil {
		return nil
	}
	return errNewFinalizers(d.gr, u.GetName(), u.GetFinalizers(), old.GetFinalizers())
}

// finishDeletion deletes u, just written, when its deletion was requested
// and its last finalizer has gone, as Kubernetes does; it reports whether
// it did.
func (si *storeImpl) finishDeletion(ctx context.Context, rq *request, u *unstructured.Unstructured) (bool, error) {
	if u.GetDeletionTimestamp() == nil || len(u.GetFinalizers()) > 0 {
		return false, nil
	}
	gone, err := si.s.store.Delete(si.res, u.GetNamespace(), u.GetName(), u.GetResourceVersion())
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, toAPIError(si.def.gr, u.GetName(), err)
	}
	si.afterDelete(ctx, rq, gone)
	return true, nil
}

// afterDelete runs the deleted hook of an object that left the store and
// collects the package revisions it owned.
func (si *storeImpl) afterDelete(ctx context.Context, rq *request, gone *unstructured.Unstructured) {
	if si.deleted != nil {
		si.deleted(ctx, rq, gone)
	}
	si.s.collectOwned(ctx, gone.GetNamespace(), gone.GetUID())
}

func (si *storeImpl) delete(ctx context.Context, rq *request, opts *metav1.DeleteOptions) (metav1.Object, error) {
	cur, err := si.s.store.Get(si.res, rq.ns, rq.name)
	if err != nil {
		return nil, err
	}
	rv := ""
	if pc := opts.Preconditions; pc != nil {
		if pc.ResourceVersion != nil {
			rv = *pc.ResourceVersion
		}
		if pc.UID != nil && *pc.UID != cur.GetUID() {
			return nil, errConflict(si.def.gr, rq.name, "the UID in the precondition does not match the UID in record")
		}
	}
	if si.deleting != nil {
		if err := si.deleting(ctx, rq, cur); err != nil {
			return nil, err
		}
	}
	if rv != "" && rv != cur.GetResourceVersion() {
		return nil, errConflict(si.def.gr, rq.name, staleMessage)
	}
	if rq.dryRun {
		return si.typed(cur, nil)
	}
	if len(cur.GetFinalizers()) > 0 {
		// As Kubernetes does: the object is marked, and goes when an
		// update removes its last finalizer.
		if cur.GetDeletionTimestamp() != nil {
			return si.typed(cur, nil)
		}
		u := cur.DeepCopy()
		now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		u.SetDeletionTimestamp(&now)
		if rv != "" {
			u.SetResourceVersion(rv)
		}
		return si.typed(si.s.store.Update(si.res, u))
	}
	gone, err := si.s.store.Delete(si.res, rq.ns, rq.name, rv)
	if err != nil {
		return nil, err
	}
	si.afterDelete(ctx, rq, gone)
	return si.typed(gone, nil)
}

// updateStatus serves an update of the status subresource, as Kubernetes
// does: only the status of obj is taken, its spec and metadata are
// ignored (its resourceVersion, when set, must be the stored one).
func (si *storeImpl) updateStatus(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	u, err := si.unstructured(obj, rq.ns)
	if err != nil {
		return nil, err
	}
	old, err := si.s.store.Get(si.res, rq.ns, rq.name)
	if err != nil {
		return nil, err
	}
	if rv := u.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return nil, errConflict(si.def.gr, rq.name, staleMessage)
	}
	out := old.DeepCopy()
	if st, ok := u.Object["status"]; ok && st != nil {
		out.Object["status"] = st
	} else {
		delete(out.Object, "status")
	}
	if rq.dryRun {
		return si.typed(out, nil)
	}
	return si.typed(si.s.store.Update(si.res, out))
}

// statusSubresource is the status subresource of a stored resource.
func (si *storeImpl) statusSubresource() map[string]subresourceDef {
	return map[string]subresourceDef{subresourceStatus: {update: si.updateStatus}}
}

// subresourceStatus is the name of the status subresource.
const subresourceStatus = "status"

// Repositories.

// prepareRepository validates a Repository, checks immutable fields and
// overlapping registrations, and gives it Porch's defaults.
func (s *Server) prepareRepository(ctx context.Context, rq *request, obj, oldObj runtime.Object) error {
	r := obj.(*porchapi.Repository)
	if s.opts.ExternalRepositories {
		return errExternalRepositories(r.Name)
	}
	d := grRepositories
	inv := func(field, msg string) error { return errInvalid(d, porchapi.KindRepository, r.Name, field, msg) }
	if r.Spec.Content != "" && r.Spec.Content != porchapi.ContentPackage {
		return inv("spec.content", fmt.Sprintf("Unsupported value: %q: supported values: \"Package\"", r.Spec.Content))
	}
	// Porch's defaults, in what is stored too.
	porchapi.DefaultRepository(r)
	spec := porchapi.RepositoryToSpec(r)
	if err := spec.Validate(); err != nil {
		return inv("spec", err.Error())
	}
	if err := s.checkRepositorySpec(spec); err != nil {
		field := "spec.git.repo"
		if spec.Git == nil {
			field = "spec.oci.registry"
		}
		return inv(field, strings.TrimPrefix(err.Error(), repository.ErrInvalidInput.Error()+": "))
	}
	if oldObj != nil {
		os := porchapi.RepositoryToSpec(oldObj.(*porchapi.Repository))
		for _, c := range []struct {
			field    string
			old, new string
		}{
			{"spec.type", string(os.Type), string(spec.Type)},
			{"spec.git.repo", gitField(os, "repo"), gitField(spec, "repo")},
			{"spec.git.branch", gitField(os, "branch"), gitField(spec, "branch")},
			{"spec.git.directory", gitField(os, "directory"), gitField(spec, "directory")},
			{"spec.oci.registry", ociRegistry(os), ociRegistry(spec)},
		} {
			if c.old != c.new {
				return inv(c.field, c.field+" is immutable")
			}
		}
	}
	for _, e := range s.entries(rq.ns) {
		if e.name == r.Name {
			continue
		}
		if spec.Git != nil && e.spec.Git != nil && normalizeURL(spec.Git.Repo) == normalizeURL(e.spec.Git.Repo) &&
			spec.Git.Branch == e.spec.Git.Branch && overlaps(spec.Git.Directory, e.spec.Git.Directory) {
			return inv("spec.git", fmt.Sprintf("repository %q already registers %s branch %s directory %q, which overlaps",
				e.name, e.spec.Git.Repo, e.spec.Git.Branch, "/"+e.spec.Git.Directory))
		}
		if spec.OCI != nil && e.spec.OCI != nil && strings.TrimSuffix(spec.OCI.Registry, "/") == strings.TrimSuffix(e.spec.OCI.Registry, "/") {
			return inv("spec.oci.registry", fmt.Sprintf("repository %q already registers %s", e.name, e.spec.OCI.Registry))
		}
	}
	if oldObj == nil {
		if _, err := s.store.Get(resRepositories, rq.ns, r.Name); err == nil {
			return apierrors.NewAlreadyExists(d, r.Name)
		}
	}
	return nil
}

// repositoryWritten opens a created repository, or reopens an updated one
// whose spec changed, and stores its status.
func (s *Server) repositoryWritten(ctx context.Context, rq *request, u, old *unstructured.Unstructured) *unstructured.Unstructured {
	r, err := repositoryFrom(u)
	if err != nil {
		return nil
	}
	if old != nil {
		if o, err := repositoryFrom(old); err == nil && reflect.DeepEqual(porchapi.RepositoryToSpec(o), porchapi.RepositoryToSpec(r)) {
			return nil
		}
	}
	e := s.register(ctx, r)
	u.Object["status"] = repositoryStatus(e, u.GetGeneration(), statusOf(u))
	out, err := s.store.Update(resRepositories, u)
	if err != nil {
		return nil
	}
	return out
}

func gitField(s repository.Spec, f string) string {
	if s.Git == nil {
		return ""
	}
	switch f {
	case "repo":
		return s.Git.Repo
	case "branch":
		return s.Git.Branch
	}
	return s.Git.Directory
}

func ociRegistry(s repository.Spec) string {
	if s.OCI == nil {
		return ""
	}
	return s.OCI.Registry
}

func normalizeURL(u string) string {
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	return strings.ToLower(u)
}

// overlaps reports whether one directory is the other or holds it.
func overlaps(a, b string) bool {
	return a == b || a == "" || b == "" || strings.HasPrefix(a+"/", b+"/") || strings.HasPrefix(b+"/", a+"/")
}

// The Repository conditions besides Ready (see porchapi.ConditionDamaged
// and porchapi.ConditionMaintenanceFailed).
const (
	ConditionDamaged           = porchapi.ConditionDamaged
	ReasonDamagedRevisions     = porchapi.ReasonDamagedRevisions
	ConditionMaintenanceFailed = porchapi.ConditionMaintenanceFailed
	ReasonMaintenanceError     = porchapi.ReasonMaintenanceError
)

// repositoryStatus is the status of a registration: Ready, Damaged while
// its last whole list left damaged revisions out, MaintenanceFailed while
// its last maintenance run failed; the transition time of old's
// conditions is kept when their status did not change.
func repositoryStatus(e *repoEntry, generation int64, old map[string]any) map[string]any {
	var prev porchapi.RepositoryStatus
	if data, err := json.Marshal(old); err == nil {
		_ = json.Unmarshal(data, &prev)
	}
	st := porchapi.RepositoryStatus{ObservedGeneration: generation}
	for _, c := range prev.Conditions {
		if c.Type == porchapi.RepositoryReady || c.Type == ConditionDamaged || c.Type == ConditionMaintenanceFailed {
			st.Conditions = append(st.Conditions, c)
		}
	}
	ready := metav1.Condition{Type: porchapi.RepositoryReady, Status: metav1.ConditionTrue, Reason: porchapi.ReasonReady,
		Message: "Repository Ready", ObservedGeneration: generation}
	var damaged []string
	maint := ""
	if err := e.openErr(); err != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, porchapi.ReasonError, fmt.Sprint(err)
	} else {
		damaged, maint = e.damaged(), e.maintenanceError()
	}
	if len(damaged) > 0 {
		ready.Message += fmt.Sprintf("; %d damaged revisions left out (see condition %s)", len(damaged), ConditionDamaged)
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	porchapi.SetDamaged(&st.Conditions, generation, damaged)
	porchapi.SetMaintenanceFailed(&st.Conditions, generation, maint)
	u, _ := toUnstructured(&st)
	return u.Object
}

func statusOf(u *unstructured.Unstructured) map[string]any {
	st, _ := u.Object["status"].(map[string]any)
	return st
}

// Namespaces.

// deletingNamespace refuses to delete default and deletes everything in
// the namespace first.
func (s *Server) deletingNamespace(ctx context.Context, rq *request, u *unstructured.Unstructured) error {
	if rq.name == DefaultNamespace {
		return errForbidden(schema.GroupResource{Group: "", Resource: "namespaces"}, rq.name, "this namespace may not be deleted")
	}
	if rq.dryRun {
		return nil
	}
	for _, res := range []string{resPackageVariantSets, resPackageVariants, resRepositories, resSecrets} {
		objs, _ := s.store.List(res, rq.name)
		for _, o := range objs {
			if _, err := s.store.Delete(res, rq.name, o.GetName(), ""); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			switch res {
			case resRepositories:
				s.unregister(rq.name, o.GetName())
			case resSecrets:
			default:
				s.queueVariant(variantWork{resource: res, ns: rq.name, name: o.GetName(), deleted: o})
			}
		}
	}
	return nil
}

// setRepositoryStatus stores the status of a registration that changed
// state outside a request (a repository that opened on retry).
func (s *Server) setRepositoryStatus(e *repoEntry) {
	s.setStatus(resRepositories, e.ns, e.name, func(u *unstructured.Unstructured) map[string]any {
		return repositoryStatus(e, u.GetGeneration(), statusOf(u))
	})
}
