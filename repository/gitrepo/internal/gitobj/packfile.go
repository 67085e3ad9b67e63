package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
)

// PackReader reads objects out of the pack files of a git directory on
// disk. go-git decodes every pack's whole .idx into memory before its
// first read, which costs more than the read itself in a large
// repository; PackReader instead looks an object up in the .idx file
// where it lies (the fan-out table, then a binary search among the ids
// that share the first byte), and reads the object at its offset in the
// pack, resolving delta chains through the object cache (delta bases are
// cached by pack offset, bounded by Options.CacheBytes like everything
// else in it). An index or pack is read with ReadAt until it has been
// read enough for a mapping to pay (see mapAfter), then mapped into memory
// where mmap exists.
//
// Where a multi-pack-index names packs, their objects are looked up there
// instead, the pack opened at its first object (see the package
// documentation, "Multi-pack-index, as read here").
//
// It reads version 2 indexes, which git has written since 2007; a pack
// with any other index is left to go-git, and so are loose objects. A
// PackReader is safe for concurrent use: readers holding the store's
// shared lock take turns on mu, one object at a time.
type PackReader struct {
	// dirs are objects/pack and the pack directories of the alternates
	// (see AddAlternates), looked in in this order.
	dirs []string

	mu sync.Mutex // guards what follows

	scanned []time.Time // each directory's modification time at the last scan
	// midx holds each directory's multi-pack-index, nil where there is
	// none; one that is broken is kept so that a rescan does not read
	// it again until it changes.
	midx  []*midxFile
	ready bool // the directories were scanned once
	// packs are the open packs: those found through .idx files, and
	// those a multi-pack-index named, opened at their first object.
	packs []*packFile
	// viaMidx is set by locate when it found an object through a
	// multi-pack-index (see retry).
	viaMidx bool
	nextID  uint32
	closed  bool // then go-git reads everything
	// scratch holds the intermediate objects of a delta chain.
	scratch [2][]byte
	// reads counts the entries read, for touched.
	reads int
}

// DropPagesEvery is how many pack entries and index lookups a PackReader
// reads between two calls of dropPages: a list of the
// whole repository touches every page of the packs,
// each once, and what it has read need not stay resident (50,000
// revisions: 50 MB of mapped files otherwise).
const DropPagesEvery = 16384

// packFile is one pack and its index.
type packFile struct {
	id      uint32
	name    string
	path    string   // the files' path without .idx or .pack
	idx     *os.File // nil for a pack found through a multi-pack-index, or once idxMap is (releaseFiles)
	idxMap  []byte   // the index mapped into memory, where mmap exists
	pack    *os.File // nil once packMap is (releaseFiles)
	packMap []byte   // the pack mapped into memory, where mmap exists
	// droppedTo is where DropBefore's last drop of packMap's pages ended.
	droppedTo int64
	n         uint32
	fanout    [256]uint32
	// uses counts lookups and entries read while the files are not
	// mapped; at mapAfter they are.
	uses int
	// covered: a multi-pack-index read by the reader names the pack, so
	// that lookups find its objects there, not in its .idx.
	covered bool
}

// Variables for the tests, which read packs in each way.
var (
	// mapWhole: an index or pack up to this size is mapped when opened.
	// Touching a page of a mapping costs a page fault, which maps a
	// window of pages around it (64 KiB on Linux): a small file is a
	// few faults in all, fewer system calls than reading it piece by
	// piece.
	mapWhole int64 = 1 << 20
	// mapAfter: a larger file is read with ReadAt until this many
	// lookups and entries were read from it, then mapped. A Get reads
	// a handful of objects lying megabytes apart, a fault and its window
	// each (on a virtual machine tens of microseconds, ten to twenty
	// times a read of the same bytes), and unmapping what was touched
	// costs as much again; a list reads the whole pack in order, where a
	// mapping wins.
	mapAfter = 256
)

// SearchNear returns, as sort.Search does, the smallest i in [0, n) for
// which pred is true (n when there is none), pred being false and then
// true; it starts at guess and widens its steps from there, so that an
// answer near guess takes a few calls of pred, close together.
func SearchNear(n, guess int, pred func(int) bool) int {
	if n == 0 {
		return 0
	}
	guess = min(max(guess, 0), n-1)
	lo, hi := 0, n // pred is false below lo, and true at hi when hi < n
	if pred(guess) {
		hi = guess
		for step := 1; guess-step >= 0; step *= 2 {
			if j := guess - step; !pred(j) {
				lo = j + 1
				break
			} else {
				hi = j
			}
		}
	} else {
		lo = guess + 1
		for step := 1; guess+step < n; step *= 2 {
			if j := guess + step; pred(j) {
				hi = j
				break
			} else {
				lo = j + 1
			}
		}
	}
	return lo + sort.Search(hi-lo, func(i int) bool { return pred(lo + i) })
}

