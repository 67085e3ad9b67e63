package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/fdcheck"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// openRepoDirs returns the repositories under root (its direct children)
// that this process holds a descriptor of.
func openRepoDirs(t testing.TB, root string) map[string]bool {
	t.Helper()
	held, err := fdcheck.HeldDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// poolFleet writes n local repositories under a new directory, each with
// pkgs packages of one published revision (git fast-import), registers
// them with ts and returns the directory and the repositories' names.
func poolFleet(t *testing.T, ts *testServer, root string, n, pkgs int) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("fleet-%02d", i)
		dir := filepath.Join(root, name)
		porchRepo(t, dir, pkgs, 1)
		repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": dir, "branch": "main"}}}
		if code := ts.doJSON("POST", repoPath, repo, nil); code != http.StatusCreated {
			t.Fatalf("create repository %s: %d", name, code)
		}
		names = append(names, name)
	}
	return names
}

// listNames lists every PackageRevision of namespace default and returns
// their names.
func listNames(t *testing.T, ts *testServer) map[string]bool {
	t.Helper()
	var l porchapi.PackageRevisionList
	if code := ts.doJSON("GET", prPath, nil, &l); code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	out := map[string]bool{}
	for _, pr := range l.Items {
		out[pr.Name] = true
	}
	return out
}

// With more local repositories than Options.MaxOpenRepositories, the
// server holds descriptors of at most that many while nothing changes
// (lists answered and polls made without opening a repository), every
// repository's revisions are still listed and watched, and a write into a
// repository it closed is listed and watched. With the bound lifted the
// same run holds every repository open, and the test fails.
func TestRepositoryPoolBound(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	const n, pkgs, maxOpen = 12, 2, 2
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", func(o *Options) {
		o.NoDefaultRepository, o.MaxOpenRepositories = true, maxOpen
		o.RepositoryRoots = append(o.RepositoryRoots, root)
	})
	names := poolFleet(t, ts, root, n, pkgs)
	want := map[string]bool{}
	for _, name := range names {
		for i := range pkgs {
			for _, ws := range []string{"v1", "main"} {
				want[fmt.Sprintf("%s.pkg-%03d.%s", name, i, ws)] = true
			}
		}
	}
	if got := listNames(t, ts); len(got) != len(want) {
		t.Fatalf("listed %d package revisions, want %d", len(got), len(want))
	}

	// A watch of every namespace, from now.
	resp, err := http.Get(ts.URL + "/apis/porch.kpt.dev/v1alpha1/packagerevisions?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seenMu sync.Mutex
	seen := map[string]string{} // name → last event type
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev metav1.WatchEvent
			if dec.Decode(&ev) != nil {
				return
			}
			var pr porchapi.PackageRevision
			if json.Unmarshal(ev.Object.Raw, &pr) == nil {
				seenMu.Lock()
				seen[pr.Name] = ev.Type
				seenMu.Unlock()
			}
		}
	}()
	waitFor(t, "the watch's initial events", func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		for name := range want {
			if seen[name] != "ADDED" {
				return false
			}
		}
		return true
	})

	// The refs are more than a second old: their stamps are trusted, and
	// polls and lists open nothing. Sample the descriptors while the
	// server is polled and listed.
	time.Sleep(1100 * time.Millisecond)
	most := 0
	for range 20 {
		if got := listNames(t, ts); len(got) != len(want) {
			t.Fatalf("listed %d package revisions, want %d", len(got), len(want))
		}
		most = max(most, len(openRepoDirs(t, root)))
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("%d repositories, at most %d open, %d held descriptors at once", n, maxOpen, most)
	if most > maxOpen {
		t.Fatalf("%d repositories held descriptors at once while nothing changed, want at most %d", most, maxOpen)
	}

	// A write into a repository the server closed: listed and watched.
	open := openRepoDirs(t, root)
	closed := ""
	for _, name := range names {
		if !open[name] {
			closed = name
			break
		}
	}
	if closed == "" {
		t.Fatalf("every repository is open: %v", open)
	}
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: closed, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: filepath.Join(root, closed), Branch: "main"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(&engine.Options{Repositories: engine.Repos{closed: r}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Init(ctx, closed, revision.Key{Repository: closed, Package: "pushed", Workspace: "ws"}, engine.InitOptions{Description: "pushed"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	pushed := closed + ".pushed.ws"
	waitFor(t, "the watch's event of the write", func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return seen[pushed] == "ADDED"
	})
	if !listNames(t, ts)[pushed] {
		t.Fatalf("%s is not listed", pushed)
	}
	if got := len(openRepoDirs(t, root)); got > maxOpen {
		t.Fatalf("%d repositories open after the write, want at most %d", got, maxOpen)
	}
}

// Concurrent requests of every kind (gets and lists of package revisions
// and of their resources, which read files lazily, and creations) over
// more repositories than the pool keeps open, while the pool closes every
// repository no one uses as fast as it can: no request fails or sees a
// repository closed under it (run with -race).
func TestRepositoryPoolConcurrentCloses(t *testing.T) {
	const n, pkgs, workers, rounds = 4, 2, 6, 15
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", func(o *Options) {
		o.NoDefaultRepository, o.MaxOpenRepositories, o.RepositoryIdleTimeout = true, 1, time.Nanosecond
		o.RepositoryRoots = append(o.RepositoryRoots, root)
	})
	names := poolFleet(t, ts, root, n, pkgs)
	stop := make(chan struct{})
	closer := make(chan int)
	go func() {
		closed := 0
		for {
			select {
			case <-stop:
				closer <- closed
				return
			default:
			}
			closed += ts.pool.CloseIdle()
			time.Sleep(time.Millisecond)
		}
	}()
	all := "/apis/porch.kpt.dev/v1alpha1/packagerevisions"
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*8)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				repo := names[(w+i)%n]
				name := fmt.Sprintf("%s.pkg-%03d.v1", repo, i%pkgs)
				check := func(what string, code int, want int) {
					if code != want {
						errs <- fmt.Errorf("worker %d round %d: %s: %d, want %d", w, i, what, code, want)
					}
				}
				var pr porchapi.PackageRevision
				check("get "+name, ts.doJSON("GET", prPath+"/"+name, nil, &pr), http.StatusOK)
				var prr porchapi.PackageRevisionResources
				code := ts.doJSON("GET", prrPath+"/"+name, nil, &prr)
				check("get resources of "+name, code, http.StatusOK)
				if code == http.StatusOK && prr.Spec.Resources["cm.yaml"] == "" {
					errs <- fmt.Errorf("resources of %s: no cm.yaml in %v", name, prr.Spec.Resources)
				}
				var l porchapi.PackageRevisionList
				check("list", ts.doJSON("GET", all, nil, &l), http.StatusOK)
				if len(l.Items) < n*pkgs*2 {
					errs <- fmt.Errorf("list: %d items, want at least %d", len(l.Items), n*pkgs*2)
				}
				var rl porchapi.PackageRevisionResourcesList
				check("list resources", ts.doJSON("GET", prrPath+"?fieldSelector=spec.repository="+repo, nil, &rl), http.StatusOK)
				if len(rl.Items) < pkgs*2 {
					errs <- fmt.Errorf("list resources of %s: %d items, want at least %d", repo, len(rl.Items), pkgs*2)
				}
				body := initPR(fmt.Sprintf("new-%d-%d", w, i), "ws")
				body["spec"].(map[string]any)["repository"] = repo
				check("create in "+repo, ts.doJSON("POST", prPath, body, nil), http.StatusCreated)
			}
		}()
	}
	wg.Wait()
	close(stop)
	closed := <-closer
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if closed == 0 {
		t.Fatal("the pool closed no repository during the requests")
	}
	t.Logf("%d repositories closed during %d requests", closed, workers*rounds*6)
	if got := listNames(t, ts); len(got) != n*pkgs*2+workers*rounds {
		t.Fatalf("listed %d package revisions, want %d", len(got), n*pkgs*2+workers*rounds)
	}
}

