package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

const (
	modeRegular = filemode.Regular
	modeDir     = filemode.Dir
)

// treeEntry is one entry of a git tree. Decoded trees are shared through
// the cache and never modified.
type treeEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

// commitInfo is what cad reads of a commit.
type commitInfo struct {
	hash        plumbing.Hash
	tree        plumbing.Hash
	parents     []plumbing.Hash
	author      object.Signature
	message     string
	annotations []annotation
}

// pkgEntry is a package found under a tree: its path relative to the tree
// and its own tree.
type pkgEntry struct {
	path string
	tree plumbing.Hash
}

// Cache kinds.
const (
	kindTree byte = iota
	kindCommit
	kindPeel
	kindPackages     // packages under a tree, the tree being a package candidate
	kindPackagesRoot // packages under a tree at the top of the directory
	kindFiles
	kindInfo
	kindTagAnnotations // kpt: annotations of an annotated tag's message
	kindSubtree        // the directory a path leads to under a tree
	kindPacked         // an object resolved out of a pack, by pack and offset
)

var errNotCommit = errors.New("not a commit")

// tree returns the entries of tree h.
func (v *view) tree(h plumbing.Hash) ([]treeEntry, error) {
	if h == emptyTree {
		return nil, nil
	}
	if e, ok := v.cache.get(kindTree, h); ok {
		return e.([]treeEntry), nil
	}
	_, data, err := v.raw(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return v.parsedTree(h, data)
}

// parsedTree decodes data, the raw content of tree h, and caches it.
func (v *view) parsedTree(h plumbing.Hash, data []byte) ([]treeEntry, error) {
	out, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("%w: tree %s: %w", repository.ErrCorrupt, h, err)
	}
	size := int64(64)
	for _, e := range out {
		size += int64(len(e.name)) + 64
	}
	v.cache.put(kindTree, h, out, size)
	return out, nil
}

// commit returns commit h; h may also name an annotated tag, which is
// peeled.
func (v *view) commit(h plumbing.Hash) (*commitInfo, error) {
	if e, ok := v.cache.get(kindCommit, h); ok {
		return e.(*commitInfo), nil
	}
	if e, ok := v.cache.get(kindPeel, h); ok {
		return v.commit(e.(plumbing.Hash))
	}
	if ci := v.idx.commit(h); ci != nil {
		// Not cached: the index has it, and a list reads it once.
		return ci, nil
	}
	t, data, err := v.raw(plumbing.AnyObject, h)
	if err != nil {
		return nil, err
	}
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.Write(data)
	switch t {
	case plumbing.CommitObject:
	case plumbing.TagObject:
		tag, err := object.DecodeTag(nil, o)
		if err != nil {
			return nil, fmt.Errorf("%w: tag %s: %w", repository.ErrCorrupt, h, err)
		}
		v.cache.put(kindPeel, h, tag.Target, 64)
		anns := annotations(tag.Message)
		if anns == nil {
			anns = []annotation{} // cached too: "none" is an answer
		}
		v.cache.put(kindTagAnnotations, h, anns, int64(64+len(tag.Message)))
		return v.commit(tag.Target)
	default:
		return nil, fmt.Errorf("%w: object %s is a %s: %w", repository.ErrCorrupt, h, o.Type(), errNotCommit)
	}
	ci, ok := decodeCommit(h, data)
	if !ok {
		c := &object.Commit{}
		if err := c.Decode(o); err != nil {
			return nil, fmt.Errorf("%w: commit %s: %w", repository.ErrCorrupt, h, err)
		}
		ci = &commitInfo{hash: h, tree: c.TreeHash, parents: c.ParentHashes, author: c.Author, message: c.Message}
	}
	ci.annotations = annotations(ci.message)
	v.cache.put(kindCommit, h, ci, int64(256+len(ci.message)))
	v.idx.addCommit(ci)
	return ci, nil
}