// readIdx reads len(b) bytes of the index at off.
func (p *packFile) readIdx(b []byte, off int64) error {
	if p.idxMap != nil {
		if off < 0 || off+int64(len(b)) > int64(len(p.idxMap)) {
			return io.ErrUnexpectedEOF
		}
		copy(b, p.idxMap[off:])
		return nil
	}
	_, err := p.idx.ReadAt(b, off)
	return err
}

const (
	packIdxMagic   = "\xfftOc"
	packObjCommit  = 1
	packObjTree    = 2
	packObjBlob    = 3
	packObjTag     = 4
	packObjOfsDelt = 6
	packObjRefDelt = 7
	// maxDeltaDepth bounds a delta chain (git's own limit is 4095).
	maxDeltaDepth = 10000
	// maxPackObject bounds the size of one object read from a pack.
	maxPackObject = 1 << 30
)

// ErrNotInPack says an object is in none of the packs PackReader reads:
// it is loose, in a pack with an index it does not read, or missing;
// the caller asks go-git.
var ErrNotInPack = errors.New("not in a pack")

// NewPackReader returns a reader of the packs of gitDir; it opens them
// on the first lookup.
func NewPackReader(gitDir string) *PackReader {
	return &PackReader{dirs: []string{filepath.Join(gitDir, "objects", "pack")}, scanned: make([]time.Time, 1), midx: make([]*midxFile, 1)}
}

// AddAlternates makes pr read the packs of the object directories
// objDirs too (a repository's alternates: each a directory holding
// pack/), after its own. It is called before the first lookup.
func (pr *PackReader) AddAlternates(objDirs []string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, d := range objDirs {
		pr.dirs = append(pr.dirs, filepath.Join(d, "pack"))
		pr.scanned = append(pr.scanned, time.Time{})
		pr.midx = append(pr.midx, nil)
	}
}

// Close closes the open pack files.
func (pr *PackReader) Close() {
	if pr == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, p := range pr.packs {
		p.close()
	}
	for i, m := range pr.midx {
		if m != nil {
			m.close()
			pr.midx[i] = nil
		}
	}
	pr.packs, pr.closed = nil, true
}

// Rescan opens the packs the directory holds now, even when its
// modification time did not move since the last scan (a coarse clock, or
// a pack written in the same tick as the last scan).
func (pr *PackReader) Rescan() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	clear(pr.scanned)
	pr.rescan()
}

// rescan opens the packs of the directories that changed since the last
// scan, and reports whether one did. A directory's multi-pack-index, when
// it reads and every pack it names is there, covers those packs: they
// are opened at the first object found in them, their .idx never read.
// The other packs are opened through their .idx files.
func (pr *PackReader) rescan() bool {
	pr.ready = true
	changed := false
	for i, dir := range pr.dirs {
		fi, err := os.Stat(dir)
		if err != nil || fi.ModTime().Equal(pr.scanned[i]) {
			continue
		}
		pr.scanned[i] = fi.ModTime()
		// The names alone, unsorted: a directory git maintenance keeps
		// holds a thousand files, and a cold read lists it.
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		entries, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			continue
		}
		changed = true
		idx := []string{} // the packs' names, sorted; listed, so not nil
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e, ".idx"); ok {
				idx = append(idx, name)
			}
		}
		slices.Sort(idx)
		listed := func(name string) bool {
			_, ok := slices.BinarySearch(idx, name)
			return ok
		}
		m := pr.loadMidx(i, idx)
		covered := func(name string) (int, bool) {
			if m == nil {
				return 0, false
			}
			return slices.BinarySearch(m.names, name)
		}
		// Packs removed since (merged by a maintenance run into a pack
		// this scan opens) are closed: their objects are in the new one.
		kept := pr.packs[:0]
		have := map[string]bool{} // the open packs of dir
		for _, p := range pr.packs {
			if filepath.Dir(p.path) != dir {
				kept = append(kept, p)
				continue
			}
			name := filepath.Base(p.path)
			if !listed(name) {
				p.close()
				continue
			}
			if k, ok := covered(name); ok {
				p.covered = true
				if m.packs[k] == nil {
					m.packs[k] = p
				}
			} else if p.covered = false; p.idx == nil && p.idxMap == nil {
				// Found through a multi-pack-index that no longer
				// covers it: its .idx is read from now on.
				if err := p.openIdx(); err != nil {
					p.close()
					continue
				}
			}
			have[name] = true
			kept = append(kept, p)
		}
		clear(pr.packs[len(kept):])
		pr.packs = kept
		for _, name := range idx {
			if have[name] {
				continue
			}
			if _, ok := covered(name); ok {
				continue // opened at its first object
			}
			p, err := openPack(filepath.Join(dir, name))
			if err != nil {
				continue // go-git reads the objects of this pack
			}
			pr.add(p)
		}
	}
	return changed
}

