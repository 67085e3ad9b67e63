package apiserver

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository/repotest"
)

var fleetScale = flag.Bool("fleet-scale", false,
	"BenchmarkRepositoryFleet: 1,000 repositories of 4 packages x 5 revisions, local and over git http, in place of 200 local ones")

// fleetShape is one case of BenchmarkRepositoryFleet.
type fleetShape struct {
	name          string
	n, pkgs, revs int  // repositories; packages of each; published revisions of each package
	remote        bool // served by git http-backend on loopback, registered by URL
	maxOpen       int
	poll          time.Duration
}

// BenchmarkRepositoryFleet serves a fleet of git repositories written as
// Porch writes them and measures what a fleet costs the server. By
// default: 200 local repositories of 2 packages of one published
// revision, with every repository kept open (max-open 200, as the server
// did before the pool) and with a bound of 16. With -args -fleet-scale:
// 1,000 repositories of 4 packages x 5 published revisions (20 revisions,
// 24 PackageRevisions with the placeholders), local (poll 1s) and served
// by git http-backend on loopback (poll 10s), each with a bound of 16.
// It reports:
//
//   - register-s: registering every repository (each is opened once; a
//     remote one is cloned into the data directory);
//
//   - discover-s: from the first registration until a list answers
//     every revision, and first-list-s, that list alone;
//
//   - cpu-ms/list: CPU time of the process per list of everything;
//
//   - idle-cpu-ms/s/repo: CPU time of the process per second and
//     repository while nothing changes (the polls), and for the remote
//     fleet idle-git-cpu-ms/s/repo, that of the git server's processes;
//
//   - req/poll: requests to the git server per poll while nothing
//     changes (remote fleet);
//
//   - heap-kb/repo: live heap after a GC, less that before the fleet,
//     per repository;
//
//   - repos-open and fds: repositories holding descriptors and the
//     process's descriptors;
//
//   - restart-s: from a new server's start over the same data directory
//     until a list answers every revision;
//
//   - push-hook-ms and push-poll-ms: from the end of a git push (git CLI)
//     of a new published package to one repository until a watch sends
//     its PackageRevision, with a push webhook sent after the push and by
//     the poll alone (means of 3 pushes each).
//
//     go test -run '^$' -bench RepositoryFleet -benchtime 20x ./examples/server/internal/apiserver/
//     go test -run '^$' -bench RepositoryFleet -benchtime 5x -timeout 1h ./examples/server/internal/apiserver/ -args -fleet-scale
func BenchmarkRepositoryFleet(b *testing.B) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		b.Skip("no /proc/self/fd")
	}
	shapes := []fleetShape{
		{name: "max-open-200", n: 200, pkgs: 2, revs: 1, maxOpen: 200, poll: time.Second},
		{name: "max-open-16", n: 200, pkgs: 2, revs: 1, maxOpen: 16, poll: time.Second},
	}
	if *fleetScale {
		shapes = []fleetShape{
			{name: "local-1000x20", n: 1000, pkgs: 4, revs: 5, maxOpen: 16, poll: time.Second},
			{name: "http-1000x20", n: 1000, pkgs: 4, revs: 5, remote: true, maxOpen: 16, poll: 10 * time.Second},
		}
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) { benchFleet(b, sh) })
	}
}