// A maintenance pass maintains every registered repository, the ones the
// pool closed too (opened for their run and closed again), and leaves at
// most the bound open.
func TestScheduledMaintenanceOfClosedRepositories(t *testing.T) {
	const n, maxOpen = 3, 1
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", func(o *Options) {
		o.NoDefaultRepository, o.MaxOpenRepositories, o.MaintainInterval = true, maxOpen, -1
		o.RepositoryRoots = append(o.RepositoryRoots, root)
	})
	names := poolFleet(t, ts, root, n, 1)
	for _, name := range names {
		dir := filepath.Join(root, name)
		for i := range 20 {
			h := gitCLI(t, dir, fmt.Sprintf("blob %s %d\n", name, i), "hash-object", "-w", "--stdin")
			gitCLI(t, dir, h+"\n", "pack-objects", "-q", "objects/pack/pack")
		}
		if packs, _ := countPacksLoose(t, dir); packs < 20 {
			t.Fatalf("%s: %d packs before maintenance", name, packs)
		}
	}
	open := openRepoDirs(t, root)
	if len(open) > maxOpen {
		t.Fatalf("%d repositories open before maintenance, want at most %d", len(open), maxOpen)
	}
	ts.maintainLoop().Pass(context.Background())
	for _, name := range names {
		packs, loose := countPacksLoose(t, filepath.Join(root, name))
		if packs > 2 || loose != 0 {
			t.Errorf("%s (open before the pass: %v): %d packs and %d loose objects after maintenance", name, open[name], packs, loose)
		}
		gitCLI(t, filepath.Join(root, name), "", "fsck", "--strict", "--no-dangling")
	}
	if got := len(openRepoDirs(t, root)); got > maxOpen {
		t.Fatalf("%d repositories open after maintenance, want at most %d", got, maxOpen)
	}
	if got := listNames(t, ts); len(got) != n*2 {
		t.Fatalf("listed %d package revisions after maintenance, want %d", len(got), n*2)
	}
}
