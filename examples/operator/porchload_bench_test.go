package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// The numbers of Porch's load tests (their defaults): the iterative test
// of test/e2e/performance, and the per-operation test of test/performance
// whose README publishes a sample of figures.
var (
	porchRepos      = flag.Int("porch-repos", 1, "BenchmarkPorchLoad/iterative: control repositories (Porch's -repos)")
	porchIterations = flag.String("porch-iterations", "10,25,50", "BenchmarkPorchLoad/iterative: control revisions per repository, per iteration (Porch's -iterations)")
	porchSampling   = flag.Int("porch-sampling", 5, "BenchmarkPorchLoad/iterative: measured test-package lifecycles per iteration (Porch's -sampling)")
	porchScaleRepos = flag.Int("porch-scale-repos", 4, "BenchmarkPorchLoad/scale: repositories (Porch's test/performance -repos, as its README runs it)")
	porchScalePkgs  = flag.Int("porch-scale-packages", 4, "BenchmarkPorchLoad/scale: packages per repository (its -packages)")
)

// latencies records durations by operation; safe for concurrent use.
type latencies struct {
	mu  sync.Mutex
	ops map[string][]time.Duration
}

func (l *latencies) add(op string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ops == nil {
		l.ops = map[string][]time.Duration{}
	}
	l.ops[op] = append(l.ops[op], d)
}

// time runs f and records its duration as op.
func (l *latencies) time(op string, f func()) {
	t := time.Now()
	f()
	l.add(op, time.Since(t))
}

// report logs and reports p50, p90, p99 and max of every operation, in
// milliseconds.
func (l *latencies) report(b *testing.B) {
	var lines []string
	for _, op := range slices.Sorted(func(yield func(string) bool) {
		for k := range l.ops {
			if !yield(k) {
				return
			}
		}
	}) {
		d := l.ops[op]
		ms := func(p float64) float64 { return float64(percentile(d, p).Microseconds()) / 1000 }
		lines = append(lines, fmt.Sprintf("%-22s n=%-4d p50 %8.1f  p90 %8.1f  p99 %8.1f  max %8.1f ms", op, len(d), ms(0.5), ms(0.9), ms(0.99), ms(1)))
		b.ReportMetric(ms(0.5), op+"-p50-ms")
		b.ReportMetric(ms(0.99), op+"-p99-ms")
	}
	b.Logf("latency until the operator realised each operation:\n%s", strings.Join(lines, "\n"))
}

// porchLoad drives the operator through its Kubernetes objects as Porch's
// load tests drive Porch: each write is timed from the API call until the
// operator realised it (the object's Ready condition at its generation,
// for a delete the object gone), as a Porch call returns once its git
// work is done; reads (get, list) are timed as the API calls.
type porchLoad struct {
	*env
	lat latencies
}

func (p *porchLoad) until(name, what string, cond func(*porchv1alpha2.PackageRevision) bool) {
	deadline := time.Now().Add(2 * time.Minute)
	var pr porchv1alpha2.PackageRevision
	for time.Now().Before(deadline) {
		pr = porchv1alpha2.PackageRevision{}
		err := p.c.Get(context.Background(), types.NamespacedName{Namespace: p.ns, Name: name}, &pr)
		switch {
		case what == "gone" && apierrors.IsNotFound(err):
			return
		case err == nil && what != "gone" && cond(&pr):
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("%s: not %s in two minutes: generation %d, status %+v", name, what, pr.Generation, pr.Status)
}

func prName(repo, pkg, ws string) string { return repo + "." + pkg + "." + ws }

// create makes a draft (an init, or a copy of from) and waits for it.
func (p *porchLoad) create(op, repo, pkg, ws, from string) string {
	name := prName(repo, pkg, ws)
	src := &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{Description: pkg}}
	if from != "" {
		src = &porchv1alpha2.PackageSource{CopyFrom: &porchv1alpha2.PackageRevisionRef{Name: from}}
	}
	p.lat.time(op, func() {
		require.NoError(p.t, p.c.Create(context.Background(), &porchv1alpha2.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns},
			Spec:       porchv1alpha2.PackageRevisionSpec{PackageName: pkg, RepositoryName: repo, WorkspaceName: ws, Source: src},
		}))
		p.until(name, "created", readyAt(porchv1alpha2.LifecycleDraft))
	})
	return name
}

