package gitobj

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
)

// The multi-pack-index tests build repositories with the git CLI (packs
// from fast-import runs, git multi-pack-index write, git repack
// --write-midx, git maintenance run), read every object git lists
// through a PackReader, and check each against git's type and size and
// against its id (the hash of its type, size and content).

// gitObject is what git cat-file --batch-check says of an object.
type gitObject struct {
	typ  plumbing.ObjectType
	size int64
}

// midxRepo returns a bare repository holding packs packs written by git
// fast-import (a file growing a line a commit, stored as deltas, and
// files of their own) and loose objects written by git hash-object.
func midxRepo(t testing.TB, packs, loose int) string {
	t.Helper()
	gitDir := filepath.Join(t.TempDir(), "repo.git")
	gitCLI(t, "", "init", "--quiet", "--bare", "-b", "main", gitDir)
	grown := strings.Repeat("a line every version shares\n", 200)
	for p := range packs {
		addPack(t, gitDir, p, &grown)
	}
	for i := range loose {
		cmd := exec.Command("git", "hash-object", "-w", "--stdin")
		cmd.Dir, cmd.Stdin = gitDir, strings.NewReader(fmt.Sprintf("loose object %d\n", i))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hash-object: %v\n%s", err, out)
		}
	}
	return gitDir
}

// addPack writes a pack of ten commits to branch main of gitDir with git
// fast-import.
func addPack(t testing.TB, gitDir string, p int, grown *string) {
	t.Helper()
	var stream strings.Builder
	for i := range 10 {
		*grown += fmt.Sprintf("pack %d line %d\n", p, i)
		msg := fmt.Sprintf("c%d-%d", p, i)
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter T <t@example.com> %d +0000\ndata %d\n%s\n", 1767225600+p*10+i, len(msg), msg)
		if p > 0 && i == 0 {
			stream.WriteString("from refs/heads/main^0\n")
		}
		fmt.Fprintf(&stream, "M 100644 inline f.txt\ndata %d\n%s\n", len(*grown), *grown)
		fmt.Fprintf(&stream, "M 100644 inline p%d/g%d.txt\ndata 6\n%02d-%02d\n\n", p, i, p, i)
	}
	// A pack however few the objects (git keeps fewer than 100 loose).
	cmd := exec.Command("git", "-c", "fastimport.unpackLimit=1", "fast-import", "--quiet", "--depth=50")
	cmd.Dir, cmd.Stdin = gitDir, strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
}

// gitObjects returns every object of gitDir as git cat-file
// --batch-all-objects lists them.
func gitObjects(t testing.TB, gitDir string) map[plumbing.Hash]gitObject {
	t.Helper()
	out := gitCLI(t, gitDir, "cat-file", "--batch-all-objects", "--batch-check")
	all := map[plumbing.Hash]gitObject{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("cat-file: %q", line)
		}
		typ, err := plumbing.ParseObjectType(f[1])
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err != nil || err2 != nil {
			t.Fatalf("cat-file: %q", line)
		}
		all[plumbing.NewHash(f[0])] = gitObject{typ, n}
	}
	return all
}

