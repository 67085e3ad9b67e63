package apiserver

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
)

// The Porch-style PackageVariant controller runs as Porch runs it: under a
// controller-runtime manager whose cached client lists and watches
// PackageVariants and PackageRevisions on the server, with PackageRevision
// events mapped to their owning variant. It creates the downstream once,
// reports status, and cleans up when the variant is deleted.
func TestPorchPackageVariantControllerManager(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.NoVariantSync = true })
	direct := porchClient(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	publishUpstream(ctx, t, direct, "base")

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{porchv1alpha1.AddToScheme, configv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: ts.URL}, ctrl.Options{Scheme: scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	r := &pvController{c: mgr.GetClient(), ns: "default"}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&configv1alpha1.PackageVariant{}).
		WithOptions(controller.Options{SkipNameValidation: ptr(true)}). // -count runs it again
		Watches(&porchv1alpha1.PackageRevision{}, handler.EnqueueRequestForOwner(scheme, mgr.GetRESTMapper(), &configv1alpha1.PackageVariant{})).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, r.reconcile(ctx, req.Name)
		}))
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	pv := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge"},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "default", Package: "base", Revision: 1},
			Downstream: &configv1alpha1.Downstream{Repo: "default", Package: "edge"},
		},
	}
	if err := direct.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 30s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	eventually("variant ready with its downstream", func() bool {
		var got configv1alpha1.PackageVariant
		if err := direct.Get(ctx, client.ObjectKeyFromObject(pv), &got); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, "Ready") && len(got.Status.DownstreamTargets) == 1
	})
	// Settled: one downstream, however many reconciles ran.
	time.Sleep(time.Second)
	if err := direct.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil {
		t.Fatal(err)
	}
	owned := ownedBy(ctx, t, direct, pv.UID)
	if len(owned) != 1 || owned[0] != pv.Status.DownstreamTargets[0].Name {
		t.Fatalf("owned %v, status %+v", owned, pv.Status)
	}

	if err := direct.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	eventually("variant and downstream gone", func() bool {
		err1 := direct.Get(ctx, client.ObjectKeyFromObject(pv), &configv1alpha1.PackageVariant{})
		err2 := direct.Get(ctx, types.NamespacedName{Namespace: "default", Name: owned[0]}, &porchv1alpha1.PackageRevision{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2)
	})
}
