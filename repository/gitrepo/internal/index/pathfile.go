package index

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// PathFile is cad-paths in a git directory: where a path leads under a
// commit's root tree (the package tree), sorted by key in records of a
// fixed width, so that a process that starts cold finds a package's tree
// in a tagged commit with two reads of a small file and no decoding of
// the root tree, which in a repository as Porch writes it holds every
// package and is rebuilt from a long delta chain. Lists, Gets and writes
// add the package trees they find in the trees (a list once, at its end).
//
// Layout, integers big-endian:
//
//	"cadpath1"      8 bytes
//	reserved        8 bytes: 0 (once how much of cad-index, removed,
//	                the records held; read and ignored)
//	count           4 bytes
//	crc             4 bytes: CRC-32 of the 20 bytes above and the fan-out
//	fan-out         256 × 4 bytes: records whose root starts with a byte ≤ i
//	records         count × 60 bytes, sorted by key:
//	                root tree id (20), SHA-256 of the path (first 16),
//	                the tree the path leads to (20), CRC-32 of these (4)
//	tail            records of the same form, unsorted, appended after
//	                the sorted ones (up to pathTailMax; a lookup reads
//	                twice that at most, the last ones)
//
// Besides the path records it holds workspace records (see WsRecord):
// the workspace a tag object gives a package, so that a new draft's
// check that its workspace is free reads no commit of the package's tags.
//
// It is a cache of facts about immutable objects: a missing, short or
// damaged file, or a damaged record, is read as no answer. What a
// process learns is appended to the tail, under the file's lock, in
// whole records: a record cut short by a crash is cut off by the next
// append and never read. When the tail would hold more than pathTailMax
// records, the file is rebuilt (to a temporary file, then renamed over,
// so that a crash leaves the old file or the new) with the tail and the
// new records merged into the sorted ones. A record appended while
// another process rebuilds the file may be lost, which costs a read of
// the objects later. Safe for concurrent use.
type PathFile struct {
	path string // gitDir/cad-paths

	mu     sync.Mutex
	opened bool // f and hdr reflect the file as last opened
	f      *os.File
	hdr    *pathHeader // nil when the file is missing or not valid
	failed bool        // a rebuild could not write: none is tried again
	closed bool
	buf    []byte
	// updating is set while a rebuild runs, outside mu, so that lookups
	// do not wait for it and a second one is not started.
	updating atomic.Bool
	// added holds the keys this process appended (or found appended), so
	// that what a process learns again is not appended twice.
	addedMu sync.Mutex
	added   map[[36]byte]struct{}
}

const (
	pathFileName   = "cad-paths"
	pathFileMagic  = "cadpath1"
	pathHeaderSize = 24 + 256*4
	pathRecordSize = 60
)

// pathBucketRead: a fan-out bucket up to this many records is read in
// one call; a larger one is narrowed a record at a time first. A
// variable for the tests.
var pathBucketRead uint32 = 1024

// pathTailMax is how many appended records cad-paths holds before an
// append merges them into the sorted records (a rebuild). A variable for
// the tests.
var pathTailMax = 1024

// pathHeader is the header of cad-paths.
type pathHeader struct {
	covered int64 // reserved: what a file cad wrote before cad-index was removed says
	count   uint32
	fanout  [256]uint32
}

// PathRecord is one record of cad-paths.
type PathRecord struct {
	Key  [36]byte // root tree id and the first 16 bytes of the path's SHA-256
	Tree plumbing.Hash
	ws   bool // a workspace record (WsRecord), checksummed with its version
}

// kind is the kind of record r is.
func (r PathRecord) kind() Kind {
	if r.ws {
		return WorkspaceRecords
	}
	return PathRecords
}

// NewPathFile returns the cad-paths of gitDir; the file is opened when
// first needed.
func NewPathFile(gitDir string) *PathFile {
	return &PathFile{path: filepath.Join(gitDir, pathFileName)}
}

// PathKey36 is the key of path p under tree root.
func PathKey36(root plumbing.Hash, p string) [36]byte {
	var k [36]byte
	copy(k[:20], root[:])
	sum := sha256.Sum256([]byte(p))
	copy(k[20:], sum[:16])
	return k
}

