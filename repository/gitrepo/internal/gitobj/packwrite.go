package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// PackObject is one object to write into a pack: its id, type and
// content.
type PackObject struct {
	Hash plumbing.Hash
	Type plumbing.ObjectType
	Data []byte
}

// WritePack writes objs as one pack of gitDir, objects/pack/pack-<id>.pack
// with its version 2 index pack-<id>.idx, as git reads them: every object
// whole (no deltas), deflated at zlib's fastest level. Each file is
// written under a temporary name, synced by sync (the ref store's mode;
// nil syncs nothing, as for PackStaging) and
// renamed into place, the pack before its index, so that a reader (which
// finds packs by their index) never sees a pack cut short; a pack whose
// objects no ref names is garbage that git gc removes. It returns the
// path of the pack; errors name the file.
func WritePack(gitDir string, objs []PackObject, sync func(*os.File) error) (string, error) {
	if sync == nil {
		sync = func(*os.File) error { return nil }
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	pf, err := tmpfile.Create(dir, WritePackPrefix)
	if err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	var xf *os.File
	defer func() {
		// Only the temporary names are removed: after their renames
		// they name nothing.
		pf.Close()
		os.Remove(pf.Name())
		if xf != nil {
			xf.Close()
			os.Remove(xf.Name())
		}
	}()
	type entry struct {
		hash plumbing.Hash
		off  uint64
		crc  uint32
	}
	entries := make([]entry, 0, len(objs))
	sum := sha1.New()
	bw := bufio.NewWriterSize(pf, 64<<10)
	cw := &countWriter{w: io.MultiWriter(bw, sum)}
	var head [12]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(objs)))
	if _, err := cw.Write(head[:]); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	crc := crc32.NewIEEE()
	for _, o := range objs {
		off := cw.n
		crc.Reset()
		ow := io.MultiWriter(cw, crc)
		// The header: type and size, 4 bits of size in the first byte
		// and 7 in each next one, the high bit saying one follows.
		size := uint64(len(o.Data))
		var hb [16]byte
		hb[0] = byte(o.Type)<<4 | byte(size&0x0f)
		size >>= 4
		n := 1
		for size > 0 {
			hb[n-1] |= 0x80
			hb[n] = byte(size & 0x7f)
			size >>= 7
			n++
		}
		if _, err := ow.Write(hb[:n]); err != nil {
			return "", fmt.Errorf("write pack: %w", err)
		}
		zw.Reset(ow)
		if _, err := zw.Write(o.Data); err != nil {
			return "", fmt.Errorf("write pack: %w", err)
		}
		if err := zw.Close(); err != nil {
			return "", fmt.Errorf("write pack: %w", err)
		}
		entries = append(entries, entry{hash: o.Hash, off: off, crc: crc.Sum32()})
	}
	packSum := sum.Sum(nil)
	if _, err := bw.Write(packSum); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	if err := sync(pf); err != nil {
		return "", fmt.Errorf("sync pack: %w", err)
	}

	// The index: fan-out, names, CRCs, offsets (large ones in a table
	// of their own), the pack's checksum and its own.
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	for i := 1; i < len(entries); i++ {
		if entries[i].hash == entries[i-1].hash {
			return "", fmt.Errorf("write pack: object %s twice", entries[i].hash)
		}
	}
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

	if xf, err = tmpfile.Create(dir, WriteIdxPrefix); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	if _, err := xf.Write(idx.Bytes()); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	if err := sync(xf); err != nil {
		return "", fmt.Errorf("sync pack index: %w", err)
	}
	for _, f := range []*os.File{pf, xf} {
		if err := f.Chmod(0o444); err != nil {
			return "", fmt.Errorf("write pack: %w", err)
		}
	}
	base := filepath.Join(dir, "pack-"+hex.EncodeToString(packSum))
	if err := os.Rename(pf.Name(), base+".pack"); err != nil {
		return "", fmt.Errorf("write pack: %w", err)
	}
	if err := os.Rename(xf.Name(), base+".idx"); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	return base + ".pack", nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}
