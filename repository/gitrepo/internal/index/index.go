package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// ObjIndex keeps, in the file cad-index of a git directory, what reading
// revisions learns about immutable objects: each commit's tree, parents,
// author and message, and where a path leads under a tree. A list of a
// repository reads, for every tag, its commit and the trees on the way to
// its package; in a repository as Porch writes it every approval commit
// has its own root tree, so a process that starts cold spends most of a
// list decoding those objects out of the pack. With the index, the next
// process reads one file instead.
//
// Objects never change, so the index is never stale: a record is a fact
// about an object id. It is a cache, not state: deleting the file loses
// nothing. Records are appended, one line each with a checksum, in one
// write per read operation or per 256 KiB learnt (O_APPEND), by readers and
// writers alike; a
// line cut short by a crash, or otherwise damaged, is skipped when the
// file is loaded. A repository whose directory cannot be written is read
// without an index file. Safe for concurrent use.
//
// Loaded, the index costs little memory: the file is mapped (read where
// mmap is missing) and only the place of each record is kept in maps; a
// record is parsed when it is asked for.
type ObjIndex struct {
	path   string
	Sorted *PathFile // cad-paths, rebuilt from the file when it has grown enough; may be nil

	mu       sync.Mutex
	loaded   bool
	disabled bool
	data     []byte // the file as loaded
	mapped   bool   // data is a mapping of the file
	// The records of the file: where each lies in data, sorted by key
	// for a binary search (a map costs several times the memory).
	commits []commitPos
	paths   []pathPos
	// Records learnt since the file was loaded, by a 64-bit fingerprint
	// of their key (the first list of 50,000 revisions learns 100,000;
	// full keys would cost 9 MB of maps, fingerprints a fifth of that).
	// Two keys with one fingerprint leave the second record out of the
	// file, which only costs a read of its object later.
	newCommits map[uint64]struct{}
	newPaths   map[uint64]struct{}
	pending    bytes.Buffer
	line       []byte // the record being written, its array reused
	lookups    int    // for dropPages
	// known is how much of the file this process has seen: what it
	// loaded and what it appended since. What lies beyond was appended
	// by another process, and write leaves out the records it holds.
	known int64
}

const (
	indexName = "cad-index"
	// maxIndexBytes: past this size the index is neither loaded nor
	// appended to (a repository that large should be repacked, and the
	// file removed).
	maxIndexBytes = 512 << 20
	// reloadAfter: once this many records were learnt and written, the
	// parsed records are dropped and the file loaded again when needed,
	// so that they cost no memory.
	reloadAfter = 1000
)

// NewObjIndex returns the index of gitDir; the file is loaded when first
// needed.
func NewObjIndex(gitDir string) *ObjIndex {
	return &ObjIndex{path: filepath.Join(gitDir, indexName)}
}

// pathKey names a path under a tree: the tree and a 64-bit hash of the
// path (the record holds the path, checked when it is read).
type pathKey struct {
	root plumbing.Hash
	path uint64
}

// commitPos is where the record of commit h lies.
type commitPos struct {
	h   plumbing.Hash
	off uint32
}

// pathPos is where the path record of key k lies.
type pathPos struct {
	k   pathKey
	off uint32
}

