package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/revision"
)

// BenchmarkListPackageRevisions lists every PackageRevision of a server
// whose default repository holds P packages × R published revisions, one
// request at a time and eight at once, with the object cache and without
// it (every list reads every revision's files).
//
//	go test -run '^$' -bench ListPackageRevisions -benchtime 20x ./examples/server/internal/apiserver/
func BenchmarkListPackageRevisions(b *testing.B) {
	const p, r = 40, 5
	ts := startServer(b, "", nil)
	ctx := context.Background()
	eng := ts.engine("default")
	for i := range p {
		for j := range r {
			key := revision.Key{Package: fmt.Sprintf("pkg-%03d", i), Workspace: fmt.Sprintf("v%d", j+1)}
			var err error
			if j == 0 {
				_, err = eng.Init(ctx, "default", key, engine.InitOptions{Description: "bench"})
			} else {
				_, err = eng.Copy(ctx, "default", revision.Key{Package: key.Package, Revision: j}, key.Workspace, engine.CopyOptions{})
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eng.Propose(ctx, "default", key); err != nil {
				b.Fatal(err)
			}
			if _, err := eng.Approve(ctx, "default", key); err != nil {
				b.Fatal(err)
			}
		}
	}
	list := func(b *testing.B) {
		resp, err := http.Get(ts.URL + "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("list: %s", resp.Status)
		}
	}
	for _, cached := range []bool{true, false} {
		name := "cached"
		if !cached {
			name = "uncached"
		}
		b.Run(name+"/1", func(b *testing.B) {
			ts.prs = newPRCache(defaultPRCacheSize)
			if !cached {
				ts.prs = newPRCache(0)
			}
			list(b)
			for b.Loop() {
				list(b)
			}
		})
		b.Run(name+"/8", func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for range 8 {
					wg.Add(1)
					go func() { defer wg.Done(); list(b) }()
				}
				wg.Wait()
			}
		})
	}
}

