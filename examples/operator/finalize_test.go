package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/confine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

const unitNS = "unit"

// unitEnv is the reconcilers over a fake API server (controller-runtime's
// fake client): the reconciler logic without a cluster.
type unitEnv struct {
	t      *testing.T
	c      client.Client
	repos  *repoSet
	events *events.FakeRecorder
	pr     *prReconciler
	rr     *repoReconciler
	root   string
}

// newUnitEnv starts with objs in the fake API server; local repositories
// are allowed under root.
func newUnitEnv(t *testing.T, root string, objs ...client.Object) *unitEnv {
	t.Helper()
	s, err := scheme()
	require.NoError(t, err)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&porchv1alpha2.PackageRevision{}, prRepositoryIndex, prRepositoryOf).
		WithStatusSubresource(&porchv1alpha2.PackageRevision{}, &configv1alpha1.Repository{}).Build()
	roots, err := confine.New("operator", []string{root}, nil)
	require.NoError(t, err)
	repos := newRepoSet(c, c, "", nil, roots)
	rec := events.NewFakeRecorder(16)
	return &unitEnv{t: t, c: c, repos: repos, events: rec, root: root,
		pr: &prReconciler{client: c, repos: repos, retry: time.Minute, events: rec},
		rr: &repoReconciler{client: c, repos: repos, poll: time.Minute}}
}

func gitRepository(name, dir string) *configv1alpha1.Repository {
	return &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: unitNS, Generation: 1},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main", CreateBranch: true}},
	}
}

// deletionProposed makes package pkg revision 1 in the repository at dir
// and proposes it for deletion; it returns its key.
func deletionProposed(t *testing.T, dir, pkg string) revision.Key {
	t.Helper()
	ctx := context.Background()
	_, err := git.PlainInit(dir, true)
	require.NoError(t, err)
	roots, err := confine.New("operator", []string{filepath.Dir(dir)}, nil)
	require.NoError(t, err)
	s, err := scheme()
	require.NoError(t, err)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(gitRepository("good", dir)).Build()
	e, err := newRepoSet(c, c, "", nil, roots).scope().engine(unitNS)
	require.NoError(t, err)
	k := revision.Key{Repository: "good", Package: pkg, Workspace: "v1"}
	_, err = e.Init(ctx, "good", k, engine.InitOptions{Description: pkg})
	require.NoError(t, err)
	_, err = e.Propose(ctx, "good", k)
	require.NoError(t, err)
	pr, err := e.Approve(ctx, "good", k)
	require.NoError(t, err)
	k = pr.Meta().Key
	_, err = e.ProposeDelete(ctx, "good", k)
	require.NoError(t, err)
	return k
}

// terminating is the object of k, deleted (Terminating, held by the
// finalizer).
func terminating(k revision.Key) *porchv1alpha2.PackageRevision {
	now := metav1.Now()
	return &porchv1alpha2.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: porchapi.PackageRevisionName(k.Repository, k.Package, k.Workspace), Namespace: unitNS,
			Labels:            map[string]string{porchv1alpha2.RepositoryLabel: k.Repository},
			Finalizers:        []string{porchv1alpha2.Finalizer},
			DeletionTimestamp: &now},
		Spec: porchv1alpha2.PackageRevisionSpec{PackageName: k.Package, RepositoryName: k.Repository, WorkspaceName: k.Workspace,
			Lifecycle: porchv1alpha2.LifecycleDeletionProposed},
	}
}

func (u *unitEnv) reconcilePR(name string) (ctrl.Result, error) {
	return u.pr.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: unitNS, Name: name}})
}

// pollRepository reconciles the Repository obj once: a poll.
func (u *unitEnv) pollRepository(obj *configv1alpha1.Repository) {
	u.t.Helper()
	_, err := u.rr.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	require.NoError(u.t, err)
}

// objectNames returns the names of the PackageRevisions of the namespace.
func (u *unitEnv) objectNames() []string {
	var l porchv1alpha2.PackageRevisionList
	require.NoError(u.t, u.c.List(context.Background(), &l, client.InNamespace(unitNS)))
	var out []string
	for _, pr := range l.Items {
		out = append(out, pr.Name)
	}
	return out
}