// Subtree returns the tree path p leads to under tree root when cad-paths
// holds it. A miss looks again once when another process has replaced
// the file since it was opened.
func (pf *PathFile) Subtree(root plumbing.Hash, p string) (plumbing.Hash, bool) {
	if pf == nil || isOff(offPaths) {
		return plumbing.ZeroHash, false
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if !pf.opened {
		pf.open()
	}
	k := PathKey36(root, p)
	if h, ok := pf.find(k); ok {
		return h, true
	}
	if pf.replaced() {
		pf.open()
		return pf.find(k)
	}
	return plumbing.ZeroHash, false
}

// open (re)opens the file and reads its header; pf.mu is held.
func (pf *PathFile) open() {
	pf.closeFile()
	pf.opened = true
	f, err := os.Open(pf.path)
	if err != nil {
		return
	}
	hdr, err := readPathHeader(f)
	if err != nil {
		f.Close()
		return
	}
	pf.f, pf.hdr = f, hdr
}

// replaced reports whether the file on disk is not the one open; pf.mu
// is held.
func (pf *PathFile) replaced() bool {
	fi, err := os.Stat(pf.path)
	if err != nil {
		return false // gone: what is open is still true
	}
	if pf.f == nil {
		return true
	}
	open, err := pf.f.Stat()
	return err != nil || !os.SameFile(fi, open)
}

// closeFile closes the open file; pf.mu is held.
func (pf *PathFile) closeFile() {
	if pf.f != nil {
		pf.f.Close()
	}
	pf.f, pf.hdr, pf.opened = nil, nil, false
}

// Close releases the open file.
func (pf *PathFile) Close() {
	if pf == nil {
		return
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	pf.closeFile()
	pf.opened, pf.failed, pf.closed = true, true, true // nothing is opened or written again
}

// readPathHeader reads and checks the header of f, and that f has the
// size the header says.
func readPathHeader(f *os.File) (*pathHeader, error) {
	var b [pathHeaderSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return nil, err
	}
	if string(b[:8]) != pathFileMagic {
		return nil, errors.New("not a cad-paths file")
	}
	h := &pathHeader{covered: int64(binary.BigEndian.Uint64(b[8:16])), count: binary.BigEndian.Uint32(b[16:20])}
	sum := crc32.NewIEEE()
	sum.Write(b[:20])
	sum.Write(b[24:])
	if sum.Sum32() != binary.BigEndian.Uint32(b[20:24]) {
		return nil, errors.New("cad-paths: damaged header")
	}
	for i := range h.fanout {
		h.fanout[i] = binary.BigEndian.Uint32(b[24+4*i:])
		if (i > 0 && h.fanout[i] < h.fanout[i-1]) || h.fanout[i] > h.count {
			return nil, errors.New("cad-paths: damaged fan-out")
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if h.fanout[255] != h.count || h.covered < 0 || fi.Size() < h.sortedEnd() {
		return nil, errors.New("cad-paths: cut short")
	}
	return h, nil
}

// sortedEnd is where the sorted records end and the tail starts.
func (h *pathHeader) sortedEnd() int64 {
	return pathHeaderSize + int64(h.count)*pathRecordSize
}

// readTail returns the whole records of f's tail after the sorted
// records of hdr, the last pathTailMax*2 at most, unchecked.
func readTail(f *os.File, hdr *pathHeader, buf []byte) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := (fi.Size() - hdr.sortedEnd()) / pathRecordSize
	if n <= 0 {
		return nil, nil
	}
	from := hdr.sortedEnd()
	if max := int64(2 * pathTailMax); n > max {
		from += (n - max) * pathRecordSize
		n = max
	}
	size := int(n) * pathRecordSize
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	b := buf[:size]
	if _, err := f.ReadAt(b, from); err != nil {
		return nil, err
	}
	return b, nil
}

// searchTail returns the tree of the last record of tail with key k
// whose checksum holds.
func searchTail(tail []byte, k [36]byte) (plumbing.Hash, bool) {
	for i := len(tail) - pathRecordSize; i >= 0; i -= pathRecordSize {
		rec := tail[i : i+pathRecordSize]
		if [36]byte(rec[:36]) == k {
			if h, ok := recordTree(rec, PathRecords); ok {
				return h, true
			}
		}
	}
	return plumbing.ZeroHash, false
}

// find looks k up in the open file; pf.mu is held.
func (pf *PathFile) find(k [36]byte) (plumbing.Hash, bool) {
	if pf.hdr == nil {
		return plumbing.ZeroHash, false
	}
	lo, hi := uint32(0), pf.hdr.fanout[k[0]]
	if k[0] > 0 {
		lo = pf.hdr.fanout[k[0]-1]
	}
	at := func(i uint32) int64 { return pathHeaderSize + int64(i)*pathRecordSize }
	// A large bucket is narrowed a record at a time until what is left
	// is read in one call.
	var rec [pathRecordSize]byte
	for hi-lo > pathBucketRead {
		mid := lo + (hi-lo)/2
		if _, err := pf.f.ReadAt(rec[:], at(mid)); err != nil {
			return plumbing.ZeroHash, false
		}
		switch c := bytes.Compare(rec[:36], k[:]); {
		case c == 0:
			if h, ok := recordTree(rec[:], PathRecords); ok {
				return h, true
			}
			return pf.findInTail(k)
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	n := int(hi-lo) * pathRecordSize
	if cap(pf.buf) < n {
		pf.buf = make([]byte, n)
	}
	b := pf.buf[:n]
	if _, err := pf.f.ReadAt(b, at(lo)); err != nil {
		return plumbing.ZeroHash, false
	}
	if h, ok := searchRecords(b, k); ok {
		return h, true
	}
	return pf.findInTail(k)
}

// findInTail looks k up among the appended records; pf.mu is held.
func (pf *PathFile) findInTail(k [36]byte) (plumbing.Hash, bool) {
	tail, err := readTail(pf.f, pf.hdr, pf.buf)
	if err != nil || len(tail) == 0 {
		return plumbing.ZeroHash, false
	}
	pf.buf = tail[:0]
	return searchTail(tail, k)
}

// searchRecords binary-searches the sorted records in b for key k.
func searchRecords(b []byte, k [36]byte) (plumbing.Hash, bool) {
	lo, hi := 0, len(b)/pathRecordSize
	for lo < hi {
		mid := lo + (hi-lo)/2
		rec := b[mid*pathRecordSize : (mid+1)*pathRecordSize]
		switch c := bytes.Compare(rec[:36], k[:]); {
		case c == 0:
			return recordTree(rec, PathRecords)
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return plumbing.ZeroHash, false
}

// recordTree returns the tree of record rec, of kind k, when its checksum
// holds.
func recordTree(rec []byte, k Kind) (plumbing.Hash, bool) {
	if sum(k, rec[:56]) != binary.BigEndian.Uint32(rec[56:60]) {
		return plumbing.ZeroHash, false
	}
	var h plumbing.Hash
	copy(h[:], rec[36:56])
	return h, true
}

// rebuildWith rebuilds cad-paths with the records extra added: the
// records it held (sorted and appended) merged with extra, sorted. It
// writes a temporary file and renames it over the old. A failure leaves
// the old file, and no rebuild is tried again in this process. Lookups go
// on while it runs, from the file as it was; a call while another rebuild
// of this PathFile runs returns at once.
func (pf *PathFile) rebuildWith(extra []PathRecord) {
	if pf == nil || !pf.updating.CompareAndSwap(false, true) {
		return
	}
	defer pf.updating.Store(false)
	pf.mu.Lock()
	failed := pf.failed
	pf.mu.Unlock()
	if failed {
		return
	}
	err := pf.rebuild(extra)
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if err != nil {
		pf.failed = true
	}
	if !pf.closed {
		pf.open() // the new file
	}
}

// rebuild is rebuildWith's work, on its own handle of the latest
// cad-paths (another process may have rebuilt it).
func (pf *PathFile) rebuild(extra []PathRecord) error {
	var old io.Reader = bytes.NewReader(nil)
	var tail []PathRecord
	if f, err := os.Open(pf.path); err == nil {
		defer f.Close()
		if h, err := readPathHeader(f); err == nil {
			old = io.NewSectionReader(f, pathHeaderSize, int64(h.count)*pathRecordSize)
			if b, err := readTail(f, h, nil); err == nil {
				tail = tailRecords(b)
			}
		}
	}
	fresh := append(tail, extra...)
	if len(fresh) == 0 {
		return nil // nothing new
	}
	slices.SortFunc(fresh, func(a, b PathRecord) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	fresh = slices.CompactFunc(fresh, func(a, b PathRecord) bool { return a.Key == b.Key })
	return pf.write(old, fresh)
}

// tailRecords returns the records of tail whose checksums hold.
func tailRecords(tail []byte) []PathRecord {
	out := make([]PathRecord, 0, len(tail)/pathRecordSize)
	for i := 0; i+pathRecordSize <= len(tail); i += pathRecordSize {
		rec := tail[i : i+pathRecordSize]
		if r, ok := recordOf(rec); ok {
			out = append(out, r)
		}
	}
	return out
}

// Add records recs, facts about immutable objects, in cad-paths: appended
// to its tail under the file's lock, or, when the tail is full or the
// file missing or not valid, merged into a rebuilt file. Records this
// process added before are left out. Failures are ignored: the file is
// a cache.
func (pf *PathFile) Add(recs ...PathRecord) {
	if pf == nil || len(recs) == 0 {
		return
	}
	if isOff(offPaths | offWorkspaces) {
		recs = slices.DeleteFunc(slices.Clone(recs), func(r PathRecord) bool {
			return isOff(offPaths) && !r.ws || isOff(offWorkspaces) && r.ws
		})
		if len(recs) == 0 {
			return
		}
	}
	pf.mu.Lock()
	failed := pf.failed
	pf.mu.Unlock()
	if failed {
		return
	}
	pf.addedMu.Lock()
	if pf.added == nil || len(pf.added) > 1<<16 {
		pf.added = map[[36]byte]struct{}{}
	}
	news := make([]PathRecord, 0, len(recs))
	for _, r := range recs {
		if _, ok := pf.added[r.Key]; !ok {
			pf.added[r.Key] = struct{}{}
			news = append(news, r)
		}
	}
	pf.addedMu.Unlock()
	if len(news) == 0 {
		return
	}
	switch pf.appendTail(news) {
	case appended:
	case tailFull:
		pf.rebuildWith(news)
	case noFile:
		// A file of these records alone. What this process added
		// before went with the file it was in.
		pf.addedMu.Lock()
		pf.added = map[[36]byte]struct{}{}
		for _, r := range recs {
			pf.added[r.Key] = struct{}{}
		}
		pf.addedMu.Unlock()
		pf.writeAlone(recs)
	}
}

// appendResult is what appendTail did.
type appendResult int

const (
	appended appendResult = iota
	tailFull              // the tail would hold more than pathTailMax records
	noFile                // the file is missing or not valid
	appendFailed
)

// appendTail appends recs to the tail of the file at pf.path.
func (pf *PathFile) appendTail(recs []PathRecord) appendResult {
	for range 2 { // again once when another process replaced the file
		f, err := os.OpenFile(pf.path, os.O_RDWR|os.O_APPEND, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return noFile
		}
		if err != nil {
			return appendFailed
		}
		res, again := appendLocked(f, pf.path, recs)
		f.Close()
		if !again {
			return res
		}
	}
	return appendFailed
}

// writeAlone writes recs as the whole file, unless a rebuild runs.
func (pf *PathFile) writeAlone(recs []PathRecord) {
	if !pf.updating.CompareAndSwap(false, true) {
		return
	}
	defer pf.updating.Store(false)
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b PathRecord) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	recs = slices.CompactFunc(recs, func(a, b PathRecord) bool { return a.Key == b.Key })
	err := pf.write(bytes.NewReader(nil), recs)
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if err != nil {
		pf.failed = true
	}
	if !pf.closed {
		pf.open()
	}
}

// appendLocked is appendTail's work on the open file f, under its lock;
// again is true when f is no longer the file at path.
func appendLocked(f *os.File, path string, recs []PathRecord) (res appendResult, again bool) {
	defer refstore.LockFile(f)()
	if fi, err := os.Stat(path); err != nil {
		return noFile, false
	} else if open, err := f.Stat(); err != nil || !os.SameFile(fi, open) {
		return appendFailed, true
	}
	hdr, err := readPathHeader(f)
	if err != nil {
		return noFile, false
	}
	fi, err := f.Stat()
	if err != nil {
		return appendFailed, false
	}
	tail := fi.Size() - hdr.sortedEnd()
	if tail%pathRecordSize != 0 {
		// A record cut short by a crash: cut off, so that the records
		// appended now start where records start.
		tail -= tail % pathRecordSize
		if err := f.Truncate(hdr.sortedEnd() + tail); err != nil {
			return appendFailed, false
		}
	}
	if int(tail/pathRecordSize)+len(recs) > pathTailMax {
		return tailFull, false
	}
	b := make([]byte, 0, len(recs)*pathRecordSize)
	for _, r := range recs {
		b = appendRecord(b, r)
	}
	if _, err := f.Write(b); err != nil {
		return appendFailed, false
	}
	return appended, false
}

// appendRecord appends the encoding of r to b.
func appendRecord(b []byte, r PathRecord) []byte {
	b = append(b, r.Key[:]...)
	b = append(b, r.Tree[:]...)
	return binary.BigEndian.AppendUint32(b, sum(r.kind(), b[len(b)-56:]))
}

// recordOf decodes record rec, a path or a workspace record, when its
// checksum holds for either (with the current derivation versions).
func recordOf(rec []byte) (PathRecord, bool) {
	r := PathRecord{Key: [36]byte(rec[:36])}
	if h, ok := recordTree(rec, PathRecords); ok {
		r.Tree = h
		return r, true
	}
	if h, ok := recordTree(rec, WorkspaceRecords); ok {
		r.Tree, r.ws = h, true
		return r, true
	}
	return r, false
}

// mergeRecords merges old, the records of a cad-paths file, with fresh,
// sorted, calling emit with each encoded record of the new file in
// order. A damaged old record is left out.
func mergeRecords(old io.Reader, fresh []PathRecord, emit func(rec []byte) error) error {
	rec := make([]byte, 0, pathRecordSize)
	put := func(r PathRecord) error {
		return emit(appendRecord(rec[:0], r))
	}
	i := 0
	br := bufio.NewReaderSize(old, 64<<10)
	var o [pathRecordSize]byte
	for {
		if _, err := io.ReadFull(br, o[:]); err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		} else if err != nil {
			return err
		}
		r, ok := recordOf(o[:])
		if !ok {
			continue
		}
		for i < len(fresh) && bytes.Compare(fresh[i].Key[:], r.Key[:]) < 0 {
			if err := put(fresh[i]); err != nil {
				return err
			}
			i++
		}
		if i < len(fresh) && fresh[i].Key == r.Key {
			i++ // the same fact, recorded twice
		}
		if err := put(r); err != nil {
			return err
		}
	}
	for ; i < len(fresh); i++ {
		if err := put(fresh[i]); err != nil {
			return err
		}
	}
	return nil
}

// write writes the merge of old (the records of the current file) and
// fresh as the new cad-paths, streaming the records to a temporary file and putting the
// header, which counts them, in front last.
func (pf *PathFile) write(old io.Reader, fresh []PathRecord) error {
	dir := filepath.Dir(pf.path)
	tmpfile.RemoveStale(dir)
	// Locked while it is written and until it is renamed (closing
	// releases it): see package tmpfile.
	tmp, err := tmpfile.Create(dir, pathFileName+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	var hdr [pathHeaderSize]byte
	var fan [256]uint32
	count := 0
	bw := bufio.NewWriterSize(tmp, 64<<10)
	_, err = bw.Write(hdr[:]) // the header's place
	if err == nil {
		err = mergeRecords(old, fresh, func(rec []byte) error {
			fan[rec[0]]++
			count++
			_, err := bw.Write(rec)
			return err
		})
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		copy(hdr[:8], pathFileMagic)
		// hdr[8:16], once how much of cad-index the records held: 0.
		binary.BigEndian.PutUint32(hdr[16:20], uint32(count))
		total := uint32(0)
		for i, n := range fan {
			total += n
			binary.BigEndian.PutUint32(hdr[24+4*i:], total)
		}
		sum := crc32.NewIEEE()
		sum.Write(hdr[:20])
		sum.Write(hdr[24:])
		binary.BigEndian.PutUint32(hdr[20:24], sum.Sum32())
		_, err = tmp.WriteAt(hdr[:], 0)
	}
	if err == nil {
		err = tmp.Chmod(0o644) // readable by the repository's other readers
	}
	if err == nil {
		err = tmpfile.RenameOpen(tmp, pf.path)
	}
	if cerr := tmp.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
		err = cerr
	}
	return err
}

// A workspace record says which workspace a v<N> tag's object (the
// tagged commit, or an annotated tag) gives a package, as tagRev reads
// it from the objects' kpt: annotations ("" when they give none, and the
// tag's name is the workspace): its key is a hash of the package path
// (20 bytes, so that a package's records lie together) and the first 16
// bytes of the object's id, its value the first 20 bytes of the
// workspace's SHA-256. A path record's key starts with a tree's id, which
// is never this hash. Like the path records, a workspace record is a
// fact about immutable objects, true in any state of the refs; a tag
// moved or created again at another object has another record.

// wsPrefix is the first 20 bytes of the keys of package full's
// workspace records.
func wsPrefix(full string) [20]byte {
	sum := sha256.Sum256([]byte("cad-workspace\x00" + full))
	return [20]byte(sum[:20])
}

// WsRecord is the workspace record saying that object h gives package
// full workspace ws.
func WsRecord(full string, h plumbing.Hash, ws string) PathRecord {
	var r PathRecord
	p := wsPrefix(full)
	copy(r.Key[:20], p[:])
	copy(r.Key[20:], h[:16])
	r.Tree = WsHash(ws)
	r.ws = true
	return r
}

// WsHash is a workspace record's value for workspace ws.
func WsHash(ws string) plumbing.Hash {
	sum := sha256.Sum256([]byte(ws))
	return plumbing.Hash(sum[:20])
}

// WsRecords are a package's workspace records, sorted by the first 16
// bytes of their objects' ids.
type WsRecords []wsRec

type wsRec struct {
	obj [16]byte
	ws  plumbing.Hash
}

// Get returns the value of the record of object h: a binary search on
// the ids' first 8 bytes as an integer, then the next 8 (a workspace check
// looks up every tag of a package, thousands).
func (rs WsRecords) Get(h plumbing.Hash) (plumbing.Hash, bool) {
	k0, k1 := binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:16])
	less := func(r *wsRec) bool {
		r0 := binary.BigEndian.Uint64(r.obj[:8])
		return r0 < k0 || r0 == k0 && binary.BigEndian.Uint64(r.obj[8:]) < k1
	}
	lo, hi := 0, len(rs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if less(&rs[mid]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(rs) || rs[lo].obj != [16]byte(h[:16]) {
		return plumbing.ZeroHash, false
	}
	return rs[lo].ws, true
}

// Workspaces returns the workspace records of package full whose
// checksums hold; nil when there are none or the file cannot be read.
func (pf *PathFile) Workspaces(full string) WsRecords {
	if pf == nil || isOff(offWorkspaces) {
		return nil
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if !pf.opened || pf.replaced() {
		pf.open()
	}
	if pf.hdr == nil {
		return nil
	}
	prefix := wsPrefix(full)
	var out WsRecords
	take := func(rec []byte) {
		if [20]byte(rec[:20]) != prefix {
			return
		}
		if h, ok := recordTree(rec, WorkspaceRecords); ok {
			out = append(out, wsRec{obj: [16]byte(rec[20:36]), ws: h})
		}
	}
	// The sorted records: the first with the prefix, by binary search in
	// its fan-out bucket, then the following ones a block at a time.
	lo, hi := uint32(0), pf.hdr.fanout[prefix[0]]
	if prefix[0] > 0 {
		lo = pf.hdr.fanout[prefix[0]-1]
	}
	at := func(i uint32) int64 { return pathHeaderSize + int64(i)*pathRecordSize }
	var rec [pathRecordSize]byte
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := pf.f.ReadAt(rec[:], at(mid)); err != nil {
			return nil
		}
		if bytes.Compare(rec[:20], prefix[:]) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	end := pf.hdr.fanout[prefix[0]]
	const block = 512
	buf := make([]byte, block*pathRecordSize)
	for i := lo; i < end; i += block {
		n := min(end-i, block)
		b := buf[:n*pathRecordSize]
		if _, err := pf.f.ReadAt(b, at(i)); err != nil {
			return nil
		}
		stop := false
		for j := 0; j < len(b); j += pathRecordSize {
			if [20]byte(b[j:j+20]) != prefix {
				stop = true
				break
			}
			take(b[j : j+pathRecordSize])
		}
		if stop {
			break
		}
	}
	sorted := len(out)
	if tail, err := readTail(pf.f, pf.hdr, nil); err == nil {
		for j := 0; j+pathRecordSize <= len(tail); j += pathRecordSize {
			take(tail[j : j+pathRecordSize])
		}
	}
	if len(out) > sorted {
		// The tail's records were appended in no order. Records of one
		// object are the same fact, so any of them may be found.
		slices.SortStableFunc(out, func(a, b wsRec) int { return bytes.Compare(a.obj[:], b.obj[:]) })
	}
	return out
}
