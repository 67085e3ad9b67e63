package refstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
)

// FSRefs reads refs of a repository on disk directly, as git does: a
// loose ref file wins over packed-refs. It exists so that looking up one
// ref, or the refs under one prefix, costs the same with 100 refs as with
// 100,000: go-git scans the whole packed-refs file for every lookup, so
// FSRefs parses it once per change of the file and keeps it sorted.
// Callers hold the store's lock. cad writes refs on disk only through
// Transact (refstore.go), never through go-git.
type FSRefs struct {
	GitDir string
	Sync   SyncMode
	// durable are the loose objects this process synced (synced.go).
	durable durableObjects

	mu      sync.Mutex
	modTime time.Time
	size    int64
	id      [41]byte        // packed-refs' identity when parsed, zero off Linux
	names   []string        // sorted; substrings of one copy of the file
	hashes  []plumbing.Hash // hashes[i] is the value of names[i]
	bad     []packedDamage  // the lines of packed-refs that are not ref lines
	scans   int             // lookups that read packed-refs without parsing it
	closed  bool            // no more files opened for lookups
	// scanned is packed-refs as the last lookup read it, kept while the
	// file stays the same: whole when it is small or not sorted, else
	// scanFile open to read the blocks a binary search looks at.
	scanned     []byte
	scanFile    *os.File
	scanBody    int64 // where the lines after the header start in scanFile
	scannedStat os.FileInfo
	scanClean   bool // scanned holds no damaged line
	// ov is the outcome of a journal this process could not complete,
	// laid over the refs on disk (overlay.go); nil when there is none.
	ov *refOverlay

	// seen caches the values of loose ref files that walks read, by
	// name, with the file's identity (see looseWalked).
	seenMu sync.Mutex
	seen   map[string]seenRef
}

// Close releases what the lookups kept.
func (f *FSRefs) Close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropScanned()
	f.scans = scansBeforeParse // no more mapping
	f.closed = true
}

// dropScanned forgets the kept packed-refs; f.mu is held.
func (f *FSRefs) dropScanned() {
	if f.scanFile != nil {
		f.scanFile.Close()
	}
	f.scanned, f.scanFile, f.scanBody, f.scannedStat = nil, nil, 0, nil
}

// packed returns the parsed packed-refs, re-reading the file when it
// changed.
func (f *FSRefs) packed() ([]string, []plumbing.Hash, error) {
	names, hashes, _, err := f.packedAll()
	return names, hashes, err
}

// packedDamage is a line of packed-refs that is not a ref line: its hash
// or name is not one, or it is the last line and has no newline (the file
// was cut short). git refuses such a file; cad reports the refs it may
// hold as damaged and keeps reading the others.
type packedDamage struct {
	line int    // its number, from 1
	text string // what it holds, shortened
	// name is the ref the line names when its name reads as one but its
	// value does not; "" when the ref it held cannot be told.
	name string
	// lo and hi bound the name of the ref a line without a name held: in
	// a sorted file it lies strictly between the names of the good lines
	// around it ("" is no bound); in an unsorted file it may be any.
	lo, hi string
}

// err returns the damage as a *DamagedRefError for ref name.
func (d packedDamage) err(name string) error {
	if d.name != "" {
		return &DamagedRefError{Ref: name, Reason: fmt.Sprintf("packed-refs line %d holds %q, not an object id and a ref name", d.line, d.text)}
	}
	return &DamagedRefError{Ref: name, Reason: fmt.Sprintf("packed-refs line %d holds %q, not a ref line, and may be this ref's", d.line, d.text)}
}

// covers reports whether the nameless damaged line may have held ref
// name.
func (d packedDamage) covers(name string) bool {
	return d.name == "" && (d.lo == "" || name > d.lo) && (d.hi == "" || name < d.hi)
}

// coversPrefix reports whether the nameless damaged line may have held a
// ref whose name starts with prefix.
func (d packedDamage) coversPrefix(prefix string) bool {
	if d.name != "" {
		return false
	}
	if d.hi != "" && prefix >= d.hi {
		return false
	}
	// The names starting with prefix sort below end.
	end := ""
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xff {
			end = prefix[:i] + string([]byte{prefix[i] + 1})
			break
		}
	}
	return d.lo == "" || end == "" || d.lo < end
}