// decodeCommit reads what cad keeps of commit h from its raw content, as
// go-git's decoder reads it: the tree (the first header), the parents
// that follow it, the author right after them (else none), and the
// message after the first blank line; other headers are skipped. ok is
// false when the commit does not start with a valid tree header or a
// parent's id is malformed, for go-git to decode (and report). It saves
// the decoder's copies and its hash of the whole object, which a list
// or a workspace lookup pays for every tag.
func decodeCommit(h plumbing.Hash, data []byte) (*commitInfo, bool) {
	ci := &commitInfo{hash: h}
	line := func() ([]byte, bool) {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			l := data
			data = nil
			return l, len(l) > 0
		}
		l := data[:i]
		data = data[i+1:]
		return l, true
	}
	l, _ := line()
	rest, ok := bytes.CutPrefix(l, []byte("tree "))
	if !ok || !plumbing.IsHash(string(rest)) {
		return nil, false
	}
	ci.tree = plumbing.NewHash(string(rest))
	for {
		if len(data) == 0 {
			return ci, true
		}
		if data[0] == '\n' {
			ci.message = string(data[1:])
			return ci, true
		}
		save := data
		l, _ = line()
		rest, ok := bytes.CutPrefix(l, []byte("parent "))
		if !ok {
			if bytes.Equal(l, []byte("parent")) {
				return nil, false
			}
			data = save
			break
		}
		if !plumbing.IsHash(string(rest)) {
			return nil, false
		}
		ci.parents = append(ci.parents, plumbing.NewHash(string(rest)))
	}
	if bytes.HasPrefix(data, []byte("author\n")) || bytes.Equal(data, []byte("author")) {
		return nil, false
	}
	if rest, ok := bytes.CutPrefix(data, []byte("author ")); ok {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		ci.author.Decode(rest[:i])
	}
	if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
		ci.message = string(data[i+2:])
	}
	return ci, true
}

// subtree returns the tree at path p (slash-separated, "" for root) under
// tree root, and whether it exists as a directory.
func (v *view) subtree(root plumbing.Hash, p string) (plumbing.Hash, bool, error) {
	h := root
	if p == "" {
		return h, true, nil
	}
	// Trees never change, so neither does where a path leads: the answer
	// is cached, not the trees on the way (a root tree of an approval
	// commit holds every package and is scanned, not decoded).
	ck := plumbing.ComputeHash(plumbing.BlobObject, []byte(root.String()+"\x00"+p))
	if e, ok := v.cache.get(kindSubtree, ck); ok {
		sub := e.(plumbing.Hash)
		return sub, !sub.IsZero(), nil
	}
	for _, seg := range strings.Split(p, "/") {
		e, ok, err := v.lookup(h, seg)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if !ok || e.mode != modeDir {
			v.cache.put(kindSubtree, ck, plumbing.ZeroHash, int64(64+len(p)))
			return plumbing.ZeroHash, false, nil
		}
		h = e.hash
	}
	v.cache.put(kindSubtree, ck, h, int64(64+len(p)))
	return h, true, nil
}

// lookup returns the entry name of tree h. A tree already decoded in the
// cache is searched there; otherwise the raw tree is scanned for the
// entry without decoding the others, and not cached: on the way to one
// package, the trees above it (the root tree of an approval commit holds
// every package) are mostly read once.
func (v *view) lookup(h plumbing.Hash, name string) (treeEntry, bool, error) {
	if h == emptyTree {
		return treeEntry{}, false, nil
	}
	if e, ok := v.cache.get(kindTree, h); ok {
		te, found := findEntry(e.([]treeEntry), name)
		return te, found, nil
	}
	if v.packs != nil {
		// A tree built by a delta is searched without building it.
		te, found, err := v.packs.lookupEntry(h, name, v.cache, &v.final)
		if !errors.Is(err, errRopeUnfit) {
			if err != nil {
				return treeEntry{}, false, fmt.Errorf("tree %s: %w", h, err)
			}
			return te, found, nil
		}
	}
	_, data, err := v.rawScan(plumbing.TreeObject, h)
	if err != nil {
		return treeEntry{}, false, err
	}
	te, found, err := scanTree(data, name)
	if err != nil {
		return treeEntry{}, false, fmt.Errorf("%w: tree %s: %w", repository.ErrCorrupt, h, err)
	}
	return te, found, nil
}

