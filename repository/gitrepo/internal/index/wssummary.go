package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The workspace summaries, cad-workspaces/<hash>: the file format (see
// the package doc). The lookups that read and write them are package
// gitrepo's.

const (
	wsSumDirName = "cad-workspaces"
	wsSumMagic   = "cadwsum1"
	wsSumMaxSize = 64 << 20
)

// WSSumState is the state of a package's tags a summary holds for.
type WSSumState struct {
	// Packed is packed-refs' identity (refstore.PackedIdentity, which
	// starts with a byte 1); all zero when there is no file.
	Packed [41]byte
	// Loose are the package's loose tags, sorted by name.
	Loose []WSLoose
}

// WSLoose is a loose tag: its name under the package and its value.
type WSLoose struct {
	Ver string
	H   plumbing.Hash
}

// WSSumEntry is a tag of a summary: its name under the package and the
// first 8 bytes of WsHash of its workspace.
type WSSumEntry struct {
	WS  [8]byte
	Ver string
}

// CompareWSSumEntry orders summary entries as the file keeps them: by
// workspace hash, then by name.
func CompareWSSumEntry(a, b WSSumEntry) int {
	if c := bytes.Compare(a.WS[:], b.WS[:]); c != 0 {
		return c
	}
	return strings.Compare(a.Ver, b.Ver)
}

// WSSummary is a package's workspace summary.
type WSSummary struct {
	Full  string
	State WSSumState
	// Lines is, after a 1 when it is known, the SHA-256 of the lines of
	// packed-refs under the package's tag prefix (refstore.PackedLines),
	// so that the summary holds for another packed-refs with the same
	// lines.
	Lines [33]byte
	// Repacked is not in the file: a lookup sets it when the summary was
	// found to hold for another packed-refs than the one it names, and
	// writes it again.
	Repacked bool
	// Entries are the tags of a summary to write, sorted by
	// CompareWSSumEntry.
	Entries []WSSumEntry
	// tags and names are those of a summary read: 12 bytes a tag, sorted
	// by workspace, and the names they point into.
	tags, names []byte
}

// count returns how many tags summary s read holds.
func (s *WSSummary) count() int { return len(s.tags) / 12 }

// wsAt returns the workspace hash of tag i of summary s read.
func (s *WSSummary) wsAt(i int) uint64 { return binary.BigEndian.Uint64(s.tags[i*12:]) }

// nameAt returns the name of tag i of summary s read; ok is false when
// its offset leads out of names.
func (s *WSSummary) nameAt(i int) (string, bool) {
	off := int(binary.BigEndian.Uint32(s.tags[i*12+8:]))
	if off >= len(s.names) || off+1+int(s.names[off]) > len(s.names) {
		return "", false
	}
	return string(s.names[off+1 : off+1+int(s.names[off])]), true
}

// Named returns the names of the tags of summary s read whose workspace
// hash is ws; ok is false when the summary is not valid (a name's offset
// leads out of the file).
func (s *WSSummary) Named(ws [8]byte) (out []string, ok bool) {
	want := binary.BigEndian.Uint64(ws[:])
	n := s.count()
	for i := sort.Search(n, func(i int) bool { return s.wsAt(i) >= want }); i < n && s.wsAt(i) == want; i++ {
		name, ok := s.nameAt(i)
		if !ok {
			return nil, false
		}
		out = append(out, name)
	}
	return out, true
}

// All returns the tags of summary s read; ok is false when it is not
// valid (a name's offset leads out of the file).
func (s *WSSummary) All() ([]WSSumEntry, bool) {
	out := make([]WSSumEntry, s.count())
	for i := range out {
		name, ok := s.nameAt(i)
		if !ok {
			return nil, false
		}
		out[i] = WSSumEntry{WS: [8]byte(s.tags[i*12 : i*12+8]), Ver: name}
	}
	return out, true
}

// WSHash8 returns a summary's hash of workspace ws: the first 8 bytes of
// WsHash(ws).
func WSHash8(ws string) [8]byte {
	h := WsHash(ws)
	return [8]byte(h[:8])
}

// WSSummaryPath returns the path of package full's summary in gitDir.
func WSSummaryPath(gitDir, full string) string {
	sum := sha256.Sum256([]byte(full))
	return filepath.Join(gitDir, wsSumDirName, hex.EncodeToString(sum[:16]))
}

// ReadWSSummary reads package full's summary in gitDir; ok is false when
// there is none or it is not valid (damaged, cut short, another
// package's). It returns no error: a summary is a cache.
func ReadWSSummary(gitDir, full string) (*WSSummary, bool) {
	f, err := os.Open(WSSummaryPath(gitDir, full))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > wsSumMaxSize || fi.Size() < int64(len(wsSumMagic))+4 {
		return nil, false
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, false
	}
	return decodeWSSummary(b, full)
}

// decodeWSSummary decodes summary b of package full.
func decodeWSSummary(b []byte, full string) (*WSSummary, bool) {
	if len(b) < len(wsSumMagic)+4 || string(b[:len(wsSumMagic)]) != wsSumMagic {
		return nil, false
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, false
	}
	d := wsDecoder{b: body[len(wsSumMagic):]}
	s := &WSSummary{}
	s.Full = string(d.bytes(int(d.u16())))
	if s.Full != full {
		return nil, false
	}
	copy(s.State.Packed[:], d.bytes(len(s.State.Packed)))
	copy(s.Lines[:], d.bytes(len(s.Lines)))
	n := d.u32()
	if d.bad || int64(n) > int64(len(d.b))/21 {
		return nil, false
	}
	s.State.Loose = make([]WSLoose, 0, n)
	for range n {
		ver := string(d.bytes(int(d.u8())))
		var h plumbing.Hash
		copy(h[:], d.bytes(20))
		s.State.Loose = append(s.State.Loose, WSLoose{Ver: ver, H: h})
	}
	n = d.u32()
	if d.bad || int64(n)*12 > int64(len(d.b)) {
		return nil, false
	}
	s.tags = d.bytes(int(n) * 12)
	s.names = d.bytes(int(d.u32()))
	if d.bad || len(d.b) != 0 ||
		!slices.IsSortedFunc(s.State.Loose, func(a, b WSLoose) int { return strings.Compare(a.Ver, b.Ver) }) {
		return nil, false
	}
	for i := 1; i < s.count(); i++ {
		if s.wsAt(i-1) > s.wsAt(i) {
			return nil, false
		}
	}
	return s, true
}

// wsDecoder reads a summary's fields; bad is set when one runs past the
// end.
type wsDecoder struct {
	b   []byte
	bad bool
}

func (d *wsDecoder) bytes(n int) []byte {
	if d.bad || n > len(d.b) {
		d.bad = true
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *wsDecoder) u8() uint8 {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *wsDecoder) u16() uint16 {
	if b := d.bytes(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *wsDecoder) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// encode returns the file's bytes; ok is false when a name is too long
// for the layout.
func (s *WSSummary) encode() ([]byte, bool) {
	if len(s.Full) > 0xffff {
		return nil, false
	}
	b := make([]byte, 0, 64+len(s.Full)+len(s.State.Loose)*40+len(s.Entries)*16)
	b = append(b, wsSumMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Full)))
	b = append(b, s.Full...)
	b = append(b, s.State.Packed[:]...)
	b = append(b, s.Lines[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.State.Loose)))
	for _, l := range s.State.Loose {
		if len(l.Ver) > 0xff {
			return nil, false
		}
		b = append(b, byte(len(l.Ver)))
		b = append(b, l.Ver...)
		b = append(b, l.H[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Entries)))
	var names []byte
	for _, e := range s.Entries {
		if len(e.Ver) > 0xff {
			return nil, false
		}
		b = append(b, e.WS[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
		names = append(names, byte(len(e.Ver)))
		names = append(names, e.Ver...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	b = append(b, names...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), true
}

// WriteWSSummary writes s (its Full, State, Lines and Entries) as its
// package's summary in gitDir: a temporary file renamed over the old.
// Failures are ignored, and nothing is returned: it is a cache.
func WriteWSSummary(gitDir string, s *WSSummary) {
	b, ok := s.encode()
	if !ok {
		return
	}
	// The temporary files have a directory of their own, so that looking
	// for a dead writer's reads only theirs.
	dir := filepath.Join(gitDir, wsSumDirName, "tmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), WSSummaryPath(gitDir, s.Full))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	removeStaleWSTemps(dir)
}

// removeStaleWSTemps removes the temporary files in dir of summary
// writers that died an hour or more ago.
func removeStaleWSTemps(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, "tmp-*"))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(n)
		}
	}
}
