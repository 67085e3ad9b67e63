package gitrepo_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// Benchmarks of the git backend on a bare repository of P packages with R
// published revisions each, side by side with the git CLI doing the
// equivalent. Run with
//
//	go test -run '^$' -bench . -benchtime 1x ./repository/gitrepo/   (quick)
//	go test -run '^$' -bench . -count 6 ./repository/gitrepo/        (figures)

var sizes = []struct{ p, r int }{{10, 1}, {100, 10}, {1000, 10}}

var fixtureRoot string

func TestMain(m *testing.M) {
	if op := os.Getenv(crashChildEnv); op != "" {
		os.Exit(crashChild(op)) // a child process of TestCrash
	}
	if dir := os.Getenv(listChildEnv); dir != "" {
		os.Exit(listChild(dir)) // a child process of BenchmarkPorchList
	}
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

var (
	fixtureMu sync.Mutex
	fixtures  = map[string]string{}
)

func pkgName(i int) string { return fmt.Sprintf("pkg-%04d", i) }

// fixture returns a bare repository of p packages × r published
// revisions in Porch's layout, built once per process: objects are
// written with go-git plumbing into one packfile and refs into
// packed-refs, as git gc leaves a repository.
func fixture(b testing.TB, p, r int) string {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	name := fmt.Sprintf("%dx%d", p, r)
	if dir, ok := fixtures[name]; ok {
		return dir
	}
	if fixtureRoot == "" {
		var err error
		if fixtureRoot, err = os.MkdirTemp("", "gitrepo-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	dir := filepath.Join(fixtureRoot, name+".git")
	git(b, "", "init", "--quiet", "--bare", "-b", "main", dir)
	mem := memory.NewStorage()
	var hashes []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	put := func(t plumbing.ObjectType, data []byte) plumbing.Hash {
		o := mem.NewEncodedObject()
		o.SetType(t)
		w, _ := o.Writer()
		w.Write(data)
		w.Close()
		h, err := mem.SetEncodedObject(o)
		if err != nil {
			b.Fatal(err)
		}
		if !seen[h] { // a pack holds each object once
			seen[h] = true
			hashes = append(hashes, h)
		}
		return h
	}
	putTree := func(entries []object.TreeEntry) plumbing.Hash {
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
		o := &plumbing.MemoryObject{}
		if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
			b.Fatal(err)
		}
		rd, _ := o.Reader()
		data, _ := io.ReadAll(rd)
		return put(plumbing.TreeObject, data)
	}
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sig := object.Signature{Name: gitrepo.DefaultCommitterName, Email: gitrepo.DefaultCommitterEmail, When: when}
	putCommit := func(tree plumbing.Hash, parents []plumbing.Hash, msg string) plumbing.Hash {
		o := &plumbing.MemoryObject{}
		c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents, Message: msg}
		if err := c.Encode(o); err != nil {
			b.Fatal(err)
		}
		rd, _ := o.Reader()
		data, _ := io.ReadAll(rd)
		return put(plumbing.CommitObject, data)
	}
	deploy := put(plumbing.BlobObject, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"))
	refs := map[string]plumbing.Hash{}
	var mainEntries []object.TreeEntry
	for i := range p {
		pkg := pkgName(i)
		kf := put(plumbing.BlobObject, []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: "+pkg+"\n"))
		var parent []plumbing.Hash
		var pkgTree plumbing.Hash
		for j := 1; j <= r; j++ {
			cm := put(plumbing.BlobObject, fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  revision: \"%d\"\n", pkg, j))
			pkgTree = putTree([]object.TreeEntry{
				{Name: "Kptfile", Mode: filemode.Regular, Hash: kf},
				{Name: "cm.yaml", Mode: filemode.Regular, Hash: cm},
				{Name: "deploy.yaml", Mode: filemode.Regular, Hash: deploy},
			})
			root := putTree([]object.TreeEntry{{Name: pkg, Mode: filemode.Dir, Hash: pkgTree}})
			msg := fmt.Sprintf("Approving package revision %s/%d\n\nkpt:{\"package\":%q,\"workspaceName\":\"ws%d\",\"revision\":\"%d\"}\n", pkg, j, pkg, j, j)
			c := putCommit(root, parent, msg)
			parent = []plumbing.Hash{c}
			refs[fmt.Sprintf("refs/tags/%s/v%d", pkg, j)] = c
		}
		mainEntries = append(mainEntries, object.TreeEntry{Name: pkg, Mode: filemode.Dir, Hash: pkgTree})
	}
	// The branch has one commit per package, each naming it as an
	// approval does, the first package's the oldest: reading a
	// placeholder's publisher walks back to its package's commit.
	var head []plumbing.Hash
	for i := range mainEntries {
		pkg := pkgName(i)
		msg := fmt.Sprintf("Approving package revision %s/%d\n\nkpt:{\"package\":%q,\"workspaceName\":\"ws%d\",\"revision\":\"%d\"}\n", pkg, r, pkg, r, r)
		head = []plumbing.Hash{putCommit(putTree(slices.Clone(mainEntries[:i+1])), head, msg)}
	}
	refs["refs/heads/main"] = head[0]

	fsStore := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	w, err := fsStore.PackfileWriter()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := packfile.NewEncoder(w, mem, false).Encode(hashes, 10); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for _, n := range names {
		fmt.Fprintf(&sb, "%s %s\n", refs[n], n)
	}
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	fixtures[name] = dir
	return dir
}

// copyDir copies the fixture so that a benchmark may write to it.
func copyDir(b testing.TB, src string) string {
	b.Helper()
	dst := filepath.Join(b.TempDir(), "repo.git")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return dst
}

func benchSpec(dir string) repository.Spec {
	return repository.Spec{Name: "bench", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}
}

func runGit(b *testing.B, dir string, stdin string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	for _, sz := range sizes {
		dir := fixture(b, sz.p, sz.r)
		want := sz.p*sz.r + sz.p
		b.Run(fmt.Sprintf("P=%d,R=%d/cad", sz.p, sz.r), func(b *testing.B) {
			r := mustOpen(b, benchSpec(dir), nil)
			defer r.Close()
			if _, err := r.List(ctx, repository.ListOptions{}); err != nil { // warm the cache
				b.Fatal(err)
			}
			for b.Loop() {
				revs, err := r.List(ctx, repository.ListOptions{})
				if err != nil || len(revs) != want {
					b.Fatalf("List: %d revisions, %v; want %d", len(revs), err, want)
				}
			}
		})
		b.Run(fmt.Sprintf("P=%d,R=%d/cad-cold", sz.p, sz.r), func(b *testing.B) {
			for b.Loop() {
				r := mustOpen(b, benchSpec(dir), nil)
				revs, err := r.List(ctx, repository.ListOptions{})
				if err != nil || len(revs) != want {
					b.Fatalf("List: %d revisions, %v; want %d", len(revs), err, want)
				}
				r.Close()
			}
		})
		b.Run(fmt.Sprintf("P=%d,R=%d/git-for-each-ref", sz.p, sz.r), func(b *testing.B) {
			for b.Loop() {
				runGit(b, dir, "", "for-each-ref", "--format=%(objectname) %(refname)")
			}
		})
	}
}

func BenchmarkGetFiles(b *testing.B) {
	ctx := context.Background()
	for _, sz := range sizes {
		dir := fixture(b, sz.p, sz.r)
		pkg := pkgName(sz.p / 2)
		key := revision.Key{Package: pkg, Revision: sz.r}
		get := func(b *testing.B, r *gitrepo.Repository) {
			pr, err := r.Get(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			f, err := pr.Files(ctx)
			if err != nil || f.Len() != 3 {
				b.Fatalf("Files: %d files, %v", f.Len(), err)
			}
		}
		b.Run(fmt.Sprintf("P=%d,R=%d/cad", sz.p, sz.r), func(b *testing.B) {
			// No cache: every iteration reads the tag, commit, trees and blobs.
			r := mustOpen(b, benchSpec(dir), &gitrepo.Options{CacheBytes: -1})
			defer r.Close()
			get(b, r) // go-git loads the pack index once per storage
			for b.Loop() {
				get(b, r)
			}
		})
		b.Run(fmt.Sprintf("P=%d,R=%d/cad-cached", sz.p, sz.r), func(b *testing.B) {
			r := mustOpen(b, benchSpec(dir), nil)
			defer r.Close()
			get(b, r)
			for b.Loop() {
				get(b, r)
			}
		})
		b.Run(fmt.Sprintf("P=%d,R=%d/git-ls-tree", sz.p, sz.r), func(b *testing.B) {
			for b.Loop() {
				runGit(b, dir, "", "ls-tree", "-r", fmt.Sprintf("%s/v%d:%s", pkg, sz.r, pkg))
			}
		})
	}
}

func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	for _, sz := range sizes {
		pkg := pkgName(sz.p / 2)
		b.Run(fmt.Sprintf("P=%d,R=%d/cad", sz.p, sz.r), func(b *testing.B) {
			dir := copyDir(b, fixture(b, sz.p, sz.r))
			r := mustOpen(b, benchSpec(dir), nil)
			defer r.Close()
			n := 0
			publish := func() {
				n++
				ws := fmt.Sprintf("bench%d", n)
				b.StopTimer()
				propose(b, r, pkg, ws)
				b.StartTimer()
				pr, err := r.UpdateLifecycle(ctx, revision.Key{Package: pkg, Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{})
				if err != nil || pr.Meta().Key.Revision != sz.r+n {
					b.Fatalf("approve: %v, %v", pr, err)
				}
			}
			publish() // the first write loads the pack index and unpacks the branch ref
			for b.Loop() {
				publish()
			}
		})
		b.Run(fmt.Sprintf("P=%d,R=%d/git-commit-tree+update-ref", sz.p, sz.r), func(b *testing.B) {
			dir := copyDir(b, fixture(b, sz.p, sz.r))
			r := mustOpen(b, benchSpec(dir), nil)
			defer r.Close()
			n := 0
			for b.Loop() {
				b.StopTimer()
				n++
				ws := fmt.Sprintf("bench%d", n)
				propose(b, r, pkg, ws)
				proposed := "refs/heads/proposed/" + pkg + "/" + ws
				b.StartTimer()
				head := runGit(b, dir, "", "rev-parse", "refs/heads/main")
				prop := runGit(b, dir, "", "rev-parse", proposed)
				c := runGit(b, dir, "", "commit-tree", prop+"^{tree}", "-p", head, "-p", prop, "-m", "Approving package revision")
				runGit(b, dir, fmt.Sprintf("start\nupdate refs/heads/main %s %s\ncreate refs/tags/%s/v%d %s\ndelete %s %s\ncommit\n", c, head, pkg, sz.r+n, c, proposed, prop),
					"update-ref", "--stdin")
			}
		})
	}
}
