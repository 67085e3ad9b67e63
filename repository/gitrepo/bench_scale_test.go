package gitrepo_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// Benchmarks on repositories shaped as Porch writes them (porchFixture):
// every approval commit holds every package. By default the shapes are
// small, so that CI's run of every benchmark once stays quick; with
// -scale they are the sizes of issue 14 (fixtures of up to 50,000
// revisions take minutes to build, once per process):
//
//	go test -run '^$' -bench Porch -benchtime 20x -count 6 ./repository/gitrepo/ -args -scale

var scale = flag.Bool("scale", false, "benchmark Porch-shaped repositories at full size (10,000 and 50,000 revisions)")

// readShapes are a small and a large repository for reading one revision.
func readShapes() []porchShape {
	if *scale {
		return []porchShape{{Packages: 100, Revisions: 100}, {Packages: 2000, Revisions: 10000},
			{Packages: 100, Revisions: 100, Dirs: 10}, {Packages: 2000, Revisions: 10000, Dirs: 20}}
	}
	return []porchShape{{Packages: 10, Revisions: 10}, {Packages: 100, Revisions: 500}, {Packages: 100, Revisions: 500, Dirs: 5}}
}

// listShapes are repositories of three sizes, for listing and approving,
// on both of Porch's layouts: packages in directories of a hundred (D=20
// and D=100 at full size) and every package at the root (D=1, where each
// approval commit's root tree holds every package). With -scale they are
// issue 22's 100, 10,000 and 50,000 revisions.
func listShapes() []porchShape {
	if *scale {
		return []porchShape{
			{Packages: 20, Revisions: 100, Dirs: 2, Drafts: 2, Proposals: 2},
			{Packages: 20, Revisions: 100, Dirs: 1, Drafts: 2, Proposals: 2},
			{Packages: 2000, Revisions: 10000, Dirs: 20, Drafts: 100, Proposals: 100},
			{Packages: 2000, Revisions: 10000, Dirs: 1, Drafts: 100, Proposals: 100},
			{Packages: 10000, Revisions: 50000, Dirs: 100, Drafts: 500, Proposals: 500},
			{Packages: 10000, Revisions: 50000, Dirs: 1, Drafts: 500, Proposals: 500},
		}
	}
	return []porchShape{{Packages: 10, Revisions: 10, Dirs: 1}, {Packages: 100, Revisions: 400, Dirs: 4, Drafts: 5, Proposals: 5}, {Packages: 100, Revisions: 400, Dirs: 1, Drafts: 5, Proposals: 5}, {Packages: 250, Revisions: 1000, Dirs: 5, Drafts: 25, Proposals: 25}}
}