func comparePathKeys(a, b pathKey) int {
	if c := bytes.Compare(a.root[:], b.root[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.path, b.path)
}

// findCommit returns where the record of commit h lies in the file.
func (x *ObjIndex) findCommit(h plumbing.Hash) (uint32, bool) {
	// Sorted by id, which is uniform: the search starts where h's first
	// bytes put it (tens of thousands of records are megabytes, a binary
	// search's every step a cache miss).
	i := gitobj.SearchNear(len(x.commits), guessAt(h, len(x.commits)), func(i int) bool { return bytes.Compare(x.commits[i].h[:], h[:]) >= 0 })
	if i == len(x.commits) || x.commits[i].h != h {
		return 0, false
	}
	return x.commits[i].off, true
}

// guessAt is where id h lies among n sorted uniform ids.
func guessAt(h plumbing.Hash, n int) int {
	return int(uint64(binary.BigEndian.Uint32(h[:4])) * uint64(n) >> 32)
}

// findPath returns where the path record of k lies in the file.
func (x *ObjIndex) findPath(k pathKey) (uint32, bool) {
	i := gitobj.SearchNear(len(x.paths), guessAt(k.root, len(x.paths)), func(i int) bool { return comparePathKeys(x.paths[i].k, k) >= 0 })
	if i == len(x.paths) || x.paths[i].k != k {
		return 0, false
	}
	return x.paths[i].off, true
}

// pathKeyOf is the key of path p under tree root.
func pathKeyOf(root plumbing.Hash, p string) pathKey {
	h := fnv.New64a()
	h.Write([]byte(p))
	return pathKey{root, h.Sum64()}
}

// load reads the file once; x.mu is held.
func (x *ObjIndex) load() {
	if x.loaded {
		return
	}
	x.loaded = true
	x.newCommits = map[uint64]struct{}{}
	x.newPaths = map[uint64]struct{}{}
	if isOff(offObjIndex) {
		x.disabled = true
		return
	}
	f, err := os.Open(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		x.disabled = true
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > maxIndexBytes {
		x.disabled = true
		return
	}
	x.known = fi.Size()
	if fi.Size() == 0 {
		return
	}
	// About one commit and one path record per 400 bytes.
	x.commits = make([]commitPos, 0, fi.Size()/400)
	x.paths = make([]pathPos, 0, fi.Size()/400)
	if x.data, err = gitobj.MapFile(f, fi.Size()); err == nil {
		x.mapped = true
	} else if x.data, err = io.ReadAll(f); err != nil {
		x.disabled = true
		return
	}
	for off := 0; off < len(x.data); {
		end := bytes.IndexByte(x.data[off:], '\n')
		if end < 0 {
			break // cut short
		}
		x.place(x.data[off:off+end], uint32(off))
		off += end + 1
	}
	if x.mapped {
		// The scan touched every page; a lookup touches one or two.
		gitobj.DropPages(x.data)
	}
	// Sorted for lookups; a key recorded twice (two processes' first
	// lists) has the same record both times, so either may be found.
	slices.SortFunc(x.commits, func(a, b commitPos) int { return bytes.Compare(a.h[:], b.h[:]) })
	slices.SortFunc(x.paths, func(a, b pathPos) int { return comparePathKeys(a.k, b.k) })
	x.commits = slices.Clip(x.commits)
	x.paths = slices.Clip(x.paths)
}

// unload drops what load read; x.mu is held.
func (x *ObjIndex) unload() {
	if x.mapped {
		gitobj.UnmapFile(x.data)
	}
	x.data, x.mapped, x.loaded, x.known = nil, false, false, 0
	x.commits, x.paths, x.newCommits, x.newPaths = nil, nil, nil, nil
}

// Close releases the loaded file.
func (x *ObjIndex) Close() {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unload()
	x.loaded, x.disabled = true, true // nothing is mapped again
}

// place notes where the record on line is, when its checksum holds.
func (x *ObjIndex) place(line []byte, off uint32) {
	body, ok := checked(line)
	if !ok || len(body) < 2+40 {
		return
	}
	switch body[0] {
	case 'c':
		if h, ok := parseHash(body[2:42]); ok {
			x.commits = append(x.commits, commitPos{h, off})
		}
	case 'p':
		root, ok := parseHash(body[2:42])
		if !ok || len(body) < 43 {
			return
		}
		q, err := strconv.QuotedPrefix(string(body[43:]))
		if err != nil {
			return
		}
		p, err := strconv.Unquote(q)
		if err != nil {
			return
		}
		x.paths = append(x.paths, pathPos{pathKeyOf(root, p), off})
	}
}

// checked returns line without its checksum when the checksum holds.
func checked(line []byte) ([]byte, bool) {
	i := bytes.LastIndexByte(line, ' ')
	if i < 0 || len(line)-i-1 != 8 {
		return nil, false
	}
	sum, err := strconv.ParseUint(string(line[i+1:]), 16, 32)
	if err != nil || uint32(sum) != lineSum(line[:i]) {
		return nil, false
	}
	return line[:i], true
}

// lineSum is the checksum of record line, seeded with the derivation
// version of its kind (its first byte).
func lineSum(line []byte) uint32 {
	k := CommitRecords
	if len(line) > 0 && line[0] == 'p' {
		k = PathRecords
	}
	return sum(k, line)
}

// parseHash parses 40 hex digits.
func parseHash(b []byte) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(b) != 40 {
		return h, false
	}
	if _, err := hex.Decode(h[:], b); err != nil {
		return h, false
	}
	return h, true
}

// lineAt returns a copy of the record at off in the loaded file, without
// its checksum (checked when loaded).
func (x *ObjIndex) lineAt(off uint32) string {
	rest := x.data[off:]
	if end := bytes.IndexByte(rest, '\n'); end >= 0 {
		rest = rest[:end]
	}
	if i := bytes.LastIndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	return string(rest)
}

// Commit returns the commit h when the index knows it.
func (x *ObjIndex) Commit(h plumbing.Hash) *gitobj.CommitInfo {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	x.looked()
	off, ok := x.findCommit(h)
	if !ok {
		return nil
	}
	c, _ := parseCommitRecord(x.lineAt(off))
	return c
}

// Subtree returns the entry path p leads to under tree root when the
// index knows it.
func (x *ObjIndex) Subtree(root plumbing.Hash, p string) (gitobj.TreeEntry, bool) {
	if x == nil {
		return gitobj.TreeEntry{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	x.looked()
	off, ok := x.findPath(pathKeyOf(root, p))
	if !ok {
		return gitobj.TreeEntry{}, false
	}
	recRoot, recPath, e, ok := parsePathRecord(x.lineAt(off))
	if !ok || recRoot != root || recPath != p {
		return gitobj.TreeEntry{}, false // another path with the same hash
	}
	return e, true
}

// AddCommit records commit c.
func (x *ObjIndex) AddCommit(c *gitobj.CommitInfo) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	fp := binary.LittleEndian.Uint64(c.Hash[:8])
	if _, ok := x.newCommits[fp]; x.disabled || ok {
		return
	}
	if _, ok := x.findCommit(c.Hash); ok {
		return
	}
	x.newCommits[fp] = struct{}{}
	x.recordBytes(appendCommitRecord(x.line[:0], c))
}

// appendCommitRecord appends the body of c's commit record to b: "c", the
// commit, its tree, its parents joined by commas ("-" for none), the
// author's name and email quoted, the author time in Unix seconds and its
// zone's offset, and the message quoted, separated by spaces.
func appendCommitRecord(b []byte, c *gitobj.CommitInfo) []byte {
	b = append(b, "c "...)
	b = hex.AppendEncode(b, c.Hash[:])
	b = append(b, ' ')
	b = hex.AppendEncode(b, c.Tree[:])
	b = append(b, ' ')
	if len(c.Parents) == 0 {
		b = append(b, '-')
	}
	for i, p := range c.Parents {
		if i > 0 {
			b = append(b, ',')
		}
		b = hex.AppendEncode(b, p[:])
	}
	_, offset := c.Author.When.Zone()
	b = append(b, ' ')
	b = strconv.AppendQuote(b, c.Author.Name)
	b = append(b, ' ')
	b = strconv.AppendQuote(b, c.Author.Email)
	b = append(b, ' ')
	b = strconv.AppendInt(b, c.Author.When.Unix(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, ' ')
	return strconv.AppendQuote(b, c.Message)
}

// AddSubtree records that path p under tree root is the directory h.
func (x *ObjIndex) AddSubtree(root plumbing.Hash, p string, e gitobj.TreeEntry) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	k := pathKeyOf(root, p)
	if x.disabled {
		return
	}
	if _, ok := x.findPath(k); ok {
		return
	}
	fp := k.path ^ binary.LittleEndian.Uint64(k.root[:8])
	if _, ok := x.newPaths[fp]; ok {
		return
	}
	x.newPaths[fp] = struct{}{}
	x.record(fmt.Sprintf("p %s %s %s %o", root, strconv.Quote(p), e.Hash, uint32(e.Mode)))
}

// record queues line with its checksum; x.mu is held.
func (x *ObjIndex) record(line string) {
	x.recordBytes(append(x.line[:0], line...))
}

// recordBytes is record for a line in x.line's array, which it keeps for
// the next record.
func (x *ObjIndex) recordBytes(line []byte) {
	x.line = line
	x.pending.Write(line)
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], lineSum(line))
	var tail [10]byte
	tail[0] = ' '
	hex.Encode(tail[1:9], sum[:])
	tail[9] = '\n'
	x.pending.Write(tail[:])
	if x.pending.Len() >= 256<<10 {
		x.write() // a list learning many records does not hold them all
	}
}

