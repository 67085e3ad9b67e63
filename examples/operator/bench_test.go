package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

var benchScale = flag.Bool("scale", false, "BenchmarkOperator: Porch's load-test shape (20 repositories x 20 packages x 5 revisions) instead of the small one")

// fillRepository writes pkgs packages of revs published revisions each
// into a new git repository at dir, through cad's engine (nothing synced
// to disk: it is a fixture), as Porch writes them: every approval a commit
// on main whose tree holds every package, a tag per revision.
func fillRepository(dir, name string, pkgs, revs int) error {
	ctx := context.Background()
	if _, err := git.PlainInit(dir, true); err != nil {
		return err
	}
	r, err := gitrepo.Open(ctx, repository.Spec{Name: name, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, Branch: "main", CreateBranch: true}}, &gitrepo.Options{Sync: gitrepo.SyncNone})
	if err != nil {
		return err
	}
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{name: r}})
	if err != nil {
		return err
	}
	for p := range pkgs {
		pkg := fmt.Sprintf("pkg-%02d", p)
		for v := 1; v <= revs; v++ {
			key := revision.Key{Repository: name, Package: pkg, Workspace: fmt.Sprintf("v%d", v)}
			if v == 1 {
				_, err = e.Init(ctx, name, key, engine.InitOptions{Description: pkg})
			} else {
				_, err = e.Copy(ctx, name, revision.Key{Repository: name, Package: pkg, Workspace: fmt.Sprintf("v%d", v-1), Revision: v - 1}, key.Workspace, engine.CopyOptions{})
			}
			if err == nil {
				_, err = e.Propose(ctx, name, key)
			}
			if err == nil {
				_, err = e.Approve(ctx, name, key)
			}
			if err != nil {
				return fmt.Errorf("%s %s v%d: %w", name, pkg, v, err)
			}
		}
	}
	return nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// BenchmarkOperator measures the operator on a real kube-apiserver in
// Porch's load-test shape (with -args -scale: 20 repositories x 20
// packages x 5 published revisions, 2,000 revisions, plus a placeholder per
// package): the time from the operator's start to every revision having
// its PackageRevision object, realised (discover-s); the latency from a
// spec.lifecycle patch to Published in the status, over 20 approvals one
// after another (approve-p50-ms, approve-p95-ms); and a list of every
// PackageRevision through the API server, 20 times (list-p50-ms,
// list-p95-ms). Without -scale: 4 repositories x 5 packages x 5 revisions.
func BenchmarkOperator(b *testing.B) {
	repos, pkgs, revs := 4, 5, 5
	if *benchScale {
		repos, pkgs, revs = 20, 20, 5
	}
	t0 := time.Now()
	e := newEnv(b)
	dirs := make([]string, repos)
	errs := make(chan error, repos)
	for i := range repos {
		dirs[i] = filepath.Join(b.TempDir(), fmt.Sprintf("repo-%02d.git", i))
		go func() { errs <- fillRepository(dirs[i], fmt.Sprintf("repo-%02d", i), pkgs, revs) }()
	}
	for range repos {
		require.NoError(b, <-errs)
	}
	for i, dir := range dirs {
		name := fmt.Sprintf("repo-%02d", i)
		require.NoError(b, e.c.Create(context.Background(), &configv1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
				Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main"}},
		}))
	}
	want := repos * pkgs * (revs + 1)
	b.Logf("fixture: %d repositories, %d objects to discover, built in %s", repos, want, time.Since(t0).Round(time.Millisecond))
	ctx := context.Background()
	realised := func() int { return countRealised(b, ctx, e) }

	b.ResetTimer()
	var discover time.Duration
	var approve, list []time.Duration
	for range b.N {
		start := time.Now()
		stop := e.run(Options{Poll: time.Minute, Workers: 8})
		for realised() < want {
			time.Sleep(50 * time.Millisecond)
		}
		discover += time.Since(start)

		// Approvals: a new draft per package of the first repository, then
		// each moved to Published through its spec, one after another.
		for p := range min(pkgs, 20) {
			name := fmt.Sprintf("repo-00.pkg-%02d.bench%d", p, len(approve))
			pr := &porchv1alpha2.PackageRevision{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
				Spec: porchv1alpha2.PackageRevisionSpec{PackageName: fmt.Sprintf("pkg-%02d", p), RepositoryName: "repo-00",
					WorkspaceName: fmt.Sprintf("bench%d", len(approve)), Lifecycle: porchv1alpha2.LifecycleProposed,
					Source: &porchv1alpha2.PackageSource{CopyFrom: &porchv1alpha2.PackageRevisionRef{Name: fmt.Sprintf("repo-00.pkg-%02d.v%d", p, revs)}}},
			}
			require.NoError(b, e.c.Create(ctx, pr))
			waitB(b, e, name, func(pr *porchv1alpha2.PackageRevision) bool {
				return pr.Status.ObservedGeneration == pr.Generation && ready(pr) && pr.Spec.Lifecycle == porchv1alpha2.LifecycleProposed
			})
			var cur porchv1alpha2.PackageRevision
			require.NoError(b, e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &cur))
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec.Lifecycle = porchv1alpha2.LifecyclePublished
			t := time.Now()
			require.NoError(b, e.c.Patch(ctx, &cur, patch))
			waitB(b, e, name, func(pr *porchv1alpha2.PackageRevision) bool {
				return pr.Status.ObservedGeneration == pr.Generation && ready(pr) && pr.Status.Revision > 0
			})
			approve = append(approve, time.Since(t))
		}
		for range 20 {
			t := time.Now()
			var l porchv1alpha2.PackageRevisionList
			require.NoError(b, e.c.List(ctx, &l))
			list = append(list, time.Since(t))
			require.GreaterOrEqual(b, len(l.Items), want)
		}
		stop()
	}
	b.StopTimer()
	b.ReportMetric(discover.Seconds()/float64(b.N), "discover-s")
	b.ReportMetric(float64(percentile(approve, 0.5).Microseconds())/1000, "approve-p50-ms")
	b.ReportMetric(float64(percentile(approve, 0.95).Microseconds())/1000, "approve-p95-ms")
	b.ReportMetric(float64(percentile(list, 0.5).Microseconds())/1000, "list-p50-ms")
	b.ReportMetric(float64(percentile(list, 0.95).Microseconds())/1000, "list-p95-ms")
	b.ReportMetric(float64(want), "objects")
}

// waitB polls an object until cond holds, failing after two minutes.
func waitB(b *testing.B, e *env, name string, cond func(*porchv1alpha2.PackageRevision) bool) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var pr porchv1alpha2.PackageRevision
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &pr); err == nil && cond(&pr) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("%s: condition not reached in two minutes", name)
}

// countRealised returns how many PackageRevision objects of e's namespace
// (and opts) the operator has reconciled at their generation.
func countRealised(b *testing.B, ctx context.Context, e *env, opts ...client.ListOption) int {
	var l porchv1alpha2.PackageRevisionList
	require.NoError(b, e.c.List(ctx, &l, append(opts, client.InNamespace(e.ns))...))
	n := 0
	for _, pr := range l.Items {
		if pr.Status.ObservedGeneration == pr.Generation && pr.Status.ObservedGeneration > 0 {
			n++
		}
	}
	return n
}
