package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// publish writes a published package straight into the git repository at
// dir (as another client of the repository would), with files beside its
// Kptfile.
func publish(t *testing.T, dir, repoName, pkg string, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: repoName, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, Branch: "main", CreateBranch: true}}, nil)
	require.NoError(t, err)
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}})
	require.NoError(t, err)
	key := revision.Key{Repository: repoName, Package: pkg, Workspace: "v1"}
	draft, err := e.Init(ctx, repoName, key, engine.InitOptions{Description: pkg})
	require.NoError(t, err)
	all, err := draft.Files(ctx)
	require.NoError(t, err)
	m := all.Strings()
	for k, v := range files {
		m[k] = v
	}
	_, err = e.Update(ctx, repoName, key, revision.MustFiles(m), engine.UpdateOptions{})
	require.NoError(t, err)
	_, err = e.Propose(ctx, repoName, key)
	require.NoError(t, err)
	_, err = e.Approve(ctx, repoName, key)
	require.NoError(t, err)
}

// downstreams lists the revisions of repository dir by package, directly
// from git: package -> "<workspace>/<revision> <lifecycle> <owner>" lines.
func downstreams(t *testing.T, dir, repoName string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: repoName, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir}}, nil)
	if errors.Is(err, repository.ErrNotFound) {
		return nil // no branch yet: nothing written
	}
	require.NoError(t, err)
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	require.NoError(t, err)
	out := map[string][]string{}
	for _, rev := range revs {
		m := rev.Meta()
		if m.Key.Revision < 0 {
			continue // the branch placeholder
		}
		owner := m.Metadata.Annotations["config.porch.kpt.dev/packagevariant"]
		out[m.Key.Package] = append(out[m.Key.Package], fmt.Sprintf("%s/%d %s %s", m.Key.Workspace, m.Key.Revision, m.Lifecycle, owner))
	}
	return out
}

// spec decodes JSON into a variant's typed spec, as a user's YAML would.
func spec[T any](t testing.TB, v string) T {
	t.Helper()
	var out T
	require.NoError(t, json.Unmarshal([]byte(v), &out))
	return out
}

// condition returns the status of condition typ.
func condition(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return string(c.Status)
		}
	}
	return ""
}

// TestPackageVariant: a PackageVariant object makes its downstream draft
// in git, specialised with a ConfigMap injected from the cluster; the
// draft's PackageRevision object appears through discovery; the variant
// reports Ready; deleting the variant deletes the draft it owns.
func TestPackageVariant(t *testing.T) {
	e := newEnv(t)
	deployDir := e.addRepository("deploy")
	publish(t, e.gitDir, "blueprints", "base", map[string]string{
		"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations:\n    kpt.dev/config-injection: required\ndata:\n  region: unset\n",
	})
	ctx := context.Background()
	require.NoError(t, e.c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "region-east", Namespace: e.ns},
		Data:       map[string]string{"region": "us-east1"},
	}))
	e.run(Options{})

	pv := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "app-east", Namespace: e.ns},
		Spec: spec[configv1alpha1.PackageVariantSpec](t, `{"upstream":{"repo":"blueprints","package":"base"},
			"downstream":{"repo":"deploy","package":"app-east"},
			"injectors":[{"kind":"ConfigMap","name":"region-east"}]}`),
	}
	require.NoError(t, e.c.Create(ctx, pv))

	var got configv1alpha1.PackageVariant
	require.Eventually(t, func() bool {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "app-east"}, &got); err != nil {
			return false
		}
		return condition(got.Status.Conditions, "Ready") == "True"
	}, 60*time.Second, 200*time.Millisecond, "the variant never became Ready")
	require.Contains(t, got.Finalizers, pvFinalizer)

	revs := downstreams(t, deployDir, "deploy")
	require.Len(t, revs["app-east"], 1, "%v", revs)
	require.True(t, strings.HasSuffix(revs["app-east"][0], "Draft "+e.ns+"/app-east"), revs["app-east"][0])
	ws := strings.Split(revs["app-east"][0], "/")[0]

	// The draft's object comes from discovery, at once (not at the poll).
	name := "deploy.app-east." + ws
	e.wait(name, "the downstream draft's object", readyAt(porchv1alpha2.LifecycleDraft))

	// Injected from the cluster's ConfigMap.
	k := revision.Key{Package: "app-east", Workspace: ws}
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "deploy", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: deployDir}}, nil)
	require.NoError(t, err)
	k.Repository = "deploy"
	rev, err := r.Get(ctx, k)
	require.NoError(t, err)
	files, err := rev.Files(ctx)
	require.NoError(t, err)
	r.Close()
	settings, _ := files.Get("settings.yaml")
	require.Contains(t, string(settings), "region: us-east1")

	// Deleting the variant deletes its draft (deletionPolicy delete), then
	// the finalizer goes and the object with it.
	require.NoError(t, e.c.Delete(ctx, pv))
	require.Eventually(t, func() bool {
		err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "app-east"}, &got)
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 200*time.Millisecond, "the variant was never deleted")
	require.Empty(t, downstreams(t, deployDir, "deploy")["app-east"])
}