// prepare reads the multi-pack-indexes of the directories, without
// listing them: a lookup that a multi-pack-index answers opens the pack
// it names (a pack that is gone breaks the multi-pack-index, see
// midxPack), and the first that none answers lists the directories
// (locate). So a cold read of a repository git maintenance keeps does not
// list its thousand files; a repository without one is listed at the
// first lookup, as before.
func (pr *PackReader) prepare() {
	pr.ready = true
	for i := range pr.dirs {
		pr.loadMidx(i, nil)
	}
}

// add makes p one of the open packs.
func (pr *PackReader) add(p *packFile) {
	pr.nextID++
	p.id = pr.nextID
	pr.packs = append(pr.packs, p)
}

// loadMidx returns the multi-pack-index of directory i to read, nil when
// there is none or it is not to be read: it does not parse (a format or
// version this does not read, damage), or it names a pack not listed
// (the sorted names of the .idx files the directory holds, without
// .idx; nil when it was not listed: a pack that is gone is then found
// when it is opened). A file read before and unchanged is not read
// again.
func (pr *PackReader) loadMidx(i int, listed []string) *midxFile {
	path := filepath.Join(pr.dirs[i], "multi-pack-index")
	old := pr.midx[i]
	fi, err := os.Stat(path)
	if old != nil && (err != nil || !old.sameFile(fi)) {
		old.close()
		old, pr.midx[i] = nil, nil
	}
	if err != nil {
		return nil
	}
	m := old
	if m == nil {
		if m, err = openMidx(path); err != nil {
			// Kept, broken, so that the next scan does not read it
			// again: the packs are read through their .idx files.
			pr.midx[i] = &midxFile{path: path, fi: fi, broken: true}
			return nil
		}
		pr.midx[i] = m
	}
	if listed != nil {
		// Both lists are sorted: one walk.
		j := 0
		for _, name := range m.names {
			for j < len(listed) && listed[j] < name {
				j++
			}
			if j == len(listed) || listed[j] != name {
				m.broken = true
				break
			}
		}
	}
	if m.broken {
		m.close()
		return nil
	}
	return m
}

// midxPack returns pack k of the multi-pack-index of directory i, opening
// it at its first use; nil when it cannot be opened (removed since the
// scan): the multi-pack-index is then broken and the directory scanned
// again, its packs opened through their .idx files.
func (pr *PackReader) midxPack(i int, m *midxFile, k uint32) *packFile {
	if p := m.packs[k]; p != nil {
		return p
	}
	p, err := openPackData(filepath.Join(pr.dirs[i], m.names[k]))
	if err != nil {
		pr.distrust(i)
		return nil
	}
	p.covered = true
	pr.add(p)
	m.packs[k] = p
	return p
}

// distrust breaks the multi-pack-index of directory i and scans the
// directory again, so that every pack there is read through its .idx.
func (pr *PackReader) distrust(i int) {
	if i < 0 {
		return
	}
	if m := pr.midx[i]; m != nil {
		m.broken = true
		m.close()
	}
	pr.scanned[i] = time.Time{}
	pr.rescan()
}