// move changes the lifecycle of name to lc and waits for it.
func (p *porchLoad) move(op, name string, lc porchv1alpha2.Lifecycle) {
	p.lat.time(op, func() {
		p.setLifecycle(name, lc)
		p.until(name, string(lc), func(pr *porchv1alpha2.PackageRevision) bool {
			return readyAt(lc)(pr) && (lc != porchv1alpha2.LifecyclePublished || pr.Status.Revision > 0)
		})
	})
}

// remove deletes the object name and waits until it is gone (its
// revision deleted from git by the operator's finalizer).
func (p *porchLoad) remove(op, name string) {
	p.lat.time(op, func() {
		err := p.c.Delete(context.Background(), &porchv1alpha2.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns}})
		require.NoError(p.t, client.IgnoreNotFound(err))
		p.until(name, "gone", nil)
	})
}

// removePackage deletes what is left of pkg in repo once its revisions
// are deleted: its placeholder (the package on the branch, which a
// publication made), proposed for deletion and deleted, as Porch's test
// deletes every PackageRevision of its packages; op times it.
func (p *porchLoad) removePackage(op, repo, pkg string) {
	var placeholder string
	require.Eventually(p.t, func() bool {
		var l porchv1alpha2.PackageRevisionList
		require.NoError(p.t, p.c.List(context.Background(), &l, client.InNamespace(p.ns)))
		for _, pr := range l.Items {
			if pr.Spec.RepositoryName == repo && pr.Spec.PackageName == pkg && pr.Status.Revision < 0 {
				placeholder = pr.Name
				return true
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "%s/%s: no placeholder", repo, pkg)
	p.lat.time(op, func() {
		p.setLifecycle(placeholder, porchv1alpha2.LifecycleDeletionProposed)
		p.until(placeholder, "DeletionProposed", readyAt(porchv1alpha2.LifecycleDeletionProposed))
		require.NoError(p.t, p.c.Delete(context.Background(), &porchv1alpha2.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: placeholder, Namespace: p.ns}}))
		p.until(placeholder, "gone", nil)
	})
}

// BenchmarkPorchLoad repeats Porch's published load scenarios against
// the operator on a real kube-apiserver, with their numbers (flags
// -porch-*), and logs p50, p90, p99 and max per operation (each write
// from its API call until the operator realised it):
//
//   - iterative (Porch's test/e2e/performance TestIterative, defaults
//     -repos 1 -iterations 10,25,50 -sampling 5): per iteration, n
//     control revisions of one package in each control repository (the
//     repositories at once, each revision created, proposed and approved
//     in turn: ctl-create, ctl-propose, ctl-approve); then, sampling times,
//     a list of every PackageRevision and a test package's lifecycle in a
//     test repository (create, get, propose, get, approve, get,
//     propose-delete, get, delete; then its placeholder removed, cleanup);
//     then every control revision proposed for deletion and deleted, the
//     package's placeholder last (ctl-propose-delete, ctl-delete). Porch's
//     step "update resources" has no counterpart: the operator serves no
//     PackageRevisionResources (a draft's files are edited in git).
//   - scale (Porch's test/performance TestPorchScalePerformance, as its
//     README runs it, -repos 4 -packages 4): per repository, one after
//     another, its Repository created and Ready (repo-create, repo-ready);
//     per package, a draft created, proposed, approved, proposed for
//     deletion and deleted (delete: both, as Porch times them); then the
//     Repository deleted (repo-delete, until gone).
//
// Run it once: go test -run '^$' -bench PorchLoad -benchtime 1x.
func BenchmarkPorchLoad(b *testing.B) {
	b.Run("iterative", benchPorchIterative)
	b.Run("scale", benchPorchScale)
}

func benchPorchIterative(b *testing.B) {
	var counts []int
	for _, f := range strings.Split(*porchIterations, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "-porch-iterations")
		counts = append(counts, n)
	}
	e := newEnv(b)
	p := &porchLoad{env: e}
	var control []string
	for i := range *porchRepos {
		control = append(control, fmt.Sprintf("iterative-control-%d", i+1))
		e.addRepository(control[i])
	}
	e.addRepository("iterative-test")
	e.run(Options{Poll: 30 * time.Second, Workers: 8})
	e.waitRepositoriesReady(len(control) + 1)
	ctx := context.Background()

	b.ResetTimer()
	for range b.N {
		for _, n := range counts {
			// Control revisions, the repositories at once.
			made := make([][]string, len(control))
			var wg sync.WaitGroup
			for ri, repo := range control {
				wg.Go(func() {
					prev := ""
					for v := 1; v <= n; v++ {
						name := p.create("ctl-create", repo, "control-package", fmt.Sprintf("v%d", v), prev)
						p.move("ctl-propose", name, porchv1alpha2.LifecycleProposed)
						p.move("ctl-approve", name, porchv1alpha2.LifecyclePublished)
						made[ri] = append(made[ri], name)
						prev = name
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow() // a repository's work failed (in its goroutine)
			}
			for s := range *porchSampling {
				p.lat.time("list", func() {
					var l porchv1alpha2.PackageRevisionList
					require.NoError(b, e.c.List(ctx, &l))
				})
				get := func() {
					p.lat.time("get", func() {
						var pr porchv1alpha2.PackageRevision
						require.NoError(b, e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: prName("iterative-test", "test-package", fmt.Sprintf("s%d", s))}, &pr))
					})
				}
				name := p.create("create", "iterative-test", "test-package", fmt.Sprintf("s%d", s), "")
				get()
				p.move("propose", name, porchv1alpha2.LifecycleProposed)
				get()
				p.move("approve", name, porchv1alpha2.LifecyclePublished)
				get()
				p.move("propose-delete", name, porchv1alpha2.LifecycleDeletionProposed)
				get()
				p.remove("delete", name)
				p.removePackage("cleanup", "iterative-test", "test-package")
			}
			for ri := range control {
				wg.Go(func() {
					for _, name := range slices.Backward(made[ri]) {
						p.move("ctl-propose-delete", name, porchv1alpha2.LifecycleDeletionProposed)
						p.remove("ctl-delete", name)
					}
					p.removePackage("ctl-delete", control[ri], "control-package")
				})
			}
			wg.Wait()
		}
	}
	b.StopTimer()
	p.lat.report(b)
}

func benchPorchScale(b *testing.B) {
	e := newEnv(b)
	p := &porchLoad{env: e}
	e.run(Options{Poll: 30 * time.Second, Workers: 8})
	ctx := context.Background()

	b.ResetTimer()
	for it := range b.N {
		for r := range *porchScaleRepos {
			repo := fmt.Sprintf("perf-%d-%d", it, r)
			dir := filepath.Join(b.TempDir(), repo+".git")
			b.StopTimer()
			_, err := git.PlainInit(dir, true) // Porch's "Create Gitea Repository", not compared
			require.NoError(b, err)
			b.StartTimer()
			obj := &configv1alpha1.Repository{
				ObjectMeta: metav1.ObjectMeta{Name: repo, Namespace: e.ns},
				Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
					Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main", CreateBranch: true}},
			}
			p.lat.time("repo-create", func() { require.NoError(b, e.c.Create(ctx, obj)) })
			p.lat.time("repo-ready", func() {
				require.Eventually(b, func() bool {
					var cur configv1alpha1.Repository
					return e.c.Get(ctx, client.ObjectKeyFromObject(obj), &cur) == nil &&
						meta.IsStatusConditionTrue(cur.Status.Conditions, configv1alpha1.RepositoryReady)
				}, time.Minute, 10*time.Millisecond)
			})
			for k := range *porchScalePkgs {
				name := p.create("create", repo, fmt.Sprintf("network-function-%d", k), "v1", "")
				p.move("propose", name, porchv1alpha2.LifecycleProposed)
				p.move("approve", name, porchv1alpha2.LifecyclePublished)
				p.lat.time("delete", func() {
					p.setLifecycle(name, porchv1alpha2.LifecycleDeletionProposed)
					p.until(name, "DeletionProposed", readyAt(porchv1alpha2.LifecycleDeletionProposed))
					require.NoError(b, e.c.Delete(ctx, &porchv1alpha2.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}))
					p.until(name, "gone", nil)
				})
				p.removePackage("cleanup", repo, fmt.Sprintf("network-function-%d", k))
			}
			p.lat.time("repo-delete", func() {
				require.NoError(b, e.c.Delete(ctx, obj))
				require.Eventually(b, func() bool {
					return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(obj), &configv1alpha1.Repository{}))
				}, time.Minute, 10*time.Millisecond)
			})
		}
	}
	b.StopTimer()
	p.lat.report(b)
}