// scanTree finds the entry name in the raw content of a tree object:
// entries of "<octal mode> <name>\x00<20-byte id>".
func scanTree(data []byte, name string) (treeEntry, bool, error) {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return treeEntry{}, false, errors.New("malformed tree: no mode")
		}
		nul := bytes.IndexByte(data[sp+1:], 0)
		if nul < 0 || sp+1+nul+1+20 > len(data) {
			return treeEntry{}, false, errors.New("malformed tree: entry cut short")
		}
		entName := data[sp+1 : sp+1+nul]
		idStart := sp + 1 + nul + 1
		if string(entName) == name {
			mode, err := filemode.New(string(data[:sp]))
			if err != nil {
				return treeEntry{}, false, fmt.Errorf("malformed tree: %w", err)
			}
			var id plumbing.Hash
			copy(id[:], data[idStart:idStart+20])
			return treeEntry{name: name, mode: mode, hash: id}, true, nil
		}
		data = data[idStart+20:]
	}
	return treeEntry{}, false, nil
}

// parseTree decodes the raw content of a tree object.
func parseTree(data []byte) ([]treeEntry, error) {
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, errors.New("malformed tree: no mode")
		}
		nul := bytes.IndexByte(data[sp+1:], 0)
		if nul < 0 || sp+1+nul+1+20 > len(data) {
			return nil, errors.New("malformed tree: entry cut short")
		}
		mode, err := filemode.New(string(data[:sp]))
		if err != nil {
			return nil, fmt.Errorf("malformed tree: %w", err)
		}
		idStart := sp + 1 + nul + 1
		e := treeEntry{name: string(data[sp+1 : sp+1+nul]), mode: mode}
		copy(e.hash[:], data[idStart:idStart+20])
		out = append(out, e)
		data = data[idStart+20:]
	}
	return out, nil
}

// packageTree returns the tree of the package at full in commit c, and
// false when there is no package there: no directory, or a directory
// with neither a Kptfile nor a cad package file that is not registered
// either (registered: a ref's kpt: annotation names full; see doc.go).
func (v *view) packageTree(c *commitInfo, full string, registered bool) (plumbing.Hash, bool, error) {
	var h plumbing.Hash
	if e, ok := v.idx.subtree(c.tree, full); ok {
		h = e.hash
	} else if t, ok := v.sortedSubtree(c.tree, full); ok {
		h = t
	} else {
		var ok bool
		var err error
		h, ok, err = v.subtree(c.tree, full)
		if err != nil || !ok {
			return plumbing.ZeroHash, false, err
		}
		if v.idx != nil {
			v.idx.addSubtree(c.tree, full, treeEntry{name: path.Base(full), mode: modeDir, hash: h})
		} else {
			// A Get or a write, which do not load cad-index: what the
			// root tree told is kept where the next process's Get looks.
			v.paths.add(pathRecord{key: pathKey36(c.tree, full), tree: h})
		}
	}
	if registered {
		return h, true, nil
	}
	entries, err := v.tree(h)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	return h, hasKptfile(entries), nil
}

// sortedSubtree looks the package tree at full under root up in
// cad-paths, when the view has no loaded cad-index to ask (a Get): two
// reads of a small file instead of the root tree's delta chain.
func (v *view) sortedSubtree(root plumbing.Hash, full string) (plumbing.Hash, bool) {
	if v.idx != nil {
		return plumbing.ZeroHash, false // it holds all cad-paths does
	}
	return v.paths.subtree(root, full)
}

// tagAnnotations returns the kpt: annotations of the message of tag object
// h, nil for a lightweight tag; v.commit(h) must have been called.
func (v *view) tagAnnotations(h plumbing.Hash) []annotation {
	if e, ok := v.cache.get(kindTagAnnotations, h); ok {
		return e.([]annotation)
	}
	if _, ok := v.cache.get(kindPeel, h); !ok {
		return nil
	}
	// An annotated tag whose entry was evicted: read it again.
	_, data, err := v.raw(plumbing.TagObject, h)
	if err != nil {
		return nil
	}
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.TagObject)
	o.Write(data)
	tag, err := object.DecodeTag(nil, o)
	if err != nil {
		return nil
	}
	anns := annotations(tag.Message)
	v.cache.put(kindTagAnnotations, h, anns, int64(64+len(tag.Message)))
	return anns
}

