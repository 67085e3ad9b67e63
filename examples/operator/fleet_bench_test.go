package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/repository/repotest"
)

var (
	benchFleet     = flag.Bool("fleet", false, "BenchmarkFleet: 1,000 repositories instead of 20")
	benchFleetN    = flag.Int("fleet-n", 0, "BenchmarkFleet: this many repositories (overrides -fleet)")
	benchFleetProf = flag.String("fleet-profile", "", "BenchmarkFleet: write the first replica's CPU profile over the idle polls, and its heap profile after them, to this path prefix (<prefix>-<case>.cpu, .heap)")
	benchFleetOpen = flag.Int("fleet-max-open", 0, "BenchmarkFleet: the operator's --max-open-repositories (default its own)")
	benchFleetPoll = flag.Duration("fleet-poll", 0, "BenchmarkFleet: the operator's --poll (default 30s with -fleet or -fleet-n, 5s without, to keep CI's run short)")
)

// Each repository of BenchmarkFleet: fleetPkgs packages of fleetRevs
// published revisions, 20 revisions and 24 objects with the placeholders.
const fleetPkgs, fleetRevs = 4, 5

// BenchmarkFleet measures one operator process, or three sharing the
// work (--shards 32), over many repositories (20; 1,000 with -args -fleet;
// any number with -args -fleet-n N) of 20 published revisions each, local
// (local-*) or behind a git http server (http-*), with a poll of 30 s (5 s
// at the default size; -args -fleet-poll) and the push webhook on. The replicas are processes
// of their own (the test binary as the operator, as TestShardedReplicasKill
// runs them), so their CPU, memory and descriptors are their own. It
// reports:
//
//   - discover-s: from the replicas' start until every object exists and
//     is realised;
//   - over two polls while nothing changes, summed over the replicas:
//     idle-cpu-ms/repo/poll (process CPU), heap-KiB/repo
//     (go_memstats_heap_inuse_bytes over the repositories), rss-MiB, fds
//     (open descriptors, /proc/<pid>/fd), and for http the git server's
//     requests per repository per poll (req/repo/poll);
//   - push-webhook-ms and push-poll-ms: from a push of a new draft to the
//     git server until its PackageRevision exists, with a webhook sent
//     after the push, and with none (the poll finds it), the mean of 3
//     pushes each; for http, webhook-req: the git server's requests per
//     webhook push (the push's own excluded).
//
// Run it once: go test -run '^$' -bench Fleet -benchtime 1x.
func BenchmarkFleet(b *testing.B) {
	n := 20
	if *benchFleet {
		n = 1000
	}
	if *benchFleetN > 0 {
		n = *benchFleetN
	}
	// One template repository, copied n times for each case.
	tmpl := filepath.Join(b.TempDir(), "template.git")
	require.NoError(b, fillRepository(tmpl, "template", fleetPkgs, fleetRevs))
	for _, c := range []struct {
		name     string
		http     bool
		replicas int
	}{{"local-1", false, 1}, {"local-3", false, 3}, {"http-1", true, 1}, {"http-3", true, 3}} {
		b.Run(c.name, func(b *testing.B) { fleetCase(b, tmpl, n, c.http, c.replicas) })
	}
}

func fleetRepo(i int) string { return fmt.Sprintf("fleet-%04d", i) }

// fleetReplica is an operator process of BenchmarkFleet and where it
// serves its metrics and webhook.
type fleetReplica struct {
	*replica
	metrics, webhook string
	pprof            string // "" without -fleet-profile
}

