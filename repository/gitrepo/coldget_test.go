package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// A Get in a process that never listed the repository adds the package
// tree it found through the root tree to cad-paths, where the next
// process's Get finds it; the files read are the same with the records
// and without.
func TestGetAddsPackageTree(t *testing.T) {
	// Lists that look every tag's package tree up, so that they record
	// them all (a list leaves a registered tag's tree to the first read,
	// which records it here as a Get does).
	defer gitrepo.SetDeferTrees(false)()
	f := newPathsFixture(t)
	want := f.read(t) // learns every tag's package tree
	f.requireAll(t)
	if got := f.read(t); !equalDigests(got, want) {
		t.Fatal("the files read through the records differ")
	}
	// The first record made the file, the others are in its tail, not
	// yet sorted; a list, which finds them there, adds only the trees
	// of the fixture's two drafts and one proposal.
	count, _ := gitrepo.PathsCount(f.dir)
	tail := int64((len(f.keys) - 1) * gitrepo.PathsRecordSize)
	if n := gitrepo.PathsTail(f.dir); count != 1 || n != tail {
		t.Fatalf("%d records sorted and a tail of %d bytes, want 1 and %d records", count, n, len(f.keys)-1)
	}
	f.list(t)
	if n, want := gitrepo.PathsTail(f.dir), tail+3*gitrepo.PathsRecordSize; n != want {
		t.Fatalf("tail of %d bytes after a list, want %d", n, want)
	}
	f.requireAll(t)
	// With cad-paths gone, a Get writes a file of what it learnt alone;
	// a list then adds the package trees it finds in the trees.
	if err := os.Remove(filepath.Join(f.dir, "cad-paths")); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, benchSpec(f.dir), nil)
	readDigest(t, r, f.keys[0])
	r.Close()
	if count, ok := gitrepo.PathsCount(f.dir); !ok || count != 1 {
		t.Fatalf("after a Get: %d records (%v), want 1", count, ok)
	}
	f.list(t)
	f.requireAll(t)
	if got := f.read(t); !equalDigests(got, want) {
		t.Fatal("the files read through the records a list wrote differ")
	}
}

// Records appended past pathTailMax are merged into the sorted records
// by the append that would pass it, keeping the ones appended before.
func TestPathsTailFull(t *testing.T) {
	defer gitrepo.SetPathTailMax(4)()
	f := newPathsFixture(t)
	want := f.read(t)
	if n := gitrepo.PathsTail(f.dir); n < 0 || n > 4*gitrepo.PathsRecordSize {
		t.Fatalf("tail of %d bytes, more than 4 records", n)
	}
	f.requireAll(t)
	if got := f.read(t); !equalDigests(got, want) {
		t.Fatal("the files read through the merged records differ")
	}
}

// A damaged tail is never believed: a changed byte costs its record, a
// record cut short (a crash during an append) is not read and is cut off
// by the next append, whose records are then found; a record planted for
// a tree no commit has changes nothing.
func TestPathsTailDamaged(t *testing.T) {
	f := newPathsFixture(t)
	want := f.read(t)
	paths := filepath.Join(f.dir, "cad-paths")
	good, err := os.ReadFile(paths)
	if err != nil {
		t.Fatal(err)
	}
	tailStart := len(good) - (len(f.keys)-1)*gitrepo.PathsRecordSize
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"a byte of a record's tree", func(b []byte) []byte { b[tailStart+40] ^= 0xff; return b }},
		{"a byte of a record's key", func(b []byte) []byte { b[tailStart+gitrepo.PathsRecordSize+3] ^= 0x01; return b }},
		{"every record's checksum", func(b []byte) []byte {
			for i := tailStart; i < len(b); i += gitrepo.PathsRecordSize {
				b[i+59] ^= 0x10
			}
			return b
		}},
		{"a record cut short", func(b []byte) []byte { return b[:len(b)-17] }},
		{"garbage after the records", func(b []byte) []byte { return append(b, "garbage\ngarbage\n"...) }},
		{"a planted record", func(b []byte) []byte {
			// The key of a path under a tree no commit has, leading to
			// another package's tree: never asked for.
			rec := append([]byte(nil), b[tailStart:tailStart+gitrepo.PathsRecordSize]...)
			rec[0] ^= 0x55
			return append(b, rec...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(paths, tc.damage(append([]byte(nil), good...)), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := f.read(t); !equalDigests(got, want) {
				t.Fatal("a damaged tail changed what is read")
			}
			if _, ok := gitrepo.PathsCount(f.dir); !ok {
				t.Fatal("a damaged tail cost the whole file")
			}
			// Every record read again is found: those the damage cost were
			// appended again, after the damage, in whole records.
			f.requireAll(t)
			if n := gitrepo.PathsTail(f.dir); n%gitrepo.PathsRecordSize != 0 && !strings.Contains(tc.name, "garbage") {
				t.Fatalf("tail of %d bytes after an append", n)
			}
		})
	}
}

