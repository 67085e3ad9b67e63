package gitrepo_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// BenchmarkAgedRepository ages a repository of 100 packages × 10
// published revisions (one pack and packed-refs, as git gc leaves it)
// with cad's writes (-maint.approvals single approvals, each a draft, a
// proposal and an approval, and -maint.batches batches of two drafts),
// then measures, each in new processes (-maint.runs of them, medians),
// opening it, a cold Get and read of one revision, a first List and a
// warm List: aged, after Repository.Maintain, and after git gc on a
// copy.
//
//	go test -run '^$' -bench AgedRepository -benchtime 1x ./repository/gitrepo/

var (
	maintApprovals = flag.Int("maint.approvals", 300, "single approvals aging BenchmarkAgedRepository's repository")
	maintBatches   = flag.Int("maint.batches", 150, "batches aging BenchmarkAgedRepository's repository")
	maintRuns      = flag.Int("maint.runs", 7, "child processes per measurement of BenchmarkAgedRepository")
)

const maintReadEnv = "CAD_MAINT_READ" // the repository a read child reads

func init() {
	if dir := os.Getenv(maintReadEnv); dir != "" {
		os.Exit(maintReadChild(dir))
	}
}

// maintReadChild opens the repository at dir, Gets pkg-0001 v1 and reads
// its files, lists twice, and prints the four durations in nanoseconds.
func maintReadChild(dir string) int {
	ctx := context.Background()
	t0 := time.Now()
	r, err := gitrepo.Open(ctx, maintSpec(dir), &gitrepo.Options{NoAutoMaintain: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	t1 := time.Now()
	pr, err := r.Get(ctx, revision.Key{Package: "pkg-0001", Revision: 1})
	if err == nil {
		_, err = pr.Files(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	t2 := time.Now()
	if _, err := r.List(ctx, repository.ListOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	t3 := time.Now()
	if _, err := r.List(ctx, repository.ListOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	t4 := time.Now()
	fmt.Println(t1.Sub(t0).Nanoseconds(), t2.Sub(t1).Nanoseconds(), t3.Sub(t2).Nanoseconds(), t4.Sub(t3).Nanoseconds())
	return 0
}

// readFigures are the medians of maintReadChild's durations.
type readFigures struct{ open, get, list, warm time.Duration }

func measureReads(b *testing.B, dir string) readFigures {
	b.Helper()
	var runs [4][]time.Duration
	// A first run brings the files into the page cache, and writes
	// cad-paths, as the first list of any repository does.
	for i := -1; i < *maintRuns; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), maintReadEnv+"="+dir)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("read child: %v\n%s", err, out)
		}
		if i < 0 {
			continue
		}
		for j, f := range strings.Fields(string(out)) {
			ns, _ := strconv.ParseInt(f, 10, 64)
			runs[j] = append(runs[j], time.Duration(ns))
		}
	}
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	return readFigures{med(runs[0]), med(runs[1]), med(runs[2]), med(runs[3])}
}

// shape returns the packs, loose objects and loose tags of dir and the
// size of objects/ in KiB (git count-objects' size and size-pack).
func shape(b *testing.B, dir string) string {
	loose, packs := objectCounts(b, dir)
	tags, _ := looseRefs(b, dir, "tags")
	kib := 0
	for _, line := range strings.Split(git(b, dir, "count-objects", "-v"), "\n") {
		if k, v, _ := strings.Cut(line, ": "); k == "size" || k == "size-pack" {
			n, _ := strconv.Atoi(v)
			kib += n
		}
	}
	return fmt.Sprintf("%d packs, %d loose objects, %d loose tags, %d KiB", packs, loose, tags, kib)
}

func BenchmarkAgedRepository(b *testing.B) {
	ctx := context.Background()
	fresh := copyTB(b, fixture(b, 100, 10))
	r := openMaint(b, fresh, nil)
	ageRepo(b, r, "a", *maintApprovals, *maintBatches)
	r.Close()
	aged := copyTB(b, fresh)
	gcd := copyTB(b, fresh)
	gitMaint := copyTB(b, fresh)
	maintained := copyTB(b, fresh)

	b.ResetTimer()
	for range b.N {
		r := openMaint(b, maintained, nil)
		start := time.Now()
		st, err := r.Maintain(ctx, gitrepo.MaintainOptions{IdleRefAge: time.Nanosecond}) // the drafts count as idle
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
		b.ReportMetric(float64(took.Milliseconds()), "maintain-ms")
		b.Logf("Maintain: %v, %+v", took, st)
	}
	b.StopTimer()
	start := time.Now()
	git(b, gcd, "gc", "--quiet")
	b.Logf("git gc: %v", time.Since(start))
	// git maintenance's tasks that do what Maintain does (what
	// git maintenance start schedules hourly and daily): loose objects
	// into a pack, small packs merged (with a multi-pack-index), loose
	// refs packed. Its loose-objects and incremental-repack tasks work
	// in two steps (pack, then delete at the next run), so it runs twice,
	// as its schedule would.
	for i := 1; i <= 2; i++ {
		start = time.Now()
		git(b, gitMaint, "maintenance", "run", "--task=loose-objects", "--task=incremental-repack", "--task=pack-refs")
		b.Logf("git maintenance run #%d: %v, %s", i, time.Since(start), shape(b, gitMaint))
	}

	figs := map[string]readFigures{}
	for _, c := range []struct{ name, dir string }{{"aged", aged}, {"maintained", maintained}, {"git-gc", gcd}, {"git-maint", gitMaint}} {
		f := measureReads(b, c.dir)
		figs[c.name] = f
		b.Logf("%-10s %s: open %v, cold get+files %v, first list %v, warm list %v", c.name, shape(b, c.dir), f.open, f.get, f.list, f.warm)
	}
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
	for _, k := range []string{"aged", "maintained", "git-maint"} {
		f, g := figs[k], figs["git-gc"]
		b.Logf("%-10s / git-gc: open %.2fx, cold get %.2fx, first list %.2fx, warm list %.2fx", k, ratio(f.open, g.open), ratio(f.get, g.get), ratio(f.list, g.list), ratio(f.warm, g.warm))
	}
	m := figs["maintained"]
	b.ReportMetric(float64(m.get.Microseconds()), "maintained-coldget-us")
	b.ReportMetric(float64(figs["aged"].get.Microseconds()), "aged-coldget-us")
	b.ReportMetric(float64(figs["git-gc"].get.Microseconds()), "gc-coldget-us")
}

// copyTB copies the repository at src to a new directory.
func copyTB(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir() + "/repo.git"
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		tb.Fatalf("cp: %v\n%s", err, out)
	}
	return dst
}