// packedObjects returns the objects of gitDir that lie in packs (git
// show-index of every .idx).
func packedObjects(t testing.TB, gitDir string) map[plumbing.Hash]bool {
	t.Helper()
	packed := map[plumbing.Hash]bool{}
	for _, name := range packNames(t, gitDir) {
		idx, err := os.Open(filepath.Join(gitDir, "objects", "pack", name+".idx"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "show-index")
		cmd.Stdin = idx
		out, err := cmd.Output()
		idx.Close()
		if err != nil {
			t.Fatalf("show-index: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) >= 2 {
				packed[plumbing.NewHash(f[1])] = true
			}
		}
	}
	return packed
}

// readAll reads every object of want through pr (Object, ObjectScratch,
// Size, Has): a packed one must read as git says, with the content its id
// names; one not packed must be ErrNotInPack.
func readAll(t *testing.T, pr *PackReader, want map[plumbing.Hash]gitObject, packed map[plumbing.Hash]bool) {
	t.Helper()
	c := NewLRU(1 << 20)
	var final []byte
	for h, o := range want {
		typ, data, err := pr.Object(h, c)
		if !packed[h] {
			if !errors.Is(err, ErrNotInPack) || pr.Has(h) {
				t.Fatalf("%s is loose: read %v, Has %v", h, err, pr.Has(h))
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if typ != o.typ || int64(len(data)) != o.size || plumbing.ComputeHash(typ, data) != h {
			t.Fatalf("%s: read a %s of %d bytes; git says a %s of %d", h, typ, len(data), o.typ, o.size)
		}
		if typ, data, err := pr.ObjectScratch(h, nil, &final); err != nil || plumbing.ComputeHash(typ, data) != h {
			t.Fatalf("%s: ObjectScratch: %v", h, err)
		}
		if typ, n, err := pr.Size(h); err != nil || typ != o.typ || n != o.size {
			t.Fatalf("%s: Size = %s, %d (%v); git says a %s of %d", h, typ, n, err, o.typ, o.size)
		}
		if !pr.Has(h) {
			t.Fatalf("%s: Has false", h)
		}
		id, off, ok := pr.Offset(h)
		if typ, data, err := pr.ObjectAt(id, off, c); !ok || err != nil || plumbing.ComputeHash(typ, data) != h {
			t.Fatalf("%s: ObjectAt(%d, %d): %v", h, id, off, err)
		}
	}
	missing := plumbing.NewHash("0123456789012345678901234567890123456789")
	if _, _, err := pr.Object(missing, c); !errors.Is(err, ErrNotInPack) {
		t.Fatalf("a missing object: %v", err)
	}
}

// midxUsed reports whether pr reads the multi-pack-index of its own pack
// directory, and how many open packs it searches through their .idx.
func midxUsed(pr *PackReader) (used bool, viaIdx int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, p := range pr.packs {
		if !p.covered {
			viaIdx++
		}
	}
	m := pr.midx[0]
	return m != nil && !m.broken, viaIdx
}

func TestMidxReadsEveryObject(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, gitDir string)
	}{
		{"multi-pack-index write", func(t *testing.T, gitDir string) {
			gitCLI(t, gitDir, "multi-pack-index", "write")
		}},
		{"repack --write-midx", func(t *testing.T, gitDir string) {
			gitCLI(t, gitDir, "repack", "-d", "-q", "--write-midx")
		}},
		{"maintenance run", func(t *testing.T, gitDir string) {
			for range 2 {
				gitCLI(t, gitDir, "maintenance", "run", "--task=loose-objects", "--task=incremental-repack")
			}
		}},
	} {
		for _, m := range readModes {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				m.set(t)
				gitDir := midxRepo(t, 6, 30)
				c.make(t, gitDir)
				if _, err := os.Stat(filepath.Join(gitDir, "objects", "pack", "multi-pack-index")); err != nil {
					t.Fatalf("git wrote no multi-pack-index: %v", err)
				}
				want, packed := gitObjects(t, gitDir), packedObjects(t, gitDir)
				pr := NewPackReader(gitDir)
				defer pr.Close()
				// A first read through the multi-pack-index opens the
				// one pack it names and does not list the directory.
				for h := range packed {
					if _, _, err := pr.Object(h, nil); err != nil {
						t.Fatal(err)
					}
					break
				}
				if len(pr.packs) != 1 || !pr.scanned[0].IsZero() {
					t.Errorf("after one read: %d packs open, directory listed %v; want 1, false", len(pr.packs), !pr.scanned[0].IsZero())
				}
				readAll(t, pr, want, packed)
				used, viaIdx := midxUsed(pr)
				if !used || viaIdx != 0 {
					t.Errorf("multi-pack-index read %v, %d packs searched through their .idx; want true, 0", used, viaIdx)
				}
				mapped := m.name != "read"
				if got := pr.midx[0].data != nil; got != mapped {
					t.Errorf("multi-pack-index mapped %v, want %v", got, mapped)
				}
			})
		}
	}
}

// A pack written after the multi-pack-index, which it does not name, is
// read through its .idx, by a new reader and by one that read before it
// came.
func TestMidxBesideNewerPack(t *testing.T) {
	gitDir := midxRepo(t, 4, 0)
	gitCLI(t, gitDir, "multi-pack-index", "write")
	old := NewPackReader(gitDir)
	defer old.Close()
	readAll(t, old, gitObjects(t, gitDir), packedObjects(t, gitDir))
	grown := "another file\n"
	addPack(t, gitDir, 9, &grown)
	want, packed := gitObjects(t, gitDir), packedObjects(t, gitDir)
	for _, pr := range []*PackReader{old, NewPackReader(gitDir)} {
		readAll(t, pr, want, packed)
		if used, viaIdx := midxUsed(pr); !used || viaIdx != 1 {
			t.Errorf("multi-pack-index read %v, %d packs searched through their .idx; want true, 1", used, viaIdx)
		}
	}
}