// validRefName reports whether name reads as the name of a ref in
// packed-refs.
func validRefName(name string) bool {
	return strings.HasPrefix(name, "refs/") && len(name) > len("refs/") && !strings.ContainsAny(name, " \t\x00\x7f") && !strings.Contains(name, "..")
}

// packedAll returns the parsed packed-refs and its damaged lines,
// re-reading the file when it changed.
func (f *FSRefs) packedAll() ([]string, []plumbing.Hash, []packedDamage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := filepath.Join(f.GitDir, "packed-refs")
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		f.names, f.hashes, f.bad, f.modTime, f.size, f.id = nil, nil, nil, time.Time{}, -1, [41]byte{}
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if f.hashes != nil && f.sameParsed(fi) {
		return f.names, f.hashes, f.bad, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, nil, err
	}
	f.dropScanned() // parsed from now on
	// The names are substrings of one string, the hashes in a slice
	// beside them: a repository of 50,000 tags costs a few MB, not a
	// string per line and a map.
	text := string(data)
	type entry struct {
		name string
		h    plumbing.Hash
	}
	var entries []entry
	var bad []packedDamage
	sorted := false
	open := -1 // the first damage still waiting for its hi bound
	lineNo := 0
	for rest := text; rest != ""; {
		line, next, complete := strings.Cut(rest, "\n")
		rest = next
		lineNo++
		line = strings.TrimSuffix(line, "\r")
		if lineNo == 1 && sortedHeader([]byte(line)) {
			sorted = true
		}
		if line == "" || lineNo == 1 && line[0] == '#' {
			continue
		}
		prev := ""
		if len(entries) > 0 {
			prev = entries[len(entries)-1].name
		}
		damage := packedDamage{line: lineNo, text: truncate(line, 60)}
		if line[0] == '^' {
			// The peeled value of the ref above.
			if complete && plumbing.IsHash(line[1:]) {
				continue
			}
			// It damages that ref; with none above, any ref.
			damage.name = prev
			bad = append(bad, damage)
			continue
		}
		h, name, ok := strings.Cut(line, " ")
		if complete && ok && plumbing.IsHash(h) && validRefName(name) {
			entries = append(entries, entry{name, plumbing.NewHash(h)})
			if sorted {
				for ; open >= 0 && open < len(bad); open++ {
					if bad[open].name == "" {
						bad[open].hi = name
					}
				}
			}
			open = -1
			continue
		}
		if complete && ok && validRefName(name) {
			damage.name = name
		} else if sorted {
			damage.lo = prev
			if open < 0 {
				open = len(bad)
			}
		}
		bad = append(bad, damage)
	}
	// git writes them sorted; a name written twice keeps its last value.
	// A ref with a damaged line (its peeled value) is damaged.
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	names := make([]string, 0, len(entries))
	hashes := make([]plumbing.Hash, 0, len(entries))
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].name == e.name {
			continue
		}
		if len(bad) > 0 && slices.ContainsFunc(bad, func(d packedDamage) bool { return d.name == e.name }) {
			continue
		}
		names = append(names, e.name)
		hashes = append(hashes, e.h)
	}
	f.names, f.hashes, f.bad, f.modTime, f.size = names, hashes, bad, fi.ModTime(), fi.Size()
	f.id, _ = PackedIdentity(fi)
	return names, hashes, bad, nil
}

// sameParsed reports whether fi, packed-refs' stat, describes the file
// parsed into f.names: the same size and modification time and, where
// known, the same identity (inode and change time), as a file written
// anew in the same tick of the clock with the same size has another
// inode. f.mu is held.
func (f *FSRefs) sameParsed(fi os.FileInfo) bool {
	if !fi.ModTime().Equal(f.modTime) || fi.Size() != f.size {
		return false
	}
	id, ok := PackedIdentity(fi)
	return !ok || id == f.id
}

// loose reads the loose ref file name; ok is false when there is none or
// it is a symbolic ref. A file that is neither a hash nor a symbolic ref
// (empty, cut short, garbage) is a *DamagedRefError: it shadows whatever
// packed-refs holds for the name, as it does for git.
func (f *FSRefs) loose(name string) (plumbing.Hash, bool, error) {
	data, err := os.ReadFile(filepath.Join(f.GitDir, filepath.FromSlash(name)))
	if err != nil {
		if notExist(err) {
			return plumbing.ZeroHash, false, nil
		}
		return plumbing.ZeroHash, false, err
	}
	s := strings.TrimSpace(string(data))
	switch {
	case plumbing.IsHash(s):
		return plumbing.NewHash(s), true, nil
	case strings.HasPrefix(s, "ref: "):
		return plumbing.ZeroHash, false, nil
	case s == "":
		return plumbing.ZeroHash, false, &DamagedRefError{Ref: name, Reason: "the ref file is empty"}
	}
	return plumbing.ZeroHash, false, &DamagedRefError{Ref: name, Reason: fmt.Sprintf("the ref file holds %q, not an object id", truncate(s, 60))}
}

