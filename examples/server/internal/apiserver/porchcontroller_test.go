package apiserver

import (
	"context"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
)

// pvFinalizer is the finalizer Porch's PackageVariant controller puts on
// the variants it manages.
const pvFinalizer = "config.porch.kpt.dev/packagevariants"

// pvController is a PackageVariant controller built the way Porch's is
// (controllers/packagevariants): a controller-runtime client against the
// API; the variant's finalizer; downstream revisions found among all
// PackageRevisions by their ownerReference to the variant, created with a
// clone task and that ownerReference; the variant's status written
// through the status subresource; on the variant's deletion its drafts
// deleted, its published downstreams proposed for deletion, and the
// finalizer removed.
type pvController struct {
	c  client.Client
	ns string
}

func (r *pvController) reconcile(ctx context.Context, name string) error {
	var pv configv1alpha1.PackageVariant
	if err := r.c.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: name}, &pv); err != nil {
		return client.IgnoreNotFound(err)
	}
	var prs porchv1alpha1.PackageRevisionList
	if err := r.c.List(ctx, &prs, client.InNamespace(r.ns)); err != nil {
		return err
	}
	var owned []porchv1alpha1.PackageRevision
	for _, pr := range prs.Items {
		if slices.ContainsFunc(pr.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == pv.UID }) {
			owned = append(owned, pr)
		}
	}
	if pv.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(&pv, pvFinalizer) {
			return nil
		}
		for i := range owned {
			pr := &owned[i]
			switch pr.Spec.Lifecycle {
			case porchv1alpha1.LifecyclePublished:
				pr.Spec.Lifecycle = porchv1alpha1.LifecycleDeletionProposed
				if err := r.c.Update(ctx, pr); err != nil {
					return err
				}
			case porchv1alpha1.LifecycleDeletionProposed:
			default:
				if err := r.c.Delete(ctx, pr); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
		}
		controllerutil.RemoveFinalizer(&pv, pvFinalizer)
		return r.c.Update(ctx, &pv)
	}
	if controllerutil.AddFinalizer(&pv, pvFinalizer) {
		if err := r.c.Update(ctx, &pv); err != nil {
			return err
		}
	}
	up, down := pv.Spec.Upstream, pv.Spec.Downstream
	var upstream *porchv1alpha1.PackageRevision
	for i, pr := range prs.Items {
		if pr.Spec.RepositoryName == up.Repo && pr.Spec.PackageName == up.Package && pr.Spec.Revision == up.Revision {
			upstream = &prs.Items[i]
		}
	}
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "NoErrors", ObservedGeneration: pv.Generation}
	if upstream == nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Error", "upstream not found"
	} else if len(owned) == 0 {
		pr := &porchv1alpha1.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Labels: pv.Spec.Labels, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: configv1alpha1.SchemeGroupVersion.String(), Kind: configv1alpha1.KindPackageVariant,
				Name: pv.Name, UID: pv.UID, Controller: ptr(true)}}},
			Spec: porchv1alpha1.PackageRevisionSpec{PackageName: down.Package, RepositoryName: down.Repo,
				WorkspaceName: "packagevariant-1", Lifecycle: porchv1alpha1.LifecycleDraft,
				Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{
					Upstream: porchv1alpha1.UpstreamPackage{UpstreamRef: &porchv1alpha1.PackageRevisionRef{Name: upstream.Name}}}}}},
		}
		if err := r.c.Create(ctx, pr); err != nil {
			return err
		}
		owned = append(owned, *pr)
	}
	pv.Status.DownstreamTargets = nil
	for _, pr := range owned {
		pv.Status.DownstreamTargets = append(pv.Status.DownstreamTargets, configv1alpha1.DownstreamTarget{Name: pr.Name})
	}
	meta.SetStatusCondition(&pv.Status.Conditions, cond)
	return r.c.Status().Update(ctx, &pv)
}

func ptr[T any](v T) *T { return &v }

