package gitobj

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
)

// midxFile is the multi-pack-index of one pack directory
// (objects/pack/multi-pack-index): one sorted list of the object ids of
// the packs it names, each with the pack and the offset there (see the
// package documentation, "Multi-pack-index"). A lookup reads it as find
// reads a pack's .idx; the packs it names are opened when an object is
// first found in them (packs).
type midxFile struct {
	path string
	f    *os.File
	fi   os.FileInfo // as opened: a rescan reloads a file that changed
	data []byte      // the file mapped into memory, where mmap exists
	size int64
	// uses counts lookups while the file is not mapped; at mapAfter it
	// is.
	uses int
	// broken: the file is not read (it does not parse, names a pack
	// that is gone, or led to a damaged entry); the packs it names are
	// searched through their .idx files.
	broken bool

	n      uint32 // objects
	fanout [256]uint32
	names  []string // the packs' names without .idx, by pack-int-id
	oidl   int64    // where the chunks start
	ooff   int64
	loff   int64
	nloff  int64 // 8-byte offsets in LOFF; 0 when there is no LOFF chunk
	packs  []*packFile
}

const (
	midxMagic      = "MIDX"
	midxHeaderSize = 12
	midxHashSize   = 20 // SHA-1: the hash version 1 this reads
	// midxMaxPacks bounds the packs a multi-pack-index may name (each
	// name is read when it is opened).
	midxMaxPacks = 1 << 20
)

// errMidxUnsupported is a multi-pack-index of a format this does not
// read (a damaged one is repository.ErrCorrupt).
var errMidxUnsupported = fmt.Errorf("%w: multi-pack-index format", repository.ErrNotSupported)

// readAt reads len(b) bytes of the file at off.
func (m *midxFile) readAt(b []byte, off int64) error {
	if off < 0 || off+int64(len(b)) > m.size {
		return io.ErrUnexpectedEOF
	}
	if m.data != nil {
		copy(b, m.data[off:])
		return nil
	}
	_, err := m.f.ReadAt(b, off)
	return err
}

// openMidx opens the multi-pack-index at path and reads its header,
// chunk table, pack names and fan-out; a file up to mapWhole bytes is
// mapped. It returns an error matching repository.ErrCorrupt for a file
// that does not parse (cut short, a chunk out of place or of the wrong
// size, pack names out of order) and errMidxUnsupported for a version,
// hash or incremental layer it does not read. Its checksum is not
// verified: see the package documentation.
func openMidx(path string) (*midxFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	m := &midxFile{path: path, f: f, fi: fi, size: fi.Size()}
	if m.size <= mapWhole {
		m.data, _ = MapFile(f, m.size)
	}
	if err := m.parse(); err != nil {
		m.close()
		return nil, fmt.Errorf("multi-pack-index %s: %w", path, err)
	}
	return m, nil
}

