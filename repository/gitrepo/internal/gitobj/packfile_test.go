package gitobj

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/configasdata/cad/repository"
)

// gitCLI runs git in dir for the tests of this file.
func gitCLI(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Every object of packs git wrote reads the same through PackReader as
// through go-git, with and without a cache: a fast-import pack (offset
// deltas, each version of a file on the previous one, in long chains) and
// the same objects repacked with ref deltas (base named by id).
func TestPackReaderReadsWhatGoGitReads(t *testing.T) {
	for _, refDeltas := range []bool{false, true} {
		for _, m := range readModes {
			t.Run(fmt.Sprint("refDeltas=", refDeltas, "/", m.name), func(t *testing.T) {
				m.set(t)
				testPackReader(t, refDeltas, m.name != "read")
			})
		}
	}
}

// readMode is a way a pack and its index are read: mapped when opened
// (small files), with ReadAt throughout, or with ReadAt until mapped
// part way (large files).
type readMode struct {
	name  string
	whole int64
	after int
}

var readModes = []readMode{
	{"mapped", 1 << 40, 256},
	{"read", 0, 1 << 30},
	{"read-then-mapped", 0, 40},
}

// set makes packs opened until the test ends be read in mode m.
func (m readMode) set(t *testing.T) {
	whole, after := mapWhole, mapAfter
	mapWhole, mapAfter = m.whole, m.after
	t.Cleanup(func() { mapWhole, mapAfter = whole, after })
}

func testPackReader(t *testing.T, refDeltas, mapped bool) {
	gitDir := filepath.Join(t.TempDir(), "repo.git")
	gitCLI(t, "", "init", "--quiet", "--bare", "-b", "main", gitDir)
	var stream strings.Builder
	grown := strings.Repeat("a line every version shares\n", 300)
	for i := range 60 {
		grown += fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i))
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter T <t@example.com> %d +0000\ndata 9\ncommit %02d\n", 1767225600+i, i)
		fmt.Fprintf(&stream, "M 100644 inline f.txt\ndata %d\n%s\n", len(grown), grown)
		fmt.Fprintf(&stream, "M 100644 inline d/g%d.txt\ndata 2\n%02d\n\n", i%5, i)
		if i%20 == 0 {
			fmt.Fprintf(&stream, "tag t%d\nfrom refs/heads/main\ntagger T <t@example.com> 1767225600 +0000\ndata 3\ntag\n", i)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--depth=50")
	cmd.Dir, cmd.Stdin = gitDir, strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	if refDeltas {
		gitCLI(t, gitDir, "-c", "repack.usedeltabaseoffset=false", "repack", "--quiet", "-a", "-d", "-f", "--depth=50")
	}
	var deltas string
	for _, name := range packNames(t, gitDir) {
		deltas += gitCLI(t, gitDir, "verify-pack", "-v", filepath.Join(gitDir, "objects", "pack", name+".idx"))
	}
	if deep := "chain length = 10"; refDeltas && !strings.Contains(deltas, "chain length = 4") || !refDeltas && !strings.Contains(deltas, deep) {
		t.Fatalf("the packs have no long delta chains:\n%s", deltas)
	}

	fs := filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault())
	iter, err := fs.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	want := map[plumbing.Hash][]byte{}
	types := map[plumbing.Hash]plumbing.ObjectType{}
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		data, err := io.ReadAll(rd)
		want[o.Hash()], types[o.Hash()] = data, o.Type()
		return err
	})
	if err != nil || len(want) < 150 {
		t.Fatalf("go-git read %d objects: %v", len(want), err)
	}
	for _, c := range []*LRU{nil, NewLRU(1 << 20)} {
		pr := NewPackReader(gitDir)
		var final []byte
		for h, data := range want {
			typ, got, err := pr.Object(h, c)
			if err != nil {
				t.Fatalf("%s: %v", h, err)
			}
			if typ != types[h] || !bytes.Equal(got, data) {
				t.Fatalf("%s: read a %s of %d bytes, go-git a %s of %d", h, typ, len(got), types[h], len(data))
			}
			// The same read into reused memory, which must not change
			// what was read before (got) nor the cached bases.
			typ, scanned, err := pr.ObjectScratch(h, c, &final)
			if err != nil || typ != types[h] || !bytes.Equal(scanned, data) {
				t.Fatalf("%s: objectScratch read a %s of %d bytes (%v), go-git a %s of %d", h, typ, len(scanned), err, types[h], len(data))
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("%s: objectScratch changed an object read before", h)
			}
		}
		// Size gives every object's type and size from the headers
		// alone, deltas (of both kinds, in long chains) included.
		for h, data := range want {
			if typ, n, err := pr.Size(h); err != nil || typ != types[h] || n != int64(len(data)) {
				t.Fatalf("%s: Size = %s, %d (%v); go-git read a %s of %d", h, typ, n, err, types[h], len(data))
			}
		}
		if _, _, err := pr.Size(plumbing.NewHash("0123456789012345678901234567890123456789")); err != ErrNotInPack {
			t.Fatalf("Size of a missing object: %v", err)
		}
		// An object read where Offset placed it is the object; a pack
		// the reader does not read is not in a pack.
		for h, data := range want {
			id, off, ok := pr.Offset(h)
			if !ok {
				t.Fatalf("%s: no offset", h)
			}
			if typ, got, err := pr.ObjectAt(id, off, c); err != nil || typ != types[h] || !bytes.Equal(got, data) {
				t.Fatalf("%s at %d: a %s of %d bytes (%v)", h, off, typ, len(got), err)
			}
			if _, _, err := pr.ObjectAt(id+100, off, c); err != ErrNotInPack {
				t.Fatalf("%s in another pack: %v", h, err)
			}
		}
		// Pages dropped behind a reader that goes through a pack in
		// order (DropBefore), up to its end and past it, and at
		// offsets that lie in no pack, are read again from the file.
		for h := range want {
			if id, off, ok := pr.Offset(h); ok {
				pr.DropBefore(id, off)
			}
		}
		for _, p := range pr.packs {
			pr.DropBefore(p.id, int64(len(p.packMap))+1<<20)
		}
		pr.DropBefore(^uint32(0), 1<<40)
		pr.DropBefore(0, -1)
		// Every object again, each through ObjectScratch after another's:
		// reused memory never leaks into a base.
		for h, data := range want {
			if _, got, err := pr.ObjectScratch(h, c, &final); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: second objectScratch pass: %v", h, err)
			}
		}
		if _, _, err := pr.Object(plumbing.NewHash("0123456789012345678901234567890123456789"), c); err != ErrNotInPack {
			t.Fatalf("a missing object: %v", err)
		}
		for _, p := range pr.packs {
			if (p.packMap != nil) != mapped || (p.idxMap != nil) != mapped {
				t.Fatalf("pack %s: mapped %v, index mapped %v; want %v", p.name, p.packMap != nil, p.idxMap != nil, mapped)
			}
		}
		pr.Close()
	}
}

