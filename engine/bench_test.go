package engine_test

// Engine benchmarks, mostly over gitrepo on disk.
//
// CI runs every benchmark once (-benchtime=1x), so setup must be cheap.
// The approve benchmark needs histories of up to 5000 published
// revisions. Through the API that costs about 7 ms a revision on disk
// (35 s for 5000), and one git commit per revision written by git
// fast-import is no better (every commit writes a new root tree of up to
// a thousand entries: about 40 s for 5000 on a loaded 2-core machine).
// So benchHistory writes each history with git fast-import as five
// commits on main, one per round of approvals, each tagging its
// revisions <pkg>/v<N> as gitrepo does: the refs, main's head tree and
// the tagged trees an approval reads are those of a history built one
// approval at a time, and each size takes well under a second. A history
// is written once per run of the benchmark and shared by its iterations,
// which delete the revision they approve (untimed, through the
// repository) so that it keeps its size. TestBenchHistory checks that
// gitrepo and the engine read such a history as one they wrote.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// benchRevsPerPkg is how many published revisions each package of a
// benchmark history has.
const benchRevsPerPkg = 5

func benchPkg(i int) string { return fmt.Sprintf("bench-pkg-%04d", i) }

// benchHistory writes a bare repository at dir holding n published
// revisions of gitrepo's layout: ceil(n/benchRevsPerPkg) packages with up
// to benchRevsPerPkg revisions each, all on branch main, with the refs
// packed. It needs the git binary; without it the benchmark is skipped.
func benchHistory(tb testing.TB, dir string, n int) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("the benchmark history is written with git fast-import; git is not on PATH")
	}
	benchGit(tb, "", nil, "init", "--quiet", "--bare", dir)
	benchGit(tb, dir, nil, "symbolic-ref", "HEAD", "refs/heads/main")

	pr, pw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer pw.Close()
		w := bufio.NewWriterSize(pw, 1<<20)
		writeHistory(w, n)
		done <- w.Flush()
	}()
	benchGit(tb, dir, pr, "fast-import", "--quiet", "--done")
	pr.Close()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	// Refs in packed-refs, as git gc leaves a repository (and as the
	// gitrepo benchmarks have them); approvals add loose refs on top.
	benchGit(tb, dir, nil, "pack-refs", "--all")
}