// parse reads the header, the chunk table, the pack names and the
// fan-out of m, and checks that every chunk lies in the file and has the
// size its object and pack counts say.
func (m *midxFile) parse() error {
	corrupt := func(what string) error { return fmt.Errorf("%w: %s", repository.ErrCorrupt, what) }
	var head [midxHeaderSize]byte
	if err := m.readAt(head[:], 0); err != nil {
		return corrupt("cut short")
	}
	if string(head[:4]) != midxMagic {
		return corrupt("not a multi-pack-index")
	}
	switch {
	case head[4] != 1:
		return fmt.Errorf("%w: version %d", errMidxUnsupported, head[4])
	case head[5] != 1:
		return fmt.Errorf("%w: hash version %d (1 is SHA-1)", errMidxUnsupported, head[5])
	case head[7] != 0:
		return fmt.Errorf("%w: %d base multi-pack-index files", errMidxUnsupported, head[7])
	}
	nchunks := int64(head[6])
	npacks := binary.BigEndian.Uint32(head[8:12])
	if npacks > midxMaxPacks {
		return corrupt("too many packs")
	}
	// The chunk table: (id, offset) for each chunk, then an id of 0 and
	// the offset where the last chunk ends. Chunks lie in the order of
	// the table, between the table and the trailing checksum.
	table := make([]byte, (nchunks+1)*12)
	if err := m.readAt(table, midxHeaderSize); err != nil {
		return corrupt("cut short")
	}
	bodyStart, bodyEnd := midxHeaderSize+int64(len(table)), m.size-midxHashSize
	type chunk struct{ off, size int64 }
	chunks := map[string]chunk{}
	for i := range nchunks {
		e := table[i*12:]
		id, off := string(e[:4]), binary.BigEndian.Uint64(e[4:12])
		end := binary.BigEndian.Uint64(e[16:24])
		if id == "\x00\x00\x00\x00" {
			return corrupt("chunk table ends early")
		}
		if off < uint64(bodyStart) || end < off || end > uint64(bodyEnd) {
			return corrupt("chunk " + strings.ToValidUTF8(id, "?") + " out of the file")
		}
		if _, dup := chunks[id]; dup {
			return corrupt("chunk " + strings.ToValidUTF8(id, "?") + " twice")
		}
		chunks[id] = chunk{int64(off), int64(end - off)}
	}
	if string(table[nchunks*12:nchunks*12+4]) != "\x00\x00\x00\x00" {
		return corrupt("chunk table not terminated")
	}
	need := func(id string) (chunk, error) {
		c, ok := chunks[id]
		if !ok {
			return chunk{}, corrupt("no " + id + " chunk")
		}
		return c, nil
	}
	fan, err := need("OIDF")
	if err != nil {
		return err
	}
	if fan.size != 256*4 {
		return corrupt("OIDF chunk of the wrong size")
	}
	var fb [256 * 4]byte
	if err := m.readAt(fb[:], fan.off); err != nil {
		return corrupt("cut short")
	}
	for i := range m.fanout {
		m.fanout[i] = binary.BigEndian.Uint32(fb[4*i:])
		if i > 0 && m.fanout[i] < m.fanout[i-1] {
			return corrupt("bad fan-out table")
		}
	}
	m.n = m.fanout[255]
	oidl, err := need("OIDL")
	if err != nil {
		return err
	}
	if oidl.size != int64(m.n)*midxHashSize {
		return corrupt("OIDL chunk of the wrong size")
	}
	ooff, err := need("OOFF")
	if err != nil {
		return err
	}
	if ooff.size != int64(m.n)*8 {
		return corrupt("OOFF chunk of the wrong size")
	}
	m.oidl, m.ooff = oidl.off, ooff.off
	if loff, ok := chunks["LOFF"]; ok {
		if loff.size%8 != 0 {
			return corrupt("LOFF chunk of the wrong size")
		}
		m.loff, m.nloff = loff.off, loff.size/8
	}
	pnam, err := need("PNAM")
	if err != nil {
		return err
	}
	if pnam.size > int64(npacks)*4096+4 {
		return corrupt("PNAM chunk too large")
	}
	names := make([]byte, pnam.size)
	if err := m.readAt(names, pnam.off); err != nil {
		return corrupt("cut short")
	}
	m.names = make([]string, 0, npacks)
	for range npacks {
		name, rest, ok := bytes.Cut(names, []byte{0})
		if !ok {
			return corrupt("PNAM chunk cut short")
		}
		base, isIdx := strings.CutSuffix(string(name), ".idx")
		if !isIdx {
			// Git wrote .pack names for a time; the base is the same.
			base, isIdx = strings.CutSuffix(string(name), ".pack")
		}
		if !isIdx || base == "" || strings.ContainsAny(base, "/\\") || base == "." || base == ".." {
			return corrupt("bad pack name in PNAM chunk")
		}
		if len(m.names) > 0 && base <= m.names[len(m.names)-1] {
			return corrupt("pack names out of order")
		}
		m.names = append(m.names, base)
		names = rest
	}
	// Then only the padding, NUL bytes.
	if bytes.ContainsFunc(names, func(r rune) bool { return r != 0 }) {
		return corrupt("more pack names than packs")
	}
	m.packs = make([]*packFile, npacks)
	return nil
}

