package gitrepo

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// Workspace summaries. Every new draft checks that no revision of its
// package has its workspace, and a published revision's workspace is only
// in its tag's objects, so the check looks at every tag of the package:
// thousands for a package with thousands of revisions. A summary is a
// file, cad-workspaces/<hash of the package path>, that lists the
// workspace (a hash of it) of every tag of one package, for one state of
// the package's tags: the identity of packed-refs (device, inode, size,
// modification and change times) and the package's loose tags (names and
// values). A lookup whose state is the summary's looks at the tags the
// summary names for the workspace, and no other; one whose packed-refs is
// the summary's but whose loose tags differ (an approval since, a tag
// deleted or moved by any writer) also looks at the loose tags that are
// new, moved or gone since, and writes the summary again once
// wsSumRewriteAfter of them changed. Another
// packed-refs holds the summary when its lines under the package's tag
// prefix are those the summary was written for (their SHA-256, found by
// binary search), and the summary is written again for it. Anything else
// (another packed-refs with other lines, a damaged or missing file, a
// file of another package, a tag the summary names that is not there) is
// read as no summary: the lookup passes over every tag, as it did before,
// and writes one.
//
// A summary is a hint, never the answer: a tag it names is read as the
// full pass reads it, so it can at most spare the reads of tags whose
// workspace it knows is another. It is exact as long as a packed-refs
// with the summary's identity has the summary's content, which holds for
// every writer that replaces packed-refs (git, cad) unless a new file
// gets a freed inode, the same size and the same change time as the old
// one (within the clock's tick); the loose tags are read, so a raw write
// of a loose ref is seen. Summaries are written for packages with at
// least wsSumMin tags (below that the pass costs less than the file).
//
// Layout, integers big-endian, a CRC-32 of everything before it at the
// end:
//
//	"cadwsum1"           8 bytes
//	package path         2-byte length, bytes
//	packed-refs identity 41 bytes: 1 when there is a file, then device,
//	                     inode, size, mtime and ctime in nanoseconds
//	packed lines         33 bytes: 1 when known, then the SHA-256 of the
//	                     lines of packed-refs under refs/tags/<path>/
//	loose tags           4-byte count, each: 1-byte length, name under the
//	                     package, the 20-byte value; sorted by name
//	tags                 4-byte count, each 12 bytes: the first 8 bytes
//	                     of wsHash of the tag's workspace, the offset of
//	                     its name in names; sorted by workspace and name
//	names                4-byte length, then each name under the package
//	                     as a 1-byte length and the name
//	crc                  4 bytes

const (
	wsSumDirName = "cad-workspaces"
	wsSumMagic   = "cadwsum1"
	wsSumMaxSize = 64 << 20
)

// wsSumMin is how many tags a package has before its workspace lookups
// keep a summary. A variable for the tests.
var wsSumMin = 32

// wsSumRewriteAfter is how many loose tags a lookup reads itself (new,
// moved or gone since the summary) before it writes the summary again.
// A variable for the tests.
var wsSumRewriteAfter = 8

// wsSumState is the state of a package's tags a summary holds for.
type wsSumState struct {
	packed [41]byte
	loose  []wsLoose // sorted by name
}

// wsLoose is a loose tag: its name under the package and its value.
type wsLoose struct {
	ver string
	h   plumbing.Hash
}

// wsSumEntry is a tag of a summary: its name under the package and the
// first 8 bytes of wsHash of its workspace.
type wsSumEntry struct {
	ws  [8]byte
	ver string
}

func compareWSSumEntry(a, b wsSumEntry) int {
	if c := bytes.Compare(a.ws[:], b.ws[:]); c != 0 {
		return c
	}
	return strings.Compare(a.ver, b.ver)
}

// wsSummary is a package's summary.
type wsSummary struct {
	full  string
	state wsSumState
	// lines is, after a 1 when it is known, the SHA-256 of the lines of
	// packed-refs under the package's tag prefix (packedLines), so that
	// the summary holds for another packed-refs with the same lines.
	lines [33]byte
	// repacked is set when the summary was found to hold for another
	// packed-refs than the one it names: it is written again.
	repacked bool
	// entries are the tags of a summary to write, sorted.
	entries []wsSumEntry
	// tags and names are those of a summary read: 12 bytes a tag, sorted
	// by workspace, and the names they point into.
	tags, names []byte
}

