package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// Repacking (package gitrepo's maintenance) merges packs and loose
// objects into one new pack. See the package documentation, "Merging
// packs".

// The temporary files of packs being written in objects/pack (package
// tmpfile's names, which git prune treats as git's own; tmpfile.RemoveStale
// removes those a killed process left): a repack's, and a write's
// (WritePack).
const (
	MaintPackPrefix = tmpfile.PackPrefix + "maint_"
	MaintIdxPrefix  = tmpfile.IdxPrefix + "maint_"
	WritePackPrefix = tmpfile.PackPrefix + "write_"
	WriteIdxPrefix  = tmpfile.IdxPrefix + "write_"
)

// PackInfo is one pack of objects/pack, as the maintenance plans on it.
type PackInfo struct {
	// Base is the path of the pack without .pack or .idx.
	Base string
	// Objects is the number of objects, from the index's fan-out table.
	Objects uint32
	// Bytes is the size of the .pack file.
	Bytes int64
	// Keep: a .keep file marks the pack as one git must not repack.
	Keep bool
	// V2 is whether its index is version 2, which Repack reads; another
	// pack is left as it is.
	V2 bool
}

// ListPacks returns the packs of gitDir's objects/pack: those with an
// index and a pack file.
func ListPacks(gitDir string) ([]PackInfo, error) {
	dir := filepath.Join(gitDir, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	var out []PackInfo
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") || !names[name+".pack"] {
			continue
		}
		base := filepath.Join(dir, name)
		pi := PackInfo{Base: base, Keep: names[name+".keep"] || names[name+".promisor"]}
		if fi, err := os.Stat(base + ".pack"); err == nil {
			pi.Bytes = fi.Size()
		} else {
			continue // removed meanwhile
		}
		var head [8 + 256*4]byte
		if f, err := os.Open(base + ".idx"); err == nil {
			_, err = io.ReadFull(f, head[:])
			f.Close()
			if err == nil && string(head[:4]) == packIdxMagic && binary.BigEndian.Uint32(head[4:8]) == 2 {
				pi.V2 = true
				pi.Objects = binary.BigEndian.Uint32(head[8+255*4:])
			}
		}
		out = append(out, pi)
	}
	return out, nil
}

// CountLoose counts the loose objects of objDir (a repository's
// objects/).
func CountLoose(objDir string) int {
	n := 0
	_ = WalkLoose(objDir, func(plumbing.Hash) error { n++; return nil })
	return n
}