// find returns the pack-int-id of the pack where m places object h, and
// its offset there; ok is false when m does not hold h. An error (an
// entry naming no pack, a large offset past the LOFF chunk, a read that
// failed) matches repository.ErrCorrupt.
func (m *midxFile) find(h plumbing.Hash) (pack uint32, off int64, ok bool, err error) {
	m.used()
	lo := uint32(0)
	if h[0] > 0 {
		lo = m.fanout[h[0]-1]
	}
	hi := m.fanout[h[0]]
	if lo >= hi {
		return 0, 0, false, nil
	}
	bad := func(err error) (uint32, int64, bool, error) {
		return 0, 0, false, fmt.Errorf("%w: multi-pack-index %s: %w", repository.ErrCorrupt, m.path, err)
	}
	var ids []byte
	if m.data != nil {
		ids = m.data[m.oidl+int64(lo)*midxHashSize : m.oidl+int64(hi)*midxHashSize]
	} else {
		ids = make([]byte, int(hi-lo)*midxHashSize)
		if err := m.readAt(ids, m.oidl+int64(lo)*midxHashSize); err != nil {
			return bad(err)
		}
	}
	// As in packFile.find: h's next bytes say where in the bucket it
	// lies.
	count := int(hi - lo)
	guess := int(uint64(binary.BigEndian.Uint32(h[1:5])) * uint64(count) >> 32)
	i := SearchNear(count, guess, func(i int) bool { return bytes.Compare(ids[i*20:i*20+20], h[:]) >= 0 })
	if i == count || !bytes.Equal(ids[i*20:i*20+20], h[:]) {
		return 0, 0, false, nil
	}
	var e [8]byte
	if err := m.readAt(e[:], m.ooff+(int64(lo)+int64(i))*8); err != nil {
		return bad(err)
	}
	pack = binary.BigEndian.Uint32(e[:4])
	if pack >= uint32(len(m.names)) {
		return bad(fmt.Errorf("object %s in pack %d of %d", h, pack, len(m.names)))
	}
	off32 := binary.BigEndian.Uint32(e[4:8])
	// Without a LOFF chunk every offset is below 4 GiB and stored
	// whole; with one, the top bit says the rest is an index in it.
	if m.nloff == 0 || off32&0x80000000 == 0 {
		return pack, int64(off32), true, nil
	}
	k := int64(off32 & 0x7fffffff)
	if k >= m.nloff {
		return bad(fmt.Errorf("object %s: large offset %d of %d", h, k, m.nloff))
	}
	if err := m.readAt(e[:], m.loff+k*8); err != nil {
		return bad(err)
	}
	o := binary.BigEndian.Uint64(e[:])
	if o > 1<<62 {
		return bad(fmt.Errorf("object %s: offset %d", h, o))
	}
	return pack, int64(o), true, nil
}

// used counts a lookup, and maps the file once it has served mapAfter.
func (m *midxFile) used() {
	if m.data != nil || m.f == nil {
		return
	}
	if m.uses++; m.uses == mapAfter {
		m.data, _ = MapFile(m.f, m.size)
	}
}

// sameFile reports whether fi is the file m read, unchanged.
func (m *midxFile) sameFile(fi os.FileInfo) bool {
	return os.SameFile(m.fi, fi) && m.fi.Size() == fi.Size() && m.fi.ModTime().Equal(fi.ModTime())
}

// close unmaps and closes the file; the packs it found stay open (they
// are the reader's).
func (m *midxFile) close() {
	if m.data != nil && m.f != nil {
		UnmapFile(m.data)
	}
	m.data = nil
	if m.f != nil {
		m.f.Close()
		m.f = nil
	}
}
