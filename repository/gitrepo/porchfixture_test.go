package gitrepo_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// porchShape describes a repository as Porch writes it: every approval
// is a commit on main whose tree holds every package published so far,
// tagged <pkg>/v<N>; drafts and proposals are branches on top.
type porchShape struct {
	// Packages is the number of packages; Revisions the number of
	// approvals, spread round-robin over the packages.
	Packages, Revisions int
	// Dirs, when above 1, spreads the packages over that many directories
	// (team-XX/pkg-NNNNN); otherwise they all sit at the root, the
	// costliest layout for git and for cad.
	Dirs int
	// Drafts and Proposals are how many packages also have a draft and a
	// proposal branch.
	Drafts, Proposals int
}

func (s porchShape) String() string {
	return fmt.Sprintf("P=%d,R=%d,D=%d", s.Packages, s.Revisions, s.Dirs)
}

// pkg returns the path of package i.
func (s porchShape) pkg(i int) string {
	if s.Dirs > 1 {
		return fmt.Sprintf("team-%03d/pkg-%05d", i%s.Dirs, i)
	}
	return fmt.Sprintf("pkg-%05d", i)
}

// keepFixturesEnv names a directory where porchFixture keeps the
// repositories it builds, to reuse them in later runs (the large ones take
// minutes to build); by default they go to a temporary directory removed
// at the end of the process.
const keepFixturesEnv = "CAD_BENCH_FIXTURES"

var (
	porchMu       sync.Mutex
	porchFixtures = map[porchShape]string{}
)