// DamagedRefError reports a ref that cannot be read as git reads it: its
// file is empty or not an object id, or it names an object the repository
// does not have. It matches repository.ErrCorrupt. Only the revisions that
// ref holds are affected: List leaves them out (and logs a warning), Get
// and writes return this error for them, and cad never rewrites such a
// ref by itself: setting it with git update-ref, or removing the file,
// repairs it.
//
// A line of packed-refs that is not a ref line is damage too, as git reads
// it: when it still names its ref, that ref is damaged; when it does not,
// every ref it may have held (in a sorted file, those whose names sort
// between the good lines around it) is reported damaged, List warns about
// it, and a write that needs one of those names to be free (a new draft, a
// revision number of a package concerned) fails with this error, so that
// no revision number is handed out twice. Ref then ends in "..." when it
// names a prefix. Removing or repairing the line (git pack-refs rewrites
// the file) repairs it.
type DamagedRefError struct {
	Ref    string // the ref's full name, refs/..., or a prefix followed by "..."
	Reason string
}

// Error says which ref is damaged and how.
func (e *DamagedRefError) Error() string { return "damaged ref " + e.Ref + ": " + e.Reason }

// Unwrap returns repository.ErrCorrupt.
func (e *DamagedRefError) Unwrap() error { return repository.ErrCorrupt }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// notExist reports whether err says there is no file: none, a directory,
// a path through a file, or a name too long to be a file's (a ref that
// can only be packed).
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENAMETOOLONG)
}

// Ref returns the value of ref name.
func (f *FSRefs) Ref(name plumbing.ReferenceName) (plumbing.Hash, bool, error) {
	if h, ok := f.overlaid(string(name)); ok {
		return h, !h.IsZero(), nil
	}
	return f.refOnDisk(name)
}

