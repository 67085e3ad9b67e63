package gitrepo

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/revision"
)

const (
	modeRegular = filemode.Regular
	modeDir     = filemode.Dir
)

// pkgEntry is a package found under a tree: its path relative to the tree
// and its own tree.
type pkgEntry struct {
	path string
	tree plumbing.Hash
}

var errNotCommit = errors.New("not a commit")

// tree returns the entries of tree h.
func (v *view) tree(h plumbing.Hash) ([]gitobj.TreeEntry, error) {
	if h == emptyTree {
		return nil, nil
	}
	if e, ok := v.cache.Get(gitobj.KindTree, h); ok {
		return e.([]gitobj.TreeEntry), nil
	}
	_, data, err := v.raw(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return v.parsedTree(h, data)
}

// parsedTree decodes data, the raw content of tree h, and caches it.
func (v *view) parsedTree(h plumbing.Hash, data []byte) ([]gitobj.TreeEntry, error) {
	out, err := gitobj.ParseTree(data)
	if err != nil {
		return nil, fmt.Errorf("%w: tree %s: %w", repository.ErrCorrupt, h, err)
	}
	size := int64(64)
	for _, e := range out {
		size += int64(len(e.Name)) + 64
	}
	v.cache.Put(gitobj.KindTree, h, out, size)
	return out, nil
}

// commit returns commit h; h may also name an annotated tag, which is
// peeled.
func (v *view) commit(h plumbing.Hash) (*gitobj.CommitInfo, error) {
	return v.commitKept(h, true)
}

// refCommit is commit for the commit a ref points at. A list reads each
// once (v.sweep): it is kept in the cache only where there is room, as
// the entry to drop first, so that tens of thousands of them do not push
// out what is read more than once, such as the branch's history that the
// placeholders' publishers were found in (whose newest commits are the
// newest tags'), while a repository whose commits fit is listed again
// from the cache.
func (v *view) refCommit(h plumbing.Hash) (*gitobj.CommitInfo, error) {
	return v.commitKept(h, !v.sweep)
}

// commitKept is commit, which keeps what it read in the cache when keep
// is set.
func (v *view) commitKept(h plumbing.Hash, keep bool) (*gitobj.CommitInfo, error) {
	if e, ok := v.cache.Get(gitobj.KindCommit, h); ok {
		return e.(*gitobj.CommitInfo), nil
	}
	if e, ok := v.cache.Get(gitobj.KindPeel, h); ok {
		return v.commitKept(e.(plumbing.Hash), keep)
	}
	t, data, err := v.raw(plumbing.AnyObject, h)
	if err != nil {
		return nil, err
	}
	// go-git's decoders read an object, which copies data: only for a
	// tag, or a commit cad's decoder does not take.
	asObject := func() *plumbing.MemoryObject {
		o := &plumbing.MemoryObject{}
		o.SetType(t)
		o.Write(data)
		return o
	}
	switch t {
	case plumbing.CommitObject:
	case plumbing.TagObject:
		tag, err := object.DecodeTag(nil, asObject())
		if err != nil {
			return nil, fmt.Errorf("%w: tag %s: %w", repository.ErrCorrupt, h, err)
		}
		v.cache.Put(gitobj.KindPeel, h, tag.Target, 64)
		anns := gitobj.Annotations(tag.Message)
		if anns == nil {
			anns = []gitobj.Annotation{} // cached too: "none" is an answer
		}
		v.cache.Put(gitobj.KindTagAnnotations, h, anns, int64(64+len(tag.Message)))
		return v.commitKept(tag.Target, keep)
	default:
		return nil, fmt.Errorf("%w: object %s is a %s: %w", repository.ErrCorrupt, h, t, errNotCommit)
	}
	ci, ok := gitobj.DecodeCommit(h, data)
	if !ok {
		c := &object.Commit{}
		if err := c.Decode(asObject()); err != nil {
			return nil, fmt.Errorf("%w: commit %s: %w", repository.ErrCorrupt, h, err)
		}
		ci = &gitobj.CommitInfo{Hash: h, Tree: c.TreeHash, Parents: c.ParentHashes, Author: c.Author, Message: c.Message}
	}
	ci.Annotations = gitobj.Annotations(ci.Message)
	if keep {
		v.cache.Put(gitobj.KindCommit, h, ci, int64(256+len(ci.Message)))
	} else {
		v.cache.PutCold(gitobj.KindCommit, h, ci, int64(256+len(ci.Message)))
	}
	return ci, nil
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
	if e, ok := v.cache.Get(gitobj.KindSubtree, ck); ok {
		sub := e.(plumbing.Hash)
		return sub, !sub.IsZero(), nil
	}
	for _, seg := range strings.Split(p, "/") {
		e, ok, err := v.lookup(h, seg)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if !ok || e.Mode != modeDir {
			v.cache.Put(gitobj.KindSubtree, ck, plumbing.ZeroHash, int64(64+len(p)))
			return plumbing.ZeroHash, false, nil
		}
		h = e.Hash
	}
	v.cache.Put(gitobj.KindSubtree, ck, h, int64(64+len(p)))
	return h, true, nil
}

// lookup returns the entry name of tree h. A tree already decoded in the
// cache is searched there; otherwise the raw tree is scanned for the
// entry without decoding the others, and not cached: on the way to one
// package, the trees above it (the root tree of an approval commit holds
// every package) are mostly read once.
func (v *view) lookup(h plumbing.Hash, name string) (gitobj.TreeEntry, bool, error) {
	if h == emptyTree {
		return gitobj.TreeEntry{}, false, nil
	}
	if e, ok := v.cache.Get(gitobj.KindTree, h); ok {
		te, found := findEntry(e.([]gitobj.TreeEntry), name)
		return te, found, nil
	}
	if v.packs != nil {
		// A tree built by a delta is searched without building it.
		te, found, err := v.packs.LookupEntry(h, name, v.cache, &v.final)
		if !errors.Is(err, gitobj.ErrRopeUnfit) {
			if err != nil {
				return gitobj.TreeEntry{}, false, fmt.Errorf("tree %s: %w", h, err)
			}
			return te, found, nil
		}
	}
	_, data, err := v.rawScan(plumbing.TreeObject, h)
	if err != nil {
		return gitobj.TreeEntry{}, false, err
	}
	te, found, err := gitobj.ScanTree(data, name)
	if err != nil {
		return gitobj.TreeEntry{}, false, fmt.Errorf("%w: tree %s: %w", repository.ErrCorrupt, h, err)
	}
	return te, found, nil
}

// packageTree returns the tree of the package at full in commit c, and
// false when there is no package there: no directory, or a directory
// with neither a Kptfile nor a cad package file that is not registered
// either (registered: a ref's kpt: annotation names full; see DESIGN.md, "Layout").
func (v *view) packageTree(c *gitobj.CommitInfo, full string, registered bool) (plumbing.Hash, bool, error) {
	h, known := v.knownSubtree(c.Tree, full)
	if !known {
		var ok bool
		var err error
		h, ok, err = v.subtree(c.Tree, full)
		if err != nil || !ok {
			return plumbing.ZeroHash, false, err
		}
		// What the root tree told is kept where the next process looks.
		v.learn(index.PathRecord{Key: index.PathKey36(c.Tree, full), Tree: h})
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

// knownSubtree returns the tree at full under root when cad-paths
// records it: what packageTree learns without reading a tree.
func (v *view) knownSubtree(root plumbing.Hash, full string) (plumbing.Hash, bool) {
	return v.paths.Subtree(root, full)
}

// learn keeps record rec in cad-paths: at once, or, in a list
// (v.learnt), with the others the list learns when it ends.
func (v *view) learn(rec index.PathRecord) {
	if v.learnt != nil {
		v.learnt.add(rec)
		return
	}
	v.paths.Add(rec)
}

// pathLog collects the records a list learns. Safe for concurrent use.
type pathLog struct {
	mu   sync.Mutex
	recs []index.PathRecord
}

func (l *pathLog) add(rec index.PathRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, rec)
	l.mu.Unlock()
}

// flush adds what l collected to pf, in one append or rebuild, and
// empties l.
func (l *pathLog) flush(pf *index.PathFile) {
	l.mu.Lock()
	recs := l.recs
	l.recs = nil
	l.mu.Unlock()
	pf.Add(recs...)
}

// knownOrSubtree returns the tree at full under root and whether there is
// one, from cad-paths when it knows it, else from the trees
// (fresh: what neither file holds).
func (v *view) knownOrSubtree(root plumbing.Hash, full string) (h plumbing.Hash, ok, fresh bool, err error) {
	if h, ok := v.knownSubtree(root, full); ok {
		return h, true, false, nil
	}
	h, ok, err = v.subtree(root, full)
	return h, ok, ok, err
}

// tagAnnotations returns the kpt: annotations of the message of tag object
// h, nil for a lightweight tag; v.commit(h) must have been called.
func (v *view) tagAnnotations(h plumbing.Hash) []gitobj.Annotation {
	if e, ok := v.cache.Get(gitobj.KindTagAnnotations, h); ok {
		return e.([]gitobj.Annotation)
	}
	if _, ok := v.cache.Get(gitobj.KindPeel, h); !ok {
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
	anns := gitobj.Annotations(tag.Message)
	v.cache.Put(gitobj.KindTagAnnotations, h, anns, int64(64+len(tag.Message)))
	return anns
}

// findEntry returns the entry name of a decoded tree. Git sorts entries
// by name with a directory's name compared as if it ended in "/", so the
// entry is found by binary search under both readings of its name.
func findEntry(entries []gitobj.TreeEntry, name string) (gitobj.TreeEntry, bool) {
	for _, key := range []string{name, name + "/"} {
		i := sort.Search(len(entries), func(i int) bool { return sortName(entries[i]) >= key })
		if i < len(entries) && entries[i].Name == name {
			return entries[i], true
		}
	}
	return gitobj.TreeEntry{}, false
}

// sortName is the name git sorts tree entry e by.
func sortName(e gitobj.TreeEntry) string {
	if e.Mode == modeDir {
		return e.Name + "/"
	}
	return e.Name
}

// hasKptfile reports whether a tree holds a package marker, a Kptfile or
// a cad package file (revision.PackageFileName), that is a regular file.
func hasKptfile(entries []gitobj.TreeEntry) bool {
	for _, name := range []string{kptfileName, revision.PackageFileName} {
		e, ok := findEntry(entries, name)
		if ok && (e.Mode == filemode.Regular || e.Mode == filemode.Executable || e.Mode == filemode.Deprecated) {
			return true
		}
	}
	return false
}

// rawHasKptfile is hasKptfile on the raw content of a tree.
func rawHasKptfile(data []byte) (bool, error) {
	for _, name := range []string{kptfileName, revision.PackageFileName} {
		e, ok, err := gitobj.ScanTree(data, name)
		if err != nil {
			return false, err
		}
		if ok && (e.Mode == filemode.Regular || e.Mode == filemode.Executable || e.Mode == filemode.Deprecated) {
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
	kind := gitobj.KindPackages
	if root {
		kind = gitobj.KindPackagesRoot
	}
	if e, ok := v.cache.Get(kind, h); ok {
		return e.([]pkgEntry), nil
	}
	var entries []gitobj.TreeEntry
	if e, ok := v.cache.Get(gitobj.KindTree, h); ok {
		entries = e.([]gitobj.TreeEntry)
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
				v.cache.Put(kind, h, out, 64+48)
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
			if e.Mode != modeDir {
				continue
			}
			sub, err := v.packagesAt(e.Hash, false)
			if err != nil {
				return nil, err
			}
			for _, p := range sub {
				out = append(out, pkgEntry{path: path.Join(e.Name, p.path), tree: p.tree})
			}
		}
	}
	size := int64(64)
	for _, p := range out {
		size += int64(len(p.path)) + 48
	}
	v.cache.Put(kind, h, out, size)
	return out, nil
}

// files returns the content of the package tree h. Gitlinks are skipped,
// and so are paths cad refuses (such as a .git directory), with a
// warning; a symbolic link is an *UnsupportedFileError. The sizes of the
// files are read from their object headers first: a file over v.maxFile,
// or files over v.maxPackage in all, give a *revision.LimitError naming
// the file before any is inflated.
func (v *view) files(h plumbing.Hash, warn func(string, ...any)) (revision.Files, error) {
	if e, ok := v.cache.Get(gitobj.KindFiles, h); ok {
		return e.(revision.Files), nil
	}
	type file struct {
		path string
		blob plumbing.Hash
	}
	var list []file
	var total int64
	var walk func(h plumbing.Hash, prefix string) error
	walk = func(h plumbing.Hash, prefix string) error {
		entries, err := v.tree(h)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := e.Name
			if prefix != "" {
				p = prefix + "/" + e.Name
			}
			switch {
			case e.Mode == modeDir:
				if err := walk(e.Hash, p); err != nil {
					return err
				}
				continue
			case e.Mode == filemode.Submodule:
				warn("skipping submodule (a commit of another repository, kept on write)", "path", p, "commit", e.Hash.String())
				continue
			case e.Mode == filemode.Symlink:
				return &UnsupportedFileError{Path: p, Mode: e.Mode}
			}
			if err := revision.ValidatePath(p); err != nil {
				warn("skipping file", "path", p, "reason", err)
				continue
			}
			if v.maxFile > 0 || v.maxPackage > 0 {
				_, n, err := v.size(e.Hash)
				if err != nil {
					return err
				}
				if v.maxFile > 0 && n > v.maxFile {
					return fileLimit(p, n, v.maxFile)
				}
				if total += n; v.maxPackage > 0 && total > v.maxPackage {
					return &revision.LimitError{What: fmt.Sprintf("the package's files, %d bytes at file %q", total, p),
						Limit: "gitrepo.Options.MaxPackageBytes", Max: v.maxPackage}
				}
			}
			list = append(list, file{p, e.Hash})
		}
		return nil
	}
	if err := walk(h, ""); err != nil {
		return revision.Files{}, err
	}
	m := make(map[string][]byte, len(list))
	var size int64
	for _, f := range list {
		data, err := v.blob(f.blob)
		if err != nil {
			return revision.Files{}, err
		}
		m[f.path] = data
		size += int64(len(f.path)+len(data)) + 64
	}
	f, err := revision.NewFiles(m)
	if err != nil {
		return revision.Files{}, err
	}
	v.cache.Put(gitobj.KindFiles, h, f, size)
	return f, nil
}

// emptyTree is the hash of the empty tree.
var emptyTree = plumbing.ComputeHash(plumbing.TreeObject, nil)

// putTree stores a tree of entries, sorted as git sorts them, and returns
// its hash.
func (v *view) putTree(entries []gitobj.TreeEntry) (plumbing.Hash, error) {
	sorted := append([]gitobj.TreeEntry(nil), entries...)
	if !slices.IsSortedFunc(sorted, gitobj.CompareEntries) {
		slices.SortFunc(sorted, gitobj.CompareEntries)
	}
	h, err := v.put(plumbing.TreeObject, gitobj.EncodeTree(sorted))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	size := int64(64)
	for _, e := range sorted {
		size += int64(len(e.Name)) + 64
	}
	v.cache.Put(gitobj.KindTree, h, sorted, size)
	return h, nil
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
		var entries []gitobj.TreeEntry
		for name, data := range d.files {
			h, err := v.putBlob(data)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, gitobj.TreeEntry{Name: name, Mode: modeRegular, Hash: h})
		}
		for name, sub := range d.dirs {
			h, err := store(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, gitobj.TreeEntry{Name: name, Mode: modeDir, Hash: h})
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
	// The same replacement made before (an approval puts the proposal's
	// package tree in the branch's root tree, as the draft's last commit
	// did when the branch has not moved since) is the tree made then, if
	// it is stored: encoding and hashing a root tree of Porch's flat
	// layout (10,000 packages: 360 KB) is most of what an approval
	// costs that grows with the packages.
	key := replaceKey(root, segs, leaf, mode)
	if c, ok := v.cache.Get(gitobj.KindReplaced, key); ok {
		if h := c.(plumbing.Hash); h.IsZero() || v.has(h) {
			if !h.IsZero() {
				v.written = append(v.written, h) // as put does
			}
			return h, nil
		}
	}
	h, err := v.replaceEntryOnce(root, segs, leaf, mode)
	if err == nil {
		v.cache.Put(gitobj.KindReplaced, key, h, 64)
	}
	return h, err
}

// replaceKey is the cache key of replaceEntry(root, segs, leaf, mode): a
// SHA-256 of the four, cut to an object id's size.
func replaceKey(root plumbing.Hash, segs []string, leaf plumbing.Hash, mode filemode.FileMode) plumbing.Hash {
	d := sha256.New()
	d.Write(root[:])
	d.Write(leaf[:])
	fmt.Fprintf(d, "%o", uint32(mode))
	for _, s := range segs {
		d.Write([]byte{0})
		d.Write([]byte(s))
	}
	var k plumbing.Hash
	copy(k[:], d.Sum(nil))
	return k
}

// replaceEntryOnce is replaceEntry without its cache.
func (v *view) replaceEntryOnce(root plumbing.Hash, segs []string, leaf plumbing.Hash, mode filemode.FileMode) (plumbing.Hash, error) {
	var entries []gitobj.TreeEntry
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
		if e, ok := findEntry(entries, name); ok && e.Mode == modeDir {
			sub = e.Hash
		}
		var err error
		if child, err = v.replaceEntry(sub, segs[1:], leaf, mode); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if childMode == modeDir && child == emptyTree {
		child = plumbing.ZeroHash
	}
	out := make([]gitobj.TreeEntry, 0, len(entries)+1)
	for _, e := range entries {
		if e.Name != name {
			out = append(out, e)
		}
	}
	if !child.IsZero() {
		// In its place, so that putTree finds the entries sorted (a root
		// tree of Porch's flat layout holds every package: sorting it
		// again was a tenth of an approval).
		e := gitobj.TreeEntry{Name: name, Mode: childMode, Hash: child}
		i, _ := slices.BinarySearchFunc(out, e, gitobj.CompareEntries)
		out = slices.Insert(out, i, e)
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
	if !ok || e.Mode != modeRegular {
		name = revision.PackageFileName
		if e, ok = findEntry(entries, name); !ok || e.Mode != modeRegular {
			return revision.Info{}, nil
		}
	}
	if c, ok := v.cache.Get(gitobj.KindInfo, e.Hash); ok {
		return cloneInfo(c.(revision.Info)), nil
	}
	data, err := v.boundedBlob(e.Hash, name)
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
	v.cache.Put(gitobj.KindInfo, e.Hash, info, int64(256+len(data)))
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