// openPack opens the pack base.pack and its index base.idx, reading only
// the pack's header and the index's header and fan-out table.
func openPack(base string) (*packFile, error) {
	p, err := openPackData(base)
	if err != nil {
		return nil, err
	}
	if err := p.openIdx(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// openPackData opens the pack base.pack, without its index, and checks
// its header.
func openPackData(base string) (*packFile, error) {
	pack, err := os.Open(base + ".pack")
	if err != nil {
		return nil, err
	}
	p := &packFile{name: filepath.Base(base), path: base, pack: pack}
	var ph [12]byte
	if _, err := pack.ReadAt(ph[:], 0); err != nil || string(ph[:4]) != "PACK" {
		p.close()
		return nil, fmt.Errorf("%w: pack %s: not a pack file", repository.ErrCorrupt, base)
	}
	// Small files are mapped now, larger ones once read enough (see
	// mapAfter); where mmap is missing they are read with ReadAt.
	if pfi, err := pack.Stat(); err == nil && pfi.Size() <= mapWhole {
		p.packMap, _ = MapFile(pack, pfi.Size())
	}
	return p, nil
}

// openIdx opens the index of p, reading only its header and fan-out
// table.
func (p *packFile) openIdx() error {
	idx, err := os.Open(p.path + ".idx")
	if err != nil {
		return err
	}
	var head [8 + 256*4]byte
	if _, err := idx.ReadAt(head[:], 0); err != nil {
		idx.Close()
		return fmt.Errorf("%w: pack index %s: %w", repository.ErrCorrupt, p.path, err)
	}
	if string(head[:4]) != packIdxMagic || binary.BigEndian.Uint32(head[4:8]) != 2 {
		idx.Close()
		return fmt.Errorf("%w: pack index %s: not a version 2 index", repository.ErrCorrupt, p.path)
	}
	var fanout [256]uint32
	for i := range fanout {
		fanout[i] = binary.BigEndian.Uint32(head[8+4*i:])
		if i > 0 && fanout[i] < fanout[i-1] {
			idx.Close()
			return fmt.Errorf("%w: pack index %s: bad fan-out table", repository.ErrCorrupt, p.path)
		}
	}
	n := fanout[255]
	fi, err := idx.Stat()
	if err != nil || fi.Size() < 8+256*4+int64(n)*28+40 {
		idx.Close()
		return fmt.Errorf("%w: pack index %s: cut short", repository.ErrCorrupt, p.path)
	}
	p.idx, p.fanout, p.n = idx, fanout, n
	if fi.Size() <= mapWhole {
		p.idxMap, _ = MapFile(idx, fi.Size())
	}
	return nil
}

// used counts a lookup or an entry read, and maps the files that are not
// yet when they have been read enough: a mapping then costs no system
// call a read, and following a delta chain reads memory.
func (p *packFile) used() {
	if (p.idxMap != nil || p.idx == nil) && p.packMap != nil {
		p.releaseFiles()
		return
	}
	if p.uses++; p.uses != mapAfter {
		return
	}
	if p.idxMap == nil && p.idx != nil {
		if fi, err := p.idx.Stat(); err == nil {
			p.idxMap, _ = MapFile(p.idx, fi.Size())
		}
	}
	if p.packMap == nil {
		if fi, err := p.pack.Stat(); err == nil {
			p.packMap, _ = MapFile(p.pack, fi.Size())
		}
	}
}

// releaseFiles closes the files of p that are mapped: reads go through
// the mappings, which keep a file's data while it is mapped (even once it
// is removed, as an open file does), so that a Repository that read a
// pack holds no descriptor for it. Mapped files are those up to mapWhole
// at once, larger ones after mapAfter reads. The packs of a Repository
// are p's readers only; Repack opens its own.
func (p *packFile) releaseFiles() {
	if p.idx != nil && p.idxMap != nil {
		p.idx.Close()
		p.idx = nil
	}
	if p.pack != nil && p.packMap != nil {
		p.pack.Close()
		p.pack = nil
	}
}

func (p *packFile) close() {
	if p.idxMap != nil {
		UnmapFile(p.idxMap)
		p.idxMap = nil
	}
	if p.packMap != nil {
		UnmapFile(p.packMap)
		p.packMap = nil
	}
	if p.idx != nil {
		p.idx.Close()
	}
	if p.pack != nil {
		p.pack.Close()
	}
}

// find returns the offset of object h in p.
func (p *packFile) find(h plumbing.Hash) (int64, bool, error) {
	p.used()
	lo := uint32(0)
	if h[0] > 0 {
		lo = p.fanout[h[0]-1]
	}
	hi := p.fanout[h[0]]
	if lo >= hi {
		return 0, false, nil
	}
	var names []byte
	if p.idxMap != nil {
		names = p.idxMap[8+256*4+int64(lo)*20 : 8+256*4+int64(hi)*20]
	} else {
		names = make([]byte, int(hi-lo)*20)
		if err := p.readIdx(names, 8+256*4+int64(lo)*20); err != nil {
			return 0, false, fmt.Errorf("%w: pack index %s: %w", repository.ErrCorrupt, p.name, err)
		}
	}
	// Object ids are uniform: h's next bytes say where in the bucket it
	// lies, within a few entries (a binary search of a large pack's
	// index touches a cache line at each of its 10 to 12 steps).
	count := int(hi - lo)
	guess := int(uint64(binary.BigEndian.Uint32(h[1:5])) * uint64(count) >> 32)
	i := SearchNear(count, guess, func(i int) bool { return bytes.Compare(names[i*20:i*20+20], h[:]) >= 0 })
	if i == count || !bytes.Equal(names[i*20:i*20+20], h[:]) {
		return 0, false, nil
	}
	pos := int64(lo) + int64(i)
	var b [8]byte
	if err := p.readIdx(b[:4], 8+256*4+int64(p.n)*24+pos*4); err != nil {
		return 0, false, fmt.Errorf("%w: pack index %s: %w", repository.ErrCorrupt, p.name, err)
	}
	off := binary.BigEndian.Uint32(b[:4])
	if off&0x80000000 == 0 {
		return int64(off), true, nil
	}
	if err := p.readIdx(b[:], 8+256*4+int64(p.n)*28+int64(off&0x7fffffff)*8); err != nil {
		return 0, false, fmt.Errorf("%w: pack index %s: %w", repository.ErrCorrupt, p.name, err)
	}
	return int64(binary.BigEndian.Uint64(b[:])), true, nil
}

// locate returns the pack holding h and its offset there: found through
// a directory's multi-pack-index, else in the .idx of a pack no
// multi-pack-index covers, else, when a directory changed since the last
// scan, the same after a new scan.
func (pr *PackReader) locate(h plumbing.Hash) (*packFile, int64, error) {
	if pr.closed {
		return nil, 0, ErrNotInPack
	}
	if !pr.ready {
		pr.prepare()
	}
	for again := true; ; again = false {
		p, off, err := pr.search(h)
		if err != nil || p != nil {
			return p, off, err
		}
		// Another process may have added a pack since.
		if !again || !pr.rescan() {
			return nil, 0, ErrNotInPack
		}
	}
}

// search is locate without a new scan; a nil pack and a nil error say h
// is in none of the packs open or named.
func (pr *PackReader) search(h plumbing.Hash) (*packFile, int64, error) {
	// Each pass that meets a multi-pack-index it must stop reading
	// (damaged, or naming a pack that is gone) breaks it and starts
	// again: at most one pass a directory more.
	for range len(pr.dirs) + 1 {
		again := false
		for i, m := range pr.midx {
			if m == nil || m.broken {
				continue
			}
			k, off, ok, err := m.find(h)
			if err != nil {
				pr.distrust(i)
				again = true
				break
			}
			if !ok {
				continue
			}
			p := pr.midxPack(i, m, k)
			if p == nil {
				again = true // distrusted: the packs are read through .idx
				break
			}
			pr.viaMidx = true
			return p, off, nil
		}
		if again {
			continue
		}
		for _, p := range pr.packs {
			if p.covered {
				continue
			}
			off, ok, err := p.find(h)
			if err != nil {
				return nil, 0, err
			}
			if ok {
				return p, off, nil
			}
		}
		return nil, 0, nil
	}
	return nil, 0, nil
}

// retry runs read, and when it fails with anything but ErrNotInPack
// after an object was found through a multi-pack-index, stops reading
// the multi-pack-indexes and runs it again, the packs read through their
// .idx files: a damaged or stale multi-pack-index must not make an
// object unreadable that the packs hold. pr.mu is held.
func (pr *PackReader) retry(read func() error) error {
	pr.viaMidx = false
	err := read()
	if err == nil || errors.Is(err, ErrNotInPack) || !pr.viaMidx {
		return err
	}
	for i, m := range pr.midx {
		if m != nil && !m.broken {
			pr.distrust(i)
		}
	}
	return read()
}

// Has reports whether h is in a pack.
func (pr *PackReader) Has(h plumbing.Hash) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	_, _, err := pr.locate(h)
	return err == nil
}

// Offset returns the offset of h in its pack and a number ordering the
// packs, for reading objects in the order they lie on disk; ok is false
// when h is in no pack.
func (pr *PackReader) Offset(h plumbing.Hash) (pack uint32, off int64, ok bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	p, off, err := pr.locate(h)
	if err != nil {
		return 0, 0, false
	}
	return p.id, off, true
}

// ObjectAt is Object for an object Offset placed in pack at off, without
// looking it up again; ErrNotInPack when pr no longer reads that pack.
func (pr *PackReader) ObjectAt(pack uint32, off int64, cache *LRU) (plumbing.ObjectType, []byte, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, p := range pr.packs {
		if p.id != pack {
			continue
		}
		t, data, err := pr.at(p, off, cache, nil)
		if err != nil && p.covered {
			// The offset may be a damaged multi-pack-index's: the
			// caller looks the object up again, through .idx files.
			pr.distrust(slices.Index(pr.dirs, filepath.Dir(p.path)))
			return plumbing.InvalidObject, nil, fmt.Errorf("%w: object at %d in pack %s: %w", ErrNotInPack, off, p.name, err)
		}
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("%w: object at %d in pack %s: %w", repository.ErrCorrupt, off, p.name, err)
		}
		return t, data, nil
	}
	return plumbing.InvalidObject, nil, ErrNotInPack
}