func fleetCase(b *testing.B, tmpl string, n int, overHTTP bool, replicas int) {
	ctx := context.Background()
	root := b.TempDir()
	for i := range n {
		require.NoError(b, os.CopyFS(filepath.Join(root, fleetRepo(i)+".git"), os.DirFS(tmpl)))
	}
	var srv *repotest.GitServer
	if overHTTP {
		srv = repotest.NewGitServer(b, root, nil)
	}
	e := newEnv(b)
	poll := *benchFleetPoll
	if poll == 0 {
		poll = 5 * time.Second
		if *benchFleet || *benchFleetN > 0 {
			poll = 30 * time.Second
		}
	}
	url := func(i int) string {
		if overHTTP {
			return srv.RepoURL(fleetRepo(i) + ".git")
		}
		return filepath.Join(root, fleetRepo(i)+".git")
	}
	for i := range n {
		require.NoError(b, e.c.Create(ctx, &configv1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: fleetRepo(i), Namespace: e.ns},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
				Git: &configv1alpha1.GitRepository{Repo: url(i), Branch: "main"}},
		}))
	}
	secret := []byte("fleet")
	secretFile := filepath.Join(b.TempDir(), "secret")
	require.NoError(b, os.WriteFile(secretFile, secret, 0o600))
	want := n * fleetPkgs * (fleetRevs + 1)
	realised := func(opts ...client.ListOption) int { return countRealised(b, ctx, e, opts...) }

	b.ResetTimer()
	start := time.Now()
	var reps []fleetReplica
	for i := range replicas {
		r := fleetReplica{metrics: freeAddr(b), webhook: freeAddr(b)}
		var prof []string
		if *benchFleetProf != "" {
			r.pprof = freeAddr(b)
			prof = []string{"--pprof-bind-address", r.pprof}
		}
		if *benchFleetOpen > 0 {
			prof = append(prof, "--max-open-repositories", strconv.Itoa(*benchFleetOpen))
		}
		args := []string{"--poll", poll.String(), "--workers", "8", "--repository-root", root, "--repository-root", filepath.Dir(e.gitDir),
			"--metrics-bind-address", r.metrics, "--webhook-listen", r.webhook, "--webhook-secret-file", secretFile}
		if replicas > 1 {
			args = append(args, "--shards", "32")
		} else {
			args = append(args, "--leader-elect=false")
		}
		r.replica = e.startReplica(fmt.Sprintf("fleet-%d", i), append(args, prof...)...)
		reps = append(reps, r)
	}
	for realised() < want {
		require.Less(b, time.Since(start), 30*time.Minute, "discovery of %d objects", want)
		time.Sleep(2 * time.Second)
	}
	discover := time.Since(start)
	b.Logf("%d objects of %d repositories discovered in %s", want, n, discover.Round(time.Millisecond))

	// Idle: let a poll pass (the reconciles of discovery settle), then
	// two polls with nothing changing.
	time.Sleep(poll + 5*time.Second)
	var req0 int64
	if srv != nil {
		req0 = srv.Requests()
	}
	cpu0 := 0.0
	for _, r := range reps {
		cpu0 += procCPU(b, r.cmd.Process.Pid)
	}
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		if reps[0].pprof != "" {
			fetchProfile(b, reps[0].pprof, fmt.Sprintf("profile?seconds=%d", int((2*poll).Seconds())-1), *benchFleetProf+"-"+caseName(b)+".cpu")
		}
	}()
	time.Sleep(2 * poll)
	<-profiled
	if reps[0].pprof != "" {
		fetchProfile(b, reps[0].pprof, "heap", *benchFleetProf+"-"+caseName(b)+".heap")
	}
	var cpu, heap, rss float64
	var fds int
	for _, r := range reps {
		pid := r.cmd.Process.Pid
		cpu += procCPU(b, pid)
		heap += scrapeMetric(b, r.metrics, "go_memstats_heap_inuse_bytes")
		rss += procRSS(b, pid)
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		require.NoError(b, err)
		fds += len(ents)
	}
	cpu -= cpu0
	if srv != nil {
		b.ReportMetric(float64(srv.Requests()-req0)/float64(n)/2, "req/repo/poll")
	}

	// A push: a new draft in repository i, through cad's engine on the
	// repository itself (a remote one's own clone), then the time until
	// its PackageRevision exists, with a webhook or without.
	push := func(i int, pkg string) { writeDraft(b, url(i), "pusher", pkg) }
	appeared := func(i int, pkg string, timeout time.Duration) time.Time {
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			var l porchv1alpha2.PackageRevisionList
			require.NoError(b, e.c.List(ctx, &l, client.InNamespace(e.ns), client.MatchingLabels{porchv1alpha2.RepositoryLabel: fleetRepo(i)}))
			for _, pr := range l.Items {
				if pr.Spec.PackageName == pkg {
					return time.Now()
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.Fatalf("%s: package %s did not appear in %s", fleetRepo(i), pkg, timeout)
		return time.Time{}
	}
	hook := func(i int) {
		body := []byte(fmt.Sprintf(`{"object_kind":"push","project":{"git_http_url":%q}}`, url(i)))
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		req, err := http.NewRequest("POST", "http://"+reps[0].webhook+WebhookPath, bytes.NewReader(body))
		require.NoError(b, err)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
	}
	var viaHook, viaPoll time.Duration
	var hookReq int64
	const pushes = 3
	for k := range pushes {
		i := (k * 7919) % n
		pkg := fmt.Sprintf("hooked-%d", k)
		push(i, pkg)
		t := time.Now()
		var r0 int64
		if srv != nil {
			r0 = srv.RepoRequests(fleetRepo(i) + ".git")
		}
		hook(i)
		viaHook += appeared(i, pkg, time.Minute).Sub(t)
		if srv != nil {
			hookReq += srv.RepoRequests(fleetRepo(i)+".git") - r0
		}
	}
	for k := range pushes {
		i := (k*7919 + 1) % n
		pkg := fmt.Sprintf("polled-%d", k)
		push(i, pkg)
		t := time.Now()
		viaPoll += appeared(i, pkg, 2*poll+time.Minute).Sub(t)
	}
	b.StopTimer()
	b.ReportMetric(float64(n), "repos")
	b.ReportMetric(float64(want), "objects")
	b.ReportMetric(discover.Seconds(), "discover-s")
	b.ReportMetric(cpu*1000/float64(n)/2, "idle-cpu-ms/repo/poll")
	b.ReportMetric(cpu/(2*poll.Seconds())*100, "idle-cpu-%core")
	b.ReportMetric(heap/1024/float64(n), "heap-KiB/repo")
	b.ReportMetric(rss/(1<<20), "rss-MiB")
	b.ReportMetric(float64(fds), "fds")
	b.ReportMetric(float64(viaHook.Milliseconds())/pushes, "push-webhook-ms")
	b.ReportMetric(float64(viaPoll.Milliseconds())/pushes, "push-poll-ms")
	if srv != nil {
		b.ReportMetric(float64(hookReq)/pushes, "webhook-req")
	}
}

// fetchProfile writes the pprof profile at http://addr/debug/pprof/<what>
// to file.
func fetchProfile(tb testing.TB, addr, what, file string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + what)
	if err != nil {
		tb.Errorf("profile %s: %v", what, err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(file, data, 0o644)
	}
	if err != nil {
		tb.Errorf("profile %s: %v", what, err)
	}
}

// caseName is the last element of tb's name.
func caseName(tb testing.TB) string { return filepath.Base(tb.Name()) }

// freeAddr returns a loopback address with a port free at the time.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	defer l.Close()
	return l.Addr().String()
}

// procCPU returns the user and system CPU seconds of process pid.
func procCPU(tb testing.TB, pid int) float64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(tb, err)
	// The fields after the command name (which may hold spaces), from
	// the third: utime and stime are the 14th and 15th.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err := strconv.ParseFloat(f[11], 64)
	require.NoError(tb, err)
	stime, err := strconv.ParseFloat(f[12], 64)
	require.NoError(tb, err)
	return (utime + stime) / 100 // clock ticks (USER_HZ, 100 on Linux)
}

// procRSS returns the resident set size of process pid in bytes.
func procRSS(tb testing.TB, pid int) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(tb, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			require.NoError(tb, err)
			return kb * 1024
		}
	}
	tb.Fatalf("no VmRSS for process %d", pid)
	return 0
}

// scrapeMetric returns the value of the unlabelled Prometheus metric name
// served at addr.
func scrapeMetric(tb testing.TB, addr, name string) float64 {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(tb, err)
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(tb, err)
			return f
		}
	}
	tb.Fatalf("no metric %s at %s", name, addr)
	return 0
}