// An approval records the new revision's package tree under its root tree:
// a Get in a new process then reads the revision without the root tree
// (removed here), and a list after it reads the same revisions.
func TestApproveRecordsPackageTree(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := benchSpec(dir)
	spec.Git.CreateBranch = true
	r := mustOpen(t, spec, nil)
	defer r.Close()
	for _, ws := range []string{"a", "b"} {
		propose(t, r, "pkg", ws)
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "pkg", Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	root := strings.TrimSpace(git(t, dir, "rev-parse", "pkg/v1^{tree}"))
	tree := strings.TrimSpace(git(t, dir, "rev-parse", "pkg/v1:pkg"))
	if got, ok := gitrepo.PathsLookup(dir, plumbing.NewHash(root), "pkg"); !ok || got.String() != tree {
		t.Fatalf("cad-paths: pkg under v1's root is %s, %v; want %s", got, ok, tree)
	}
	want := readDigest(t, mustOpen(t, benchSpec(dir), nil), revision.Key{Package: "pkg", Revision: 1})
	if err := os.Remove(filepath.Join(dir, "objects", root[:2], root[2:])); err != nil {
		t.Fatal(err)
	}
	r2 := mustOpen(t, benchSpec(dir), nil)
	defer r2.Close()
	if got := readDigest(t, r2, revision.Key{Package: "pkg", Revision: 1}); got != want {
		t.Fatal("v1 read through the approval's record differs")
	}
}

// A new draft's workspace check reads no commit of a tag whose workspace
// is recorded (by the approval here): with v1's commit removed, a draft
// of a new workspace is created, a taken workspace is still taken, and
// v1's own workspace, whose revision cannot be read, is reported, not
// taken for free. Without the records (cad-paths removed) the missing
// commit stops the new workspace too, as it did before.
func TestWorkspaceRecordsSpareCommits(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := benchSpec(dir)
	spec.Git.CreateBranch = true
	r := mustOpen(t, spec, nil)
	for _, ws := range []string{"a", "b"} {
		propose(t, r, "pkg", ws)
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "pkg", Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	c := strings.TrimSpace(git(t, dir, "rev-parse", "pkg/v1"))
	if err := os.Remove(filepath.Join(dir, "objects", c[:2], c[2:])); err != nil {
		t.Fatal(err)
	}
	create := checkNewDrafts(t, dir, "a new workspace, v1's commit missing")
	if err := os.Remove(filepath.Join(dir, "cad-paths")); err != nil {
		t.Fatal(err)
	}
	if err := create("c"); err == nil {
		t.Fatal("without the records, a missing commit went unnoticed")
	}
}

// CreateDraft tells taken workspaces from free ones the same with no
// workspace records, with the records a first check learns, with every
// record damaged, and with planted records: for tags that no longer
// exist (the same workspaces, at other objects) and for another package
// (this package's tag objects, every workspace).
func TestWorkspaceRecordsSameAnswers(t *testing.T) {
	ctx := context.Background()
	s := porchShape{Packages: 2, Revisions: 24, Dirs: 1}
	dir := copyDir(t, porchFixture(t, s))
	pkg := s.pkg(0)
	r := mustOpen(t, benchSpec(dir), nil)
	revs, err := r.List(ctx, repository.ListOptions{Package: pkg})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "cad-paths"))
	var taken []string
	for _, pr := range revs {
		if m := pr.Meta(); m.Key.Revision > 0 {
			taken = append(taken, m.Key.Workspace)
		}
	}
	if len(taken) < 10 {
		t.Fatalf("fixture: %d published revisions of %s", len(taken), pkg)
	}
	free := []string{"free1", "v3", "v99", "main-x"}
	check := func(t *testing.T) {
		t.Helper()
		for _, ws := range append(append([]string(nil), taken...), free...) {
			r := mustOpen(t, benchSpec(dir), nil) // nothing cached
			_, err := r.CreateDraft(ctx, revision.Key{Package: pkg, Workspace: ws}, repository.CreateDraftOptions{Files: kptPkg(pkg, nil)})
			r.Close()
			isTaken := errors.Is(err, repository.ErrAlreadyExists)
			if err != nil && !isTaken {
				t.Fatalf("workspace %s: %v", ws, err)
			}
			wantTaken := !strings.HasPrefix(ws, "free") && ws != "v3" && ws != "v99" && ws != "main-x"
			if isTaken != wantTaken {
				t.Fatalf("workspace %s: taken %v, want %v", ws, isTaken, wantTaken)
			}
		}
	}
	t.Run("no records", func(t *testing.T) {
		check(t)
	})
	paths := filepath.Join(dir, "cad-paths")
	t.Run("learnt", func(t *testing.T) {
		if _, err := os.Stat(paths); err != nil {
			t.Fatalf("the first checks recorded nothing: %v", err)
		}
		check(t)
	})
	t.Run("damaged", func(t *testing.T) {
		b, err := os.ReadFile(paths)
		if err != nil {
			t.Fatal(err)
		}
		prefix := gitrepo.WorkspacePrefix(pkg)
		n := 0
		for i := gitrepo.PathsHeaderSize; i+gitrepo.PathsRecordSize <= len(b); i += gitrepo.PathsRecordSize {
			if string(b[i:i+20]) == string(prefix) {
				b[i+40] ^= 0x01 // the workspace's hash: the checksum fails
				n++
			}
		}
		if n < len(taken) {
			t.Fatalf("%d workspace records, want %d or more", n, len(taken))
		}
		if err := os.WriteFile(paths, b, 0o644); err != nil {
			t.Fatal(err)
		}
		check(t)
	})
	t.Run("planted", func(t *testing.T) {
		os.Remove(paths)
		for i, ws := range append(append([]string(nil), taken...), free...) {
			// A tag of this workspace once pointed at another object.
			other := plumbing.NewHash(fmt.Sprintf("%040x", i+1))
			gitrepo.AddWorkspaceRecord(dir, pkg, other, ws)
			// This package's tag objects, as another package's.
			for _, line := range strings.Fields(git(t, dir, "for-each-ref", "--format=%(objectname)", "refs/tags/"+pkg+"/")) {
				gitrepo.AddWorkspaceRecord(dir, s.pkg(1), plumbing.NewHash(line), ws)
			}
		}
		check(t)
	})
}