// Object returns the type and content of object h, ErrNotInPack when no
// pack holds it.
func (pr *PackReader) Object(h plumbing.Hash, cache *LRU) (plumbing.ObjectType, []byte, error) {
	return pr.ObjectScratch(h, cache, nil)
}

// ObjectScratch is object for a caller that reads the content and keeps
// none of it: when the object is a delta, it is built in *final (the
// caller's, reused by its next read of this kind); a nil final builds it
// in a new buffer, as Object does. A list scans every
// tagged commit's root tree for one entry; in a repository as Porch
// writes it those are as large as the number of packages, and a new one
// each would be most of what a first list allocates.
func (pr *PackReader) ObjectScratch(h plumbing.Hash, cache *LRU, final *[]byte) (plumbing.ObjectType, []byte, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var t plumbing.ObjectType
	var data []byte
	err := pr.retry(func() error {
		p, off, err := pr.locate(h)
		if err != nil {
			return err
		}
		if t, data, err = pr.at(p, off, cache, final); err != nil {
			return fmt.Errorf("%w: object %s in pack %s: %w", repository.ErrCorrupt, h, p.name, err)
		}
		return nil
	})
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	return t, data, nil
}

// packedObject is a resolved object in the cache.
type packedObject struct {
	t    plumbing.ObjectType
	data []byte
}