// writeHistory writes the fast-import stream of benchHistory: one commit
// on main per round r = 1..benchRevsPerPkg that sets every package (with
// at least r revisions) to its revision r, and the tags <pkg>/v<r> on it.
// Writing a commit per revision instead would write as many root trees of
// up to a thousand entries, which takes git fast-import about 40 s for
// 5000 revisions on a loaded 2-core machine; what an approval reads (the
// refs, main's head tree, the package's tags and their commits) is the
// same.
func writeHistory(w *bufio.Writer, n int) {
	pkgs := (n + benchRevsPerPkg - 1) / benchRevsPerPkg
	const who = "Package Orchestration Service <porch@kpt.dev>"
	data := func(s string) { fmt.Fprintf(w, "data %d\n%s\n", len(s), s) }
	revs := func(p int) int { // the number of revisions of package p
		return n/pkgs + min(1, max(0, n%pkgs-p))
	}
	for r := 1; r <= benchRevsPerPkg; r++ {
		fmt.Fprintf(w, "commit refs/heads/main\nmark :%d\ncommitter %s %d +0000\n", r, who, 1_700_000_000+r)
		data(fmt.Sprintf("Approving package revisions, round %d", r))
		if r > 1 {
			fmt.Fprintf(w, "from :%d\n", r-1)
		}
		var tagged []string
		for p := range pkgs {
			if revs(p) < r {
				continue
			}
			pkg := benchPkg(p)
			if r == 1 {
				fmt.Fprintf(w, "M 100644 inline %s/Kptfile\n", pkg)
				data("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + pkg + "\ninfo:\n  description: benchmark package\n")
			}
			fmt.Fprintf(w, "M 100644 inline %s/cm.yaml\n", pkg)
			data(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", pkg, r))
			tagged = append(tagged, pkg)
		}
		w.WriteString("\n")
		for _, pkg := range tagged {
			fmt.Fprintf(w, "reset refs/tags/%s/v%d\nfrom :%d\n\n", pkg, r, r)
		}
	}
	w.WriteString("done\n")
}

// benchGit runs the git CLI in dir with stdin.
func benchGit(tb testing.TB, dir string, stdin *os.File, args ...string) {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// benchOpen opens the gitrepo repository at dir called name.
func benchOpen(tb testing.TB, name, dir string) *gitrepo.Repository {
	tb.Helper()
	r, err := gitrepo.Open(e2eCtx, repository.Spec{Name: name, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

func benchEngine(tb testing.TB, repos engine.Repos) *engine.Engine {
	tb.Helper()
	e, err := engine.New(&engine.Options{Repositories: repos})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestBenchHistory checks the benchmark history: gitrepo lists it as the
// revisions it would have written, and the engine approves the next
// revision of a package on top of it.
func TestBenchHistory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "history.git")
	benchHistory(t, dir, 12)
	r := benchOpen(t, "history", dir)
	revs, err := r.List(e2eCtx, repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range revs {
		m := pr.Meta()
		got = append(got, fmt.Sprintf("%s@%s/%d:%s", m.Key.Package, m.Key.Workspace, m.Key.Revision, m.Lifecycle))
	}
	var want []string
	for p, last := range []int{4, 4, 4} { // 12 revisions round-robin over 3 packages
		want = append(want, benchPkg(p)+"@main/-1:Published")
		for v := 1; v <= last; v++ {
			want = append(want, fmt.Sprintf("%s@v%d/%d:Published", benchPkg(p), v, v))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("history lists\n%v\nwant\n%v", got, want)
	}
	e := benchEngine(t, engine.Repos{"history": r})
	pr, err := e.Get(e2eCtx, "history", revision.Key{Package: benchPkg(1), Revision: 4})
	if err != nil {
		t.Fatal(err)
	}
	if cm := e2eFile(t, e2eFiles(t, pr), "cm.yaml"); !strings.Contains(cm, `revision: "4"`) {
		t.Fatalf("cm.yaml of v4:\n%s", cm)
	}
	key := benchProposal(t, e, r, benchPkg(1), 4, "next")
	pr, err = e.Approve(e2eCtx, "history", key)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Meta().Key.Revision != 5 {
		t.Fatalf("approved as revision %d, want 5", pr.Meta().Key.Revision)
	}
	if parents := strings.Fields(e2eGit(t, dir, "rev-list", "--parents", "-n1", "main")); len(parents) != 3 {
		t.Fatalf("approval parents %v", parents)
	}
	e2eGit(t, dir, "fsck", "--no-progress", "--no-dangling")
}

// benchProposal proposes a new revision of pkg, a copy of its revision
// src, in workspace ws: through the repository (a draft) and the engine
// (the proposal), reading nothing else.
func benchProposal(tb testing.TB, e *engine.Engine, r repository.Repository, pkg string, src int, ws string) revision.Key {
	tb.Helper()
	from, err := r.Get(e2eCtx, revision.Key{Package: pkg, Revision: src})
	if err != nil {
		tb.Fatal(err)
	}
	key := revision.Key{Package: pkg, Workspace: ws}
	d, err := r.CreateDraft(e2eCtx, key, repository.CreateDraftOptions{Files: e2eFiles(tb, from)})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := d.Commit(e2eCtx, revision.CommitOptions{Message: engine.MessageCopy}); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.Propose(e2eCtx, r.Name(), key); err != nil {
		tb.Fatal(err)
	}
	return key
}

// BenchmarkApproveHistory approves one proposal in a gitrepo repository on
// disk (a local bare repository) that already holds 10, 100, 1000 or 5000
// published revisions (5 per package). Each iteration proposes a new
// revision of one of the packages (untimed), approves it (timed) and
// deletes it again (untimed), so the history keeps its size. Besides
// ns/op it reports the median approval, p50-ms.
func BenchmarkApproveHistory(b *testing.B) {
	root := b.TempDir()
	for _, n := range []int{10, 100, 1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := filepath.Join(root, fmt.Sprintf("history-%d.git", n))
			if _, err := os.Stat(dir); err != nil {
				benchHistory(b, dir, n)
			}
			r := benchOpen(b, "history", dir)
			e := benchEngine(b, engine.Repos{"history": r})
			pkg := benchPkg(0)
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				key := benchProposal(b, e, r, pkg, benchRevsPerPkg, fmt.Sprintf("bench-%d", i))
				b.StartTimer()
				start := time.Now()
				pr, err := e.Approve(e2eCtx, "history", key)
				took = append(took, time.Since(start))
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				m := pr.Meta()
				if m.Key.Revision != benchRevsPerPkg+1 {
					b.Fatalf("approved as revision %d, want %d", m.Key.Revision, benchRevsPerPkg+1)
				}
				// Delete it through the repository: the engine's Delete
				// would first search every revision for upstream
				// references, which is not what is measured here.
				if pr, err = r.UpdateLifecycle(e2eCtx, m.Key, revision.LifecycleDeletionProposed, repository.UpdateOptions{Version: m.Version}); err != nil {
					b.Fatal(err)
				}
				if err := r.Delete(e2eCtx, m.Key, repository.UpdateOptions{Version: pr.Meta().Version}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(benchMedianMS(took), "p50-ms")
		})
	}
}

// BenchmarkDeleteHistory measures Engine.Delete of a revision proposed for
// deletion in a repository of n published revisions: before it deletes,
// the engine reads every revision's upstream lock to refuse deleting a
// revision another names as upstream.
//
// Rerun: go test ./engine -run '^$' -bench DeleteHistory -benchtime 20x -count 3
func BenchmarkDeleteHistory(b *testing.B) {
	root := b.TempDir()
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := filepath.Join(root, fmt.Sprintf("history-%d.git", n))
			benchHistory(b, dir, n)
			r := benchOpen(b, "history", dir)
			e := benchEngine(b, engine.Repos{"history": r})
			pkg := benchPkg(0)
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				key := benchProposal(b, e, r, pkg, benchRevsPerPkg, fmt.Sprintf("bench-%d", i))
				pr, err := e.Approve(e2eCtx, "history", key)
				if err != nil {
					b.Fatal(err)
				}
				if pr, err = e.ProposeDelete(e2eCtx, "history", pr.Meta().Key); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				err = e.Delete(e2eCtx, "history", pr.Meta().Key)
				took = append(took, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(benchMedianMS(took), "p50-ms")
		})
	}
}

func benchMedianMS(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// benchBig returns the files of a package called name with n ConfigMaps,
// one a file; change(i) edits the data of resource i.
func benchBig(name string, n int, change func(i int) string) map[string]string {
	m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name +
		"\ninfo:\n  description: a package of " + fmt.Sprint(n) + " resources\n"}
	for i := range n {
		v := "v1"
		if change != nil {
			v = change(i)
		}
		if v == "" {
			continue
		}
		m[fmt.Sprintf("cm-%03d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\n  namespace: example\n"+
			"  labels:\n    app: big\ndata:\n  value: %s\n  owner: upstream # who owns it\n", i, v)
	}
	return m
}

// benchPublish creates key in r with files and publishes it.
func benchPublish(tb testing.TB, e *engine.Engine, r repository.Repository, key revision.Key, files map[string]string) revision.PackageRevision {
	tb.Helper()
	d, err := r.CreateDraft(e2eCtx, key, repository.CreateDraftOptions{Files: revision.MustFiles(files)})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := d.Commit(e2eCtx, revision.CommitOptions{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.Propose(e2eCtx, r.Name(), key); err != nil {
		tb.Fatal(err)
	}
	pr, err := e.Approve(e2eCtx, r.Name(), key)
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// benchRepos opens the catalog and deploy repositories of a benchmark on
// backend: "memrepo" or "gitrepo" (local bare repositories).
func benchRepos(b *testing.B, backend string) (catalog, deploy repository.Repository) {
	b.Helper()
	if backend == "memrepo" {
		c, d := memrepo.New("catalog", nil), memrepo.New("deploy", nil)
		b.Cleanup(func() { c.Close(); d.Close() })
		return c, d
	}
	open := func(name string) repository.Repository {
		dir := filepath.Join(b.TempDir(), name+".git")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		benchGit(b, dir, nil, "init", "--quiet", "--bare")
		return benchOpen(b, name, dir)
	}
	return open("catalog"), open("deploy")
}

// BenchmarkCloneToSecondRepository clones a published 200-resource
// package from one gitrepo repository on disk into another (and, for
// comparison, between memrepo repositories). Each clone is deleted again,
// untimed, so the target does not grow.
func BenchmarkCloneToSecondRepository(b *testing.B) {
	for _, backend := range []string{"gitrepo", "memrepo"} {
		b.Run(backend, func(b *testing.B) {
			catalog, deploy := benchRepos(b, backend)
			e := benchEngine(b, engine.Repos{"catalog": catalog, "deploy": deploy})
			v1 := benchPublish(b, e, catalog, revision.Key{Package: "big", Workspace: "v1"}, benchBig("big", 200, nil))
			src := v1.Meta().Key
			key := revision.Key{Package: "big-clone", Workspace: "ws"}
			for b.Loop() {
				pr, err := e.Clone(e2eCtx, "deploy", key, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if err := e.Delete(e2eCtx, "deploy", pr.Meta().Key); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkUpgradeResourceMerge upgrades a 200-resource package with the
// resource-merge strategy: the old upstream v1; the new upstream v2 with
// 20 resources changed, 10 added and 10 removed; the local package cloned
// from v1 with 20 other resources changed and 5 local files added. Each
// upgraded draft is deleted again, untimed.
func BenchmarkUpgradeResourceMerge(b *testing.B) {
	for _, backend := range []string{"gitrepo", "memrepo"} {
		b.Run(backend, func(b *testing.B) {
			catalog, deploy := benchRepos(b, backend)
			e := benchEngine(b, engine.Repos{"catalog": catalog, "deploy": deploy})
			v1 := benchPublish(b, e, catalog, revision.Key{Package: "big", Workspace: "v1"}, benchBig("big", 200, nil))
			v2 := benchPublish(b, e, catalog, revision.Key{Package: "big", Workspace: "v2"}, benchBig("big", 210, func(i int) string {
				switch {
				case i < 20:
					return "v2" // changed upstream
				case i >= 100 && i < 110:
					return "" // removed upstream
				}
				return "v1" // 200..209 are new
			}))
			src := v1.Meta().Key
			key := revision.Key{Package: "app", Workspace: "v1"}
			pr, err := e.Clone(e2eCtx, "deploy", key, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
			if err != nil {
				b.Fatal(err)
			}
			f := e2eFiles(b, pr).Map()
			for i := 50; i < 70; i++ {
				p := fmt.Sprintf("cm-%03d.yaml", i)
				f[p] = []byte(strings.Replace(string(f[p]), "value: v1", "value: local", 1))
			}
			for i := range 5 {
				f[fmt.Sprintf("local-%d.yaml", i)] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-%d\ndata:\n  k: v\n", i)
			}
			files, err := revision.NewFiles(f)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Update(e2eCtx, "deploy", key, files, engine.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := e.Propose(e2eCtx, "deploy", key); err != nil {
				b.Fatal(err)
			}
			local, err := e.Approve(e2eCtx, "deploy", key)
			if err != nil {
				b.Fatal(err)
			}
			old := engine.Ref{Repository: "catalog", Key: v1.Meta().Key}
			next := engine.Ref{Repository: "catalog", Key: v2.Meta().Key}
			checked := false
			for b.Loop() {
				pr, err := e.Upgrade(e2eCtx, "deploy", local.Meta().Key, old, next, "upgrade", engine.UpgradeOptions{Strategy: revision.ResourceMerge})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if !checked {
					benchCheckUpgrade(b, e2eFiles(b, pr))
					checked = true
				}
				if err := e.Delete(e2eCtx, "deploy", pr.Meta().Key); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// benchCheckUpgrade checks that the merge did its work: upstream changes,
// additions and removals applied, local changes and files kept.
func benchCheckUpgrade(b *testing.B, f revision.Files) {
	b.Helper()
	value := func(i int) string {
		data, ok := f.Get(fmt.Sprintf("cm-%03d.yaml", i))
		if !ok {
			return ""
		}
		_, v, _ := strings.Cut(string(data), "value: ")
		v, _, _ = strings.Cut(v, "\n")
		return v
	}
	for i, want := range map[int]string{0: "v2", 19: "v2", 20: "v1", 50: "local", 69: "local", 100: "", 109: "", 205: "v1"} {
		if got := value(i); got != want {
			b.Fatalf("cm-%03d value %q, want %q (files %d)", i, got, want, f.Len())
		}
	}
	if !f.Has("local-4.yaml") {
		b.Fatal("local file lost")
	}
}