// A multi-pack-index naming packs that are gone (git repack -a -d merged
// them; the old multi-pack-index put back) never hides an object: a new
// reader does not read it, and a reader that read it before, finding a
// pack it names gone, reads every pack through its .idx.
func TestMidxNamesDeletedPack(t *testing.T) {
	gitDir := midxRepo(t, 5, 10)
	gitCLI(t, gitDir, "multi-pack-index", "write")
	midxPath := filepath.Join(gitDir, "objects", "pack", "multi-pack-index")
	stale, err := os.ReadFile(midxPath)
	if err != nil {
		t.Fatal(err)
	}
	before := NewPackReader(gitDir)
	defer before.Close()
	// One object read: one pack of the five opened.
	for h := range packedObjects(t, gitDir) {
		if _, _, err := before.Object(h, nil); err != nil {
			t.Fatal(err)
		}
		break
	}
	gitCLI(t, gitDir, "repack", "-a", "-d", "-q")
	if err := os.WriteFile(midxPath, stale, 0o444); err != nil {
		t.Fatal(err)
	}
	want, packed := gitObjects(t, gitDir), packedObjects(t, gitDir)
	if len(packNames(t, gitDir)) != 1 {
		t.Fatalf("packs %v after git repack -a -d", packNames(t, gitDir))
	}
	for name, pr := range map[string]*PackReader{"reader from before": before, "new reader": NewPackReader(gitDir)} {
		readAll(t, pr, want, packed)
		if used, _ := midxUsed(pr); used {
			t.Errorf("%s: a multi-pack-index naming deleted packs is read", name)
		}
	}
	// A pack removed after the scan, found gone when first read.
	gitDir = midxRepo(t, 3, 0)
	gitCLI(t, gitDir, "multi-pack-index", "write")
	pr := NewPackReader(gitDir)
	defer pr.Close()
	pr.Rescan()
	names := packNames(t, gitDir)
	want, packed = gitObjects(t, gitDir), packedObjects(t, gitDir)
	stale, _ = os.ReadFile(filepath.Join(gitDir, "objects", "pack", "multi-pack-index"))
	gitCLI(t, gitDir, "repack", "-a", "-d", "-q")
	os.WriteFile(filepath.Join(gitDir, "objects", "pack", "multi-pack-index"), stale, 0o444)
	if slices.Equal(names, packNames(t, gitDir)) {
		t.Fatal("git repack -a -d left the packs")
	}
	readAll(t, pr, want, packed)
}

// cadMidx writes a multi-pack-index as git does (its chunks in the order
// git writes them) of the objects of the .idx files of gitDir, every
// offset in the LOFF chunk when large; each object is placed in the
// first pack (by name) that holds it.
func cadMidx(t testing.TB, gitDir string, large bool) []byte {
	t.Helper()
	type entry struct {
		h    plumbing.Hash
		pack uint32
		off  uint64
	}
	names := packNames(t, gitDir)
	slices.Sort(names)
	byID := map[plumbing.Hash]entry{}
	for k, name := range names {
		idx, err := os.Open(filepath.Join(gitDir, "objects", "pack", name+".idx"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "show-index")
		cmd.Stdin = idx
		out, err := cmd.Output()
		idx.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			off, _ := strconv.ParseUint(f[0], 10, 64)
			h := plumbing.NewHash(f[1])
			if _, ok := byID[h]; !ok {
				byID[h] = entry{h, uint32(k), off}
			}
		}
	}
	var entries []entry
	for _, e := range byID {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.h[:], b.h[:]) })
	var pnam, oidf, oidl, ooff, loff []byte
	for _, name := range names {
		pnam = append(append(pnam, name+".idx"...), 0)
	}
	for len(pnam)%4 != 0 {
		pnam = append(pnam, 0)
	}
	var fan [256]uint32
	for _, e := range entries {
		for b := int(e.h[0]); b < 256; b++ {
			fan[b]++
		}
		oidl = append(oidl, e.h[:]...)
		ooff = binary.BigEndian.AppendUint32(ooff, e.pack)
		if large {
			ooff = binary.BigEndian.AppendUint32(ooff, 0x80000000|uint32(len(loff)/8))
			loff = binary.BigEndian.AppendUint64(loff, e.off)
		} else {
			ooff = binary.BigEndian.AppendUint32(ooff, uint32(e.off))
		}
	}
	for _, n := range fan {
		oidf = binary.BigEndian.AppendUint32(oidf, n)
	}
	type chunk struct {
		id   string
		data []byte
	}
	chunks := []chunk{{"PNAM", pnam}, {"OIDF", oidf}, {"OIDL", oidl}, {"OOFF", ooff}}
	if large {
		chunks = append(chunks, chunk{"LOFF", loff})
	}
	out := []byte("MIDX\x01\x01")
	out = append(out, byte(len(chunks)), 0)
	out = binary.BigEndian.AppendUint32(out, uint32(len(names)))
	off := uint64(len(out) + (len(chunks)+1)*12)
	for _, c := range chunks {
		out = binary.BigEndian.AppendUint64(append(out, c.id...), off)
		off += uint64(len(c.data))
	}
	out = binary.BigEndian.AppendUint64(append(out, 0, 0, 0, 0), off)
	for _, c := range chunks {
		out = append(out, c.data...)
	}
	sum := sha1.Sum(out)
	return append(out, sum[:]...)
}