// findEntry returns the entry name of a decoded tree. Git sorts entries
// by name with a directory's name compared as if it ended in "/", so the
// entry is found by binary search under both readings of its name.
func findEntry(entries []treeEntry, name string) (treeEntry, bool) {
	for _, key := range []string{name, name + "/"} {
		i := sort.Search(len(entries), func(i int) bool { return sortName(entries[i]) >= key })
		if i < len(entries) && entries[i].name == name {
			return entries[i], true
		}
	}
	return treeEntry{}, false
}

// sortName is the name git sorts tree entry e by.
func sortName(e treeEntry) string {
	if e.mode == modeDir {
		return e.name + "/"
	}
	return e.name
}

// hasKptfile reports whether a tree holds a package marker, a Kptfile or
// a cad package file (revision.PackageFileName), that is a regular file.
func hasKptfile(entries []treeEntry) bool {
	for _, name := range []string{kptfileName, revision.PackageFileName} {
		e, ok := findEntry(entries, name)
		if ok && (e.mode == filemode.Regular || e.mode == filemode.Executable || e.mode == filemode.Deprecated) {
			return true
		}
	}
	return false
}

// rawHasKptfile is hasKptfile on the raw content of a tree.
func rawHasKptfile(data []byte) (bool, error) {
	for _, name := range []string{kptfileName, revision.PackageFileName} {
		e, ok, err := scanTree(data, name)
		if err != nil {
			return false, err
		}
		if ok && (e.mode == filemode.Regular || e.mode == filemode.Executable || e.mode == filemode.Deprecated) {
			return true, nil
		}
	}
	return false, nil
}

// packages returns the packages under tree h: the directories holding a
// Kptfile, not descending into them. A Kptfile at h itself is not a
// package (it would have an empty path) and does not stop the descent.
func (v *view) packages(h plumbing.Hash) ([]pkgEntry, error) {
	return v.packagesAt(h, true)
}

func (v *view) packagesAt(h plumbing.Hash, root bool) ([]pkgEntry, error) {
	kind := kindPackages
	if root {
		kind = kindPackagesRoot
	}
	if e, ok := v.cache.get(kind, h); ok {
		return e.([]pkgEntry), nil
	}
	var entries []treeEntry
	if e, ok := v.cache.get(kindTree, h); ok {
		entries = e.([]treeEntry)
	} else if h != emptyTree {
		_, data, err := v.raw(plumbing.TreeObject, h)
		if err != nil {
			return nil, err
		}
		// A package's tree is found by its marker without decoding or
		// caching it: listing the branch's packages reads every one.
		if !root {
			marked, err := rawHasKptfile(data)
			if err != nil {
				return nil, fmt.Errorf("%w: tree %s: %w", repository.ErrCorrupt, h, err)
			}
			if marked {
				out := []pkgEntry{{path: "", tree: h}}
				v.cache.put(kind, h, out, 64+48)
				return out, nil
			}
		}
		if entries, err = v.parsedTree(h, data); err != nil {
			return nil, err
		}
	}
	var out []pkgEntry
	if !root && hasKptfile(entries) {
		out = []pkgEntry{{path: "", tree: h}}
	} else {
		for _, e := range entries {
			if e.mode != modeDir {
				continue
			}
			sub, err := v.packagesAt(e.hash, false)
			if err != nil {
				return nil, err
			}
			for _, p := range sub {
				out = append(out, pkgEntry{path: path.Join(e.name, p.path), tree: p.tree})
			}
		}
	}
	size := int64(64)
	for _, p := range out {
		size += int64(len(p.path)) + 48
	}
	v.cache.put(kind, h, out, size)
	return out, nil
}