func benchFleet(b *testing.B, sh fleetShape) {
	secret := []byte("fleet-hook")
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	for i := range sh.n {
		porchRepo(b, filepath.Join(root, fleetRepoName(i)+".git"), sh.pkgs, sh.revs)
	}
	b.Logf("fixture: %d repositories of %d x %d written in %s", sh.n, sh.pkgs, sh.revs, time.Since(t0).Round(time.Millisecond))
	url := func(i int) string { return filepath.Join(root, fleetRepoName(i)+".git") }
	var gs *repotest.GitServer
	if sh.remote {
		gs = repotest.NewGitServer(b, root, nil)
		url = func(i int) string { return gs.RepoURL(fleetRepoName(i) + ".git") }
	}
	requests := func() int64 {
		if gs == nil {
			return 0
		}
		return gs.Requests()
	}
	opts := func(o *Options) {
		o.NoDefaultRepository, o.MaxOpenRepositories, o.GitPollInterval = true, sh.maxOpen, sh.poll
		o.RepositoryRoots = append(o.RepositoryRoots, root)
		o.WebhookSecret = secret
	}
	ts := startServer(b, "", opts)
	heap0 := liveHeap()
	want := sh.n * sh.pkgs * (sh.revs + 1)
	list := func(ts *testServer) string {
		var l porchapi.PackageRevisionList
		if code := ts.doJSON("GET", prPath, nil, &l); code != http.StatusOK || len(l.Items) != want {
			b.Fatalf("list: %d, %d items, want %d", code, len(l.Items), want)
		}
		return l.ResourceVersion
	}

	start := time.Now()
	for i := range sh.n {
		repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
			"metadata": map[string]any{"name": fleetRepoName(i)},
			"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": url(i), "branch": "main"}}}
		if code := ts.doJSON("POST", repoPath, repo, nil); code != http.StatusCreated {
			b.Fatalf("create repository %s: %d", fleetRepoName(i), code)
		}
	}
	registered := time.Now()
	rv := list(ts)
	// b.Loop drops the metrics reported before it.
	register, discover, firstList := registered.Sub(start), time.Since(start), time.Since(registered)

	time.Sleep(sh.poll + 100*time.Millisecond) // the refs' stamps are trusted
	cpu := processCPU()
	for b.Loop() {
		list(ts)
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/list")
	b.ReportMetric(register.Seconds(), "register-s")
	b.ReportMetric(discover.Seconds(), "discover-s")
	b.ReportMetric(firstList.Seconds(), "first-list-s")

	// Nothing changes for three polls of every repository.
	idle := 3 * sh.poll
	cpu, gcpu, req := processCPU(), childCPU(), requests()
	time.Sleep(idle)
	perRepoSec := func(d time.Duration) float64 {
		return float64(d) / float64(time.Millisecond) / idle.Seconds() / float64(sh.n)
	}
	b.ReportMetric(perRepoSec(processCPU()-cpu), "idle-cpu-ms/s/repo")
	if sh.remote {
		b.ReportMetric(perRepoSec(childCPU()-gcpu), "idle-git-cpu-ms/s/repo")
		b.ReportMetric(float64(requests()-req)/3, "req/poll")
	}
	b.ReportMetric(float64(liveHeap()-heap0)/1024/float64(sh.n), "heap-kb/repo")
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		b.Fatal(err)
	}
	openUnder := root
	if sh.remote {
		openUnder = filepath.Join(ts.dataDir, "cache", "default")
	}
	b.ReportMetric(float64(len(openRepoDirs(b, openUnder))), "repos-open")
	b.ReportMetric(float64(len(fds)), "fds")

	// Pushes to one repository, seen by a watch from the list.
	w := newFleetWatch(b, ts, rv)
	target := sh.n / 2
	work := filepath.Join(b.TempDir(), "work")
	hook := func() {
		body := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"clone_url":%q}}`, url(target)))
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		req, err := http.NewRequest("POST", ts.URL+WebhookPath, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("webhook: %d", resp.StatusCode)
		}
	}
	push := func(k int, withHook bool) time.Duration {
		pkg := fmt.Sprintf("pushed-%d", k)
		name := fmt.Sprintf("%s.%s.v1", fleetRepoName(target), pkg)
		seen := w.await(name)
		pushApproval(b, url(target), work, pkg, 1)
		pushed := time.Now()
		if withHook {
			hook()
		}
		select {
		case at := <-seen:
			return at.Sub(pushed)
		case <-time.After(sh.poll*3 + time.Minute):
			b.Fatalf("no watch event for %s", name)
			return 0
		}
	}
	const pushes = 3
	var hookLat, pollLat time.Duration
	for k := range pushes {
		hookLat += push(2*k, true)
		pollLat += push(2*k+1, false)
	}
	b.ReportMetric(float64(hookLat)/float64(time.Millisecond)/pushes, "push-hook-ms")
	b.ReportMetric(float64(pollLat)/float64(time.Millisecond)/pushes, "push-poll-ms")

	// A restart over the same data directory: the server registers (and
	// opens once) every stored repository, its poller takes their first
	// baselines, and a list answers every revision.
	want += 2 * 2 * pushes // each push a new package: its revision and placeholder
	ts.stop()
	start = time.Now()
	ts = startServer(b, ts.dataDir, opts)
	list(ts)
	b.ReportMetric(time.Since(start).Seconds(), "restart-s")
}

func fleetRepoName(i int) string { return fmt.Sprintf("fleet-%04d", i) }

// gitRun runs the git CLI in dir with a fixed identity and returns its
// output.
func gitRun(b testing.TB, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=fleet", "-c", "user.email=fleet@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// liveHeap returns the bytes of live heap after a GC.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// childCPU returns the CPU time of the process's waited-for children (the
// git http-backend processes of a repotest.GitServer).
func childCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fleetWatch is a watch of every PackageRevision that tells when an
// object of a given name first arrives.
type fleetWatch struct {
	want atomic.Pointer[string]
	seen chan time.Time
}

func newFleetWatch(b *testing.B, ts *testServer, rv string) *fleetWatch {
	w := &fleetWatch{seen: make(chan time.Time, 1)}
	resp, err := http.Get(ts.URL + prPath + "?watch=true&resourceVersion=" + rv)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("watch: %d", resp.StatusCode)
	}
	b.Cleanup(func() { resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			if p := w.want.Load(); p != nil && strings.Contains(sc.Text(), `"name":"`+*p+`"`) && w.want.CompareAndSwap(p, nil) {
				w.seen <- time.Now()
			}
		}
	}()
	return w
}

// await makes the watch report on the returned channel when an object
// named name arrives.
func (w *fleetWatch) await(name string) <-chan time.Time {
	w.want.Store(&name)
	return w.seen
}
