package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// TestOCIRepository: the same lifecycle on an OCI repository (an
// in-process registry on loopback), and discovery of what it holds.
func TestOCIRepository(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.c.Create(ctx, &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "images", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeOCI,
			Oci: &configv1alpha1.OciRepository{Registry: strings.TrimPrefix(srv.URL, "http://") + "/packages"}},
	}))
	e.run(Options{})
	e.create("images.app.ws1", "app", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	pr := e.wait("images.app.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	require.Equal(t, 1, pr.Status.Revision)
	require.Nil(t, pr.Status.SelfLock, "no git self lock for an OCI revision")

	// Deleting the object of a published revision waits for
	// DeletionProposed, as for git.
	old := pr.UID
	require.NoError(t, e.c.Delete(ctx, pr))
	pr = e.wait("images.app.ws1", "blocked", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return pr.DeletionTimestamp != nil && c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "DeletionProposed")
	})
	require.Equal(t, old, pr.UID)
	require.Equal(t, 1, pr.Status.Revision)
}