// WalkLoose calls fn for every loose object of objDir (files
// <2 hex>/<38 hex>; temporary files are skipped).
func WalkLoose(objDir string, fn func(h plumbing.Hash) error) error {
	for i := 0; i < 256; i++ {
		sub := fmt.Sprintf("%02x", i)
		entries, err := os.ReadDir(filepath.Join(objDir, sub))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if len(e.Name()) != 38 || !plumbing.IsHash(sub+e.Name()) {
				continue
			}
			if err := fn(plumbing.NewHash(sub + e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// EstimateLoose estimates the number of loose objects of objDir from one
// of its 256 directories, objects/17, as git gc --auto does: the count
// there times 256.
func EstimateLoose(objDir string) int {
	entries, err := os.ReadDir(filepath.Join(objDir, "17"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if len(e.Name()) == 38 {
			n++
		}
	}
	return n * 256
}

// RepackInput says what Repack merges.
type RepackInput struct {
	// Packs are the packs to merge (PackInfo.Base), version 2 indexes.
	Packs []string
	// Loose are loose objects of the repository to add.
	Loose []plumbing.Hash
	// Resolve returns an object whole, for an entry stored as a delta on
	// a base named by its id (a ref delta), which the new pack holds
	// whole: its base may be in a pack that is not merged.
	Resolve func(h plumbing.Hash) (plumbing.ObjectType, []byte, error)
	// SyncFile syncs a file before it is renamed into place; nil syncs
	// nothing.
	SyncFile func(*os.File) error
	// Fault, when set, is called at every step (tests kill the process
	// there).
	Fault func(step string)
}

// RepackResult is what Repack wrote.
type RepackResult struct {
	// Base is the new pack's path without .pack or .idx ("" when there
	// was nothing to write).
	Base string
	// Objects is the number of objects in it.
	Objects int
	// Bytes is the size of its .pack file.
	Bytes int64
	// Loose are the loose objects of the input it holds, those that can
	// be removed; a loose object that was gone or damaged is not among
	// them.
	Loose []plumbing.Hash
}

// srcEntry is one object of a source pack.
type srcEntry struct {
	hash plumbing.Hash
	off  int64
	end  int64 // where the next entry starts
	crc  uint32
	// newOff is where it lies in the new pack (or its first copy,
	// for an object two packs hold).
	newOff uint64
}

// newEntry is one object of the new pack, for its index.
type newEntry struct {
	hash plumbing.Hash
	off  uint64
	crc  uint32
}

// Repack writes the objects of in.Packs and in.Loose into one new pack of
// gitDir with its version 2 index, and returns it; it removes nothing.
// An entry of a merged pack is copied as it is stored, compressed, after
// its CRC-32 is checked against its index's: a whole object as it is, an
// offset delta with its distance to its base rewritten (each pack is
// copied in the order of its offsets, so a base always comes first), a
// ref delta resolved whole through in.Resolve. An object several inputs
// hold is written once. A loose object is inflated, its id checked
// against its content, and deflated whole; one that is gone (another
// maintenance packed it) or damaged is left out. The pack is written
// under a temporary name, its object count and checksum filled in at the
// end, synced and renamed into place before its index, as WritePack does,
// so that no reader finds a pack cut short.
func Repack(ctx context.Context, gitDir string, in RepackInput) (RepackResult, error) {
	fault := in.Fault
	if fault == nil {
		fault = func(string) {}
	}
	sync := in.SyncFile
	if sync == nil {
		sync = func(*os.File) error { return nil }
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	pf, err := tmpfile.Create(dir, MaintPackPrefix)
	if err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	var xf *os.File
	defer func() {
		pf.Close()
		os.Remove(pf.Name())
		if xf != nil {
			xf.Close()
			os.Remove(xf.Name())
		}
	}()
	bw := bufio.NewWriterSize(pf, 256<<10)
	cw := &countWriter{w: bw}
	var head [12]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	if _, err := cw.Write(head[:]); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	written := map[plumbing.Hash]uint64{}
	var entries []newEntry
	crc := crc32.NewIEEE()
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	// writeWhole writes an object whole, deflated.
	writeWhole := func(h plumbing.Hash, t plumbing.ObjectType, data []byte) error {
		off := cw.n
		crc.Reset()
		ow := io.MultiWriter(cw, crc)
		if _, err := ow.Write(entryHeader(byte(t), uint64(len(data)))); err != nil {
			return err
		}
		zw.Reset(ow)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		written[h] = off
		entries = append(entries, newEntry{hash: h, off: off, crc: crc.Sum32()})
		return nil
	}
	for _, base := range in.Packs {
		if err := ctx.Err(); err != nil {
			return RepackResult{}, err
		}
		if err := copyPack(base, cw, crc, written, &entries, writeWhole, in.Resolve); err != nil {
			return RepackResult{}, fmt.Errorf("repack %s: %w", filepath.Base(base), err)
		}
	}
	fault("maint-packs-copied")
	var loose []plumbing.Hash
	objDir := filepath.Join(gitDir, "objects")
	for i, h := range in.Loose {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return RepackResult{}, err
			}
		}
		if _, ok := written[h]; ok {
			loose = append(loose, h) // a pack holds it too
			continue
		}
		t, data, err := ReadLoose(objDir, h)
		if err != nil || plumbing.ComputeHash(t, data) != h {
			continue // gone, or damaged: left where it is
		}
		if err := writeWhole(h, t, data); err != nil {
			return RepackResult{}, fmt.Errorf("repack: %w", err)
		}
		loose = append(loose, h)
	}
	if len(entries) == 0 {
		return RepackResult{}, nil
	}
	if err := bw.Flush(); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	// The count, then the checksum of all that precedes it.
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(entries)))
	if _, err := pf.WriteAt(n[:], 8); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, io.NewSectionReader(pf, 0, int64(cw.n))); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	packSum := sum.Sum(nil)
	if _, err := pf.WriteAt(packSum, int64(cw.n)); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	if err := sync(pf); err != nil {
		return RepackResult{}, fmt.Errorf("repack: sync: %w", err)
	}
	fault("maint-pack-written")
	idx := encodeIdx(entries, packSum)
	if xf, err = tmpfile.Create(dir, MaintIdxPrefix); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	if _, err := xf.Write(idx); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	if err := sync(xf); err != nil {
		return RepackResult{}, fmt.Errorf("repack: sync: %w", err)
	}
	for _, f := range []*os.File{pf, xf} {
		if err := f.Chmod(0o444); err != nil {
			return RepackResult{}, fmt.Errorf("repack: %w", err)
		}
	}
	fault("maint-idx-written")
	base := filepath.Join(dir, "pack-"+hex.EncodeToString(packSum))
	res := RepackResult{Base: base, Objects: len(entries), Bytes: int64(cw.n) + 20, Loose: loose}
	if _, err := os.Stat(base + ".idx"); err == nil {
		if _, err := os.Stat(base + ".pack"); err == nil {
			return res, nil // the same pack is there already
		}
	}
	if err := os.Rename(pf.Name(), base+".pack"); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	fault("maint-pack-renamed")
	if err := os.Rename(xf.Name(), base+".idx"); err != nil {
		return RepackResult{}, fmt.Errorf("repack: %w", err)
	}
	fault("maint-idx-renamed")
	return res, nil
}

// entryHeader returns a pack entry's header: type and size, 4 bits of the
// size in the first byte, 7 in each next one, the high bit saying one
// follows.
func entryHeader(typ byte, size uint64) []byte {
	hb := make([]byte, 1, 11)
	hb[0] = typ<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		hb[len(hb)-1] |= 0x80
		hb = append(hb, byte(size&0x7f))
		size >>= 7
	}
	return hb
}