// Flush appends what was recorded since the last flush to the file, and
// brings cad-paths up to date when the file has grown enough since it
// was last built.
func (x *ObjIndex) Flush() {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.write()
	known := int64(0)
	if x.loaded && !x.disabled {
		known = x.known
	}
	if len(x.newCommits)+len(x.newPaths) >= reloadAfter {
		x.unload()
	}
	x.mu.Unlock()
	// Outside x.mu: a rebuild reads the file on its own, and lookups by
	// other goroutines need not wait for it.
	if known > 0 && x.Sorted.stale(known) {
		x.Sorted.update()
	}
}

// write appends the pending records to the file, in one write; x.mu is
// held.
func (x *ObjIndex) write() {
	if x.pending.Len() == 0 || x.disabled {
		x.pending.Reset()
		return
	}
	f, err := os.OpenFile(x.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		x.disabled = true // a read-only repository: no index file
		x.pending.Reset()
		return
	}
	defer f.Close()
	// Another process listing the same repository learns the same
	// records: under the file's lock, those it appended since this one
	// last looked are left out.
	defer refstore.LockFile(f)()
	out := x.pending.Bytes()
	if fi, err := f.Stat(); err == nil && fi.Size() != x.known {
		if fi.Size() > x.known {
			out = withoutRecordsIn(f, x.known, fi.Size(), out)
		}
		x.known = fi.Size()
	}
	if n, err := f.Write(out); err == nil {
		x.known += int64(n)
	}
	x.pending.Reset()
}

