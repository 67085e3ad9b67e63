package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/repository/repotest"
)

// One bad package costs only that package: beside a good package, a tag
// whose Kptfile is "metadata: [unclosed", one whose Kptfile is a YAML
// alias bomb and one naming a missing object leave the Repository Ready,
// the good package's PackageRevisions made, and a Damaged condition naming
// the three; a good tag damaged later never deletes its object.
func TestDamagedRepository(t *testing.T) {
	e := newEnv(t)
	e.run(Options{})
	dir := repotest.DamagedGitRepo(t)
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "damaged", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main"}},
	}
	require.NoError(t, e.c.Create(context.Background(), repo))
	// conditions returns the Ready and Damaged conditions of the
	// Repository.
	conditions := func() (rc, dc *metav1.Condition) {
		require.NoError(t, e.c.Get(context.Background(), client.ObjectKeyFromObject(repo), repo))
		return meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.RepositoryReady),
			meta.FindStatusCondition(repo.Status.Conditions, ConditionDamaged)
	}
	var rc, dc *metav1.Condition
	require.Eventually(t, func() bool {
		rc, dc = conditions()
		return rc != nil && dc != nil
	}, 30*time.Second, 50*time.Millisecond, "no Ready and Damaged conditions")
	require.Equal(t, metav1.ConditionTrue, rc.Status, rc.Message)
	require.Equal(t, metav1.ConditionTrue, dc.Status)
	require.Equal(t, ReasonDamagedRevisions, dc.Reason)
	for _, want := range []string{repotest.DamagedMissingRef, "damaged.unclosed.v1", "damaged.bomb.v1", "3 damaged revisions"} {
		require.Contains(t, dc.Message, want)
	}
	require.Contains(t, rc.Message, ConditionDamaged)
	require.Equal(t, 2, repo.Status.PackageCount)
	e.wait("damaged.good.v1", "discovered", ready)
	e.wait("damaged.good.main", "discovered", ready)
	names := slices.DeleteFunc(e.names(), func(n string) bool { return !strings.HasPrefix(n, "damaged.") })
	require.Equal(t, []string{"damaged.good.main", "damaged.good.v1"}, names)

	// The good tag damaged: its object stays (the revision may be behind
	// the damage), and the condition names the tag.
	good := e.get("damaged.good.v1")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "refs/tags/good/v1"), []byte("garbage\n"), 0o644))
	require.Eventually(t, func() bool {
		_, dc = conditions()
		return dc != nil && strings.Contains(dc.Message, "refs/tags/good/v1")
	}, 30*time.Second, 50*time.Millisecond, "the damaged good tag is not named")
	time.Sleep(time.Second) // more discovery passes
	require.Equal(t, good.UID, e.get("damaged.good.v1").UID)
	require.Nil(t, e.get("damaged.good.v1").DeletionTimestamp)
	rc, _ = conditions()
	require.Equal(t, metav1.ConditionTrue, rc.Status, rc.Message)

	// The PackageRevision reconciler, which finds no revision behind the
	// damaged tag, keeps the object too: a reconcile of it (as any event,
	// a resync or a restart brings; under load, the one its own status
	// write queued before the damage) does not delete it, and says why
	// it is not Ready.
	poked := e.get("damaged.good.v1")
	p := client.MergeFrom(poked.DeepCopy())
	metav1.SetMetaDataAnnotation(&poked.ObjectMeta, "test/poke", "1")
	require.NoError(t, e.c.Patch(context.Background(), poked, p))
	pending := e.wait("damaged.good.v1", "pending", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, ConditionDamaged)
	})
	require.Equal(t, good.UID, pending.UID)
	require.Nil(t, pending.DeletionTimestamp)
	time.Sleep(time.Second) // more reconciles and discovery passes
	require.Equal(t, good.UID, e.get("damaged.good.v1").UID)

	// Deleted by a user, it stays until its revision can be read: the
	// finalizer guards a revision that may be behind the damage.
	require.NoError(t, e.c.Delete(context.Background(), e.get("damaged.good.v1")))
	refused := e.wait("damaged.good.v1", "refused", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return c != nil && c.Reason == ReasonDeleteFailed
	})
	require.Equal(t, good.UID, refused.UID)
	require.Contains(t, meta.FindStatusCondition(refused.Status.Conditions, porchv1alpha2.ConditionReady).Message, ConditionDamaged)
}