// porchClient returns a controller-runtime client of the server.
func porchClient(t *testing.T, ts *testServer) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{porchv1alpha1.AddToScheme, configv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(&rest.Config{Host: ts.URL}, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// publishUpstream publishes package pkg (revision 1) in the default
// repository through c and returns its PackageRevision.
func publishUpstream(ctx context.Context, t *testing.T, c client.Client, pkg string) *porchv1alpha1.PackageRevision {
	t.Helper()
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: pkg, RepositoryName: "default", WorkspaceName: "v1",
			Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "upstream"}}}},
	}
	if err := c.Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	pr.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
	if err := c.Update(ctx, pr); err != nil {
		t.Fatal(err)
	}
	pr.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	if err := c.SubResource("approval").Update(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil || pr.Spec.Revision != 1 {
		t.Fatalf("published upstream: revision %d, %v", pr.Spec.Revision, err)
	}
	return pr
}

// ownedBy returns the names of the PackageRevisions that name uid as an
// owner.
func ownedBy(ctx context.Context, t *testing.T, c client.Client, uid types.UID) []string {
	t.Helper()
	var prs porchv1alpha1.PackageRevisionList
	if err := c.List(ctx, &prs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pr := range prs.Items {
		if slices.ContainsFunc(pr.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == uid }) {
			out = append(out, pr.Name)
		}
	}
	return out
}

// A controller built as Porch's PackageVariant controller is reconciles
// against the server: it creates the downstream draft once and finds it
// again by its ownerReference, writes the variant's status through the
// status subresource, and on the variant's deletion (held by its
// finalizer) removes the draft, after which the variant goes.
func TestPorchPackageVariantController(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.NoVariantSync = true })
	c := porchClient(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	upstream := publishUpstream(ctx, t, c, "base")

	pv := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge"},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "default", Package: "base", Revision: 1},
			Downstream: &configv1alpha1.Downstream{Repo: "default", Package: "edge"},
			Labels:     map[string]string{"variant": "edge"},
		},
	}
	if err := c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	r := &pvController{c: c, ns: "default"}
	for i := range 3 {
		if err := r.reconcile(ctx, pv.Name); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	owned := ownedBy(ctx, t, c, pv.UID)
	if len(owned) != 1 {
		t.Fatalf("downstream revisions owned by the variant: %v", owned)
	}
	var down porchv1alpha1.PackageRevision
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: owned[0]}, &down); err != nil {
		t.Fatal(err)
	}
	if ref := down.OwnerReferences[0]; ref.Kind != "PackageVariant" || ref.Name != "edge" || ref.Controller == nil || !*ref.Controller ||
		down.Labels["variant"] != "edge" || down.Spec.Lifecycle != porchv1alpha1.LifecycleDraft {
		t.Fatalf("downstream %+v", down.ObjectMeta)
	}
	if _, ok := down.Annotations["cad.configasdata.dev/owner-references"]; ok {
		t.Fatalf("the stored form of ownerReferences is served: %v", down.Annotations)
	}
	if len(down.Spec.Tasks) != 1 || down.Spec.Tasks[0].Clone == nil || down.Spec.Tasks[0].Clone.Upstream.UpstreamRef.Name != upstream.Name {
		t.Fatalf("downstream tasks %+v", down.Spec.Tasks)
	}

	// Status went through the status subresource; the spec did not move.
	if err := c.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil {
		t.Fatal(err)
	}
	if !controllerutil.ContainsFinalizer(pv, pvFinalizer) || pv.Generation != 1 ||
		len(pv.Status.DownstreamTargets) != 1 || pv.Status.DownstreamTargets[0].Name != down.Name ||
		!meta.IsStatusConditionTrue(pv.Status.Conditions, "Ready") {
		t.Fatalf("variant after reconcile: generation %d, finalizers %v, status %+v", pv.Generation, pv.Finalizers, pv.Status)
	}
	// An update of the object ignores its status; of the status, its spec.
	saved := pv.Status
	pv.Status.DownstreamTargets = []configv1alpha1.DownstreamTarget{{Name: "bogus"}}
	if err := c.Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if pv.Status.DownstreamTargets[0].Name != down.Name {
		t.Fatalf("a spec update changed the status: %+v", pv.Status)
	}
	pv.Spec.Downstream.Package = "elsewhere"
	pv.Status = saved
	if err := c.Status().Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if pv.Spec.Downstream.Package != "edge" || pv.Generation != 1 {
		t.Fatalf("a status update changed the spec: %+v, generation %d", pv.Spec.Downstream, pv.Generation)
	}

	// Deletion: held by the finalizer until the controller cleaned up.
	if err := c.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil || pv.DeletionTimestamp == nil {
		t.Fatalf("variant after delete: %v, deletionTimestamp %v", err, pv.DeletionTimestamp)
	}
	if err := r.reconcile(ctx, pv.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pv), pv); !apierrors.IsNotFound(err) {
		t.Fatalf("variant after its finalizer went: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&down), &down); !apierrors.IsNotFound(err) {
		t.Fatalf("downstream draft after the variant went: %v", err)
	}
}

