package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

var (
	benchPVSN   = flag.Int("pvs-n", 20, "BenchmarkVariantSetFleet: downstream repositories (issue 35 asks for 1,000)")
	benchPVSQPS = flag.Int("pvs-qps", 0, "BenchmarkVariantSetFleet: the replicas' --kube-api-qps (and twice that as the burst); 0: the operator's default (100)")
)

// BenchmarkVariantSetFleet measures a PackageVariantSet over many
// downstream repositories (20; -args -pvs-n N), local and empty, each
// registered as a Repository, with one operator process or three sharing
// them (--shards 32), each a process of its own, --poll 60s, the
// operator's default client rate limit (--kube-api-qps 100; -args
// -pvs-qps N to change it). It reports:
//
//   - first-s, first-cpu-s: from the set's creation until every
//     downstream draft's PackageRevision exists and is realised, and the
//     CPU of the replicas (summed) meanwhile;
//   - change-s, change-cpu-s: from the approval of a new upstream
//     revision (through the API: a copy proposed and approved) until
//     every downstream's object records the new upstream commit, and the
//     CPU meanwhile;
//
// and logs each replica's share: the downstream repositories in its
// shards (which only it writes, see variantshard.go) and its CPU.
//
// Run it once: go test -run '^$' -bench VariantSetFleet -benchtime 1x.
func BenchmarkVariantSetFleet(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas-%d", replicas), func(b *testing.B) { pvsFleetCase(b, *benchPVSN, replicas) })
	}
}