// files returns the content of the package tree h. Gitlinks are skipped,
// and so are paths cad refuses (such as a .git directory), with a warning.
func (v *view) files(h plumbing.Hash, warn func(string, ...any)) (revision.Files, error) {
	if e, ok := v.cache.get(kindFiles, h); ok {
		return e.(revision.Files), nil
	}
	m := map[string][]byte{}
	var size int64
	var walk func(h plumbing.Hash, prefix string) error
	walk = func(h plumbing.Hash, prefix string) error {
		entries, err := v.tree(h)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := e.name
			if prefix != "" {
				p = prefix + "/" + e.name
			}
			switch {
			case e.mode == modeDir:
				if err := walk(e.hash, p); err != nil {
					return err
				}
				continue
			case e.mode == filemode.Submodule:
				continue
			}
			if err := revision.ValidatePath(p); err != nil {
				warn("skipping file", "path", p, "reason", err)
				continue
			}
			data, err := v.blob(e.hash)
			if err != nil {
				return err
			}
			m[p] = data
			size += int64(len(p)+len(data)) + 64
		}
		return nil
	}
	if err := walk(h, ""); err != nil {
		return revision.Files{}, err
	}
	f, err := revision.NewFiles(m)
	if err != nil {
		return revision.Files{}, err
	}
	v.cache.put(kindFiles, h, f, size)
	return f, nil
}

// emptyTree is the hash of the empty tree.
var emptyTree = plumbing.ComputeHash(plumbing.TreeObject, nil)

// putTree stores a tree of entries, sorted as git sorts them, and returns
// its hash.
func (v *view) putTree(entries []treeEntry) (plumbing.Hash, error) {
	sorted := append([]treeEntry(nil), entries...)
	slices.SortFunc(sorted, compareEntries)
	h, err := v.put(plumbing.TreeObject, encodeTree(sorted))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	size := int64(64)
	for _, e := range sorted {
		size += int64(len(e.name)) + 64
	}
	v.cache.put(kindTree, h, sorted, size)
	return h, nil
}

// encodeTree returns the raw content of a tree of sorted entries: for
// each "<octal mode> <name>\x00<20-byte id>", as git and go-git write
// them (a directory's mode is 40000).
func encodeTree(sorted []treeEntry) []byte {
	n := 0
	for _, e := range sorted {
		n += len(e.name) + 28
	}
	out := make([]byte, 0, n)
	for _, e := range sorted {
		out = strconv.AppendUint(out, uint64(e.mode), 8)
		out = append(out, ' ')
		out = append(out, e.name...)
		out = append(out, 0)
		out = append(out, e.hash[:]...)
	}
	return out
}

// compareEntries orders tree entries as git does: by name, as if
// directories had a trailing slash.
func compareEntries(a, b treeEntry) int {
	n := min(len(a.name), len(b.name))
	if c := strings.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	ca, cb := nextByte(a, n), nextByte(b, n)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

// nextByte returns the byte of e's sort key at i: '/' just past a
// directory's name, 0 past a file's.
func nextByte(e treeEntry, i int) int {
	if i < len(e.name) {
		return int(e.name[i])
	}
	if e.mode == modeDir && i == len(e.name) {
		return '/'
	}
	return 0
}

// putCommit stores a commit and returns its hash.
func (v *view) putCommit(tree plumbing.Hash, parents []plumbing.Hash, author, committer object.Signature, message string) (plumbing.Hash, error) {
	c := &object.Commit{Author: author, Committer: committer, Message: message, TreeHash: tree, ParentHashes: parents}
	data, err := encode(c, plumbing.CommitObject)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return v.put(plumbing.CommitObject, data)
}

// putFiles stores files as a tree and returns its hash; an empty package
// gives the empty tree.
func (v *view) putFiles(files revision.Files) (plumbing.Hash, error) {
	type dir struct {
		files map[string][]byte
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string][]byte{}, dirs: map[string]*dir{}} }
	root := newDir()
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		d := root
		segs := strings.Split(p, "/")
		for _, seg := range segs[:len(segs)-1] {
			sub := d.dirs[seg]
			if sub == nil {
				sub = newDir()
				d.dirs[seg] = sub
			}
			d = sub
		}
		d.files[segs[len(segs)-1]] = data
	}
	var store func(d *dir) (plumbing.Hash, error)
	store = func(d *dir) (plumbing.Hash, error) {
		var entries []treeEntry
		for name, data := range d.files {
			h, err := v.putBlob(data)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, treeEntry{name: name, mode: modeRegular, hash: h})
		}
		for name, sub := range d.dirs {
			h, err := store(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, treeEntry{name: name, mode: modeDir, hash: h})
		}
		return v.putTree(entries)
	}
	return store(root)
}

