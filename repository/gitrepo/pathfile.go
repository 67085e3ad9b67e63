package gitrepo

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
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// pathFile is cad-paths in a git directory: the path records of cad-index
// (the package tree a path leads to under a commit's root tree), sorted
// by key in records of a fixed width, so that a process that starts cold
// finds a package's tree in a tagged commit with two reads of a small
// file: no load of cad-index (which a single Get does not pay for) and no
// decoding of the root tree, which in a repository as Porch writes it
// holds every package and is rebuilt from a long delta chain.
//
// Layout, integers big-endian:
//
//	"cadpath1"      8 bytes
//	covered         8 bytes: how many bytes of cad-index the records hold
//	count           4 bytes
//	crc             4 bytes: CRC-32 of the 20 bytes above and the fan-out
//	fan-out         256 × 4 bytes: records whose root starts with a byte ≤ i
//	records         count × 60 bytes, sorted by key:
//	                root tree id (20), SHA-256 of the path (first 16),
//	                the tree the path leads to (20), CRC-32 of these (4)
//
// Like cad-index it is a cache of facts about immutable objects: a
// missing, short or damaged file, or a damaged record, is read as no
// answer. It is rebuilt (to a temporary file, then renamed over, so that
// a crash leaves the old file or the new) when a list has appended to
// cad-index more than an eighth of what the file covers, merging the
// records it holds with those appended since. Safe for concurrent use.
type pathFile struct {
	path      string // gitDir/cad-paths
	indexPath string // gitDir/cad-index

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

// pathHeader is the header of cad-paths.
type pathHeader struct {
	covered int64
	count   uint32
	fanout  [256]uint32
}

// pathRecord is one record of cad-paths.
type pathRecord struct {
	key  [36]byte // root tree id and the first 16 bytes of the path's SHA-256
	tree plumbing.Hash
}

func newPathFile(gitDir string) *pathFile {
	return &pathFile{path: filepath.Join(gitDir, pathFileName), indexPath: filepath.Join(gitDir, indexName)}
}

// pathKey36 is the key of path p under tree root.
func pathKey36(root plumbing.Hash, p string) [36]byte {
	var k [36]byte
	copy(k[:20], root[:])
	sum := sha256.Sum256([]byte(p))
	copy(k[20:], sum[:16])
	return k
}

// subtree returns the tree path p leads to under tree root when cad-paths
// holds it. A miss looks again once when another process has replaced
// the file since it was opened.
func (pf *pathFile) subtree(root plumbing.Hash, p string) (plumbing.Hash, bool) {
	if pf == nil {
		return plumbing.ZeroHash, false
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if !pf.opened {
		pf.open()
	}
	k := pathKey36(root, p)
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
func (pf *pathFile) open() {
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
func (pf *pathFile) replaced() bool {
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
func (pf *pathFile) closeFile() {
	if pf.f != nil {
		pf.f.Close()
	}
	pf.f, pf.hdr, pf.opened = nil, nil, false
}

// close releases the open file.
func (pf *pathFile) close() {
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
	if h.fanout[255] != h.count || h.covered < 0 || fi.Size() != pathHeaderSize+int64(h.count)*pathRecordSize {
		return nil, errors.New("cad-paths: cut short")
	}
	return h, nil
}

// find looks k up in the open file; pf.mu is held.
func (pf *pathFile) find(k [36]byte) (plumbing.Hash, bool) {
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
			return recordTree(rec[:])
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
	return searchRecords(b, k)
}

// searchRecords binary-searches the sorted records in b for key k.
func searchRecords(b []byte, k [36]byte) (plumbing.Hash, bool) {
	lo, hi := 0, len(b)/pathRecordSize
	for lo < hi {
		mid := lo + (hi-lo)/2
		rec := b[mid*pathRecordSize : (mid+1)*pathRecordSize]
		switch c := bytes.Compare(rec[:36], k[:]); {
		case c == 0:
			return recordTree(rec)
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return plumbing.ZeroHash, false
}

// recordTree returns the tree of record rec when its checksum holds.
func recordTree(rec []byte) (plumbing.Hash, bool) {
	if crc32.ChecksumIEEE(rec[:56]) != binary.BigEndian.Uint32(rec[56:60]) {
		return plumbing.ZeroHash, false
	}
	var h plumbing.Hash
	copy(h[:], rec[36:56])
	return h, true
}

// stale reports whether cad-index, at indexSize bytes, holds enough
// records that cad-paths does not for a rebuild to be worth it.
func (pf *pathFile) stale(indexSize int64) bool {
	if pf == nil {
		return false
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if pf.failed {
		return false
	}
	if !pf.opened || pf.hdr == nil {
		pf.open()
	}
	if pf.hdr == nil || indexSize < pf.hdr.covered {
		return indexSize > 0
	}
	return indexSize-pf.hdr.covered > pf.hdr.covered/8
}

// update rebuilds cad-paths so that it holds every path record of
// cad-index: the records it held and those appended to cad-index since,
// or all of cad-index's when the file is missing, damaged, or covers
// more than cad-index holds (cad-index was deleted). It writes a
// temporary file and renames it over the old. A failure leaves the old
// file, and no rebuild is tried again in this process. Lookups go on
// while it runs, from the file as it was; a call while another rebuild
// of this pathFile runs returns at once.
func (pf *pathFile) update() {
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
	err := pf.rebuild()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if err != nil {
		pf.failed = true
	}
	if !pf.closed {
		pf.open() // the new file
	}
}

// rebuild is update's work, on its own handles of the files: the latest
// cad-paths (another process may have rebuilt it), read for the records
// it holds, and cad-index.
func (pf *pathFile) rebuild() error {
	var cur *os.File
	var hdr *pathHeader
	if f, err := os.Open(pf.path); err == nil {
		defer f.Close()
		if h, err := readPathHeader(f); err == nil {
			cur, hdr = f, h
		}
	}
	idx, err := os.Open(pf.indexPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer idx.Close()
	fi, err := idx.Stat()
	if err != nil {
		return err
	}
	var old io.Reader = bytes.NewReader(nil)
	from := int64(0)
	if h := hdr; h != nil && h.covered <= fi.Size() {
		if h.covered == fi.Size() {
			return nil // nothing new
		}
		old = io.NewSectionReader(cur, pathHeaderSize, int64(h.count)*pathRecordSize)
		from = h.covered
	}
	fresh, err := indexPathRecords(io.NewSectionReader(idx, from, fi.Size()-from), fi.Size()-from)
	if err != nil {
		return err
	}
	return pf.write(old, fresh, fi.Size())
}

// indexPathRecords reads the directory path records of cad-index lines
// from r, size bytes (a first line cut short, when r starts mid-line,
// fails its checksum and is skipped), sorted by key without duplicates.
func indexPathRecords(r io.Reader, size int64) ([]pathRecord, error) {
	// About one path record for each commit record, 400 bytes the pair.
	out := make([]pathRecord, 0, size/400+16)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// Longer than any path record: skip to the next line.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if err == io.EOF {
			break // a last line without its newline is cut short
		}
		if err != nil {
			return nil, err
		}
		if len(line) < 2 || line[0] != 'p' {
			continue
		}
		body, ok := checked(line[:len(line)-1])
		if !ok {
			continue
		}
		root, p, e, ok := parsePathRecord(string(body))
		if !ok || e.mode != modeDir {
			continue
		}
		out = append(out, pathRecord{key: pathKey36(root, p), tree: e.hash})
	}
	slices.SortFunc(out, func(a, b pathRecord) int { return bytes.Compare(a.key[:], b.key[:]) })
	return slices.CompactFunc(out, func(a, b pathRecord) bool { return a.key == b.key }), nil
}

// mergeRecords merges old, the records of a cad-paths file, with fresh,
// sorted, calling emit with each encoded record of the new file in
// order. A damaged old record is left out.
func mergeRecords(old io.Reader, fresh []pathRecord, emit func(rec []byte) error) error {
	var rec [pathRecordSize]byte
	put := func(r pathRecord) error {
		copy(rec[:36], r.key[:])
		copy(rec[36:56], r.tree[:])
		binary.BigEndian.PutUint32(rec[56:], crc32.ChecksumIEEE(rec[:56]))
		return emit(rec[:])
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
		tree, ok := recordTree(o[:])
		if !ok {
			continue
		}
		r := pathRecord{tree: tree}
		copy(r.key[:], o[:36])
		for i < len(fresh) && bytes.Compare(fresh[i].key[:], r.key[:]) < 0 {
			if err := put(fresh[i]); err != nil {
				return err
			}
			i++
		}
		if i < len(fresh) && fresh[i].key == r.key {
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
// fresh as the new cad-paths covering the first covered bytes of
// cad-index, streaming the records to a temporary file and putting the
// header, which counts them, in front last.
func (pf *pathFile) write(old io.Reader, fresh []pathRecord, covered int64) error {
	dir := filepath.Dir(pf.path)
	removeStaleTemps(dir)
	tmp, err := os.CreateTemp(dir, pathFileName+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is none
	// Held while the file is written and until it is renamed (closing
	// releases it): a tmp file whose lock is free is a dead writer's.
	_ = lockFile(tmp)
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
		binary.BigEndian.PutUint64(hdr[8:16], uint64(covered))
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
		err = tmp.Chmod(0o644) // as cad-index: readable by the repository's other readers
	}
	if err == nil {
		err = renameOpen(tmp, pf.path)
	}
	if cerr := tmp.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
		err = cerr
	}
	return err
}

// removeStaleTemps removes the temporary files of rebuilds that did not
// finish (a process killed while writing): at once when their writer's
// lock is free and they hold data (a writer takes the lock before it
// writes), else an hour after they were last written.
func removeStaleTemps(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, pathFileName+"-*.tmp"))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(n)
			continue
		}
		removeIfAbandoned(n)
	}
}
