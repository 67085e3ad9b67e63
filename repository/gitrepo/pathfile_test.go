package gitrepo_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// pathsFixture is a Porch-shaped repository (packages in directories,
// every approval commit holding every package) with its published
// revisions' keys, the root tree and package tree of each tag, and a
// digest of each revision's files as a new Repository reads them.
type pathsFixture struct {
	dir   string
	keys  []revision.Key
	roots map[revision.Key]plumbing.Hash
	trees map[revision.Key]plumbing.Hash
}

func newPathsFixture(t *testing.T) *pathsFixture {
	t.Helper()
	s := porchShape{Packages: 12, Revisions: 40, Dirs: 3, Drafts: 2, Proposals: 1}
	f := &pathsFixture{dir: copyDir(t, porchFixture(t, s)), roots: map[revision.Key]plumbing.Hash{}, trees: map[revision.Key]plumbing.Hash{}}
	for _, line := range strings.Fields(git(t, f.dir, "for-each-ref", "--format=%(refname:short)", "refs/tags")) {
		i := strings.LastIndex(line, "/v")
		var n int
		fmt.Sscanf(line[i+2:], "%d", &n)
		k := revision.Key{Package: line[:i], Revision: n}
		f.keys = append(f.keys, k)
		f.roots[k] = plumbing.NewHash(strings.TrimSpace(git(t, f.dir, "rev-parse", line+"^{tree}")))
		f.trees[k] = plumbing.NewHash(strings.TrimSpace(git(t, f.dir, "rev-parse", line+":"+k.Package)))
	}
	if len(f.keys) != s.Revisions {
		t.Fatalf("%d tags", len(f.keys))
	}
	return f
}

// read returns a digest of the files of every published revision, each
// read by Get through a new Repository, as a process that starts cold
// reads one.
func (f *pathsFixture) read(t *testing.T) map[revision.Key]string {
	t.Helper()
	out := map[revision.Key]string{}
	for _, k := range f.keys {
		r := mustOpen(t, benchSpec(f.dir), nil)
		out[k] = readDigest(t, r, k)
		r.Close()
	}
	return out
}

func readDigest(t *testing.T, r *gitrepo.Repository, k revision.Key) string {
	t.Helper()
	ctx := context.Background()
	pr, err := r.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get %s: %v", k, err)
	}
	files, err := pr.Files(ctx)
	if err != nil {
		t.Fatalf("Files %s: %v", k, err)
	}
	return digestFiles(files)
}