// porchFixture returns a bare repository of shape s, built once per
// process with git fast-import (one pack, refs packed as git gc leaves
// them). Its commits carry Porch's messages and kpt: annotations, its
// committer is Porch's.
func porchFixture(tb testing.TB, s porchShape) string {
	tb.Helper()
	porchMu.Lock()
	defer porchMu.Unlock()
	if dir, ok := porchFixtures[s]; ok {
		return dir
	}
	root := os.Getenv(keepFixturesEnv)
	if root == "" {
		if fixtureRoot == "" {
			var err error
			if fixtureRoot, err = os.MkdirTemp("", "gitrepo-bench-"); err != nil {
				tb.Fatal(err)
			}
		}
		root = fixtureRoot
	}
	name := strings.NewReplacer("=", "", ",", "-").Replace(s.String())
	if s.Drafts > 0 || s.Proposals > 0 {
		// Shapes that differ only in them are different repositories.
		name += fmt.Sprintf("-drafts%d-proposals%d", s.Drafts, s.Proposals)
	}
	dir := filepath.Join(root, name+".git")
	done := filepath.Join(dir, "fixture-complete")
	if _, err := os.Stat(done); err == nil {
		porchFixtures[s] = dir
		return dir
	}
	os.RemoveAll(dir)
	git(tb, "", "init", "--quiet", "--bare", "-b", "main", dir)
	cmd := exec.Command("git", "fast-import", "--quiet", "--done")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	blob := func(mark int, data string) {
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", mark, len(data), data)
	}
	const when = 1767225600 // 2026-01-01
	commit := func(ref string, mark, from int, msg string, t int, files ...string) {
		fmt.Fprintf(w, "commit %s\nmark :%d\ncommitter Package Orchestration Service <porch@kpt.dev> %d +0000\ndata %d\n%s\n", ref, mark, when+t, len(msg), msg)
		if from > 0 {
			fmt.Fprintf(w, "from :%d\n", from)
		}
		for _, f := range files {
			w.WriteString(f + "\n")
		}
	}
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"
	blob(1, deploy)
	// Marks: 2.. Kptfiles, then per revision a ConfigMap blob and a commit.
	next := 2
	kptfile := make([]int, s.Packages)
	for i := range s.Packages {
		kptfile[i] = next
		blob(next, "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: "+filepath.Base(s.pkg(i))+"\ninfo:\n  description: a package\n")
		next++
	}
	head := 0
	version := make([]int, s.Packages)
	for r := range s.Revisions {
		i := r % s.Packages
		p := s.pkg(i)
		version[i]++
		n := version[i]
		cm := next
		blob(cm, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", filepath.Base(p), n))
		c := next + 1
		next += 2
		msg := fmt.Sprintf("Approving package revision %s/%d\n\nkpt:{\"package\":%q,\"workspaceName\":\"ws%d\",\"revision\":\"%d\"}\n", p, n, p, n, n)
		files := []string{fmt.Sprintf("M 100644 :%d %s/cm.yaml", cm, p)}
		if n == 1 {
			files = append(files, fmt.Sprintf("M 100644 :%d %s/Kptfile", kptfile[i], p), fmt.Sprintf("M 100644 :1 %s/deploy.yaml", p))
		}
		commit("refs/heads/main", c, head, msg, r, files...)
		head = c
		fmt.Fprintf(w, "reset refs/tags/%s/v%d\nfrom :%d\n\n", p, n, c)
	}
	for k, kind := range []string{"drafts", "proposed"} {
		count := s.Drafts
		if k == 1 {
			count = s.Proposals
		}
		for j := range count {
			i := (j*7 + k) % s.Packages
			p := s.pkg(i)
			ws := fmt.Sprintf("%s-%d", kind, j)
			cm := next
			blob(cm, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: %q\n", filepath.Base(p), ws))
			c := next + 1
			next += 2
			msg := fmt.Sprintf("Intermediate commit\n\n\nkpt:{\"package\":%q,\"workspaceName\":%q,\"revision\":\"0\"}\n", p, ws)
			commit(fmt.Sprintf("refs/heads/%s/%s/%s", kind, p, ws), c, head, msg, s.Revisions+j,
				fmt.Sprintf("M 100644 :%d %s/cm.yaml", cm, p), fmt.Sprintf("M 100644 :%d %s/Kptfile", kptfile[i], p), fmt.Sprintf("M 100644 :1 %s/deploy.yaml", p))
		}
	}
	w.WriteString("done\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("git fast-import: %v\n%s", err, out)
	}
	git(tb, dir, "pack-refs", "--all")
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	porchFixtures[s] = dir
	return dir
}

// Porch's layout, as the fixture writes it, is what gitrepo lists.
func TestPorchFixture(t *testing.T) {
	s := porchShape{Packages: 7, Revisions: 20, Dirs: 3, Drafts: 2, Proposals: 1}
	dir := porchFixture(t, s)
	r := mustOpen(t, benchSpec(dir), nil)
	defer r.Close()
	revs, err := r.List(context.Background(), repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 20 published, one placeholder per package, 2 drafts, 1 proposal.
	if len(revs) != 20+7+2+1 {
		t.Fatalf("listed %d revisions", len(revs))
	}
	// Both fixture builders write repositories git itself reads.
	fsck(t, dir, "porchFixture")
	fsck(t, fixture(t, 10, 2), "fixture")
	// The last approval's commit holds every package.
	if got := git(t, dir, "ls-tree", "-r", "--name-only", "main"); strings.Count(got, "Kptfile") != 7 {
		t.Fatalf("main holds:\n%s", got)
	}
}

// A list is the same with cad-paths as without it, and with a garbled
// cad-paths or a garbled cad-index (which older versions wrote, and
// nothing reads now).
func TestIndexListsTheSame(t *testing.T) {
	ctx := context.Background()
	dir := copyDir(t, porchFixture(t, porchShape{Packages: 12, Revisions: 40, Dirs: 3, Drafts: 3, Proposals: 2}))
	list := func() string {
		r := mustOpen(t, benchSpec(dir), nil)
		defer r.Close()
		revs, err := r.List(ctx, repository.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, pr := range revs {
			m := pr.Meta()
			fmt.Fprintf(&b, "%s %s %s %s %s %v\n", m.Key, m.Lifecycle, m.Version, m.PublishedBy, m.PublishedAt.UTC(), m.Creation)
		}
		return b.String()
	}
	paths := filepath.Join(dir, "cad-paths")
	want := list()
	data, err := os.ReadFile(paths)
	if err != nil || len(data) == 0 {
		t.Fatalf("the first list wrote no cad-paths: %v", err)
	}
	if got := list(); got != want {
		t.Fatalf("with cad-paths:\n%s\nwithout:\n%s", got, want)
	}
	if err := os.WriteFile(paths, append([]byte("garbage\n"), data[:len(data)/2]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cad-index"), []byte("garbage\nc 12 34\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != want {
		t.Fatalf("with garbled files:\n%s\nwithout:\n%s", got, want)
	}
}

// Every packed tree of a repository as Porch writes it, packed by git
// fast-import and repacked by git gc's rules, finds every entry and
// misses absent ones the same through ropes (delta chains composed, not
// applied) as by scanning the tree built whole; and the rope path does
// answer for the trees built by deltas.
func TestTreeLookupThroughDeltas(t *testing.T) {
	// 600 packages at the root: root trees of 22 KB, above the size
	// from which the rope path answers.
	src := porchFixture(t, porchShape{Packages: 600, Revisions: 800, Dirs: 1, Drafts: 2, Proposals: 2})
	repacked := copyDir(t, src)
	git(t, repacked, "repack", "-a", "-d", "-f", "--depth=50", "--window=50")
	for _, dir := range []string{src, repacked} {
		out := git(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
		var trees []plumbing.Hash
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			if id, typ, _ := strings.Cut(line, " "); typ == "tree" {
				trees = append(trees, plumbing.NewHash(id))
			}
		}
		// The default cache; one too small for a chain's bottom; ropes
		// built into new bottoms every few pieces.
		for _, c := range []struct {
			cacheBytes int64
			pieces     int
		}{{8 << 20, 0}, {64 << 10, 0}, {8 << 20, 6}} {
			restore := func() {}
			if c.pieces > 0 {
				restore = gitrepo.SetMaxRopePieces(c.pieces)
			}
			l := gitrepo.NewTreeLookup(dir, c.cacheBytes)
			roped := 0
			for _, h := range trees {
				names := []string{"Kptfile", "pkg-00000", "pkg-00003", "pkg-00299", "pkg-00599", "pkg-00600", "pkg-0000", "zzz", ""}
				for _, name := range names {
					mode, id, found, rope, err := l.Rope(h, name)
					if !rope {
						continue
					}
					roped++
					wmode, wid, wfound, werr := l.Scan(h, name)
					if err != nil || werr != nil || found != wfound || found && (mode != wmode || id != wid) {
						t.Fatalf("%s: tree %s, %q: rope %s %s %v %v; scan %s %s %v %v", dir, h, name, mode, id, found, err, wmode, wid, wfound, werr)
					}
				}
			}
			l.Close()
			restore()
			if roped < 500 {
				t.Fatalf("%s: the rope path answered only %d lookups in %d trees", dir, roped, len(trees))
			}
		}
	}
}
