package apiserver

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

var (
	gvrPR   = schema.GroupVersionResource{Group: porchapi.Group, Version: porchapi.Version, Resource: porchapi.ResourcePackageRevisions}
	gvrPRR  = schema.GroupVersionResource{Group: porchapi.Group, Version: porchapi.Version, Resource: porchapi.ResourcePackageRevisionResources}
	gvrRepo = schema.GroupVersionResource{Group: porchapi.ConfigGroup, Version: porchapi.Version, Resource: porchapi.ResourceRepositories}
	gvrPVS  = schema.GroupVersionResource{Group: porchapi.ConfigGroup, Version: porchapi.VariantSetVersion, Resource: porchapi.ResourcePackageVariantSets}
)

func fromU[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := fromUnstructured(u, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestDynamicClient(t *testing.T) {
	ts := startServer(t, "", nil)
	cfg := &rest.Config{Host: ts.URL}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Discovery through client-go.
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := disc.ServerResourcesForGroupVersion("porch.kpt.dev/v1alpha1")
	if err != nil || len(rl.APIResources) < 3 {
		t.Fatalf("discovery: %v %+v", err, rl)
	}

	prs := dc.Resource(gvrPR).Namespace("default")
	w, err := prs.Watch(ctx, metav1.ListOptions{LabelSelector: "app=demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	obj := &unstructured.Unstructured{Object: initPR("apps/demo", "ws")}
	obj.SetLabels(map[string]string{"app": "demo"})
	created, err := prs.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const name = "default.apps.demo.ws"
	if created.GetName() != name {
		t.Fatalf("created %s", created.GetName())
	}
	expectEvent(t, w, watch.Added, name, "Draft")

	// 404, 409, 422 and 403 as client-go's error helpers see them.
	if _, err := prs.Get(ctx, "default.apps.nope.ws", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get missing: %v", err)
	}
	if _, err := prs.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create twice: %v", err)
	}
	stale := created.DeepCopy()
	stale.SetResourceVersion("stale")
	if _, err := prs.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v", err)
	}
	bad := &unstructured.Unstructured{Object: initPR("Bad Name", "ws")}
	if _, err := prs.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("bad name: %v", err)
	}

	// List with selectors.
	l, err := prs.List(ctx, metav1.ListOptions{LabelSelector: "app=demo", FieldSelector: "spec.lifecycle=Draft"})
	if err != nil || len(l.Items) != 1 || l.Items[0].GetName() != name {
		t.Fatalf("list: %v %+v", err, l)
	}
	if l, err := prs.List(ctx, metav1.ListOptions{FieldSelector: "spec.lifecycle=Published"}); err != nil || len(l.Items) != 0 {
		t.Fatalf("list published: %v %d", err, len(l.Items))
	}

	// Edit the resources.
	res, err := dc.Resource(gvrPRR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(res.Object, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n", "spec", "resources", "demo.yaml")
	if _, err := dc.Resource(gvrPRR).Namespace("default").Update(ctx, res, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Modified, name, "Draft")

	// Propose by updating the lifecycle; approve through the subresource.
	cur, err := prs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(cur.Object, "Proposed", "spec", "lifecycle")
	cur, err = prs.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Modified, name, "Proposed")
	unstructured.SetNestedField(cur.Object, "Published", "spec", "lifecycle")
	cur, err = prs.Update(ctx, cur, metav1.UpdateOptions{}, "approval")
	if err != nil {
		t.Fatal(err)
	}
	pr := fromU[porchapi.PackageRevision](t, cur)
	if pr.Spec.Revision != 1 || !porchapi.IsLatest(pr) || pr.Labels["app"] != "demo" {
		t.Fatalf("approved: %+v", pr)
	}
	expectEvent(t, w, watch.Modified, name, "Published")

	// Merge patch of labels; a published revision keeps taking metadata.
	if _, err := prs.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"gold"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := prs.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold,kpt.dev/latest-revision=true"}); err != nil || len(l.Items) != 1 {
		t.Fatalf("list by patched label: %v %+v", err, l)
	}
	// Publishing resources is refused; deleting needs a deletion proposal.
	if _, err := prs.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"readinessGates":[{"conditionType":"x"}]}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing a published spec: %v", err)
	}
	if err := prs.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete published: %v", err)
	}
	if _, err := prs.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"lifecycle":"DeletionProposed"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := prs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Deleted, name, "")

	// Repositories and PackageVariantSets through the dynamic client.
	repos := dc.Resource(gvrRepo).Namespace("default")
	rw, err := repos.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	expectEvent(t, rw, watch.Added, "default", "")
	r, err := repos.Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.SetLabels(map[string]string{"env": "test"})
	if _, err := repos.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, rw, watch.Modified, "default", "")
	if _, err := repos.Update(ctx, r, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale repository update: %v", err)
	}
	unstructured.SetNestedField(r.Object, "/elsewhere", "spec", "git", "repo")
	r.SetResourceVersion("")
	if _, err := repos.Update(ctx, r, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing git.repo: %v", err)
	}
	pvs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
		"metadata": map[string]any{"name": "fanout"},
		"spec": map[string]any{"upstream": map[string]any{"repo": "default", "package": "base"},
			"targets": []any{map[string]any{"repositories": []any{map[string]any{"name": "default", "packageNames": []any{"a", "b"}}}}}},
	}}
	got, err := dc.Resource(gvrPVS).Namespace("default").Create(ctx, pvs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if targets, _, _ := unstructured.NestedSlice(got.Object, "spec", "targets"); len(targets) != 1 || got.GetUID() == "" || got.GetGeneration() != 1 {
		t.Errorf("created PVS: %+v", got.Object)
	}
}

// expectEvent waits for a watch event of the given type and object name,
// with spec.lifecycle lifecycle when that is not empty.
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name, lifecycle string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed waiting for %s %s", typ, name)
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("event object %T: %+v", ev.Object, ev.Object)
			}
			lc, _, _ := unstructured.NestedString(u.Object, "spec", "lifecycle")
			if ev.Type == typ && u.GetName() == name && (lifecycle == "" || lc == lifecycle) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event for %s (%s)", typ, name, lifecycle)
		}
	}
}