// refOnDisk returns the value of ref name on disk, without the overlay.
func (f *FSRefs) refOnDisk(name plumbing.ReferenceName) (plumbing.Hash, bool, error) {
	if h, ok, err := f.loose(string(name)); err != nil || ok {
		return h, ok, err
	}
	if h, ok, done, err := f.packedScan(string(name)); done || err != nil {
		return h, ok, err
	}
	names, hashes, bad, err := f.packedAll()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, ok := packedLookup(names, hashes, string(name))
	if !ok {
		if err := packedDamageOf(bad, string(name)); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	return h, ok, nil
}

// packedDamageOf returns the *DamagedRefError of ref name when a damaged
// line of packed-refs holds it or may hold it, else nil.
func packedDamageOf(bad []packedDamage, name string) error {
	for _, d := range bad {
		if d.name == name || d.covers(name) {
			return d.err(name)
		}
	}
	return nil
}

// packedLookup returns the value of name in the parsed packed-refs.
func packedLookup(names []string, hashes []plumbing.Hash, name string) (plumbing.Hash, bool) {
	if i := sort.SearchStrings(names, name); i < len(names) && names[i] == name {
		return hashes[i], true
	}
	return plumbing.ZeroHash, false
}

// scansBeforeParse is how many single lookups read packed-refs directly
// before it is parsed whole: a process that reads one revision should not
// pay for every ref of a large repository, one that reads many should
// parse once.
const scansBeforeParse = 16

// packedScan looks name up in packed-refs by searching the file for its
// line, without parsing the others, while the parsed form is not current
// and fewer than scansBeforeParse lookups were made; done is false when
// the caller should use the parsed form instead.
//
// When another writer rewrote packed-refs since it was parsed, the
// lookups go back to searching the file, scansBeforeParse of them, before
// it is parsed again: a process that made one write after another's
// (which rewrites packed-refs to delete a ref) pays a few block reads,
// not a parse of every ref.
func (f *FSRefs) packedScan(name string) (h plumbing.Hash, ok, done bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := filepath.Join(f.GitDir, "packed-refs")
	if f.hashes != nil && !f.closed {
		fi, err := os.Stat(p)
		if err != nil {
			return plumbing.ZeroHash, false, false, nil // packed reports it
		}
		if f.sameParsed(fi) {
			// A miss is the parsed form's to answer: a damaged line
			// may hold name.
			h, ok := packedLookup(f.names, f.hashes, name)
			return h, ok, ok, nil
		}
		f.names, f.hashes, f.scans = nil, nil, 0
	}
	if f.hashes != nil || f.scans >= scansBeforeParse {
		return plumbing.ZeroHash, false, false, nil
	}
	f.scans++
	fi, err := os.Stat(p)
	if err != nil {
		f.dropScanned()
		if notExist(err) {
			return plumbing.ZeroHash, false, true, nil
		}
		return plumbing.ZeroHash, false, true, err
	}
	if f.scannedStat == nil || !os.SameFile(fi, f.scannedStat) || fi.Size() != f.scannedStat.Size() || !fi.ModTime().Equal(f.scannedStat.ModTime()) {
		f.dropScanned()
		if err := f.openPacked(p); err != nil {
			return plumbing.ZeroHash, false, true, err
		}
	}
	if f.scanFile != nil {
		var clean bool
		h, ok, clean, err = searchPackedAt(f.scanFile, f.scanBody, f.scannedStat.Size(), name)
		// A damaged line where name's would be: the parsed form says
		// what it may hold.
		return h, ok, clean || err != nil, err
	}
	if !f.scanClean {
		return plumbing.ZeroHash, false, false, nil
	}
	h, ok = searchPacked(f.scanned, name)
	return h, ok, true, nil
}

// packedReadWhole: a packed-refs up to this size is read whole for the
// lookups; a larger sorted one is read a block at a time.
const packedReadWhole = 16 << 10

// openPacked opens packed-refs for lookups: read whole when small or not
// sorted, else kept open so that a lookup reads only the blocks its
// binary search looks at (a handful of system calls; mapping the file
// would cost a page fault a block, dearer, and the munmap); f.mu is held.
func (f *FSRefs) openPacked(p string) error {
	file, err := os.Open(p)
	if err != nil {
		if notExist(err) {
			return nil
		}
		return err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return err
	}
	f.scannedStat = fi
	if fi.Size() > packedReadWhole {
		head := make([]byte, min(fi.Size(), 4096))
		if _, err := file.ReadAt(head, 0); err != nil {
			file.Close()
			return err
		}
		if end := bytes.IndexByte(head, '\n'); end >= 0 && sortedHeader(head[:end]) {
			f.scanFile, f.scanBody = file, int64(end+1)
			return nil
		}
	}
	defer file.Close()
	f.scanned, err = io.ReadAll(file)
	f.scanClean = cleanLines(f.scanned, true)
	return err
}

// cleanLines reports whether every line of packed-refs content b is a
// ref line or a peeled value (or, with header, the first line a
// comment), and b ends with a newline.
func cleanLines(b []byte, header bool) bool {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return false
	}
	for first := true; len(b) > 0; first = false {
		i := bytes.IndexByte(b, '\n')
		line := string(bytes.TrimSuffix(b[:i], []byte("\r")))
		b = b[i+1:]
		switch {
		case line == "" || first && header && line[0] == '#':
		case line[0] == '^':
			if !plumbing.IsHash(line[1:]) {
				return false
			}
		default:
			h, name, ok := strings.Cut(line, " ")
			if !ok || !plumbing.IsHash(h) || !validRefName(name) {
				return false
			}
		}
	}
	return true
}

// sortedHeader reports whether the first line of a packed-refs file says
// its lines are sorted.
func sortedHeader(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	return bytes.HasPrefix(line, []byte("# pack-refs with:")) && bytes.Contains(append(bytes.Clone(line), ' '), []byte(" sorted "))
}

// searchPackedAt finds the value of ref name in a sorted packed-refs file
// of size bytes whose lines start at body: packedLineAt's binary search a
// block at a time for the first ref line at or after name, then that
// line. clean is false when the search met a line that is not a ref line
// (or name's own line is damaged): the caller must then look at the whole
// file; err is a read's error.
func searchPackedAt(r io.ReaderAt, body, size int64, name string) (h plumbing.Hash, found, clean bool, err error) {
	at, line, ok, err := packedLineAt(r, body, size, name)
	if !ok || err != nil {
		return plumbing.ZeroHash, false, false, err
	}
	if at == size || string(line[41:]) != name {
		return plumbing.ZeroHash, false, true, nil // the first line past name's place
	}
	if !plumbing.IsHash(string(line[:40])) {
		return plumbing.ZeroHash, false, false, nil
	}
	return plumbing.NewHash(string(line[:40])), true, true, nil
}