// A cad-paths removed while a Repository is open is written again by
// that Repository's next approval, even of a root tree it recorded
// before (the same content approved again).
func TestPathsRemovedWhileOpen(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := benchSpec(dir)
	spec.Git.CreateBranch = true
	r := mustOpen(t, spec, nil)
	defer r.Close()
	for i, ws := range []string{"a", "b"} {
		os.Remove(filepath.Join(dir, "cad-paths"))
		d, err := r.CreateDraft(ctx, revision.Key{Package: "pkg", Workspace: ws}, repository.CreateDraftOptions{Files: kptPkg("pkg", nil)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "pkg", Workspace: ws}, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "cad-paths"))
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "pkg", Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tag := fmt.Sprintf("pkg/v%d", i+1)
		root := strings.TrimSpace(git(t, dir, "rev-parse", tag+"^{tree}"))
		tree := strings.TrimSpace(git(t, dir, "rev-parse", tag+":pkg"))
		if got, ok := gitrepo.PathsLookup(dir, plumbing.NewHash(root), "pkg"); !ok || got.String() != tree {
			t.Fatalf("%s: cad-paths: %s, %v; want %s", tag, got, ok, tree)
		}
	}
}

// Gets in many Repositories at once (as in many processes) append to one
// cad-paths and merge its full tail into new files: the file stays
// valid, its tail whole records, and every read the same.
func TestPathsTailConcurrentAppends(t *testing.T) {
	defer gitrepo.SetPathTailMax(8)()
	f := newPathsFixture(t)
	want := f.read(t)
	os.Remove(filepath.Join(f.dir, "cad-paths"))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				k := f.keys[(g*7+i)%len(f.keys)]
				r, err := gitrepo.Open(context.Background(), benchSpec(f.dir), nil)
				if err != nil {
					errs <- err
					return
				}
				pr, err := r.Get(context.Background(), k)
				if err == nil {
					_, err = pr.Files(context.Background())
				}
				r.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, ok := gitrepo.PathsCount(f.dir); !ok {
		t.Fatal("cad-paths not valid after concurrent appends")
	}
	if n := gitrepo.PathsTail(f.dir); n%gitrepo.PathsRecordSize != 0 || n > 8*gitrepo.PathsRecordSize {
		t.Fatalf("tail of %d bytes", n)
	}
	if got := f.read(t); !equalDigests(got, want) {
		t.Fatal("the files read after concurrent appends differ")
	}
}