// porchRepo writes, with git fast-import, a bare repository at dir in
// Porch's layout: p packages, each approved r times (every approval a
// commit on main holding every package, tagged <pkg>/v<N>).
func porchRepo(b testing.TB, dir string, p, r int) {
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	var in strings.Builder
	mark := 0
	for n := 1; n <= r; n++ {
		for i := range p {
			pkg := fmt.Sprintf("pkg-%03d", i)
			ws := fmt.Sprintf("v%d", n)
			kf := fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\ninfo:\n  description: revision %d\n", pkg, n)
			cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", pkg, n)
			msg := fmt.Sprintf("Approving package revision %s/%d\n\nkpt:{\"package\":%q,\"workspaceName\":%q,\"revision\":\"%d\"}\n", pkg, n, pkg, ws, n)
			mark++
			fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter Package Orchestration Service <porch@kpt.dev> %d +0000\ndata %d\n%s\n", mark, 1767225600+mark, len(msg), msg)
			if mark > 1 {
				fmt.Fprintf(&in, "from :%d\n", mark-1)
			}
			fmt.Fprintf(&in, "M 100644 inline %s/Kptfile\ndata %d\n%s\nM 100644 inline %s/cm.yaml\ndata %d\n%s\n\n", pkg, len(kf), kf, pkg, len(cm), cm)
			fmt.Fprintf(&in, "reset refs/tags/%s/v%d\nfrom :%d\n\n", pkg, n, mark)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git fast-import: %v\n%s", err, out)
	}
	// As git gc leaves them.
	if out, err := exec.Command("git", "-C", dir, "pack-refs", "--all").CombinedOutput(); err != nil {
		b.Fatalf("git pack-refs: %v\n%s", err, out)
	}
}

// BenchmarkListConcurrent lists every PackageRevision of a server with
// 20 git repositories of 20 packages × 5 published revisions (2,400
// PackageRevisions with the placeholders), one request at a time and
// eight at once, and reports the latencies' p50 and p95 and the ratio of
// the concurrent p95 to the single list's p50, and the CPU time of the
// process (server and client, with the watches' polls) per list. The
// clients keep their
// connections (eight idle ones). "1" and "8" send no Accept-Encoding (a
// plain body); "gzip/..." accept gzip, which the server then sends, and
// decompress it. "nocache/..." turn the list response cache off (each
// request lists the repositories' listings and encodes them, as before
// the cache). The repositories' refs are more than a second old when
// the lists are measured, so their Versions are checked by stat calls.
//
//	go test -run '^$' -bench ListConcurrent -benchtime 20x ./examples/server/internal/apiserver/
func BenchmarkListConcurrent(b *testing.B) {
	const repos, pkgs, revs = 20, 20, 5
	// The watches poll the refs once a second, as by default (the tests'
	// 50 ms would be most of what is measured).
	ts := startServer(b, "", func(o *Options) { o.GitPollInterval, o.CompressLists = time.Second, true })
	for i := range repos {
		dir := filepath.Join(b.TempDir(), fmt.Sprintf("r%02d.git", i))
		porchRepo(b, dir, pkgs, revs)
		repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
			"metadata": map[string]any{"name": fmt.Sprintf("r%02d", i)},
			"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": dir, "branch": "main"}}}
		if code := ts.doJSON("POST", repoPath, repo, nil); code != 201 {
			b.Fatalf("create repository: %d", code)
		}
	}
	want := repos * pkgs * (revs + 1)
	url := ts.URL + "/apis/porch.kpt.dev/v1alpha1/packagerevisions"
	// The first list builds the listings; its response is checked.
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	var out struct {
		Items []json.RawMessage `json:"items"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || len(out.Items) != want {
		b.Fatalf("list: %d items, %v; want %d", len(out.Items), err, want)
	}
	size := len(out.Items[0])
	// The repositories were written just now: their Versions are read in
	// full until their refs' files are a second old (versionCache).
	// A server's repositories are mostly older than that.
	time.Sleep(1100 * time.Millisecond)
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8}}
	gzipped := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	// The measured lists read the whole response without decoding it: the
	// client's decoding is not the server's work (and here it would take
	// the same two cores).
	list := func(b *testing.B, c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Error(err)
			return 0
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || n < int64(want*size/2) {
			b.Errorf("list: %s, %d bytes, %v", resp.Status, n, err)
		}
		return time.Since(start)
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(float64(len(d)-1)*p)]) / float64(time.Millisecond)
	}
	// The body's size on the wire, plain and compressed.
	wire := func(enc string) int {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Accept-Encoding", enc)
		resp, err := plain.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		return int(n)
	}
	b.Logf("a list of %d: %d bytes, %d with gzip", want, wire("identity"), wire("gzip"))
	lists := ts.lists
	for _, mode := range []struct {
		name   string
		client *http.Client
		cache  bool
	}{{"", plain, true}, {"gzip/", gzipped, true}, {"nocache/", plain, false}} {
		ts.lists = nil
		if mode.cache {
			ts.lists = lists
		}
		list(b, mode.client) // fills the cache, opens a connection
		var single []time.Duration
		b.Run(mode.name+"1", func(b *testing.B) {
			single = nil
			cpu := processCPU()
			for b.Loop() {
				single = append(single, list(b, mode.client))
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(len(single)), "cpu-ms/list")
			b.ReportMetric(pct(single, 0.5), "p50-ms")
			b.ReportMetric(pct(single, 0.95), "p95-ms")
		})
		b.Run(mode.name+"8", func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			cpu := processCPU()
			for b.Loop() {
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						d := list(b, mode.client)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(len(lat)), "cpu-ms/list")
			b.ReportMetric(pct(lat, 0.5), "p50-ms")
			b.ReportMetric(pct(lat, 0.95), "p95-ms")
			if len(single) > 0 {
				b.ReportMetric(pct(lat, 0.95)/pct(single, 0.5), "p95/single-p50")
			}
		})
	}
	ts.lists = lists
}