// count returns how many tags summary s read holds.
func (s *wsSummary) count() int { return len(s.tags) / 12 }

// wsAt returns the workspace hash of tag i of summary s read.
func (s *wsSummary) wsAt(i int) uint64 { return binary.BigEndian.Uint64(s.tags[i*12:]) }

// nameAt returns the name of tag i of summary s read; ok is false when
// its offset leads out of names.
func (s *wsSummary) nameAt(i int) (string, bool) {
	off := int(binary.BigEndian.Uint32(s.tags[i*12+8:]))
	if off >= len(s.names) || off+1+int(s.names[off]) > len(s.names) {
		return "", false
	}
	return string(s.names[off+1 : off+1+int(s.names[off])]), true
}

// named returns the names of the tags of summary s read whose workspace
// hash is ws; ok is false when the summary is not valid.
func (s *wsSummary) named(ws [8]byte) (out []string, ok bool) {
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

// all returns the tags of summary s read; ok is false when it is not
// valid.
func (s *wsSummary) all() ([]wsSumEntry, bool) {
	out := make([]wsSumEntry, s.count())
	for i := range out {
		name, ok := s.nameAt(i)
		if !ok {
			return nil, false
		}
		out[i] = wsSumEntry{ws: [8]byte(s.tags[i*12 : i*12+8]), ver: name}
	}
	return out, true
}

// wsHash8 is a summary's hash of workspace ws.
func wsHash8(ws string) [8]byte {
	h := index.WsHash(ws)
	return [8]byte(h[:8])
}

// wsSumPath returns the path of package full's summary in gitDir.
func wsSumPath(gitDir, full string) string {
	sum := sha256.Sum256([]byte(full))
	return filepath.Join(gitDir, wsSumDirName, hex.EncodeToString(sum[:16]))
}

// wsSumRead reads package full's summary; ok is false when there is none
// or it is not valid (damaged, cut short, another package's).
func wsSumRead(gitDir, full string) (*wsSummary, bool) {
	f, err := os.Open(wsSumPath(gitDir, full))
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
	return wsSumDecode(b, full)
}

// wsSumDecode decodes summary b of package full.
func wsSumDecode(b []byte, full string) (*wsSummary, bool) {
	if len(b) < len(wsSumMagic)+4 || string(b[:len(wsSumMagic)]) != wsSumMagic {
		return nil, false
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, false
	}
	d := wsDecoder{b: body[len(wsSumMagic):]}
	s := &wsSummary{}
	s.full = string(d.bytes(int(d.u16())))
	if s.full != full {
		return nil, false
	}
	copy(s.state.packed[:], d.bytes(len(s.state.packed)))
	copy(s.lines[:], d.bytes(len(s.lines)))
	n := d.u32()
	if d.bad || int64(n) > int64(len(d.b))/21 {
		return nil, false
	}
	s.state.loose = make([]wsLoose, 0, n)
	for range n {
		ver := string(d.bytes(int(d.u8())))
		var h plumbing.Hash
		copy(h[:], d.bytes(20))
		s.state.loose = append(s.state.loose, wsLoose{ver: ver, h: h})
	}
	n = d.u32()
	if d.bad || int64(n)*12 > int64(len(d.b)) {
		return nil, false
	}
	s.tags = d.bytes(int(n) * 12)
	s.names = d.bytes(int(d.u32()))
	if d.bad || len(d.b) != 0 ||
		!slices.IsSortedFunc(s.state.loose, func(a, b wsLoose) int { return strings.Compare(a.ver, b.ver) }) {
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
func (s *wsSummary) encode() ([]byte, bool) {
	if len(s.full) > 0xffff {
		return nil, false
	}
	b := make([]byte, 0, 64+len(s.full)+len(s.state.loose)*40+len(s.entries)*16)
	b = append(b, wsSumMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.full)))
	b = append(b, s.full...)
	b = append(b, s.state.packed[:]...)
	b = append(b, s.lines[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.state.loose)))
	for _, l := range s.state.loose {
		if len(l.ver) > 0xff {
			return nil, false
		}
		b = append(b, byte(len(l.ver)))
		b = append(b, l.ver...)
		b = append(b, l.h[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.entries)))
	var names []byte
	for _, e := range s.entries {
		if len(e.ver) > 0xff {
			return nil, false
		}
		b = append(b, e.ws[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
		names = append(names, byte(len(e.ver)))
		names = append(names, e.ver...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	b = append(b, names...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), true
}

// wsSumWrite writes s as its package's summary in gitDir (a temporary
// file renamed over the old). Failures are ignored: it is a cache.
func wsSumWrite(gitDir string, s *wsSummary) {
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
		err = os.Rename(tmp.Name(), wsSumPath(gitDir, s.full))
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

// wsState reads the state of the tags under prefix (a package's,
// "refs/tags/<full>/") that a summary is kept for. ok is false when it
// cannot be known exactly without reading every tag: refs of an
// unfinished journal laid over the disk under prefix, a loose tag that
// is damaged or symbolic, packed-refs that cannot be read, or a platform
// where a file's change time is not known.
func wsState(f *refstore.FSRefs, prefix string) (st wsSumState, ok bool) {
	packed, loose, ok := f.PrefixState(prefix)
	if !ok {
		return st, false
	}
	if packed != nil {
		id, ok := packedIdentity(packed)
		if !ok {
			return st, false
		}
		st.packed[0] = 1
		copy(st.packed[1:], id[:])
	}
	for _, l := range loose {
		st.loose = append(st.loose, wsLoose{ver: l.Name, h: l.Hash})
	}
	return st, true
}

// wsEffective is what tagEffectiveWS found: the workspace a tag gives
// its package, by name when exact, else as a record's hash; known is false
// when the objects cannot be read.
type wsEffective struct {
	name         string
	hash         plumbing.Hash
	exact, known bool
}

// may reports whether the tag can have workspace ws, as
// tagMayHaveWorkspace answers.
func (e wsEffective) may(ws string) bool {
	if !e.known {
		return true
	}
	if e.exact {
		return e.name == ws
	}
	return e.hash == index.WsHash(ws)
}

// hash8 is the summary's hash of the workspace.
func (e wsEffective) hash8() [8]byte {
	if e.exact {
		return wsHash8(e.name)
	}
	return [8]byte(e.hash[:8])
}

// tagEffectiveWS returns the workspace tag <wl.full>/<ver> at h gives its
// package, from what tagMayHaveWorkspace reads (and as it reads it:
// remembered, recorded in cad-paths, else the objects, learnt into wl).
func (r *Repository) tagEffectiveWS(v *view, wl *wsLookup, ver string, h plumbing.Hash) wsEffective {
	r.wsTagsRead.Add(1)
	if parseVersion(ver) <= 0 {
		return wsEffective{name: ver, exact: true, known: true}
	}
	full := wl.full
	if w, ok := r.tagWS.get(h, full); ok {
		if w == "" {
			w = ver
		}
		return wsEffective{name: w, exact: true, known: true}
	}
	if !wl.loaded {
		wl.loaded, wl.recs = true, v.paths.Workspaces(full)
		wl.none = index.WsHash("")
	}
	if got, ok := wl.recs.Get(h); ok {
		if got == wl.none {
			return wsEffective{name: ver, exact: true, known: true}
		}
		return wsEffective{hash: got, known: true}
	}
	c, err := v.commit(h)
	if err != nil {
		return wsEffective{}
	}
	w := workspaceIn(v.tagAnnotations(h), full)
	if w == "" {
		w = workspaceOf(c, full)
	}
	r.tagWS.put(h, full, w)
	wl.learnt = append(wl.learnt, index.WsRecord(full, h, w))
	if w == "" {
		w = ver
	}
	return wsEffective{name: w, exact: true, known: true}
}

// tagEffectiveWSFew is tagEffectiveWS for one of a few tags: the tag's
// commit (and annotated tag) is read before the package's workspace
// records, which are read all at once (some 60 bytes a tag), are loaded;
// the records answer only when the objects cannot be read. What the
// objects say is not appended to cad-paths (the approval that made the
// tag recorded it, or the next pass over every tag does).
func (r *Repository) tagEffectiveWSFew(v *view, wl *wsLookup, ver string, h plumbing.Hash) wsEffective {
	if parseVersion(ver) > 0 && !wl.loaded {
		if _, ok := r.tagWS.get(h, wl.full); !ok {
			if c, err := v.commit(h); err == nil {
				r.wsTagsRead.Add(1)
				w := workspaceIn(v.tagAnnotations(h), wl.full)
				if w == "" {
					w = workspaceOf(c, wl.full)
				}
				r.tagWS.put(h, wl.full, w)
				if w == "" {
					w = ver
				}
				return wsEffective{name: w, exact: true, known: true}
			}
		}
	}
	return r.tagEffectiveWS(v, wl, ver, h)
}

// resolveWorkspace finds the published revision of key's package with
// key's workspace (key.Revision is 0), as resolve's pass over the
// package's tags does, with the package's summary when it holds: done is
// false when the refs are not read from disk, and resolve passes over
// the tags itself.
func (r *Repository) resolveWorkspace(v *view, key revision.Key, full string) (x *rev, done bool, err error) {
	if v.fr == nil || v.refs != nil || v.gitDir == "" {
		return nil, false, nil
	}
	prefix := "refs/tags/" + full + "/"
	wl := &wsLookup{full: full}
	defer func() { v.paths.Add(wl.learnt...) }()
	st, stOK := wsState(v.fr, prefix)
	if stOK {
		if sum, ok := wsSumRead(v.gitDir, full); ok && sum.holds(v.gitDir, prefix, st) {
			x, ok, err := r.resolveBySummary(v, wl, key, full, sum, st)
			if err != nil || ok {
				return x, true, err
			}
		}
	}
	// Every tag of the package; no summary is written of a state with a
	// damaged tag (left out and warned about).
	damaged := false
	tags, err := v.fr.Children(prefix, func(err error) { // as v.tagsOf
		damaged = true
		if v.damaged != nil {
			v.damaged(err)
		}
	})
	if err != nil {
		return nil, true, err
	}
	var best *rev
	entries := make([]wsSumEntry, 0, len(tags))
	complete := stOK && !damaged && len(tags) >= wsSumMin
	for name, h := range tags {
		ver := shortName(name)[len(full)+1:]
		e := r.tagEffectiveWS(v, wl, ver, h)
		if complete && e.known {
			entries = append(entries, wsSumEntry{ws: e.hash8(), ver: ver})
		} else {
			complete = false
		}
		if !e.may(key.Workspace) {
			continue
		}
		if best, err = r.betterTagRev(v, key, ver, name, h, best); err != nil {
			return nil, true, err
		}
	}
	if complete {
		// Written only when the state did not change during the pass.
		if after, ok := wsState(v.fr, prefix); ok && sameWSState(st, after) {
			slices.SortFunc(entries, compareWSSumEntry)
			sum := &wsSummary{full: full, state: st, entries: entries}
			if id, lines, ok := packedLines(v.gitDir, prefix); ok && id == st.packed {
				sum.lines[0] = 1
				copy(sum.lines[1:], lines[:])
			}
			wsSumWrite(v.gitDir, sum)
		}
	}
	if best == nil {
		return nil, true, r.errorf("get", key, repository.ErrNotFound, "no revision %s", keyString(key))
	}
	return best, true, nil
}

// betterTagRev reads tag <full>/<ver> at h as resolve does, and returns
// it when it matches key and has a higher revision than best, else best.
func (r *Repository) betterTagRev(v *view, key revision.Key, ver string, name plumbing.ReferenceName, h plumbing.Hash, best *rev) (*rev, error) {
	x, err := r.tagRev(v, key.Package, ver, name, h)
	if err != nil {
		return nil, err
	}
	if x != nil && key.Matches(x.key) && (best == nil || x.key.Revision > best.key.Revision) {
		return x, nil
	}
	return best, nil
}

// sameWSState reports whether a and b are the same state of the tags.
func sameWSState(a, b wsSumState) bool {
	return a.packed == b.packed && slices.Equal(a.loose, b.loose)
}

// resolveBySummary is resolveWorkspace with summary sum, whose
// packed-refs is the one on disk; st is the state of the tags. It reads
// the tags sum gives key's workspace, and every loose tag, now or when
// sum was written; ok is false when sum does not hold (a tag it names is
// not there), and the caller passes over every tag. When the loose tags
// changed since sum, it writes the summary of the state st.
func (r *Repository) resolveBySummary(v *view, wl *wsLookup, key revision.Key, full string, sum *wsSummary, st wsSumState) (best *rev, ok bool, err error) {
	// The loose tags that are not what they were when sum was written
	// (new, moved, or removed, when packed-refs may hold another value):
	// read here, whatever sum says of them. A tag's workspace in sum is a
	// fact of its name and value, so sum holds for the others.
	looseNow := make(map[string]plumbing.Hash, len(st.loose))
	for _, l := range st.loose {
		looseNow[l.ver] = l.h
	}
	direct := map[string]bool{}
	looseThen := make(map[string]plumbing.Hash, len(sum.state.loose))
	for _, l := range sum.state.loose {
		looseThen[l.ver] = l.h
		if h, ok := looseNow[l.ver]; !ok || h != l.h {
			direct[l.ver] = true
		}
	}
	for _, l := range st.loose {
		if h, ok := looseThen[l.ver]; !ok || h != l.h {
			direct[l.ver] = true
		}
	}
	named, ok := sum.named(wsHash8(key.Workspace))
	if !ok {
		return nil, false, nil
	}
	for _, ver := range named {
		if direct[ver] {
			continue
		}
		// A tag as it was when sum was written: packed (packed-refs is
		// sum's), or loose with the same value.
		name := tagRef(full + "/" + ver)
		h, found, err := v.ref(name)
		if err != nil {
			return nil, false, err
		}
		if !found {
			return nil, false, nil
		}
		if !r.tagEffectiveWSFew(v, wl, ver, h).may(key.Workspace) {
			continue
		}
		if best, err = r.betterTagRev(v, key, ver, name, h, best); err != nil {
			return nil, false, err
		}
	}
	changed := sum.repacked || !sameWSState(sum.state, st)
	var fresh []wsSumEntry
	complete := true
	for ver := range direct {
		name := tagRef(full + "/" + ver)
		h, found := looseNow[ver]
		if !found {
			// Loose no longer: what packed-refs holds, if anything.
			if h, found, err = v.ref(name); err != nil {
				return nil, false, err
			}
			if !found {
				continue
			}
		}
		e := r.tagEffectiveWSFew(v, wl, ver, h)
		if e.known {
			fresh = append(fresh, wsSumEntry{ws: e.hash8(), ver: ver})
		} else {
			complete = false
		}
		if !e.may(key.Workspace) {
			continue
		}
		if best, err = r.betterTagRev(v, key, ver, name, h, best); err != nil {
			return nil, false, err
		}
	}
	// Written again when it names another packed-refs, or once enough
	// loose tags changed: until then a lookup reads the few that did
	// (an approval adds one) instead of writing the whole summary.
	if changed && complete && (sum.repacked || len(direct) >= wsSumRewriteAfter) {
		if old, ok := sum.all(); ok {
			entries := make([]wsSumEntry, 0, len(old)+len(fresh))
			for _, e := range old {
				if !direct[e.ver] {
					entries = append(entries, e)
				}
			}
			entries = append(entries, fresh...)
			slices.SortFunc(entries, compareWSSumEntry)
			wsSumWrite(v.gitDir, &wsSummary{full: full, state: st, lines: sum.lines, entries: entries})
		}
	}
	if best == nil {
		return nil, true, r.errorf("get", key, repository.ErrNotFound, "no revision %s", keyString(key))
	}
	return best, true, nil
}

// holds reports whether summary s holds for packed-refs as st found it:
// it is the file s names, or another whose lines under prefix are those
// s was written for (then s.repacked is set, and s takes st's identity).
func (s *wsSummary) holds(gitDir, prefix string, st wsSumState) bool {
	if s.state.packed == st.packed {
		return true
	}
	if s.lines[0] != 1 || st.packed[0] != 1 {
		return false
	}
	id, lines, ok := packedLines(gitDir, prefix)
	if !ok || id != st.packed || !bytes.Equal(lines[:], s.lines[1:]) {
		return false
	}
	s.state.packed, s.repacked = st.packed, true
	return true
}

// packedLines returns the identity of packed-refs in gitDir (as wsState
// gives it) and the SHA-256 of its lines from the first ref whose name
// starts with prefix to the first ref past them (in a sorted file, the
// refs under prefix and their peeled lines), read from the file as that
// identity describes it: two binary searches a block at a time, and one
// read of the lines. ok is false when there is no file, it is not sorted,
// or a line where a search ends is not a ref line (a damaged file is left
// to the pass over the tags).
func packedLines(gitDir, prefix string) (id [41]byte, sum [32]byte, ok bool) {
	f, err := os.Open(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return id, sum, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return id, sum, false
	}
	ident, ok := packedIdentity(fi)
	if !ok {
		return id, sum, false
	}
	id[0] = 1
	copy(id[1:], ident[:])
	size := fi.Size()
	head := make([]byte, min(4096, size))
	if _, err := f.ReadAt(head, 0); err != nil {
		return id, sum, false
	}
	end := bytes.IndexByte(head, '\n')
	if end < 0 || !refstore.SortedHeader(head[:end]) {
		return id, sum, false
	}
	body := int64(end + 1)
	// The names past prefix start with its last byte, a slash, plus one.
	past := prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
	from, ok := packedLineAt(f, body, size, prefix)
	if !ok {
		return id, sum, false
	}
	to, ok := packedLineAt(f, from, size, past)
	if !ok {
		return id, sum, false
	}
	lines := make([]byte, to-from)
	if _, err := f.ReadAt(lines, from); err != nil {
		return id, sum, false
	}
	return id, sha256.Sum256(lines), true
}

// packedLineAt returns where the first ref line of sorted packed-refs f
// (size bytes, lines from body) whose name is target or after starts,
// size when there is none: a binary search a block at a time, then the
// lines of the last two blocks. ok is false when a line it reads is not a
// ref line or a peeled value, or the file ends inside a line.
func packedLineAt(f io.ReaderAt, body, size int64, target string) (int64, bool) {
	const block = 4096
	buf := make([]byte, block)
	// lo is the start of a line; every ref before it sorts before target.
	lo, hi := body, size
	for hi-lo > 2*block {
		mid := lo + (hi-lo)/2
		n, err := f.ReadAt(buf, mid)
		if err != nil && n == 0 {
			return 0, false
		}
		b := buf[:n]
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return 0, false
		}
		// The first ref line starting after mid.
		start := mid + int64(i) + 1
		rest := b[i+1:]
		for len(rest) > 0 && rest[0] == '^' {
			j := bytes.IndexByte(rest, '\n')
			if j < 0 {
				break
			}
			start += int64(j) + 1
			rest = rest[j+1:]
		}
		j := bytes.IndexByte(rest, '\n')
		if j < 0 || start >= hi {
			hi = mid
			continue
		}
		line := rest[:j]
		if len(line) < 42 || line[40] != ' ' {
			return 0, false
		}
		if string(bytes.TrimSuffix(line[41:], []byte("\r"))) < target {
			lo = start
		} else {
			hi = mid
		}
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, lo, size-lo), 2*block)
	at := lo
	for {
		raw, err := br.ReadSlice('\n')
		if err == io.EOF && len(raw) == 0 {
			return size, true
		}
		if err != nil {
			return 0, false // a line longer than a block, or cut short
		}
		line := bytes.TrimSuffix(raw[:len(raw)-1], []byte("\r"))
		if len(line) == 0 || line[0] != '^' {
			if len(line) < 42 || line[40] != ' ' {
				return 0, false
			}
			if string(line[41:]) >= target {
				return at, true
			}
		}
		at += int64(len(raw))
	}
}