// ofsEncode returns git's encoding of the distance back to an offset
// delta's base.
func ofsEncode(rel uint64) []byte {
	var b [10]byte
	i := len(b) - 1
	b[i] = byte(rel & 0x7f)
	for rel >>= 7; rel > 0; rel >>= 7 {
		rel--
		i--
		b[i] = 0x80 | byte(rel&0x7f)
	}
	return b[i:]
}

// readIndexTable reads the whole table of a version 2 index: ids, CRCs
// and offsets, in the order of the pack's offsets.
func readIndexTable(p *packFile) ([]srcEntry, error) {
	n := int64(p.n)
	size := int64(0)
	if fi, err := p.idx.Stat(); err == nil {
		size = fi.Size()
	}
	tab := make([]byte, size)
	if _, err := p.idx.ReadAt(tab, 0); err != nil && err != io.EOF {
		return nil, err
	}
	names := 8 + 256*4
	crcs := int64(names) + n*20
	offs := crcs + n*4
	large := offs + n*4
	if int64(len(tab)) < large+40 {
		return nil, errors.New("index cut short")
	}
	out := make([]srcEntry, n)
	for i := range out {
		e := &out[i]
		copy(e.hash[:], tab[int64(names)+int64(i)*20:])
		e.crc = binary.BigEndian.Uint32(tab[crcs+int64(i)*4:])
		off := binary.BigEndian.Uint32(tab[offs+int64(i)*4:])
		if off&0x80000000 == 0 {
			e.off = int64(off)
			continue
		}
		at := large + int64(off&0x7fffffff)*8
		if at+8 > int64(len(tab))-40 {
			return nil, errors.New("bad large offset")
		}
		e.off = int64(binary.BigEndian.Uint64(tab[at:]))
	}
	slices.SortFunc(out, func(a, b srcEntry) int { return int(min(max(a.off-b.off, -1), 1)) })
	return out, nil
}