// digestFiles returns a digest of files' paths and contents.
func digestFiles(files revision.Files) string {
	h := sha256.New()
	paths := files.Paths()
	sort.Strings(paths)
	for _, p := range paths {
		c, _ := files.Get(p)
		fmt.Fprintf(h, "%s\x00%s\x00", p, c)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func (f *pathsFixture) list(t *testing.T) {
	t.Helper()
	r := mustOpen(t, benchSpec(f.dir), nil)
	defer r.Close()
	if _, err := r.List(context.Background(), repository.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// requireAll checks that cad-paths holds the package tree of every tag.
func (f *pathsFixture) requireAll(t *testing.T) {
	t.Helper()
	for _, k := range f.keys {
		got, ok := gitrepo.PathsLookup(f.dir, f.roots[k], k.Package)
		if !ok || got != f.trees[k] {
			t.Fatalf("cad-paths: %s under %s is %s, %v; want %s", k.Package, f.roots[k], got, ok, f.trees[k])
		}
	}
}

// cad-paths is written by a Get (and added to by lists), holds every
// tagged package's tree, and reads the same files as the trees do.
func TestPathsFile(t *testing.T) {
	f := newPathsFixture(t)
	paths := filepath.Join(f.dir, "cad-paths")
	want := f.read(t)
	if _, ok := gitrepo.PathsCount(f.dir); !ok {
		t.Fatal("Gets wrote no cad-paths")
	}
	f.list(t)
	f.requireAll(t)
	count, _ := gitrepo.PathsCount(f.dir)
	if n := int64(count) + gitrepo.PathsTail(f.dir)/gitrepo.PathsRecordSize; n < int64(len(f.keys)) {
		t.Fatalf("cad-paths holds %d records, want one per tag, %d", n, len(f.keys))
	}
	if _, ok := gitrepo.PathsLookup(f.dir, f.roots[f.keys[0]], f.keys[0].Package+"x"); ok {
		t.Fatal("a path never recorded was found")
	}
	if _, ok := gitrepo.PathsLookup(f.dir, f.roots[f.keys[0]], "team-000"); ok {
		t.Fatal("a path never recorded was found")
	}
	if got := f.read(t); !equalDigests(got, want) {
		t.Fatal("the files read through cad-paths differ")
	}
	// A bucket larger than one read is narrowed a record at a time first
	// (a repository of some 260,000 revisions); with no record read in
	// one call, every lookup is found that way.
	restore := gitrepo.SetPathBucketRead(0)
	f.requireAll(t)
	if got := f.read(t); !equalDigests(got, want) {
		t.Fatal("the files read through cad-paths, a record at a time, differ")
	}
	restore()
	// A list that finds nothing new writes nothing.
	before, _ := os.Stat(paths)
	f.list(t)
	after, _ := os.Stat(paths)
	if !os.SameFile(before, after) || before.Size() != after.Size() {
		t.Fatal("an up-to-date cad-paths was written to")
	}
}

// Get reads a package's tree from cad-paths when it has the record: a
// record pointing a revision at another package's tree (which no writer
// makes; written here on purpose) is what Get then reads. This is how the
// tests below tell that cad-paths was used, or not.
func TestPathsFileIsUsed(t *testing.T) {
	f := newPathsFixture(t)
	want := f.read(t)
	a, b := f.keys[0], f.keys[len(f.keys)-1]
	if want[a] == want[b] {
		t.Fatal("fixture: two revisions with the same files")
	}
	// A Repository that opened cad-paths before another process replaced
	// it looks again on a miss: r opens a file with b's record only.
	onlyB := []gitrepo.PathsRecord{{Root: f.roots[b], Path: b.Package, Tree: f.trees[b]}}
	if err := gitrepo.WritePathsFile(f.dir, onlyB); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, benchSpec(f.dir), nil)
	defer r.Close()
	if readDigest(t, r, b) != want[b] { // opens cad-paths, a hit
		t.Fatal("read through cad-paths differs")
	}
	wrong := []gitrepo.PathsRecord{{Root: f.roots[a], Path: a.Package, Tree: f.trees[b]}}
	if err := gitrepo.WritePathsFile(f.dir, wrong); err != nil {
		t.Fatal(err)
	}
	r2 := mustOpen(t, benchSpec(f.dir), nil)
	defer r2.Close()
	if got := readDigest(t, r2, a); got != want[b] {
		t.Fatal("Get did not read the package tree cad-paths names")
	}
	if got := readDigest(t, r, a); got != want[b] {
		t.Fatal("a Repository holding the replaced cad-paths did not look again")
	}
	// Every other revision misses in the one-record file and is read
	// through its tree.
	for _, k := range f.keys[1:] {
		if got := readDigest(t, r2, k); got != want[k] {
			t.Fatalf("%s: read differs", k)
		}
	}
}

// A damaged cad-paths is never believed: a changed byte in a record costs
// that record, a damaged header or a file cut short the whole file, and
// the next reads write it again.
func TestPathsFileDamaged(t *testing.T) {
	f := newPathsFixture(t)
	want := f.read(t)
	// Every record sorted, none in the tail, as a rebuild leaves it.
	var recs []gitrepo.PathsRecord
	for _, k := range f.keys {
		recs = append(recs, gitrepo.PathsRecord{Root: f.roots[k], Path: k.Package, Tree: f.trees[k]})
	}
	if err := gitrepo.WritePathsFile(f.dir, recs); err != nil {
		t.Fatal(err)
	}
	paths := filepath.Join(f.dir, "cad-paths")
	good, err := os.ReadFile(paths)
	if err != nil {
		t.Fatal(err)
	}
	const header = 24 + 256*4
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		whole  bool // the whole file is dropped, and written again by the reads
	}{
		{"a byte of a record's tree", func(b []byte) []byte { b[header+40] ^= 0xff; return b }, false},
		{"a byte of a record's key", func(b []byte) []byte { b[header+60+3] ^= 0x01; return b }, false},
		{"a byte of the fan-out", func(b []byte) []byte { b[24+4*128+3] ^= 0x01; return b }, true},
		{"the magic", func(b []byte) []byte { copy(b, "cadpath9"); return b }, true},
		{"cut short", func(b []byte) []byte { return b[:len(b)-7] }, true},
		{"cut in the header", func(b []byte) []byte { return b[:100] }, true},
		{"empty", func(b []byte) []byte { return nil }, true},
		{"garbage", func(b []byte) []byte { return []byte(strings.Repeat("garbage\n", 400)) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(paths, tc.damage(append([]byte(nil), good...)), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, ok := gitrepo.PathsCount(f.dir); ok == tc.whole {
				t.Fatalf("file taken as valid: %v", ok)
			}
			if got := f.read(t); !equalDigests(got, want) {
				t.Fatal("a damaged cad-paths changed what is read")
			}
			f.list(t)
			if tc.whole {
				f.requireAll(t)
			}
		})
	}
}

// A list adds the package trees it found in the trees to cad-paths once,
// when it ends: appended to the tail when they fit, else merged into the
// sorted records with the tail in one rebuild; what the file held is
// kept.
func TestPathsFileListAdds(t *testing.T) {
	defer gitrepo.SetDeferTrees(false)() // lists that learn every tag's package tree
	restore := gitrepo.SetPathTailMax(4)
	defer restore()
	f := newPathsFixture(t)
	// A file of a third of the records: the list learns the rest, more
	// than the tail holds.
	var third []gitrepo.PathsRecord
	for _, k := range f.keys[:len(f.keys)/3] {
		third = append(third, gitrepo.PathsRecord{Root: f.roots[k], Path: k.Package, Tree: f.trees[k]})
	}
	if err := gitrepo.WritePathsFile(f.dir, third); err != nil {
		t.Fatal(err)
	}
	f.list(t)
	f.requireAll(t)
	// (The list also learns the drafts' and placeholders' trees.)
	if count, ok := gitrepo.PathsCount(f.dir); !ok || count < len(f.keys) {
		t.Fatalf("after the list: %d sorted records (%v), want %d at least", count, ok, len(f.keys))
	}
	if n := gitrepo.PathsTail(f.dir); n != 0 {
		t.Fatalf("a tail of %d bytes after a rebuild", n)
	}
	// A file missing two tags' records: the list appends them (and the
	// other trees it found).
	restore()
	all := third[:0:0]
	for _, k := range f.keys[2:] {
		all = append(all, gitrepo.PathsRecord{Root: f.roots[k], Path: k.Package, Tree: f.trees[k]})
	}
	if err := gitrepo.WritePathsFile(f.dir, all); err != nil {
		t.Fatal(err)
	}
	f.list(t)
	f.requireAll(t)
	if count, _ := gitrepo.PathsCount(f.dir); count != len(f.keys)-2 {
		t.Fatalf("after the list: %d sorted records, want %d", count, len(f.keys)-2)
	}
	if n := gitrepo.PathsTail(f.dir); n < 2*gitrepo.PathsRecordSize {
		t.Fatalf("a tail of %d bytes, want 2 records at least", n)
	}
}

// The temporary file of a rebuild that a crash cut short is ignored, and
// removed by a later rebuild once it is an hour old (on unix at once when
// no writer holds it: TestPathFileTempsOfDeadWritersRemoved); a recent
// empty one, perhaps another process's not yet locked, is left.
func TestPathsFileLeftoverTemp(t *testing.T) {
	defer gitrepo.SetDeferTrees(false)() // lists that learn every tag's package tree
	f := newPathsFixture(t)
	old := filepath.Join(f.dir, "cad-paths-123.tmp")
	young := filepath.Join(f.dir, "cad-paths-456.tmp")
	for _, p := range []string{old, young} {
		data := []byte("cadpath1 cut short")
		if p == young {
			data = nil
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.list(t)
	f.requireAll(t)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("an old leftover is still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("a recent temporary file (maybe another process's rebuild) was removed: %v", err)
	}
	names, _ := filepath.Glob(filepath.Join(f.dir, "cad-paths-*.tmp"))
	if len(names) != 1 {
		t.Fatalf("temporary files left: %v", names)
	}
}

// Gets from many goroutines while other Repositories list and write
// cad-paths under them read what the trees hold.
func TestPathsFileConcurrent(t *testing.T) {
	defer gitrepo.SetDeferTrees(false)() // lists that learn every tag's package tree
	f := newPathsFixture(t)
	want := f.read(t)
	paths := filepath.Join(f.dir, "cad-paths")
	r := mustOpen(t, benchSpec(f.dir), nil)
	defer r.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				k := f.keys[(g*7+i)%len(f.keys)]
				pr, err := r.Get(context.Background(), k)
				if err != nil {
					errs <- err
					return
				}
				if _, err := pr.Files(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				os.Remove(paths) // each list learns it all again and writes it
				l := mustOpen(t, benchSpec(f.dir), nil)
				if _, err := l.List(context.Background(), repository.ListOptions{}); err != nil {
					errs <- err
				}
				l.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range f.keys {
		if got := readDigest(t, r, k); got != want[k] {
			t.Fatalf("%s: read differs", k)
		}
	}
}

func equalDigests(a, b map[revision.Key]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