// realise reconciles every PackageRevision of the namespace three times
// (finalizer, then status).
func (u *unitEnv) realise() {
	u.t.Helper()
	for range 3 {
		for _, name := range u.objectNames() {
			_, err := u.reconcilePR(name)
			require.NoError(u.t, err)
		}
	}
}

// inGit reports whether k is still in the repository at dir (read
// directly, not through the operator).
func inGit(t *testing.T, dir string, k revision.Key) bool {
	t.Helper()
	roots, err := confine.New("operator", []string{filepath.Dir(dir)}, nil)
	require.NoError(t, err)
	s, _ := scheme()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(gitRepository("good", dir)).Build()
	e, err := newRepoSet(c, c, "", nil, roots).scope().engine(unitNS)
	require.NoError(t, err)
	_, err = e.Get(context.Background(), "good", k)
	if errors.Is(err, repository.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// With a broken Repository in the namespace, deleting the object of a
// DeletionProposed revision deletes the revision from its own, healthy
// repository and then lets the object go: the broken repository is left
// out of the upstream check (its failure is its own, issue 35), and the
// object never goes while git keeps the revision.
func TestFinalizeBrokenRepositoryStaysLocal(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good.git")
	k := deletionProposed(t, good, "app")
	broken := gitRepository("broken", filepath.Join(root, "missing.git"))
	broken.Spec.Git.CreateBranch = false
	obj := terminating(k)
	u := newUnitEnv(t, root, gitRepository("good", good), broken, obj)

	_, err := u.reconcilePR(obj.Name)
	require.NoError(t, err)
	assert.False(t, inGit(t, good, k), "the revision is deleted from git")
	var got porchv1alpha2.PackageRevision
	err = u.c.Get(context.Background(), client.ObjectKeyFromObject(obj), &got)
	assert.True(t, apierrors.IsNotFound(err), "the object goes: %v", err)
}

// A revision that is gone from its own, healthy repository lets the
// object go.
func TestFinalizeGoneFromHealthyRepository(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good.git")
	deletionProposed(t, good, "app")
	obj := terminating(revision.Key{Repository: "good", Package: "other", Workspace: "v1"})
	u := newUnitEnv(t, root, gitRepository("good", good), obj)
	_, err := u.reconcilePR(obj.Name)
	require.NoError(t, err)
	err = u.c.Get(context.Background(), client.ObjectKeyFromObject(obj), &porchv1alpha2.PackageRevision{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// A Repository whose git.repo is a local path or file:// URL outside the
// repository roots is not opened: its Ready condition says why, and
// nothing is created there.
func TestRepositoryOutsideRootsRefused(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for i, repo := range []string{filepath.Join(outside, "r.git"), "file://" + filepath.Join(outside, "f.git"), filepath.Join(root, "..", filepath.Base(outside), "x.git")} {
		obj := gitRepository("out", repo)
		u := newUnitEnv(t, root, obj)
		_, err := u.rr.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		require.NoError(t, err)
		var got configv1alpha1.Repository
		require.NoError(t, u.c.Get(context.Background(), client.ObjectKeyFromObject(obj), &got))
		ready := meta.FindStatusCondition(got.Status.Conditions, configv1alpha1.RepositoryReady)
		require.NotNil(t, ready, "case %d", i)
		assert.Equal(t, metav1.ConditionFalse, ready.Status, "case %d", i)
		assert.Contains(t, ready.Message, "outside the operator's repository roots", "case %d", i)
	}
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing was created outside the roots")
}

// A cloneFrom.git.repo outside the roots is refused with Ready False, and
// nothing is cloned.
func TestCloneFromOutsideRootsRefused(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	good := filepath.Join(root, "good.git")
	_, err := git.PlainInit(good, true)
	require.NoError(t, err)
	up := filepath.Join(outside, "upstream.git")
	deletionProposed(t, up, "secret") // a repository with a package, outside the roots
	pr := &porchv1alpha2.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "good.copy.v1", Namespace: unitNS,
			Labels: map[string]string{porchv1alpha2.RepositoryLabel: "good"}, Finalizers: []string{porchv1alpha2.Finalizer}},
		Spec: porchv1alpha2.PackageRevisionSpec{PackageName: "copy", RepositoryName: "good", WorkspaceName: "v1",
			Lifecycle: porchv1alpha2.LifecycleDraft,
			Source: &porchv1alpha2.PackageSource{CloneFrom: &porchv1alpha2.UpstreamPackage{
				Git: &porchv1alpha2.GitPackage{Repo: "file://" + up, Ref: "secret/v1", Directory: "secret"}}}},
	}
	u := newUnitEnv(t, root, gitRepository("good", good), pr)
	_, err = u.reconcilePR(pr.Name)
	require.NoError(t, err)
	var got porchv1alpha2.PackageRevision
	require.NoError(t, u.c.Get(context.Background(), client.ObjectKeyFromObject(pr), &got))
	ready := meta.FindStatusCondition(got.Status.Conditions, porchv1alpha2.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "outside the operator's repository roots")
	assert.False(t, inGit(t, good, revision.Key{Repository: "good", Package: "copy", Workspace: "v1"}), "nothing was cloned")
}

// While the revision's own Repository exists but does not open (its
// directory moved away), the object is kept: only a Repository object that
// is gone lets it go unguarded.
func TestFinalizeOwnRepositoryBrokenKeepsObject(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good.git")
	k := deletionProposed(t, good, "app")
	obj := terminating(k)
	u := newUnitEnv(t, root, gitRepository("good", good), obj)
	away := filepath.Join(root, "away.git")
	require.NoError(t, os.Rename(good, away))
	_, err := u.reconcilePR(obj.Name)
	require.NoError(t, err)
	var got porchv1alpha2.PackageRevision
	require.NoError(t, u.c.Get(context.Background(), client.ObjectKeyFromObject(obj), &got), "the object must stay")
	assert.Contains(t, got.Finalizers, porchv1alpha2.Finalizer)

	require.NoError(t, os.Rename(away, good))
	_, err = u.reconcilePR(obj.Name)
	require.NoError(t, err)
	assert.False(t, inGit(t, good, k), "the revision is deleted from git")
	assert.True(t, apierrors.IsNotFound(u.c.Get(context.Background(), client.ObjectKeyFromObject(obj), &got)))
}

// On a real API server: a broken Repository in the namespace (one that
// does not open) does not stall the deletion of another repository's
// revision; its failure shows in its own status only.
func TestKubeDeleteWithBrokenRepository(t *testing.T) {
	e := newEnv(t)
	e.run(Options{})
	e.create("blueprints.b.ws1", "b", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	e.wait("blueprints.b.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	e.setLifecycle("blueprints.b.ws1", porchv1alpha2.LifecycleDeletionProposed)
	e.wait("blueprints.b.ws1", "proposed for deletion", readyAt(porchv1alpha2.LifecycleDeletionProposed))

	broken := gitRepository("broken", filepath.Join(filepath.Dir(e.gitDir), "missing.git"))
	broken.Namespace, broken.Spec.Git.CreateBranch = e.ns, false
	require.NoError(t, e.c.Create(context.Background(), broken))
	require.Eventually(t, func() bool {
		var r configv1alpha1.Repository
		if e.c.Get(context.Background(), client.ObjectKeyFromObject(broken), &r) != nil {
			return false
		}
		c := meta.FindStatusCondition(r.Status.Conditions, configv1alpha1.RepositoryReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "missing.git")
	}, 30*time.Second, 100*time.Millisecond, "the broken Repository's own status says why")
	require.NoError(t, e.c.Delete(context.Background(), e.get("blueprints.b.ws1")))
	require.Eventually(t, func() bool {
		_, ok := e.gitRevisions(e.gitDir)["b/ws1/1"]
		return !ok && !slices.Contains(e.names(), "blueprints.b.ws1")
	}, 2*time.Minute, 100*time.Millisecond, "the deletion goes through beside a broken Repository")
}