// copyPack copies the entries of the pack base into the new pack (see
// Repack).
func copyPack(base string, cw *countWriter, crc hashCRC, written map[plumbing.Hash]uint64, entries *[]newEntry,
	writeWhole func(plumbing.Hash, plumbing.ObjectType, []byte) error, resolve func(plumbing.Hash) (plumbing.ObjectType, []byte, error)) error {
	p, err := openPack(base)
	if err != nil {
		return err
	}
	defer p.close()
	src, err := readIndexTable(p)
	if err != nil {
		return err
	}
	pfi, err := p.pack.Stat()
	if err != nil {
		return err
	}
	for i := range src {
		if i+1 < len(src) {
			src[i].end = src[i+1].off
		} else {
			src[i].end = pfi.Size() - 20
		}
		if src[i].off < 12 || src[i].end <= src[i].off {
			return fmt.Errorf("bad offset %d", src[i].off)
		}
	}
	srcCRC := crc32.NewIEEE()
	var hb [32]byte
	for i := range src {
		e := &src[i]
		if off, ok := written[e.hash]; ok {
			e.newOff = off
			continue
		}
		// The header: type, size, and a delta's base.
		hn, _ := p.pack.ReadAt(hb[:min(int64(len(hb)), e.end-e.off)], e.off)
		h := hb[:hn]
		k := 0
		if k >= len(h) {
			return fmt.Errorf("at offset %d: cut short", e.off)
		}
		c := h[k]
		k++
		typ := c >> 4 & 7
		size := uint64(c & 15)
		for shift := 4; c&0x80 != 0; shift += 7 {
			if k >= len(h) || shift > 60 {
				return fmt.Errorf("at offset %d: bad header", e.off)
			}
			c = h[k]
			k++
			size |= uint64(c&0x7f) << shift
		}
		var newHead []byte
		switch typ {
		case packObjCommit, packObjTree, packObjBlob, packObjTag:
			newHead = h[:k]
		case packObjOfsDelt:
			if k >= len(h) {
				return fmt.Errorf("at offset %d: bad delta offset", e.off)
			}
			c = h[k]
			k++
			rel := uint64(c & 0x7f)
			for c&0x80 != 0 {
				if k >= len(h) || rel >= 1<<56 {
					return fmt.Errorf("at offset %d: bad delta offset", e.off)
				}
				c = h[k]
				k++
				rel = (rel+1)<<7 | uint64(c&0x7f)
			}
			baseOff := e.off - int64(rel)
			j, found := slices.BinarySearchFunc(src[:i], baseOff, func(s srcEntry, off int64) int { return int(min(max(s.off-off, -1), 1)) })
			if !found {
				return fmt.Errorf("at offset %d: no delta base at %d", e.off, baseOff)
			}
			newHead = append(entryHeader(typ, size), ofsEncode(cw.n-src[j].newOff)...)
		case packObjRefDelt:
			if resolve == nil {
				return fmt.Errorf("at offset %d: a ref delta", e.off)
			}
			t, data, err := resolve(e.hash)
			if err != nil {
				return fmt.Errorf("object %s: %w", e.hash, err)
			}
			if err := writeWhole(e.hash, t, data); err != nil {
				return err
			}
			e.newOff = written[e.hash]
			continue
		default:
			return fmt.Errorf("at offset %d: unknown object type %d", e.off, typ)
		}
		srcCRC.Reset()
		srcCRC.Write(h[:k])
		crc.Reset()
		off := cw.n
		ow := io.MultiWriter(cw, crc)
		if _, err := ow.Write(newHead); err != nil {
			return err
		}
		body := io.TeeReader(io.NewSectionReader(p.pack, e.off+int64(k), e.end-e.off-int64(k)), srcCRC)
		if _, err := io.Copy(ow, body); err != nil {
			return err
		}
		if srcCRC.Sum32() != e.crc {
			return fmt.Errorf("object %s at offset %d: CRC mismatch", e.hash, e.off)
		}
		e.newOff = off
		written[e.hash] = off
		*entries = append(*entries, newEntry{hash: e.hash, off: off, crc: crc.Sum32()})
	}
	return nil
}

// hashCRC is the CRC-32 the entries of the new pack are summed with.
type hashCRC interface {
	io.Writer
	Reset()
	Sum32() uint32
}

// encodeIdx returns the version 2 index of a pack of entries whose
// checksum is packSum.
func encodeIdx(entries []newEntry, packSum []byte) []byte {
	slices.SortFunc(entries, func(a, b newEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	var idx bytes.Buffer
	idx.WriteString(packIdxMagic)
	be := func(v uint32) { _ = binary.Write(&idx, binary.BigEndian, v) }
	be(2)
	var fan [256]uint32
	for _, e := range entries {
		fan[e.hash[0]]++
	}
	total := uint32(0)
	for i := range fan {
		total += fan[i]
		be(total)
	}
	for _, e := range entries {
		idx.Write(e.hash[:])
	}
	for _, e := range entries {
		be(e.crc)
	}
	var large []uint64
	for _, e := range entries {
		if e.off < 1<<31 {
			be(uint32(e.off))
			continue
		}
		be(1<<31 | uint32(len(large)))
		large = append(large, e.off)
	}
	for _, off := range large {
		_ = binary.Write(&idx, binary.BigEndian, off)
	}
	idx.Write(packSum)
	idxSum := sha1.Sum(idx.Bytes())
	idx.Write(idxSum[:])
	return idx.Bytes()
}

// RemovePack removes the pack base: its index first, so that no reader
// finds it from then on (a reader that has it open reads on), then the
// pack and what git keeps beside it.
func RemovePack(base string) error {
	if err := os.Remove(base + ".idx"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, ext := range []string{".pack", ".rev", ".bitmap", ".mtimes"} {
		if err := os.Remove(base + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// RemoveLoose removes the loose object h of objDir; one already gone is
// not an error.
func RemoveLoose(objDir string, h plumbing.Hash) error {
	s := h.String()
	err := os.Remove(filepath.Join(objDir, s[:2], s[2:]))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