func packNames(t testing.TB, gitDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no pack: %v", err)
	}
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".idx"))
	}
	return out
}

// A damaged pack gives errors matching repository.ErrCorrupt, never a
// panic or wrong content.
func TestPackReaderDamagedPack(t *testing.T) {
	work := t.TempDir()
	gitCLI(t, work, "init", "--quiet", "-b", "main")
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(work, "f"), []byte(strings.Repeat(fmt.Sprintf("%d\n", i), 500)+"x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCLI(t, work, "add", "-A")
		gitCLI(t, work, "commit", "--quiet", "-m", "c")
	}
	gitCLI(t, work, "gc", "--quiet")
	gitDir := filepath.Join(work, ".git")
	var ids []plumbing.Hash
	for _, line := range strings.Fields(gitCLI(t, work, "rev-list", "--objects", "--all", "--no-object-names")) {
		ids = append(ids, plumbing.NewHash(line))
	}
	packPath := filepath.Join(gitDir, "objects", "pack", packNames(t, gitDir)[0]+".pack")
	orig, err := os.ReadFile(packPath)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(packPath, 0o644)
	for _, m := range readModes {
		t.Run(m.name, func(t *testing.T) {
			m.set(t)
			readDamaged(t, gitDir, packPath, orig, ids)
		})
	}
}

// readDamaged reads every object of ids from damaged and cut-short copies
// of the pack at packPath, whose content is orig.
func readDamaged(t *testing.T, gitDir, packPath string, orig []byte, ids []plumbing.Hash) {
	for _, cut := range []int{12, 20, 40, len(orig) / 3, len(orig) / 2, len(orig) - 30} {
		damaged := bytes.Clone(orig)
		for i := cut; i < cut+8 && i < len(damaged); i++ {
			damaged[i] ^= 0x5a
		}
		for _, data := range [][]byte{damaged, orig[:cut]} {
			if err := os.WriteFile(packPath, data, 0o644); err != nil {
				t.Fatal(err)
			}
			pr := NewPackReader(gitDir)
			for _, h := range ids {
				typ, got, err := pr.Object(h, nil)
				if err != nil && !errors.Is(err, repository.ErrCorrupt) && !errors.Is(err, ErrNotInPack) {
					t.Fatalf("%s: %v, want an error matching repository.ErrCorrupt", h, err)
				}
				if err == nil && plumbing.ComputeHash(typ, got) != h {
					// A flipped byte in a zlib stream can go unnoticed only
					// where the checksum still matches: never silently.
					t.Fatalf("%s: wrong content read without an error", h)
				}
			}
			pr.Close()
		}
	}
}

// Malformed deltas are errors.
func TestApplyDeltaMalformed(t *testing.T) {
	base := []byte("0123456789")
	good := []byte{10, 4, 0x91, 2, 4} // copy 4 bytes from offset 2
	if got, err := applyDelta(nil, base, good); err != nil || string(got) != "2345" {
		t.Fatalf("good delta: %q, %v", got, err)
	}
	for _, d := range [][]byte{
		{},
		{9, 4, 0x91, 2, 4},        // wrong base size
		{10, 5, 0x91, 2, 4},       // result shorter than announced
		{10, 4, 0x91, 8, 4},       // copy past the base
		{10, 4, 0x91},             // instruction cut short
		{10, 4, 0},                // reserved instruction
		{10, 4, 5, 'a', 'b'},      // insert cut short
		{10, 2, 3, 'a', 'b', 'c'}, // insert past the result
	} {
		if _, err := applyDelta(nil, base, d); err == nil {
			t.Errorf("delta %v: no error", d)
		}
	}
}

// SearchNear answers as sort.Search for every length, answer and guess,
// guesses outside the range included.
func TestSearchNear(t *testing.T) {
	for n := range 40 {
		for answer := 0; answer <= n; answer++ {
			for guess := -3; guess <= n+3; guess++ {
				calls := 0
				got := SearchNear(n, guess, func(i int) bool {
					if i < 0 || i >= n {
						t.Fatalf("n=%d: pred(%d) called", n, i)
					}
					calls++
					return i >= answer
				})
				if got != answer {
					t.Fatalf("n=%d answer=%d guess=%d: got %d", n, answer, guess, got)
				}
				if d := max(guess-answer, answer-guess); d <= 1 && calls > 4 {
					t.Fatalf("n=%d answer=%d guess=%d: %d calls for an answer next to the guess", n, answer, guess, calls)
				}
			}
		}
	}
}