// searchPacked finds the value of ref name in the content of a
// packed-refs file: by binary search when its header says the file is
// sorted (as git and cad write it), else by looking for its line.
func searchPacked(data []byte, name string) (plumbing.Hash, bool) {
	lineAt := func(start int) (line []byte, end int) {
		end = bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += start
		}
		return bytes.TrimSuffix(data[start:end], []byte("\r")), end
	}
	header, end := lineAt(0)
	if !sortedHeader(header) {
		return searchPackedLinear(data, name)
	}
	// Lines start in [lo, hi).
	lo, hi := end+1, len(data)
	for lo < hi {
		mid := lo + (hi-lo)/2
		start := lo
		if i := bytes.LastIndexByte(data[lo:mid], '\n'); i >= 0 {
			start = lo + i + 1
		}
		line, end := lineAt(start)
		refStart := start
		if len(line) > 0 && line[0] == '^' {
			// The peeled value of the ref on the line before.
			if start == lo {
				lo = end + 1
				continue
			}
			refStart = lo
			if i := bytes.LastIndexByte(data[lo:start-1], '\n'); i >= 0 {
				refStart = lo + i + 1
			}
			line, _ = lineAt(refStart)
		}
		if len(line) < 42 || line[40] != ' ' {
			return searchPackedLinear(data, name) // not as expected: look at every line
		}
		switch c := strings.Compare(string(line[41:]), name); {
		case c == 0:
			if !plumbing.IsHash(string(line[:40])) {
				return plumbing.ZeroHash, false
			}
			return plumbing.NewHash(string(line[:40])), true
		case c < 0:
			lo = end + 1
		default:
			hi = refStart
		}
	}
	return plumbing.ZeroHash, false
}

// searchPackedLinear finds the line of ref name in packed-refs content.
func searchPackedLinear(data []byte, name string) (plumbing.Hash, bool) {
	needle := []byte(" " + name)
	for off := 0; ; {
		i := bytes.Index(data[off:], needle)
		if i < 0 {
			return plumbing.ZeroHash, false
		}
		i += off
		end := i + len(needle)
		lineStart := i - 40
		if lineStart >= 0 && (lineStart == 0 || data[lineStart-1] == '\n') &&
			(end == len(data) || data[end] == '\n' || data[end] == '\r') && plumbing.IsHash(string(data[lineStart:i])) {
			return plumbing.NewHash(string(data[lineStart:i])), true
		}
		off = i + 1
	}
}