// cacheKey of the object at off in p.
func packKey(p *packFile, off int64) plumbing.Hash {
	var k plumbing.Hash
	binary.BigEndian.PutUint32(k[:4], p.id)
	binary.BigEndian.PutUint64(k[4:12], uint64(off))
	return k
}

// at returns the object at off in p, applying its delta chain. The chain
// is followed down to an object in the cache or a whole one, then the
// deltas are applied upwards; the intermediate objects are built in two
// scratch buffers, and only the object's direct base and the chain's
// bottom are kept in the cache. Read in pack order, as a list reads them,
// each commit's trees are deltas on the previous one's: every read then
// applies a delta or two, not the chain. With final, the object itself,
// when built from a delta, is built in *final (see ObjectScratch). pr.mu
// is held.
func (pr *PackReader) at(p *packFile, off int64, cache *LRU, final *[]byte) (plumbing.ObjectType, []byte, error) {
	type step struct {
		p     *packFile
		off   int64
		delta []byte
	}
	var chain []step // chain[0] is the object asked for
	var t plumbing.ObjectType
	var base []byte
	fresh := false // base was read, not found in the cache
	cp, coff := p, off
	for {
		if len(chain) > maxDeltaDepth {
			return plumbing.InvalidObject, nil, errors.New("delta chain too long")
		}
		if c, ok := cache.Get(kindPacked, packKey(cp, coff)); ok {
			o := c.(*packedObject)
			t, base = o.t, o.data
			break
		}
		pr.touched()
		cp.used()
		e, err := readPackEntry(cp, coff)
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		if e.typ == packObjCommit || e.typ == packObjTree || e.typ == packObjBlob || e.typ == packObjTag {
			t, base, fresh = plumbing.ObjectType(e.typ), e.data, true
			break
		}
		if e.typ != packObjOfsDelt && e.typ != packObjRefDelt {
			return plumbing.InvalidObject, nil, fmt.Errorf("at offset %d: unknown object type %d", coff, e.typ)
		}
		chain = append(chain, step{cp, coff, e.data})
		if e.typ == packObjRefDelt {
			if cp, coff, err = pr.locate(e.baseHash); err != nil {
				return plumbing.InvalidObject, nil, fmt.Errorf("delta base %s: %w", e.baseHash, err)
			}
		} else {
			coff = e.baseOff
		}
	}
	if fresh && len(chain) > 0 {
		cache.Put(kindPacked, packKey(cp, coff), &packedObject{t: t, data: base}, int64(len(base))+96)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var dst []byte
		switch {
		case i >= 2:
			dst = pr.scratch[i%2] // never base, which is level i+1
		case i == 0 && final != nil:
			dst = *final // never base: bases are cached or scratch[]
		}
		data, err := applyDelta(dst, base, chain[i].delta)
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("at offset %d: %w", chain[i].off, err)
		}
		switch {
		case i >= 2:
			pr.scratch[i%2] = data
		case i == 0 && final != nil:
			*final = data
		}
		if i == 1 {
			cache.Put(kindPacked, packKey(chain[1].p, chain[1].off), &packedObject{t: t, data: data}, int64(len(data))+96)
		}
		base = data
	}
	for i, b := range pr.scratch {
		if cap(b) > 4<<20 {
			pr.scratch[i] = nil // not kept after a very large object
		}
	}
	if final != nil && cap(*final) > 4<<20 {
		// Not kept after a very large object; what is returned stays
		// valid.
		*final = nil
	}
	return t, base, nil
}

// packEntry is one entry of a pack, its content inflated.
type packEntry struct {
	typ      int
	baseOff  int64         // for an offset delta
	baseHash plumbing.Hash // for a ref delta
	data     []byte
}

type inflater struct {
	br *bufio.Reader // over the pack file
	mr bytes.Reader  // over the mapped pack
	zr io.ReadCloser
}

// byteReader is what zlib reads from without reading past its stream.
type byteReader interface {
	io.Reader
	io.ByteReader
}

var inflaters sync.Pool

// readPackEntry reads and inflates the entry at off in p.
func readPackEntry(p *packFile, off int64) (packEntry, error) {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{}
	}
	defer inflaters.Put(in)
	e, size, err := in.header(p, off)
	if err != nil {
		return packEntry{}, err
	}
	e.data = make([]byte, size)
	if _, err := io.ReadFull(in.zr, e.data); err != nil {
		return packEntry{}, fmt.Errorf("at offset %d: bad compressed data", off)
	}
	// Read to the end of the stream, where zlib checks its checksum.
	var one [1]byte
	if n, err := in.zr.Read(one[:]); n != 0 || err != io.EOF {
		return packEntry{}, fmt.Errorf("at offset %d: bad compressed data", off)
	}
	return e, nil
}