func pvsFleetCase(b *testing.B, n, replicas int) {
	ctx := context.Background()
	e := newEnv(b)
	upDir := filepath.Join(b.TempDir(), "upstream.git")
	require.NoError(b, fillRepository(upDir, "upstream", 1, 1))
	root := b.TempDir()
	site := func(i int) string { return fmt.Sprintf("site-%04d", i) }
	repos := []configv1alpha1.Repository{{ObjectMeta: metav1.ObjectMeta{Name: "upstream", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit, Git: &configv1alpha1.GitRepository{Repo: upDir, Branch: "main"}}}}
	for i := range n {
		dir := filepath.Join(root, site(i)+".git")
		_, err := git.PlainInit(dir, true)
		require.NoError(b, err)
		repos = append(repos, configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: site(i), Namespace: e.ns},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
				Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main", CreateBranch: true}}})
	}
	for i := range repos {
		require.NoError(b, e.c.Create(ctx, &repos[i]))
	}
	var reps []*replica
	for i := range replicas {
		args := []string{"--poll", "60s", "--workers", "8", "--repository-root", root, "--repository-root", filepath.Dir(upDir),
			"--repository-root", filepath.Dir(e.gitDir), "--metrics-bind-address", "0"}
		if *benchPVSQPS > 0 {
			args = append(args, "--kube-api-qps", fmt.Sprint(*benchPVSQPS), "--kube-api-burst", fmt.Sprint(2**benchPVSQPS))
		}
		if replicas > 1 {
			args = append(args, "--shards", "32")
		} else {
			args = append(args, "--leader-elect=false")
		}
		reps = append(reps, e.startReplica(fmt.Sprintf("pvs-%d", i), args...))
	}
	// Every repository Ready (the blueprints one too) and, with shards,
	// every shard held and each replica holding some.
	require.Eventually(b, func() bool {
		var l configv1alpha1.RepositoryList
		require.NoError(b, e.c.List(ctx, &l, client.InNamespace(e.ns)))
		ok := 0
		for _, r := range l.Items {
			if meta.IsStatusConditionTrue(r.Status.Conditions, configv1alpha1.RepositoryReady) {
				ok++
			}
		}
		return ok == n+2
	}, 30*time.Minute, time.Second, "repositories not Ready")
	var holders []string
	if replicas > 1 {
		require.Eventually(b, func() bool {
			holders = e.shardHolders("cad-operator", 32)
			seen := map[string]bool{}
			for _, h := range holders {
				if h == "" {
					return false
				}
				seen[h] = true
			}
			return len(seen) == replicas
		}, 5*time.Minute, time.Second, "shards not shared")
	}
	cpu := func() []float64 {
		out := make([]float64, len(reps))
		for i, r := range reps {
			out[i] = procCPU(b, r.cmd.Process.Pid)
		}
		return out
	}
	sum := func(a, b []float64) (s float64) {
		for i := range a {
			s += b[i] - a[i]
		}
		return s
	}
	// locks returns, per downstream repository, the upstream commits of
	// its realised pkg-00 objects.
	locks := func() map[string][]string {
		var l porchv1alpha2.PackageRevisionList
		require.NoError(b, e.c.List(ctx, &l, client.InNamespace(e.ns)))
		out := map[string][]string{}
		for _, pr := range l.Items {
			if !strings.HasPrefix(pr.Spec.RepositoryName, "site-") || pr.Spec.PackageName != "pkg-00" || pr.Status.Revision < 0 || !ready(&pr) {
				continue
			}
			c := ""
			if u := pr.Status.UpstreamLock; u != nil && u.Git != nil {
				c = u.Git.Commit
			}
			out[pr.Spec.RepositoryName] = append(out[pr.Spec.RepositoryName], c)
		}
		return out
	}

	b.ResetTimer()
	cpu0 := cpu()
	start := time.Now()
	var targets []string
	for i := range n {
		targets = append(targets, fmt.Sprintf(`{"name":%q}`, site(i)))
	}
	require.NoError(b, e.c.Create(ctx, &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: e.ns},
		Spec: spec[configv1alpha2.PackageVariantSetSpec](b, `{"upstream":{"repo":"upstream","package":"pkg-00"},
			"targets":[{"repositories":[`+strings.Join(targets, ",")+`]}]}`),
	}))
	var first map[string][]string
	for first = locks(); len(first) < n; first = locks() {
		require.Less(b, time.Since(start), 30*time.Minute, "first sync: %d of %d downstreams", len(first), n)
		time.Sleep(time.Second)
	}
	firstWall := time.Since(start)
	cpu1 := cpu()
	old := first[site(0)][0]
	require.NotEmpty(b, old)

	// An upstream change: a new revision copied, proposed and approved
	// through the API; the clock starts at the approval.
	p := &porchLoad{env: e}
	name := p.create("copy", "upstream", "pkg-00", "v2", "upstream.pkg-00.v1")
	p.move("propose", name, porchv1alpha2.LifecycleProposed)
	cpu2 := cpu()
	changed := time.Now()
	p.move("approve", name, porchv1alpha2.LifecyclePublished)
	reached := func() int {
		k := 0
		for _, cs := range locks() {
			for _, c := range cs {
				if c != "" && c != old {
					k++
					break
				}
			}
		}
		return k
	}
	for k := reached(); k < n; k = reached() {
		require.Less(b, time.Since(changed), 30*time.Minute, "upstream change: %d of %d downstreams", k, n)
		time.Sleep(time.Second)
	}
	changeWall := time.Since(changed)
	cpu3 := cpu()
	b.StopTimer()

	share := map[string]int{}
	for i := range n {
		h := "pvs-0"
		if holders != nil {
			h = holders[shardOf(repoKey(e.ns, site(i)), 32)]
		}
		share[h]++
	}
	var lines []string
	for i, r := range reps {
		lines = append(lines, fmt.Sprintf("%s: %d downstreams in its shards, CPU %.1f s first sync, %.1f s change", r.id, share[r.id], cpu1[i]-cpu0[i], cpu3[i]-cpu2[i]))
	}
	b.Logf("%d downstreams, %d replicas: first sync %s, change %s\n%s", n, replicas, firstWall.Round(time.Millisecond), changeWall.Round(time.Millisecond), strings.Join(lines, "\n"))
	if holders != nil {
		for _, r := range reps {
			require.NotZero(b, share[r.id], "replica %s holds no downstream", r.id)
		}
	}
	b.ReportMetric(float64(n), "downstreams")
	b.ReportMetric(firstWall.Seconds(), "first-s")
	b.ReportMetric(sum(cpu0, cpu1), "first-cpu-s")
	b.ReportMetric(changeWall.Seconds(), "change-s")
	b.ReportMetric(sum(cpu2, cpu3), "change-cpu-s")
}