// TestPackageVariantSetLeaderKilled: a PackageVariantSet fans out to 50
// downstream packages while two replicas run; the leader is killed (it
// keeps its Lease, as a killed process does) part way through; the other
// replica takes over and finishes. Git ends with exactly one owned draft
// per target: nothing lost, nothing made twice.
func TestPackageVariantSetLeaderKilled(t *testing.T) {
	e := newEnv(t)
	deployDir := e.addRepository("deploy")
	publish(t, e.gitDir, "blueprints", "base", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: v\n",
	})
	ctx := context.Background()
	o := Options{LeaderElection: true, LeaderElectionID: "cad-operator-fanout", LeaderElectionNamespace: e.ns,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond, Workers: 2}
	killed := o
	killed.keepLeaseOnStop = true
	kill := e.run(killed)
	holder := func() string {
		var l coordinationv1.Lease
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: o.LeaderElectionID}, &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	require.Eventually(t, func() bool { return holder() != "" }, 30*time.Second, 100*time.Millisecond)
	first := holder()
	e.run(o)

	const n = 50
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%q", fmt.Sprintf("app-%02d", i)))
	}
	pvs := &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: e.ns},
		Spec: spec[configv1alpha2.PackageVariantSetSpec](t, `{"upstream":{"repo":"blueprints","package":"base"},
			"targets":[{"repositories":[{"name":"deploy","packageNames":[`+strings.Join(names, ",")+`]}]}]}`),
	}
	require.NoError(t, e.c.Create(ctx, pvs))

	// Kill the leader once some downstreams exist and before all do.
	require.Eventually(t, func() bool { return len(downstreams(t, deployDir, "deploy")) > 0 }, 60*time.Second, 50*time.Millisecond)
	before := len(downstreams(t, deployDir, "deploy"))
	kill()
	t.Logf("leader killed with %d of %d downstreams in git", before, n)
	require.Eventually(t, func() bool { h := holder(); return h != "" && h != first }, 30*time.Second, 100*time.Millisecond)

	var got configv1alpha2.PackageVariantSet
	require.Eventually(t, func() bool {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pvs), &got); err != nil {
			return false
		}
		return condition(got.Status.Conditions, "Ready") == "True" && len(downstreams(t, deployDir, "deploy")) == n
	}, 120*time.Second, 250*time.Millisecond, "the set never finished")

	revs := downstreams(t, deployDir, "deploy")
	require.Len(t, revs, n)
	for pkg, rs := range revs {
		require.Len(t, rs, 1, "package %s: %v", pkg, rs)
		require.Contains(t, rs[0], " Draft ", "package %s", pkg)
	}
	// And every draft has its object.
	require.Eventually(t, func() bool {
		var l porchv1alpha2.PackageRevisionList
		if err := e.c.List(ctx, &l, client.InNamespace(e.ns), client.MatchingLabels{porchv1alpha2.RepositoryLabel: "deploy"}); err != nil {
			return false
		}
		drafts := 0
		for _, pr := range l.Items {
			if pr.Spec.Lifecycle == porchv1alpha2.LifecycleDraft {
				drafts++
			}
		}
		return drafts == n
	}, 60*time.Second, 250*time.Millisecond)
}