// header reads the header of the entry at off in p: its type, its base
// for a delta, and the size of its content (of a delta, the delta's own
// size, not the object's). It leaves in.zr at the start of the content,
// which nothing has inflated yet.
func (in *inflater) header(p *packFile, off int64) (packEntry, uint64, error) {
	bad := func(what string) (packEntry, uint64, error) {
		return packEntry{}, 0, fmt.Errorf("at offset %d: %s", off, what)
	}
	var src byteReader
	if p.packMap != nil {
		if off < 0 || off >= int64(len(p.packMap)) {
			return bad("offset out of the pack")
		}
		in.mr.Reset(p.packMap[off:])
		src = &in.mr
	} else {
		sr := io.NewSectionReader(p.pack, off, 1<<62)
		if in.br == nil {
			in.br = bufio.NewReaderSize(sr, 8192)
		} else {
			in.br.Reset(sr)
		}
		src = in.br
	}
	c, err := src.ReadByte()
	if err != nil {
		return bad("cut short")
	}
	e := packEntry{typ: int(c>>4) & 7}
	size := uint64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if c, err = src.ReadByte(); err != nil || shift > 60 {
			return bad("bad object header")
		}
		size |= uint64(c&0x7f) << shift
	}
	if size > maxPackObject {
		return bad("object too large")
	}
	switch e.typ {
	case packObjOfsDelt:
		if c, err = src.ReadByte(); err != nil {
			return bad("bad delta offset")
		}
		rel := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if c, err = src.ReadByte(); err != nil || rel >= 1<<56 {
				return bad("bad delta offset")
			}
			rel = (rel+1)<<7 | uint64(c&0x7f)
		}
		if rel == 0 || rel > uint64(off) {
			return bad("bad delta offset")
		}
		e.baseOff = off - int64(rel)
	case packObjRefDelt:
		if _, err := io.ReadFull(src, e.baseHash[:]); err != nil {
			return bad("cut short")
		}
	}
	if in.zr == nil {
		if in.zr, err = zlib.NewReader(src); err != nil {
			return bad("bad compressed data")
		}
	} else if err := in.zr.(zlib.Resetter).Reset(src, nil); err != nil {
		return bad("bad compressed data")
	}
	return e, size, nil
}

// Size returns the type and size of object h without inflating its
// content: a whole object's size is in its entry's header; a delta's
// result size is the second number of the delta's own header, the first
// few bytes of its stream, and its type is that of the bottom of its
// chain, whose headers only are read. It returns ErrNotInPack when no
// pack holds h, and an error matching repository.ErrCorrupt for a
// damaged entry. A reader that must bound what it inflates (a package's
// files) asks Size first.
func (pr *PackReader) Size(h plumbing.Hash) (plumbing.ObjectType, int64, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var t plumbing.ObjectType
	var size int64
	err := pr.retry(func() error {
		p, off, err := pr.locate(h)
		if err != nil {
			return err
		}
		if t, size, err = pr.sizeAt(p, off); err != nil {
			return fmt.Errorf("%w: object %s in pack %s: %w", repository.ErrCorrupt, h, p.name, err)
		}
		return nil
	})
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	return t, size, nil
}

// sizeAt is Size for the entry at off in p; pr.mu is held.
func (pr *PackReader) sizeAt(p *packFile, off int64) (plumbing.ObjectType, int64, error) {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{}
	}
	defer inflaters.Put(in)
	var size int64 = -1 // the object's, from the first entry's header
	cp, coff := p, off
	for depth := 0; ; depth++ {
		if depth > maxDeltaDepth {
			return plumbing.InvalidObject, 0, errors.New("delta chain too long")
		}
		e, n, err := in.header(cp, coff)
		if err != nil {
			return plumbing.InvalidObject, 0, err
		}
		switch e.typ {
		case packObjCommit, packObjTree, packObjBlob, packObjTag:
			if size < 0 {
				size = int64(n)
			}
			return plumbing.ObjectType(e.typ), size, nil
		case packObjOfsDelt, packObjRefDelt:
		default:
			return plumbing.InvalidObject, 0, fmt.Errorf("at offset %d: unknown object type %d", coff, e.typ)
		}
		if size < 0 {
			// The delta's header: its base's size, then the result's,
			// each at most 10 bytes.
			var head [20]byte
			k, _ := io.ReadFull(in.zr, head[:min(uint64(len(head)), n)])
			src, a := binary.Uvarint(head[:k])
			if a <= 0 || src > maxPackObject {
				return plumbing.InvalidObject, 0, fmt.Errorf("at offset %d: %w", coff, errBadDelta)
			}
			dst, b := binary.Uvarint(head[a:k])
			if b <= 0 || dst > maxPackObject {
				return plumbing.InvalidObject, 0, fmt.Errorf("at offset %d: %w", coff, errBadDelta)
			}
			size = int64(dst)
		}
		if e.typ == packObjRefDelt {
			if cp, coff, err = pr.locate(e.baseHash); err != nil {
				return plumbing.InvalidObject, 0, fmt.Errorf("delta base %s: %w", e.baseHash, err)
			}
		} else {
			coff = e.baseOff
		}
	}
}