// BenchmarkPorchReadCold reads one revision's files through a new
// Repository each time (no cache): the cost of the first read of a
// process.
func BenchmarkPorchReadCold(b *testing.B) {
	ctx := context.Background()
	for _, s := range readShapes() {
		dir := porchFixture(b, s)
		// A package in the middle, at its last revision.
		i := s.Packages / 2
		n := s.Revisions / s.Packages
		key := revision.Key{Package: s.pkg(i), Revision: n}
		read := func(b *testing.B, key *revision.Key, before func()) {
			var cpu time.Duration
			faults := minorFaults()
			defer func() {
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(minorFaults()-faults)/float64(b.N), "faults/op")
			}()
			for b.Loop() {
				if before != nil {
					b.StopTimer()
					before()
					b.StartTimer()
				}
				start := cpuTime()
				r := mustOpen(b, benchSpec(dir), nil)
				pr, err := r.Get(ctx, *key)
				if err != nil {
					b.Fatal(err)
				}
				files, err := pr.Files(ctx)
				if err != nil || len(files.Paths()) < 3 {
					b.Fatalf("files: %v, %v", files.Paths(), err)
				}
				r.Close()
				cpu += cpuTime() - start
			}
		}
		noPaths := func() { os.Remove(filepath.Join(dir, "cad-paths")) }
		// A repository no list has seen, the revision read by no process
		// before: the package is found through the tagged commit's root
		// tree.
		b.Run(s.String()+"/cad-first", func(b *testing.B) {
			read(b, &key, noPaths)
		})
		// A repository no list has seen, the revision read before by
		// another process (the first iteration pays cad-first's cost).
		b.Run(s.String()+"/cad", func(b *testing.B) {
			noPaths()
			read(b, &key, nil)
		})
		// A revision that cad approved, in a repository no list has seen
		// (approved outside the timing, in a copy, each iteration).
		b.Run(s.String()+"/cad-approved", func(b *testing.B) {
			cp := copyDir(b, dir)
			os.Remove(filepath.Join(cp, "cad-paths"))
			w := mustOpen(b, benchSpec(cp), nil)
			defer w.Close()
			nth := 0
			var akey revision.Key
			approve := func() {
				nth++
				os.Remove(filepath.Join(cp, "cad-paths"))
				k := revision.Key{Package: key.Package, Workspace: fmt.Sprintf("approved%d", nth)}
				d, err := w.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: kptPkg(key.Package, map[string]string{"a.yaml": fmt.Sprintf("a: %d\n", nth), "b.yaml": "b: 1\n"})})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
					b.Fatal(err)
				}
				if _, err := w.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
				pr, err := w.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				akey = revision.Key{Package: key.Package, Revision: pr.Meta().Key.Revision}
			}
			orig := dir
			dir = cp
			defer func() { dir = orig }()
			read(b, &akey, approve)
		})
		// After a list (of any process): the package tree is found in
		// cad-paths.
		b.Run(s.String()+"/cad-listed", func(b *testing.B) {
			r := mustOpen(b, benchSpec(dir), nil)
			if _, err := r.List(ctx, repository.ListOptions{}); err != nil {
				b.Fatal(err)
			}
			r.Close()
			if _, err := os.Stat(filepath.Join(dir, "cad-paths")); err != nil {
				b.Fatal(err)
			}
			read(b, &key, nil)
		})
		b.Run(s.String()+"/git-ls-tree", func(b *testing.B) {
			for b.Loop() {
				runGit(b, dir, "", "ls-tree", "-r", fmt.Sprintf("%s/v%d:%s", key.Package, n, key.Package))
			}
		})
	}
}