// Large offsets (the LOFF chunk) are read; an object placed by a
// multi-pack-index this test writes reads as git says.
func TestMidxLargeOffsets(t *testing.T) {
	gitDir := midxRepo(t, 4, 0)
	want, packed := gitObjects(t, gitDir), packedObjects(t, gitDir)
	for _, large := range []bool{false, true} {
		if err := os.WriteFile(filepath.Join(gitDir, "objects", "pack", "multi-pack-index"), cadMidx(t, gitDir, large), 0o644); err != nil {
			t.Fatal(err)
		}
		pr := NewPackReader(gitDir)
		readAll(t, pr, want, packed)
		if used, viaIdx := midxUsed(pr); !used || viaIdx != 0 {
			t.Errorf("large %v: multi-pack-index read %v, %d packs searched through their .idx", large, used, viaIdx)
		}
		if large && pr.midx[0].nloff != int64(len(packed)) {
			t.Errorf("%d large offsets, want %d", pr.midx[0].nloff, len(packed))
		}
		pr.Close()
	}
	// git reads the multi-pack-index this test writes as its own.
	gitCLI(t, gitDir, "multi-pack-index", "verify")
}

// A multi-pack-index that is damaged, cut short or of a format this does
// not read is not read (or, where the damage shows only at a lookup, read
// no more from then on); every object reads as git says through the
// packs' .idx files, and nothing panics.
func TestMidxDamaged(t *testing.T) {
	gitDir := midxRepo(t, 4, 0)
	gitCLI(t, gitDir, "multi-pack-index", "write")
	midxPath := filepath.Join(gitDir, "objects", "pack", "multi-pack-index")
	orig, err := os.ReadFile(midxPath)
	if err != nil {
		t.Fatal(err)
	}
	m := &midxFile{data: orig, size: int64(len(orig))}
	if err := m.parse(); err != nil {
		t.Fatal(err)
	}
	want, packed := gitObjects(t, gitDir), packedObjects(t, gitDir)
	set := func(at int64, b ...byte) []byte {
		d := bytes.Clone(orig)
		copy(d[at:], b)
		return d
	}
	chunkAt := func(id string) int64 {
		for i := int64(midxHeaderSize); ; i += 12 {
			if string(orig[i:i+4]) == id {
				return int64(binary.BigEndian.Uint64(orig[i+4:]))
			}
		}
	}
	for _, c := range []struct {
		name string
		data []byte
		// read: a lookup may find the damage only when it meets it.
		read bool
		// unsupported: the error is errMidxUnsupported, not ErrCorrupt.
		unsupported bool
	}{
		{name: "empty", data: nil},
		{name: "magic only", data: orig[:4]},
		{name: "header only", data: orig[:midxHeaderSize]},
		{name: "cut in the chunk table", data: orig[:30]},
		{name: "cut in half", data: orig[:len(orig)/2]},
		{name: "checksum cut off", data: orig[:len(orig)-20]},
		{name: "one byte short", data: orig[:len(orig)-1]},
		{name: "bad magic", data: set(0, 'X')},
		{name: "version 2", data: set(4, 2), unsupported: true},
		{name: "hash version 2 (SHA-256)", data: set(5, 2), unsupported: true},
		{name: "a base multi-pack-index", data: set(7, 1), unsupported: true},
		{name: "no chunks", data: set(6, 0)},
		{name: "too many chunks", data: set(6, 200)},
		{name: "pack count too high", data: set(8, 0, 0, 0, 9)},
		{name: "pack count too low", data: set(8, 0, 0, 0, 1)},
		{name: "chunk offset past the end", data: set(midxHeaderSize+4, 0xff, 0, 0, 0, 0, 0, 0, 0)},
		{name: "chunk offset in the header", data: set(midxHeaderSize+4, 0, 0, 0, 0, 0, 0, 0, 4)},
		{name: "fan-out decreasing", data: set(chunkAt("OIDF")+4*10, 0xff, 0xff, 0xff, 0xff)},
		{name: "pack names out of order", data: func() []byte {
			d := bytes.Clone(orig)
			d[chunkAt("PNAM")+int64(len("pack-"))] = 'z'
			return d
		}()},
		{name: "a pack named with a slash", data: set(chunkAt("PNAM"), '/')},
		{name: "a pack-int-id past the packs", data: set(chunkAt("OOFF"), 0, 0, 0, 77), read: true},
		{name: "offsets past the packs' ends", data: func() []byte {
			d := bytes.Clone(orig)
			for i := range int64(m.n) {
				binary.BigEndian.PutUint32(d[chunkAt("OOFF")+i*8+4:], 0x7ffffff0)
			}
			return d
		}(), read: true},
		{name: "offsets inside entries", data: func() []byte {
			d := bytes.Clone(orig)
			for i := range int64(m.n) {
				o := d[chunkAt("OOFF")+i*8+4:]
				binary.BigEndian.PutUint32(o, binary.BigEndian.Uint32(o)+3)
			}
			return d
		}(), read: true},
		{name: "object ids damaged", data: func() []byte {
			d := bytes.Clone(orig)
			for i := chunkAt("OIDL") + 7; i < chunkAt("OIDL")+int64(m.n)*20; i += 40 {
				d[i] ^= 0x40
			}
			return d
		}(), read: true},
		{name: "checksum damaged", data: set(int64(len(orig)-3), 0, 0, 0), read: true},
	} {
		for _, mode := range readModes {
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				mode.set(t)
				// Parsed alone: an error of the right kind, or a midx
				// whose damage a lookup meets.
				err := (&midxFile{data: c.data, size: int64(len(c.data))}).parse()
				switch {
				case c.read && err != nil:
					t.Fatalf("parse: %v, want the damage found at a lookup", err)
				case !c.read && c.unsupported && !errors.Is(err, repository.ErrNotSupported):
					t.Fatalf("parse: %v, want ErrNotSupported", err)
				case !c.read && !c.unsupported && !errors.Is(err, repository.ErrCorrupt):
					t.Fatalf("parse: %v, want ErrCorrupt", err)
				}
				if err := os.WriteFile(midxPath, c.data, 0o644); err != nil {
					t.Fatal(err)
				}
				pr := NewPackReader(gitDir)
				defer pr.Close()
				if c.name == "object ids damaged" {
					readDamagedIDs(t, pr, want)
					return
				}
				readAll(t, pr, want, packed)
				if used, _ := midxUsed(pr); used && c.name != "checksum damaged" {
					t.Errorf("a damaged multi-pack-index is still read")
				}
			})
		}
	}
}

