package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
)

var remotePoll = flag.Duration("remote-poll", time.Minute, "BenchmarkRemoteRequests: the operator's poll")

// reconciles returns how many reconciles controller has made in this
// process (controller-runtime's controller_runtime_reconcile_total, all
// results).
func reconciles(tb testing.TB, controller string) float64 {
	tb.Helper()
	mfs, err := metrics.Registry.Gather()
	require.NoError(tb, err)
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// childCPU returns the CPU time of the process's waited-for children: the
// git http-backend processes of a repotest.GitServer.
func childCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRemoteRequests counts the HTTP requests an operator makes to a
// git server (git http-backend, smart HTTP) for one remote repository of
// pkgs x revs published revisions, written as Porch writes them (default
// 6 x 4; with -args -scale 200 x 5: 1,000 revisions, 1,200 objects with
// the placeholders), with a poll of one minute (-args -remote-poll):
//
//   - discover-req: from the operator's start until every object exists,
//     realised and ready;
//   - restart-req: a new operator (fresh in-memory clone) over the same
//     objects, from its start until its PackageRevision reconciler has
//     reconciled every object again;
//   - idle-req: the poll after that, nothing changing.
//
// It also reports the reconciles of the restart and the CPU time of the
// git server's processes (git-cpu-s) for discovery and restart together.
func BenchmarkRemoteRequests(b *testing.B) {
	pkgs, revs := 6, 4
	if *benchScale {
		pkgs, revs = 200, 5
	}
	poll := *remotePoll
	root := b.TempDir()
	t0 := time.Now()
	require.NoError(b, fillRepository(filepath.Join(root, "remote.git"), "remote", pkgs, revs))
	b.Logf("fixture: %d packages x %d revisions, built in %s", pkgs, revs, time.Since(t0).Round(time.Millisecond))
	srv := repotest.NewGitServer(b, root, nil)
	e := newEnv(b)
	ctx := context.Background()
	want := pkgs * (revs + 1)
	var discoverReq, restartReq, idleReq, restartRec float64
	var discover, restart, gitCPU time.Duration
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("remote%d", i)
		require.NoError(b, e.c.Create(ctx, &configv1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
				Git: &configv1alpha1.GitRepository{Repo: srv.RepoURL("remote.git"), Branch: "main"}},
		}))
		readyObjects := func() int {
			var l porchv1alpha2.PackageRevisionList
			require.NoError(b, e.c.List(ctx, &l, client.InNamespace(e.ns), client.MatchingLabels{porchv1alpha2.RepositoryLabel: name}))
			n := 0
			for _, pr := range l.Items {
				if pr.Status.ObservedGeneration == pr.Generation && pr.Status.ObservedGeneration > 0 && ready(&pr) {
					n++
				}
			}
			return n
		}

		cpu0, req0, start := childCPU(), srv.Requests(), time.Now()
		stop := e.run(Options{Poll: poll, Workers: 8})
		// when logs the requests as they come, by the time since start.
		var when []string
		last := req0
		for readyObjects() < want {
			require.Less(b, time.Since(start), 10*time.Minute, "discovery of %d objects", want)
			if n := srv.Requests(); n != last {
				when = append(when, fmt.Sprintf("+%d at %.1fs", n-last, time.Since(start).Seconds()))
				last = n
			}
			time.Sleep(100 * time.Millisecond)
		}
		discover += time.Since(start)
		discoverReq += float64(srv.Requests() - req0)
		b.Logf("discovery: requests %v, then +%d until ready at %.1fs", when, srv.Requests()-last, time.Since(start).Seconds())
		stop()

		rec0, req0, start := reconciles(b, "packagerevision"), srv.Requests(), time.Now()
		stop = e.run(Options{Poll: poll, Workers: 8})
		for reconciles(b, "packagerevision")-rec0 < float64(want) {
			require.Less(b, time.Since(start), 10*time.Minute, "reconciles of %d objects after the restart", want)
			time.Sleep(100 * time.Millisecond)
		}
		restart += time.Since(start)
		restartReq += float64(srv.Requests() - req0)
		restartRec += reconciles(b, "packagerevision") - rec0
		gitCPU += childCPU() - cpu0

		req0 = srv.Requests()
		time.Sleep(poll)
		idleReq += float64(srv.Requests() - req0)
		stop()
		require.Equal(b, want, readyObjects())
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(want), "objects")
	b.ReportMetric(discoverReq/n, "discover-req")
	b.ReportMetric(discover.Seconds()/n, "discover-s")
	b.ReportMetric(restartReq/n, "restart-req")
	b.ReportMetric(restartRec/n, "restart-reconciles")
	b.ReportMetric(restart.Seconds()/n, "restart-s")
	b.ReportMetric(idleReq/n, "idle-poll-req")
	b.ReportMetric(gitCPU.Seconds()/n, "git-cpu-s")
}

// BenchmarkRemoteReadLapse measures what BenchmarkRemoteRequests' long
// discoveries depend on: how many requests readers of a gitrepo remote
// repository make when they start together just after its freshness
// window (Options.RemoteReadMaxAge) lapsed. Each iteration lets the window
// lapse, then starts 8 Gets at once (as the operator's 8 workers do) and
// reports the requests they made (requests/lapse: 1 when they share one
// ask of the remote, 8 when each asks).
func BenchmarkRemoteReadLapse(b *testing.B) {
	const readers, maxAge = 8, 200 * time.Millisecond
	root := b.TempDir()
	require.NoError(b, fillRepository(filepath.Join(root, "remote.git"), "remote", 4, 2))
	srv := repotest.NewGitServer(b, root, nil)
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "remote", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: srv.RepoURL("remote.git"), Branch: "main"}}, &gitrepo.Options{RemoteReadMaxAge: maxAge})
	require.NoError(b, err)
	b.Cleanup(func() { r.Close() })
	revs, err := r.List(ctx, repository.ListOptions{})
	require.NoError(b, err)
	key := revs[0].Meta().Key
	var total int64
	b.ResetTimer()
	for range b.N {
		time.Sleep(maxAge + 50*time.Millisecond)
		before := srv.Requests()
		start := make(chan struct{})
		errs := make(chan error, readers)
		for range readers {
			go func() {
				<-start
				_, err := r.Get(ctx, key)
				errs <- err
			}()
		}
		close(start)
		for range readers {
			require.NoError(b, <-errs)
		}
		total += srv.Requests() - before
	}
	b.ReportMetric(float64(total)/float64(b.N), "requests/lapse")
}