// applyDelta returns the object delta builds from base, in dst's memory
// when it is large enough: a git delta is the base's size, the result's
// size, then instructions that copy a range of the base or insert literal
// bytes.
func applyDelta(dst, base, delta []byte) ([]byte, error) {
	dstSize, delta, ok := deltaHeader(delta, len(base))
	if !ok {
		return nil, errBadDelta
	}
	out := dst[:0]
	if uint64(cap(out)) < dstSize {
		out = make([]byte, 0, dstSize)
	}
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			var off, size uint64
			var ok bool
			if off, size, delta, ok = deltaCopy(op, delta); !ok {
				return nil, errBadDelta
			}
			if off+size > uint64(len(base)) || uint64(len(out))+size > dstSize {
				return nil, errBadDelta
			}
			out = append(out, base[off:off+size]...)
		case op != 0:
			if int(op) > len(delta) || uint64(len(out))+uint64(op) > dstSize {
				return nil, errBadDelta
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
		default:
			return nil, errBadDelta
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, errBadDelta
	}
	return out, nil
}

// errBadDelta is a delta that cannot apply to its base.
var errBadDelta = errors.New("malformed delta")

// deltaHeader reads a delta's header, its base's size (which must be
// srcSize) and the size of what it builds (at most maxPackObject), and
// returns that size and the instructions that follow.
func deltaHeader(delta []byte, srcSize int) (dstSize uint64, rest []byte, ok bool) {
	src, n := binary.Uvarint(delta)
	if n <= 0 || src != uint64(srcSize) {
		return 0, nil, false
	}
	delta = delta[n:]
	dstSize, n = binary.Uvarint(delta)
	if n <= 0 || dstSize > maxPackObject {
		return 0, nil, false
	}
	return dstSize, delta[n:], true
}

// deltaCopy decodes the offset and size of a delta's copy instruction op
// from the bytes that follow it, returning the rest of the delta; ok is
// false when the delta ends first. A size of 0 means 0x10000, as git
// writes it.
func deltaCopy(op byte, delta []byte) (off, size uint64, rest []byte, ok bool) {
	for i := range 4 {
		if op&(1<<i) != 0 {
			if len(delta) == 0 {
				return 0, 0, nil, false
			}
			off |= uint64(delta[0]) << (8 * i)
			delta = delta[1:]
		}
	}
	for i := range 3 {
		if op&(0x10<<i) != 0 {
			if len(delta) == 0 {
				return 0, 0, nil, false
			}
			size |= uint64(delta[0]) << (8 * i)
			delta = delta[1:]
		}
	}
	if size == 0 {
		size = 0x10000
	}
	return off, size, delta, true
}

// touched counts an entry read from a mapped pack, and every
// DropPagesEvery drops the packs' pages.
func (pr *PackReader) touched() { pr.touchedN(1) }

// touchedN counts n entries' worth of reads (see touched).
func (pr *PackReader) touchedN(n int) {
	before := pr.reads / DropPagesEvery
	if pr.reads += n; pr.reads/DropPagesEvery != before {
		for _, p := range pr.packs {
			DropPages(p.packMap)
		}
	}
}

// DropBefore takes the pages of pack (an id from Offset) before off out
// of the process's resident set, but for the 64 KiB window around off, for
// a reader that goes through the pack in order and does not come back (a
// list reading its refs' commits in pack order, see Offset). The pages a
// read touches are those around the entry and a fault's window with them:
// commits read kilobytes apart, between the large trees of the flat
// layout, keep almost every page of the part of the pack they lie in.
func (pr *PackReader) DropBefore(pack uint32, off int64) {
	if pr == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, p := range pr.packs {
		if p.id != pack || p.packMap == nil {
			continue
		}
		end := min(off&^0xffff-0x10000, int64(len(p.packMap)))
		if start := p.droppedTo; end > start {
			DropPages(p.packMap[start:end])
			p.droppedTo = end
		}
	}
}

// DropPages takes the mapped packs' and indexes' pages out of the
// process's resident set until they are read again.
func (pr *PackReader) DropPages() {
	if pr == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, p := range pr.packs {
		DropPages(p.packMap)
		DropPages(p.idxMap)
	}
	for _, m := range pr.midx {
		if m != nil && m.f != nil {
			DropPages(m.data)
		}
	}
}