// readDamagedIDs reads every object of want through pr, whose
// multi-pack-index has damaged object ids: an object it cannot find is
// not in a pack (the caller asks go-git, which reads the .idx files), an
// object found is the right one.
func readDamagedIDs(t *testing.T, pr *PackReader, want map[plumbing.Hash]gitObject) {
	t.Helper()
	found := 0
	for h := range want {
		typ, data, err := pr.Object(h, nil)
		if errors.Is(err, ErrNotInPack) {
			continue
		}
		if err != nil || plumbing.ComputeHash(typ, data) != h {
			t.Fatalf("%s: %v, or the wrong object", h, err)
		}
		found++
	}
	if found < len(want)/2 {
		t.Errorf("%d of %d objects found", found, len(want))
	}
}

// An incremental multi-pack-index (git 2.47's
// objects/pack/multi-pack-index.d) is not read and changes nothing.
func TestMidxIncrementalChainIgnored(t *testing.T) {
	gitDir := midxRepo(t, 3, 0)
	d := filepath.Join(gitDir, "objects", "pack", "multi-pack-index.d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "multi-pack-index-chain"), []byte("0123456789012345678901234567890123456789\n"), 0o644)
	os.WriteFile(filepath.Join(d, "multi-pack-index-0123456789012345678901234567890123456789.midx"), []byte("MIDX\x01\x01\x00\x01"), 0o644)
	pr := NewPackReader(gitDir)
	defer pr.Close()
	readAll(t, pr, gitObjects(t, gitDir), packedObjects(t, gitDir))
	if used, viaIdx := midxUsed(pr); used || viaIdx != 3 {
		t.Errorf("multi-pack-index read %v, %d packs through .idx; want false, 3", used, viaIdx)
	}
}

// midxSeeds are multi-pack-index files git and cadMidx wrote, for
// TestMidxMutations.
func midxSeeds(t testing.TB) [][]byte {
	gitDir := midxRepo(t, 3, 0)
	gitCLI(t, gitDir, "multi-pack-index", "write")
	gitMidx, err := os.ReadFile(filepath.Join(gitDir, "objects", "pack", "multi-pack-index"))
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{gitMidx, cadMidx(t, gitDir, true), cadMidx(t, gitDir, false)}
}

// fuzzMidx parses data as a multi-pack-index and, when it parses, looks
// up every id it lists and a few it does not: nothing panics, and what a
// lookup answers lies in the file.
func fuzzMidx(t *testing.T, data []byte) {
	m := &midxFile{data: data, size: int64(len(data))}
	if err := m.parse(); err != nil {
		if !errors.Is(err, repository.ErrCorrupt) && !errors.Is(err, repository.ErrNotSupported) {
			t.Fatalf("parse: %v", err)
		}
		return
	}
	if len(m.packs) != len(m.names) || m.oidl+int64(m.n)*20 > m.size || m.ooff+int64(m.n)*8 > m.size {
		t.Fatalf("parsed %d packs, %d names, %d objects in %d bytes", len(m.packs), len(m.names), m.n, m.size)
	}
	ids := [][]byte{make([]byte, 20), bytes.Repeat([]byte{0xff}, 20)}
	for i := range min(int64(m.n), 64) {
		ids = append(ids, data[m.oidl+i*20:m.oidl+i*20+20])
	}
	for _, id := range ids {
		var h plumbing.Hash
		copy(h[:], id)
		pack, off, ok, err := m.find(h)
		if err != nil && !errors.Is(err, repository.ErrCorrupt) {
			t.Fatalf("find %s: %v", h, err)
		}
		if ok && (int(pack) >= len(m.names) || off < 0) {
			t.Fatalf("find %s: pack %d of %d, offset %d", h, pack, len(m.names), off)
		}
	}
}

// FuzzMidx parses and looks up in fuzzed multi-pack-index files: go test
// -fuzz FuzzMidx ./repository/gitrepo/internal/gitobj/. Its seed corpus,
// testdata/fuzz/FuzzMidx, is a multi-pack-index git multi-pack-index
// write made of three packs and one of the same packs with every offset
// in the LOFF chunk (cadMidx); seeds made with git at run time would cost
// each fuzzing worker seconds to start.
func FuzzMidx(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) { fuzzMidx(t, data) })
}

// TestMidxMutations is a short fuzz run in every test run: seeds git and
// cadMidx wrote, each mutated many times (bytes flipped or set, cut
// short, a chunk table entry moved), parsed and looked up in.
func TestMidxMutations(t *testing.T) {
	seeds := midxSeeds(t)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, seed := range seeds {
		fuzzMidx(t, seed)
		for range n {
			d := bytes.Clone(seed)
			switch rng.IntN(4) {
			case 0:
				d = d[:rng.IntN(len(d))]
			case 1:
				for range 1 + rng.IntN(4) {
					d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
				}
			case 2:
				// A byte of the header or chunk table.
				i := rng.IntN(min(len(d), midxHeaderSize+12*6))
				d[i] = byte(rng.IntN(256))
			case 3:
				// A word of a table set to an extreme.
				i := rng.IntN(len(d) - 4)
				binary.BigEndian.PutUint32(d[i:], []uint32{0, 0x7fffffff, 0x80000000, 0xffffffff}[rng.IntN(4)])
			}
			fuzzMidx(t, d)
		}
	}
}