// ChildNames returns the names of the refs directly under prefix (which
// ends in a slash) without reading their values.
//
// A damaged line of packed-refs that names a ref under prefix counts as
// that ref; one that may have held a ref under prefix whose name cannot be
// read is a *DamagedRefError: the names are not all known.
func (f *FSRefs) ChildNames(prefix string) ([]string, error) {
	var out []string
	names, _, bad, err := f.packedAll()
	if err != nil {
		return nil, err
	}
	for i := sort.SearchStrings(names, prefix); i < len(names) && strings.HasPrefix(names[i], prefix); i++ {
		if rest := names[i][len(prefix):]; !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	for _, d := range bad {
		if d.coversPrefix(prefix) {
			return nil, d.err(prefix + "...")
		}
		if rest, ok := strings.CutPrefix(d.name, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	entries, err := os.ReadDir(filepath.Join(f.GitDir, filepath.FromSlash(prefix)))
	if err != nil && !notExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Children returns the refs directly under prefix (which ends in a
// slash), not those further down. A damaged ref is left out and passed to
// damaged.
func (f *FSRefs) Children(prefix string, damaged func(error)) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	names, hashes, bad, err := f.packedAll()
	if err != nil {
		return nil, err
	}
	lo := sort.SearchStrings(names, prefix)
	hi := lo + sort.Search(len(names)-lo, func(i int) bool { return !strings.HasPrefix(names[lo+i], prefix) })
	// Sized for the packed refs under prefix: a package's thousands of
	// tags would otherwise grow the map a dozen times.
	out := make(map[plumbing.ReferenceName]plumbing.Hash, hi-lo)
	for i := lo; i < hi; i++ {
		if !strings.Contains(names[i][len(prefix):], "/") {
			out[plumbing.ReferenceName(names[i])] = hashes[i]
		}
	}
	entries, err := os.ReadDir(filepath.Join(f.GitDir, filepath.FromSlash(prefix)))
	if err != nil && !notExist(err) {
		return nil, err
	}
	reportPackedDamage(bad, []string{prefix}, nil, func(name string) bool {
		if strings.Contains(name[len(prefix):], "/") {
			return true
		}
		_, err := os.Lstat(filepath.Join(f.GitDir, filepath.FromSlash(name)))
		return err == nil // a loose ref, damaged or not, shadows the line
	}, damaged)
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		name := prefix + e.Name()
		h, ok, err := f.loose(name)
		if err != nil {
			if !IsDamaged(err) {
				return nil, err
			}
			delete(out, plumbing.ReferenceName(name)) // shadows packed-refs
			damaged(err)
			continue
		}
		if ok {
			out[plumbing.ReferenceName(name)] = h
		}
	}
	f.overlayUnder(func(name string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		return ok && !strings.Contains(rest, "/")
	}, func(name string, h plumbing.Hash) {
		if h.IsZero() {
			delete(out, plumbing.ReferenceName(name))
		} else {
			out[plumbing.ReferenceName(name)] = h
		}
	})
	return out, nil
}

// reportPackedDamage passes to damaged the damaged lines of packed-refs
// (bad) that hold, or may hold, a ref under one of prefixes or named in
// extra, except named ones shadowed says are hidden (by a loose ref).
func reportPackedDamage(bad []packedDamage, prefixes []string, extra []plumbing.ReferenceName, shadowed func(name string) bool, damaged func(error)) {
	for _, d := range bad {
		if d.name == "" {
			for _, p := range prefixes {
				if d.coversPrefix(p) {
					damaged(d.err(p + "..."))
					break
				}
			}
			continue
		}
		under := slices.Contains(extra, plumbing.ReferenceName(d.name))
		for _, p := range prefixes {
			under = under || strings.HasPrefix(d.name, p)
		}
		if under && !shadowed(d.name) {
			damaged(d.err(d.name))
		}
	}
}

// IsDamaged reports whether err is a *DamagedRefError.
func IsDamaged(err error) bool {
	var d *DamagedRefError
	return errors.As(err, &d)
}

// Under returns every ref below prefix (which ends in a slash), at any
// depth, reading only that part of the refs directory and of packed-refs.
// A damaged ref is left out and passed to damaged.
func (f *FSRefs) Under(prefix string, damaged func(error)) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	snap, err := f.Snapshot([]string{prefix}, nil, damaged)
	if err != nil {
		return nil, err
	}
	out := make(map[plumbing.ReferenceName]plumbing.Hash, snap.Len())
	for i, n := range snap.Names {
		out[plumbing.ReferenceName(n)] = snap.Hashes[i]
	}
	return out, nil
}

// walkLoose calls visit with the name of every loose ref file below
// prefix (which ends in a slash), lock files left out, and, when dir is
// set, dir with the path of every directory below prefix's root.
func (f *FSRefs) walkLoose(prefix string, visit func(name string, d fs.DirEntry) error, dir func(p string, d fs.DirEntry)) error {
	root := filepath.Join(f.GitDir, filepath.FromSlash(prefix))
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if notExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if dir != nil && p != root {
				dir(p, d)
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(f.GitDir, p)
		if err != nil {
			return err
		}
		return visit(filepath.ToSlash(rel), d)
	})
}

// DropDamaged removes every damaged loose ref (a mirror's, which the next
// fetch restores) and returns how many it removed.
func (f *FSRefs) DropDamaged() (int, error) {
	var bad []string
	_, err := f.Under("refs/", func(err error) {
		var d *DamagedRefError
		if errors.As(err, &d) {
			bad = append(bad, d.Ref)
		}
	})
	if err != nil {
		return 0, err
	}
	for _, name := range bad {
		if err := os.Remove(f.refPath(plumbing.ReferenceName(name))); err != nil && !notExist(err) {
			return 0, err
		}
	}
	return len(bad), nil
}
