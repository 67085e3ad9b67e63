package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// With the admission policies of deploy/approved-by.yaml, the user who
// publishes a revision is its publisher: the policy stamps the user on
// the object, the operator approves as that user, and status.publishedBy
// (the approval commit's author) says so. Nobody can change the stamp.
func TestApprovedBy(t *testing.T) {
	e := newEnv(t)
	applyManifest(t, e, "deploy/approved-by.yaml")
	t.Cleanup(func() {
		for _, kind := range []string{"MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy"} {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("admissionregistration.k8s.io/v1")
			u.SetKind(kind)
			u.SetName("cad-approved-by")
			_ = e.c.Delete(context.Background(), u)
		}
	})
	e.run(Options{})
	e.create("blueprints.app.ws1", "app", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecycleProposed })
	e.wait("blueprints.app.ws1", "proposed", readyAt(porchv1alpha2.LifecycleProposed))

	alice := rest.CopyConfig(e.cfg)
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice@example.com", Groups: []string{"system:masters"}}
	ac, err := client.New(alice, client.Options{Scheme: e.c.Scheme()})
	require.NoError(t, err)
	tryPublish := func(opts ...client.PatchOption) (*porchv1alpha2.PackageRevision, error) {
		pr := e.get("blueprints.app.ws1")
		patch := client.MergeFrom(pr.DeepCopy())
		pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished
		return pr, ac.Patch(context.Background(), pr, patch, opts...)
	}
	publish := func(opts ...client.PatchOption) *porchv1alpha2.PackageRevision {
		pr, err := tryPublish(opts...)
		require.NoError(t, err)
		return pr
	}
	// The policies take effect a moment after they are created, and the
	// new client's discovery may not list the kind at once on a loaded
	// machine: a dry run shows when both hold.
	require.Eventually(t, func() bool {
		pr, err := tryPublish(client.DryRunAll)
		if err != nil {
			t.Logf("dry run: %v", err)
			return false
		}
		return pr.Annotations[ApprovedByAnnotation] == "alice@example.com"
	}, 60*time.Second, 200*time.Millisecond, "the policy never stamped the publisher")
	require.Equal(t, "alice@example.com", publish().Annotations[ApprovedByAnnotation])
	pr := e.wait("blueprints.app.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	require.Equal(t, "alice@example.com", pr.Status.PublishedBy)

	// The stamp cannot be changed.
	patch := client.MergeFrom(pr.DeepCopy())
	pr.Annotations[ApprovedByAnnotation] = "mallory@example.com"
	require.Error(t, e.c.Patch(context.Background(), pr, patch))
	require.Equal(t, "alice@example.com", e.get("blueprints.app.ws1").Annotations[ApprovedByAnnotation])
}