// BenchmarkPorchList lists every revision through a new Repository, and
// reports the CPU it took (cpu-ns/op) beside the wall time.
func BenchmarkPorchList(b *testing.B) {
	ctx := context.Background()
	for _, s := range listShapes() {
		dir := porchFixture(b, s)
		want := s.Revisions + s.Packages + s.Drafts + s.Proposals
		list := func(b *testing.B) {
			r := mustOpen(b, benchSpec(dir), nil)
			revs, err := r.List(ctx, repository.ListOptions{})
			if err != nil || len(revs) != want {
				b.Fatalf("List: %d revisions, %v; want %d", len(revs), err, want)
			}
			r.Close()
		}
		paths := filepath.Join(dir, "cad-paths")
		// The first list of a repository: no cad-paths yet (it writes it).
		b.Run(s.String()+"/cad-cold", func(b *testing.B) {
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				os.Remove(paths)
				b.StartTimer()
				start := cpuTime()
				list(b)
				cpu += cpuTime() - start
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
		// Later lists of a new process: cad-paths is there.
		b.Run(s.String()+"/cad-cold-indexed", func(b *testing.B) {
			b.ReportAllocs()
			list(b)
			cpu := cpuTime()
			for b.Loop() {
				list(b)
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
		// The first list of a new process, in a child: no cad-paths yet
		// (it writes it), its peak memory and CPU.
		b.Run(s.String()+"/cad-cold-rss", func(b *testing.B) {
			var peak, cpu float64
			for b.Loop() {
				b.StopTimer()
				os.Remove(paths)
				b.StartTimer()
				kb, c := runListChild(b, dir, "list", want)
				peak, cpu = max(peak, kb), cpu+c
			}
			b.ReportMetric(peak/1024, "peak-rss-MB")
			b.ReportMetric(cpu/float64(b.N), "cpu-ns/op")
		})
		// The peak memory of a new process that lists once, with the
		// cad-paths (a child process: the benchmark's own peak holds its
		// fixtures and earlier runs).
		// List holds every revision at once; Range (repository.RangeLister)
		// one batch.
		for _, mode := range []string{"list", "range"} {
			name := "/cad-cold-indexed-rss"
			if mode == "range" {
				name += "-range"
			}
			b.Run(s.String()+name, func(b *testing.B) {
				var peak, cpu float64
				for b.Loop() {
					kb, c := runListChild(b, dir, mode, want)
					peak, cpu = max(peak, kb), cpu+c
				}
				b.ReportMetric(peak/1024, "peak-rss-MB")
				b.ReportMetric(cpu/float64(b.N), "cpu-ns/op")
			})
		}
		b.Run(s.String()+"/git-for-each-ref", func(b *testing.B) {
			for b.Loop() {
				runGit(b, dir, "", "for-each-ref", "--format=%(objectname) %(refname)")
			}
		})
		// What git needs to do what a list does for published revisions,
		// done the cheapest way: the refs, then every tag's package tree
		// looked up by one cat-file process (the ls-tree <tag>:<package>
		// of every tag, without a process each). Its CPU is git's.
		b.Run(s.String()+"/git-for-each-ref+cat-file", func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				refs := exec.Command("git", "for-each-ref", "--format=%(refname:short)", "refs/tags")
				refs.Dir = dir
				out, err := refs.Output()
				if err != nil {
					b.Fatal(err)
				}
				var in strings.Builder
				for tag := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
					fmt.Fprintf(&in, "%s:%s\n", tag, tag[:strings.LastIndex(tag, "/")])
				}
				cat := exec.Command("git", "cat-file", "--batch-check")
				cat.Dir, cat.Stdin = dir, strings.NewReader(in.String())
				got, err := cat.Output()
				if err != nil || strings.Count(string(got), " tree ") != s.Revisions {
					b.Fatalf("cat-file: %v, %d trees", err, strings.Count(string(got), " tree "))
				}
				for _, p := range []*os.ProcessState{refs.ProcessState, cat.ProcessState} {
					cpu += p.UserTime() + p.SystemTime()
				}
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkPorchListThenRead is a new process that lists a repository
// (no cad-paths yet) and then reads the Kptfile (Info) of
// 100 published revisions spread over it, or of every one: what a list
// leaves to the first read of a revision (its package tree, for a tag its
// commit registers) is paid there.
func BenchmarkPorchListThenRead(b *testing.B) {
	ctx := context.Background()
	for _, s := range listShapes() {
		dir := porchFixture(b, s)
		for _, all := range []bool{false, true} {
			name := "/read-100"
			if all {
				name = "/read-all"
			}
			b.Run(s.String()+name, func(b *testing.B) {
				var listCPU, readCPU time.Duration
				for b.Loop() {
					b.StopTimer()
					os.Remove(filepath.Join(dir, "cad-paths"))
					b.StartTimer()
					start := cpuTime()
					r := mustOpen(b, benchSpec(dir), nil)
					listed, err := r.List(ctx, repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecyclePublished}})
					revs := slices.DeleteFunc(listed, func(pr revision.PackageRevision) bool { return pr.Meta().Key.Revision <= 0 })
					if err != nil || len(revs) != s.Revisions {
						b.Fatalf("List: %d revisions, %v", len(revs), err)
					}
					listedAt := cpuTime()
					step := 1
					if !all {
						step = max(1, len(revs)/100)
					}
					for i := 0; i < len(revs); i += step {
						if _, err := revs[i].Info(ctx); err != nil {
							b.Fatalf("Info %s: %v", revs[i].Meta().Key, err)
						}
					}
					r.Close()
					end := cpuTime()
					listCPU += listedAt - start
					readCPU += end - listedAt
				}
				b.ReportMetric(float64(listCPU)/float64(b.N), "list-cpu-ns/op")
				b.ReportMetric(float64(readCPU)/float64(b.N), "read-cpu-ns/op")
				b.ReportMetric(float64(listCPU+readCPU)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkPorchApprove approves one proposal of a package in the middle.
func BenchmarkPorchApprove(b *testing.B) {
	ctx := context.Background()
	for _, s := range listShapes() {
		b.Run(s.String()+"/cad", func(b *testing.B) {
			dir := copyDir(b, porchFixture(b, s))
			r := mustOpen(b, benchSpec(dir), &gitrepo.Options{})
			defer r.Close()
			pkg := s.pkg(s.Packages / 2)
			n := 0
			var cpu time.Duration
			approve := func() {
				n++
				ws := fmt.Sprintf("bench%d", n)
				b.StopTimer()
				propose(b, r, pkg, ws)
				b.StartTimer()
				start := cpuTime()
				if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: pkg, Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
					b.Fatalf("approve: %v", err)
				}
				cpu += cpuTime() - start
			}
			approve() // the first write loads the pack index
			cpu = 0
			for b.Loop() {
				approve()
			}
			// The CPU is steadier than the time, which waits for the
			// disk (each approval is made durable).
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
		// The same update by the git CLI: the branch's root tree listed,
		// one package's entry replaced, the new tree written (mktree), a
		// merge commit on it, the branch moved and a tag created in one
		// ref transaction. Its CPU is git's, process starts included.
		b.Run(s.String()+"/git", func(b *testing.B) {
			dir := copyDir(b, porchFixture(b, s))
			pkg := s.pkg(s.Packages / 2)
			top, _, _ := strings.Cut(pkg, "/")
			other := s.pkg(s.Packages/2 + 1)
			var cpu time.Duration
			run := func(stdin string, args ...string) string {
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("git %v: %v", args, err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				return string(out)
			}
			// A tree to put in place of the package: another package's.
			sub := strings.TrimSpace(runGit(b, dir, "", "rev-parse", "main:"+other))
			n := 0
			for b.Loop() {
				n++
				head := strings.TrimSpace(run("", "rev-parse", "main"))
				var listing strings.Builder
				for line := range strings.SplitSeq(strings.TrimSuffix(run("", "ls-tree", "main"), "\n"), "\n") {
					if strings.HasSuffix(line, "\t"+top) && top == pkg {
						line = "040000 tree " + sub + "\t" + top
					}
					listing.WriteString(line + "\n")
				}
				tree := strings.TrimSpace(run(listing.String(), "mktree"))
				commit := strings.TrimSpace(run("", "commit-tree", tree, "-p", head, "-p", head, "-m", fmt.Sprintf("Approving package revision %s/%d", pkg, 1000+n)))
				run(fmt.Sprintf("start\nupdate refs/heads/main %s %s\ncreate refs/tags/%s/v%d %s\nprepare\ncommit\n", commit, head, pkg, 1000+n, commit), "update-ref", "--stdin")
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// listChildEnv names the repository a child process of the benchmark
// lists once before it reports its peak resident memory; listModeEnv says
// how: "list" (List, the default) or "range" (Range, keeping nothing but
// a count of the revisions).
const (
	listChildEnv = "CAD_BENCH_LIST_CHILD"
	listModeEnv  = "CAD_BENCH_LIST_MODE"
)

// listChild lists the repository at dir once and prints the number of
// revisions, the peak resident set (VmHWM, kB) and the CPU time (ns).
func listChild(dir string) int {
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, benchSpec(dir), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if p := os.Getenv("CAD_BENCH_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	if os.Getenv("CAD_BENCH_RSS_DETAIL") != "" {
		stop := sampleRSS()
		defer stop()
	}
	var revs []revision.PackageRevision
	n := 0
	if os.Getenv(listModeEnv) == "range" {
		for pr, err := range r.Range(ctx, repository.ListOptions{}) {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if pr.Meta().Key.Workspace == "" {
				fmt.Fprintln(os.Stderr, "a revision without a workspace:", pr.Meta().Key)
				return 1
			}
			n++
			if n == 30000 {
				writeHeapProfile() // what a Range holds half way through 50,000
			}
		}
	} else {
		revs, err = r.List(ctx, repository.ListOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		n = len(revs)
	}
	if revs != nil {
		writeHeapProfile() // what a List returns
	}
	runtime.KeepAlive(revs)
	if os.Getenv("CAD_BENCH_RSS_DETAIL") != "" {
		// The mappings of the repository's files, before Close unmaps them.
		if maps, err := os.ReadFile("/proc/self/smaps"); err == nil {
			var file string
			for _, line := range strings.Split(string(maps), "\n") {
				if f := strings.Fields(line); len(f) >= 6 && strings.Contains(f[0], "-") {
					file = f[5]
				} else if f := strings.Fields(line); len(f) == 5 && strings.Contains(f[0], "-") {
					file = ""
				} else if strings.HasPrefix(line, "Rss:") && strings.HasPrefix(file, dir) {
					fmt.Fprintln(os.Stderr, file, line)
				}
			}
		}
	}
	r.Close()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var hwm int
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
		}
	}
	fmt.Printf("%d %d %d\n", n, hwm, cpuTime())
	if os.Getenv("CAD_BENCH_RSS_DETAIL") != "" {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "Rss") || strings.HasPrefix(line, "Vm") {
				fmt.Fprintln(os.Stderr, line)
			}
		}
	}
	return 0
}

// sampleRSS samples the resident set every 2 ms until the returned func
// is called, which prints the sample at which it peaked: anonymous and
// file-backed pages, and the Go heap in use then.
func sampleRSS() func() {
	type sample struct {
		anon, file, heap int
		at               time.Duration
		files            string // the resident pages of each mapped file
	}
	start := time.Now()
	mapped := func() string {
		b, err := os.ReadFile("/proc/self/smaps")
		if err != nil {
			return ""
		}
		var out, file string
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
				file = ""
				if len(f) >= 6 {
					file = filepath.Base(f[5])
				}
			case len(f) >= 2 && f[0] == "Rss:" && file != "" && f[1] != "0":
				out += " " + file + "=" + f[1]
			}
		}
		return out
	}
	var peak sample
	done := make(chan struct{})
	stopped := make(chan struct{})
	field := func(status, name string) int {
		for _, line := range strings.Split(status, "\n") {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
				return n
			}
		}
		return 0
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			b, err := os.ReadFile("/proc/self/status")
			if err != nil {
				return
			}
			st := string(b)
			s := sample{anon: field(st, "RssAnon"), file: field(st, "RssFile")}
			if s.anon+s.file > peak.anon+peak.file {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				s.heap = int(ms.HeapInuse / 1024)
				s.at = time.Since(start)
				s.files = mapped()
				peak = s
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		fmt.Fprintf(os.Stderr, "sampled peak at %v: anon %d kB, file %d kB, heap in use %d kB;%s\n", peak.at.Round(time.Millisecond), peak.anon, peak.file, peak.heap, peak.files)
	}
}

// writeHeapProfile writes the live heap to the file CAD_BENCH_HEAPPROFILE
// names, if it names one.
func writeHeapProfile() {
	if p := os.Getenv("CAD_BENCH_HEAPPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
}

// runListChild runs listChild on dir in a new process, listing by mode
// ("list" or "range"), and returns its peak resident set in kB and its CPU
// time in ns.
func runListChild(b *testing.B, dir, mode string, want int) (float64, float64) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("no /proc/self/status")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), listChildEnv+"="+dir, listModeEnv+"="+mode)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("list child: %v\n%s", err, out)
	}
	var n int
	var kb, ns float64
	if _, err := fmt.Sscanf(string(out), "%d %f %f", &n, &kb, &ns); err != nil || n != want {
		b.Fatalf("list child: %q (%v), want %d revisions", out, err, want)
	}
	return kb, ns
}

// draftShapes are one package with few and with many revisions (500, or
// 5,000 with -scale), for creating drafts.
func draftShapes() []porchShape {
	if *scale {
		return []porchShape{{Packages: 1, Revisions: 10}, {Packages: 1, Revisions: 5000},
			{Packages: 1, Revisions: 10, Dirs: 20}, {Packages: 1, Revisions: 5000, Dirs: 20}}
	}
	return []porchShape{{Packages: 1, Revisions: 10}, {Packages: 1, Revisions: 500}}
}

// BenchmarkPorchCreateDraft creates a draft of a package and commits it
// for the first time (what a Copy does in git), in a Repository that
// has read the package before (warm) and in a new one each time (cold).
// Both check that no revision of the package holds the workspace.
func BenchmarkPorchCreateDraft(b *testing.B) {
	ctx := context.Background()
	for _, s := range draftShapes() {
		dir := copyDir(b, porchFixture(b, s))
		pkg := s.pkg(0)
		n := 0
		create := func(b *testing.B, r *gitrepo.Repository) {
			n++
			key := revision.Key{Package: pkg, Workspace: fmt.Sprintf("bench%d", n)}
			d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg(pkg, map[string]string{"ws.yaml": "ws: x\n"})})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		// Warm, cold and cold after packed-refs was written anew (as git
		// pack-refs does, or a deletion of another packed ref).
		benchWarmCold(b, s.String(), dir, create)
		// A new Repository each time, after another approved a revision
		// of the package (outside the timing): as Porch goes, a draft,
		// an approval, the next draft.
		b.Run(s.String()+"/cold-approved", func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				n++
				ws := fmt.Sprintf("approved%d", n)
				r := mustOpen(b, benchSpec(dir), nil)
				propose(b, r, pkg, ws)
				if _, err := approve(ctx, r, revision.Key{Package: pkg, Workspace: ws}); err != nil {
					b.Fatal(err)
				}
				r.Close()
				b.StartTimer()
				start := cpuTime()
				r = mustOpen(b, benchSpec(dir), nil)
				create(b, r)
				r.Close()
				cpu += cpuTime() - start
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
		// A new Repository each time, and no cad-paths: the first new
		// draft of the package in a repository cad never read.
		b.Run(s.String()+"/cold-first", func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				os.Remove(filepath.Join(dir, "cad-paths"))
				b.StartTimer()
				start := cpuTime()
				r := mustOpen(b, benchSpec(dir), nil)
				create(b, r)
				r.Close()
				cpu += cpuTime() - start
			}
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkPorchListDrafts is a warm List (the same Repository, listed
// before) of a repository of 1,000 published revisions of 100 packages at
// the root with 20 or 2,000 open drafts, their refs loose (as cad leaves
// drafts it wrote in the last hour) or packed (as Maintain leaves idle
// ones): what an open draft adds to a List that finds nothing changed.
func BenchmarkPorchListDrafts(b *testing.B) {
	ctx := context.Background()
	for _, drafts := range []int{20, 2000} {
		s := porchShape{Packages: 100, Revisions: 1000, Dirs: 1, Drafts: drafts}
		for _, loose := range []bool{true, false} {
			name := fmt.Sprintf("drafts=%d/packed", drafts)
			if loose {
				name = fmt.Sprintf("drafts=%d/loose", drafts)
			}
			b.Run(name, func(b *testing.B) {
				dir := copyDir(b, porchFixture(b, s))
				if loose {
					unpackRefs(b, dir, "refs/heads/drafts/")
					// Drafts not written in the last seconds, as most
					// open drafts are (refs written in the last 3 s are
					// read every time; see refstore's loosecache.go).
					time.Sleep(3500 * time.Millisecond)
				}
				r := mustOpen(b, benchSpec(dir), &gitrepo.Options{NoAutoMaintain: true})
				defer r.Close()
				want := s.Revisions + s.Packages + s.Drafts
				list := func() {
					revs, err := r.List(ctx, repository.ListOptions{})
					if err != nil || len(revs) != want {
						b.Fatalf("List: %d revisions, %v; want %d", len(revs), err, want)
					}
				}
				list()
				cpu := cpuTime()
				for b.Loop() {
					list()
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// unpackRefs moves the refs under prefix from dir's packed-refs into
// loose files.
func unpackRefs(b *testing.B, dir, prefix string) {
	b.Helper()
	packed := filepath.Join(dir, "packed-refs")
	data, err := os.ReadFile(packed)
	if err != nil {
		b.Fatal(err)
	}
	var keep strings.Builder
	for line := range strings.Lines(string(data)) {
		hash, ref, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if !ok || !strings.HasPrefix(ref, prefix) {
			keep.WriteString(line)
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(ref))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(hash+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(packed, []byte(keep.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}