// withoutRecordsIn returns the lines of pending that are not among the
// lines of f between from and to. Lines are compared by a 64-bit hash: a
// collision leaves a record out of the index, which only costs a read of
// the object later.
func withoutRecordsIn(f *os.File, from, to int64, pending []byte) []byte {
	if to-from > maxIndexBytes {
		return pending
	}
	tail := make([]byte, to-from)
	if _, err := f.ReadAt(tail, from); err != nil {
		return pending
	}
	hashLine := func(line []byte) uint64 {
		h := fnv.New64a()
		h.Write(line)
		return h.Sum64()
	}
	have := map[uint64]struct{}{}
	for line := range bytes.Lines(tail) {
		have[hashLine(line)] = struct{}{}
	}
	var out []byte
	for line := range bytes.Lines(pending) {
		if _, dup := have[hashLine(line)]; !dup {
			out = append(out, line...)
		}
	}
	return out
}

// parseCommitRecord parses the body of a commit record.
func parseCommitRecord(body string) (*gitobj.CommitInfo, bool) {
	f, ok := fields(body)
	if !ok || len(f) != 9 || f[0] != "c" {
		return nil, false
	}
	c := &gitobj.CommitInfo{Hash: plumbing.NewHash(f[1]), Tree: plumbing.NewHash(f[2]), Message: strings.Clone(f[8])}
	if f[3] != "-" {
		for _, p := range strings.Split(f[3], ",") {
			c.Parents = append(c.Parents, plumbing.NewHash(p))
		}
	}
	sec, err1 := strconv.ParseInt(f[6], 10, 64)
	offset, err2 := strconv.Atoi(f[7])
	if err1 != nil || err2 != nil {
		return nil, false
	}
	// Copies, so that what a revision keeps (its publisher) does not keep
	// the whole record alive.
	c.Author = object.Signature{Name: strings.Clone(f[4]), Email: strings.Clone(f[5]), When: time.Unix(sec, 0).In(zone(offset))}
	c.Annotations = gitobj.Annotations(c.Message)
	return c, true
}

// parsePathRecord parses the body of a path record: the tree, the path
// and the entry it leads to.
func parsePathRecord(body string) (plumbing.Hash, string, gitobj.TreeEntry, bool) {
	f, ok := fields(body)
	if !ok || len(f) != 5 || f[0] != "p" {
		return plumbing.ZeroHash, "", gitobj.TreeEntry{}, false
	}
	mode, err := strconv.ParseUint(f[4], 8, 32)
	if err != nil {
		return plumbing.ZeroHash, "", gitobj.TreeEntry{}, false
	}
	e := gitobj.TreeEntry{Name: f[2][strings.LastIndexByte(f[2], '/')+1:], Mode: filemode.FileMode(mode), Hash: plumbing.NewHash(f[3])}
	return plumbing.NewHash(f[1]), f[2], e, true
}

var (
	zonesMu sync.Mutex
	zones   = map[int]*time.Location{}
)

// zone returns a fixed zone offset seconds east of UTC, one value per
// offset.
func zone(offset int) *time.Location {
	zonesMu.Lock()
	defer zonesMu.Unlock()
	z := zones[offset]
	if z == nil {
		z = time.FixedZone("", offset)
		if len(zones) < 1000 {
			zones[offset] = z
		}
	}
	return z
}

// fields splits a record into its space-separated fields, unquoting the
// quoted ones.
func fields(s string) ([]string, bool) {
	var out []string
	for len(s) > 0 {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, false
			}
			v, err := strconv.Unquote(q)
			if err != nil {
				return nil, false
			}
			out = append(out, v)
			s = s[len(q):]
		} else {
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				i = len(s)
			}
			out = append(out, s[:i])
			s = s[i:]
		}
		if len(s) > 0 {
			if s[0] != ' ' {
				return nil, false
			}
			s = s[1:]
		}
	}
	return out, true
}

// DropPages takes the mapped file's pages out of the process's resident
// set until they are read again.
func (x *ObjIndex) DropPages() {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mapped {
		gitobj.DropPages(x.data)
	}
}

// looked counts a lookup, and every DropPagesEvery takes the mapped
// file's pages out of the process's resident set (see
// gitobj.DropPages); x.mu is held.
func (x *ObjIndex) looked() {
	if x.lookups++; x.lookups%gitobj.DropPagesEvery == 0 && x.mapped {
		gitobj.DropPages(x.data)
	}
}
