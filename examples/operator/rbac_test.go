package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// applyManifest creates the objects of a multi-document YAML file, but
// the kinds in skip.
func applyManifest(t *testing.T, e *env, path string, skip ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, utilyaml.Unmarshal(doc, &u.Object))
		if len(u.Object) == 0 {
			continue
		}
		skipped := false
		for _, k := range skip {
			skipped = skipped || u.GetKind() == k
		}
		if skipped {
			continue
		}
		if err := e.c.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
		}
	}
}

// TestDeployedPermissions runs the operator as the service account of
// deploy/operator.yaml, with exactly the permissions it grants: a draft is
// made from its source and published, and a PackageVariant makes its
// downstream. A permission missing from the manifest stalls one of them.
// It runs with leader election and with shards (whose Leases are listed
// and, for a dead replica, deleted).
func TestDeployedPermissions(t *testing.T) {
	t.Run("leader", func(t *testing.T) {
		deployedPermissions(t, Options{LeaderElection: true, LeaderElectionID: "cad-operator-rbac", LeaderElectionNamespace: "cad-system",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond})
	})
	t.Run("shards", func(t *testing.T) {
		deployedPermissions(t, Options{Shards: 4, LeaderElectionID: "cad-operator-rbac-shards", LeaderElectionNamespace: "cad-system",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond})
	})
}

func deployedPermissions(t *testing.T, o Options) {
	e := newEnv(t)
	applyManifest(t, e, "deploy/operator.yaml", "Deployment")
	e.addRepository("deploy")
	sa := rest.CopyConfig(e.cfg)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:cad-system:cad-operator",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:cad-system", "system:authenticated"},
	}
	e.runAs(sa, o)

	e.create("blueprints.base.v1", "base", "v1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{Description: "base"}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	e.wait("blueprints.base.v1", "published by the service account", readyAt(porchv1alpha2.LifecyclePublished))

	ctx := context.Background()
	pv := &configv1alpha1.PackageVariant{}
	pv.Name, pv.Namespace = "base-copy", e.ns
	pv.Spec = spec[configv1alpha1.PackageVariantSpec](t, `{"upstream":{"repo":"blueprints","package":"base"},"downstream":{"repo":"deploy","package":"base-copy"}}`)
	require.NoError(t, e.c.Create(ctx, pv))
	require.Eventually(t, func() bool {
		var got configv1alpha1.PackageVariant
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: pv.Name}, &got); err != nil {
			return false
		}
		return condition(got.Status.Conditions, "Ready") == "True"
	}, 60*time.Second, 200*time.Millisecond, "the variant never became Ready under the service account")
}