// The server collects the package revisions a deleted object owned, as
// Kubernetes' garbage collector does: a draft with no other owner is
// deleted, one with another owner loses the reference, a published one is
// kept (orphaned).
func TestOwnedRevisionsCollected(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.NoVariantSync = true })
	c := porchClient(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "owner"}}
	other := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}
	for _, o := range []*configv1alpha1.PackageVariant{pv, other} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(o *configv1alpha1.PackageVariant) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha1", Kind: "PackageVariant", Name: o.Name, UID: o.UID}
	}
	create := func(pkg string, refs ...metav1.OwnerReference) *porchv1alpha1.PackageRevision {
		pr := &porchv1alpha1.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", OwnerReferences: refs},
			Spec: porchv1alpha1.PackageRevisionSpec{PackageName: pkg, RepositoryName: "default", WorkspaceName: "ws",
				Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{}}}},
		}
		if err := c.Create(ctx, pr); err != nil {
			t.Fatal(err)
		}
		return pr
	}
	alone := create("alone", ref(pv))
	shared := create("shared", ref(pv), ref(other))
	published := create("published", ref(pv))
	published.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
	if err := c.Update(ctx, published); err != nil {
		t.Fatal(err)
	}
	published.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	if err := c.SubResource("approval").Update(ctx, published); err != nil {
		t.Fatal(err)
	}
	unrelated := create("unrelated", ref(other))
	if got := ownedBy(ctx, t, c, pv.UID); len(got) != 3 {
		t.Fatalf("owned before the delete: %v", got)
	}

	if err := c.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(alone), alone); !apierrors.IsNotFound(err) {
		t.Fatalf("a draft owned only by the deleted variant: %v", err)
	}
	for _, pr := range []*porchv1alpha1.PackageRevision{shared, unrelated} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil {
			t.Fatal(err)
		}
		if len(pr.OwnerReferences) != 1 || pr.OwnerReferences[0].UID != other.UID {
			t.Fatalf("%s owners %+v", pr.Name, pr.OwnerReferences)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(published), published); err != nil || len(published.OwnerReferences) != 0 {
		t.Fatalf("published revision: %v, owners %+v", err, published.OwnerReferences)
	}
}

// A PackageRevision with finalizers survives a delete, marked with a
// deletionTimestamp, and goes when an update removes its last finalizer;
// no finalizer can be added meanwhile (Porch's TestPackageRevisionFinalizers).
func TestPackageRevisionFinalizers(t *testing.T) {
	ts := startServer(t, "", nil)
	c := porchClient(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Finalizers: []string{"foo-finalizer"}},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "fin", RepositoryName: "default", WorkspaceName: "ws",
			Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{}}}},
	}
	if err := c.Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pr.Finalizers, []string{"foo-finalizer"}) {
		t.Fatalf("finalizers after create: %v", pr.Finalizers)
	}
	if err := c.Delete(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil || pr.DeletionTimestamp == nil ||
		!slices.Equal(pr.Finalizers, []string{"foo-finalizer"}) {
		t.Fatalf("after delete: %v, deletionTimestamp %v, finalizers %v", err, pr.DeletionTimestamp, pr.Finalizers)
	}
	added := pr.DeepCopy()
	added.Finalizers = append(added.Finalizers, "bar")
	if err := c.Update(ctx, added); !apierrors.IsForbidden(err) {
		t.Fatalf("adding a finalizer while deleting: %v", err)
	}
	pr.Finalizers = nil
	if err := c.Update(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer went: %v", err)
	}
}