// replaceSubtree returns the hash of tree root (zero or emptyTree for an
// empty tree) with the directory at p replaced by tree sub, or removed
// when sub is zero or the empty tree. Directories left empty are removed;
// the root is kept, possibly as the empty tree.
func (v *view) replaceSubtree(root plumbing.Hash, p string, sub plumbing.Hash) (plumbing.Hash, error) {
	h, err := v.replaceAt(root, strings.Split(p, "/"), sub)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if h.IsZero() {
		return v.putTree(nil)
	}
	return h, nil
}

func (v *view) replaceAt(root plumbing.Hash, segs []string, sub plumbing.Hash) (plumbing.Hash, error) {
	return v.replaceEntry(root, segs, sub, modeDir)
}

// replaceEntry returns tree root with the entry at segs set to leaf, of
// mode mode (a directory or a regular file), or removed when leaf is zero
// (or, for a directory, the empty tree). Directories left empty are
// removed; an empty result is the zero hash.
func (v *view) replaceEntry(root plumbing.Hash, segs []string, leaf plumbing.Hash, mode filemode.FileMode) (plumbing.Hash, error) {
	var entries []treeEntry
	if !root.IsZero() {
		var err error
		if entries, err = v.tree(root); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	name := segs[0]
	child, childMode := leaf, mode
	if len(segs) > 1 {
		childMode = modeDir
		var sub plumbing.Hash
		if e, ok := findEntry(entries, name); ok && e.mode == modeDir {
			sub = e.hash
		}
		var err error
		if child, err = v.replaceEntry(sub, segs[1:], leaf, mode); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if childMode == modeDir && child == emptyTree {
		child = plumbing.ZeroHash
	}
	out := make([]treeEntry, 0, len(entries)+1)
	for _, e := range entries {
		if e.name != name {
			out = append(out, e)
		}
	}
	if !child.IsZero() {
		out = append(out, treeEntry{name: name, mode: childMode, hash: child})
	}
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	return v.putTree(out)
}

// info returns the Info the root Kptfile of package tree h records, or
// without one its cad package file, reading only that file (cached by its
// blob id); a zero Info when there is neither.
func (v *view) info(h plumbing.Hash) (revision.Info, error) {
	entries, err := v.tree(h)
	if err != nil {
		return revision.Info{}, err
	}
	name := kptfileName
	e, ok := findEntry(entries, name)
	if !ok || e.mode != modeRegular {
		name = revision.PackageFileName
		if e, ok = findEntry(entries, name); !ok || e.mode != modeRegular {
			return revision.Info{}, nil
		}
	}
	if c, ok := v.cache.get(kindInfo, e.hash); ok {
		return cloneInfo(c.(revision.Info)), nil
	}
	data, err := v.blob(e.hash)
	if err != nil {
		return revision.Info{}, err
	}
	files, err := revision.NewFiles(map[string][]byte{name: data})
	if err != nil {
		return revision.Info{}, err
	}
	info, err := revision.InfoFromFiles(files)
	if err != nil {
		return revision.Info{}, err
	}
	v.cache.put(kindInfo, e.hash, info, int64(256+len(data)))
	return cloneInfo(info), nil
}

// cloneInfo returns a copy of i that shares nothing a caller could change
// with the cached one.
func cloneInfo(i revision.Info) revision.Info {
	if i.Upstream != nil {
		u := *i.Upstream
		if u.Git != nil {
			g := *u.Git
			u.Git = &g
		}
		i.Upstream = &u
	}
	if i.UpstreamLock != nil {
		l := *i.UpstreamLock
		if l.Git != nil {
			g := *l.Git
			l.Git = &g
		}
		if l.Generic != nil {
			g := *l.Generic
			l.Generic = &g
		}
		i.UpstreamLock = &l
	}
	i.ReadinessGates = slices.Clone(i.ReadinessGates)
	i.Conditions = slices.Clone(i.Conditions)
	return i
}
