package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// store is the local go-git storage of a repository with its locks.
//
// go-git storage is not safe for concurrent use (the filesystem storage
// mutates its pack index on reads, the memory storage has unguarded maps),
// so every access goes through read or write. In one process, mu is held
// shared by readers, which run side by side, and exclusive by writers;
// readers take turns on what is not safe to share (objMu for go-git's
// object reads, the PackReader's own mutex, one object at a time). When
// several Repositories share one storage value (a memory.Storage passed
// in Options.Storage) they share mu. Across processes, the store's byte
// of cad.lock in the git directory (refstore.RoleStore) is held shared
// by readers and exclusive by writers.
type store struct {
	s       storage.Storer
	mu      *sync.RWMutex
	objMu   sync.Mutex // serialises readers' use of s (view.object)
	flock   *refstore.FileLock
	gitDir  string
	fsrefs  *refstore.FSRefs   // refs read directly from gitDir, nil in memory
	paths   *index.PathFile    // cad-paths in gitDir, nil in memory
	packs   *gitobj.PackReader // the packs in gitDir and its alternates, nil in memory
	alts    []string           // the object directories of the alternates (alternates.go)
	release func()
	warn    func(msg string, args ...any)
}

// shared locks of storage values used by several Repositories at once.
var (
	sharedMu    sync.Mutex
	sharedLocks = map[any]*sharedLock{}
)

type sharedLock struct {
	mu   sync.RWMutex
	refs int
}

func newStore(s storage.Storer, gitDir string, mode SyncMode, warn func(msg string, args ...any)) *store {
	st := &store{s: s, gitDir: gitDir, warn: warn}
	if gitDir != "" {
		st.fsrefs = &refstore.FSRefs{GitDir: gitDir, Sync: mode}
		st.paths = index.NewPathFile(gitDir)
		st.packs = gitobj.NewPackReader(gitDir)
		st.mu = &sync.RWMutex{}
		st.flock = refstore.NewFileLock(gitDir, refstore.RoleStore)
		st.release = func() {
			// The packs are used under the lock: a read still running
			// finishes first.
			st.mu.Lock()
			st.packs.Close()
			st.mu.Unlock()
			st.paths.Close()
			st.fsrefs.Close()
			st.flock.Close()
			if c, ok := s.(io.Closer); ok {
				_ = c.Close()
			}
		}
		return st
	}
	// A storage value passed in by the caller may be shared with other
	// Repositories: share its lock.
	if t := reflect.TypeOf(s); t != nil && t.Comparable() {
		sharedMu.Lock()
		l := sharedLocks[s]
		if l == nil {
			l = &sharedLock{}
			sharedLocks[s] = l
		}
		l.refs++
		sharedMu.Unlock()
		st.mu = &l.mu
		st.release = func() {
			sharedMu.Lock()
			defer sharedMu.Unlock()
			if l.refs--; l.refs == 0 {
				delete(sharedLocks, s)
			}
		}
		return st
	}
	st.mu = &sync.RWMutex{}
	st.release = func() {}
	return st
}

// dropPages takes the pages of the mapped files (packs, their indexes)
// out of the process's resident set; the lock is held.
func (st *store) dropPages() {
	st.packs.DropPages()
}

func (st *store) close() {
	if st.release != nil {
		st.release()
		st.release = nil
	}
}

// read runs fn with the storage locked for reading. When a process died
// in the middle of a write, its journal is rolled forward first, so that
// fn never sees a write half done; a reader that may not write reads the
// refs as the journal completes them instead (internal/refstore/overlay.go).
func (st *store) read(ctx context.Context, fn func() error) error {
	if st.fsrefs != nil && st.fsrefs.Pending() {
		// A reader that cannot complete it (no write permission, a ref
		// or packed-refs locked by another program) reads the refs as
		// the journal completes them.
		if err := st.write(ctx, func() error { return nil }); err != nil {
			if ctx.Err() != nil {
				return err
			}
			st.warn("could not complete an interrupted write; reading the refs as its journal sets them", "error", err)
		}
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.flock != nil {
		if err := st.flock.Lock(ctx, false); err != nil {
			return err
		}
		defer st.flock.Unlock()
	}
	if st.fsrefs != nil {
		// Under the lock: a writer may have died since the check above.
		if err := st.fsrefs.LoadOverlay(); err != nil {
			return err
		}
	}
	return fn()
}

// denyWrite, when set (by tests only), makes writes to the git directory
// it returns true for fail as a reader without write permission sees
// them: running as root, a test cannot take the permission away.
var denyWrite func(gitDir string) bool

// write runs fn with the storage locked for writing, in this process and
// across processes. A write a dead process left half done is completed
// first.
func (st *store) write(ctx context.Context, fn func() error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.flock != nil && !refstore.CrossProcessLock {
		return fmt.Errorf("%w: writing to a git directory on disk (%s) needs a cross-process file lock, which %s lacks", repository.ErrNotSupported, st.gitDir, runtime.GOOS)
	}
	if denyWrite != nil && st.gitDir != "" && denyWrite(st.gitDir) {
		return &os.PathError{Op: "open", Path: filepath.Join(st.gitDir, refstore.LockName), Err: os.ErrPermission}
	}
	if st.flock != nil {
		if err := st.flock.Lock(ctx, true); err != nil {
			return err
		}
		defer st.flock.Unlock()
	}
	if st.fsrefs != nil {
		if err := st.fsrefs.Recover(st.warn); err != nil {
			return err
		}

	}
	return fn()
}

// view is access to the storage while it is locked, with the object cache.
type view struct {
	s     storage.Storer
	fr    *refstore.FSRefs
	cache *gitobj.LRU
	// written lists the objects stored through this view, to push.
	written []plumbing.Hash
	// refs, when set, is a snapshot of all refs read once.
	refs *refstore.RefSnap
	// md, when set, is the metadata ref as read once.
	md *mdState
	// damaged receives the damaged refs that listing the refs left out.
	damaged func(error)
	// paths finds package trees without reading the root trees (cad-paths);
	// nil in memory.
	paths *index.PathFile
	// learnt, when set (a list), collects the package trees the view
	// finds in the trees, added to paths once when the list ends instead
	// of a record at a time.
	learnt *pathLog
	// packs reads packed objects on disk; nil in memory.
	packs *gitobj.PackReader
	// final holds what rawScan last built from a delta.
	final []byte
	// objMu serialises reads of go-git's storage, which is not safe for
	// concurrent use (the store's).
	objMu  *sync.Mutex
	gitDir string
	// alts are the object directories the repository's objects borrow
	// from (objects/info/alternates), read after its own.
	alts []string
	// bt, when set, is the write batch laid over the storage (batch.go).
	bt *batch
	// reads, when set, records the refs a batched write's plan read
	// from disk, checked again when the batch commits (batch.go).
	reads *readSet
	// deferTrees: the revisions this view finds are handed out and
	// their files read later (List, Range, Get), so a published
	// revision its commit registers is found without its package tree
	// (tagRev).
	deferTrees bool
	// sweep: a list reads each ref's commit once (view.refCommit).
	sweep bool
	// hint, when its hash is the object read, says where it lies: the
	// list placed its refs' objects when it sorted them (packOrder).
	hint struct {
		h  plumbing.Hash
		at packPos
	}
	// maxFile and maxPackage are Options.MaxFileBytes and
	// MaxPackageBytes (negative: no bound); zero, as in a view made by
	// a fetch, bounds nothing.
	maxFile, maxPackage int64
}

func (r *Repository) newView() *view {
	return &view{s: r.st.s, fr: r.st.fsrefs, cache: r.cache, packs: r.st.packs, paths: r.st.paths, gitDir: r.st.gitDir, alts: r.st.alts, objMu: &r.st.objMu, damaged: func(err error) {
		r.log.Warn("leaving out a damaged ref", "error", err)
	}, maxFile: r.opts.MaxFileBytes, maxPackage: r.opts.MaxPackageBytes}
}

// read runs fn on a view of the local storage locked for reading. For a
// remote, it first brings the local clone up to date, unless it held the
// remote's refs less than Options.RemoteReadMaxAge ago (then fn reads it
// as it is and the remote is asked nothing): it asks the remote for its
// refs holding no lock, and when the clone has them all, fn runs under
// the read lock, beside other reads; only when the remote moved is the
// clone fetched, holding the write lock only to add what was fetched
// (readFetched).
func (r *Repository) read(ctx context.Context, fn func(v *view) error) error {
	if r.bt != nil {
		// A batch reads the mirror it planned on, not the remote.
		return r.readBatch(ctx, fn)
	}
	if r.remote != nil {
		defer r.afterFetch(ctx) // maintenance.go
		if r.remote.fresh() {
			return r.st.read(ctx, func() error { return fn(r.newView()) })
		}
		if r.remote.maxAge > 0 {
			return r.readShared(ctx, fn)
		}
		asked := time.Now()
		refs, err := r.remote.lsRemote(ctx)
		if err != nil {
			return err
		}
		ran := false
		err = r.st.read(ctx, func() error {
			v := r.newView()
			if ok, err := mirrors(v, refs); err != nil || !ok {
				return err
			}
			// The clone held the remote's refs when they were asked
			// for (the clone only moves forward under the write lock).
			r.remote.markSynced(asked)
			ran = true
			return fn(v)
		})
		if ran || err != nil {
			return err
		}
		return r.readFetched(ctx, asked, refs, fn)
	}
	return r.st.read(ctx, func() error { return fn(r.newView()) })
}

// ref returns the value of the ref name and whether it exists.
func (v *view) ref(name plumbing.ReferenceName) (plumbing.Hash, bool, error) {
	if v.refs != nil {
		h, ok := v.refs.Get(name)
		return h, ok, nil
	}
	if h, ok := v.bt.ref(name); ok {
		return h, !h.IsZero(), nil
	}
	if v.fr != nil {
		h, ok, err := v.fr.Ref(name)
		if err == nil {
			v.reads.ref(name, h)
		}
		return h, ok, err
	}
	ref, err := v.s.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if ref.Type() == plumbing.SymbolicReference {
		ref, err = storer.ResolveReference(v.s, name)
		if err != nil {
			return plumbing.ZeroHash, false, nil
		}
	}
	return ref.Hash(), true, nil
}

// children returns the refs directly under prefix, which ends in a slash.
func (v *view) children(prefix string) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	if v.refs == nil && v.fr != nil {
		m, err := v.fr.Children(prefix, v.damaged)
		if err != nil || v.bt == nil {
			return m, err
		}
		v.reads.prefix(readChildren, prefix, m)
		return v.bt.overlay(m, prefix, true), nil
	}
	refs, err := v.allRefs()
	if err != nil {
		return nil, err
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	lo, hi := refs.Prefixed(prefix)
	for i := lo; i < hi; i++ {
		if rest := refs.Names[i][len(prefix):]; rest != "" && !strings.Contains(rest, "/") {
			out[plumbing.ReferenceName(refs.Names[i])] = refs.Hashes[i]
		}
	}
	return out, nil
}

// under returns the refs below prefix (which ends in a slash), at any
// depth.
func (v *view) under(prefix string) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	if v.refs == nil && v.fr != nil {
		m, err := v.fr.Under(prefix, v.damaged)
		if err != nil || v.bt == nil {
			return m, err
		}
		v.reads.prefix(readUnder, prefix, m)
		return v.bt.overlay(m, prefix, false), nil
	}
	refs, err := v.allRefs()
	if err != nil {
		return nil, err
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	lo, hi := refs.Prefixed(prefix)
	for i := lo; i < hi; i++ {
		out[plumbing.ReferenceName(refs.Names[i])] = refs.Hashes[i]
	}
	return out, nil
}

// allRefs returns every hash ref (branches, tags and the metadata ref),
// reading them once.
func (v *view) allRefs() (*refstore.RefSnap, error) {
	if v.refs != nil {
		return v.refs, nil
	}
	if v.fr != nil {
		// On disk the refs are read directly, so that a damaged ref is
		// left out instead of failing the whole read as go-git does.
		out, err := v.fr.Snapshot([]string{"refs/heads/", "refs/tags/"}, []plumbing.ReferenceName{metadataRef}, v.damaged)
		if err != nil {
			return nil, err
		}
		if v.bt != nil {
			v.reads.all(out)
			out = v.bt.overlaySnap(out)
		}
		v.refs = out
		return out, nil
	}
	iter, err := v.s.IterReferences()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && (ref.Name().IsBranch() || ref.Name().IsTag() || ref.Name() == metadataRef) {
			out[ref.Name()] = ref.Hash()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.refs = refstore.SnapOf(out)
	if v.bt != nil {
		// A batch of a remote whose mirror is in memory.
		v.refs = v.bt.overlaySnap(v.refs)
	}
	return v.refs, nil
}

// object reads the object h of type t, or any type for AnyObject.
func (v *view) object(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if v.objMu != nil {
		v.objMu.Lock()
		defer v.objMu.Unlock()
	}
	o, err := v.s.EncodedObject(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// Another process may have repacked: look at the packs again.
		if ri, ok := v.s.(interface{ Reindex() }); ok {
			ri.Reindex()
			o, err = v.s.EncodedObject(t, h)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", h, err)
	}
	return o, nil
}

// raw returns the type and content of object h, of type t or of any
// type for AnyObject. The content may be shared with the cache: it must
// not be modified.
func (v *view) raw(t plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	return v.rawRead(t, h, false)
}

// rawScan is raw for a caller that scans the content and keeps none of
// it: a packed object may be returned in memory reused by the next read
// (see PackReader.ObjectScratch).
func (v *view) rawScan(t plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	return v.rawRead(t, h, true)
}

func (v *view) rawRead(t plumbing.ObjectType, h plumbing.Hash, scan bool) (plumbing.ObjectType, []byte, error) {
	if o, ok := v.bt.object(h); ok {
		if t != plumbing.AnyObject && o.Type != t {
			return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
		}
		return o.Type, o.Data, nil
	}
	if v.packs != nil {
		read := v.packs.Object
		if v.hint.h == h && v.hint.at.pack != noPack && !scan {
			read = func(h plumbing.Hash, c *gitobj.LRU) (plumbing.ObjectType, []byte, error) {
				t, data, err := v.packs.ObjectAt(v.hint.at.pack, v.hint.at.off, c)
				if errors.Is(err, gitobj.ErrNotInPack) {
					return v.packs.Object(h, c) // the pack went (a repack)
				}
				return t, data, err
			}
		}
		if scan {
			read = func(h plumbing.Hash, c *gitobj.LRU) (plumbing.ObjectType, []byte, error) {
				return v.packs.ObjectScratch(h, c, &v.final)
			}
		}
		got, data, err := read(h, v.cache)
		switch {
		case err == nil && t != plumbing.AnyObject && got != t:
			return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
		case err == nil:
			return got, data, nil
		case !errors.Is(err, gitobj.ErrNotInPack):
			return plumbing.InvalidObject, nil, err
		}
	}
	o, err := v.object(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) && len(v.alts) > 0 {
		// Loose in an alternate (their packs are the PackReader's).
		return v.alternateLoose(t, h, err)
	}
	if err != nil && v.packs != nil {
		// A maintenance run may have moved it from a loose file (or a
		// pack go-git knew) into a pack written since the PackReader's
		// last scan, in the same tick of the directory's clock.
		v.packs.Rescan()
		if got, data, perr := v.packs.Object(h, v.cache); perr == nil && (t == plumbing.AnyObject || got == t) {
			return got, data, nil
		}
	}
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	rd, err := o.Reader()
	if err != nil {
		return plumbing.InvalidObject, nil, err
	}
	defer rd.Close()
	data := make([]byte, 0, o.Size())
	buf := bytes.NewBuffer(data)
	if _, err := buf.ReadFrom(rd); err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, err)
	}
	return o.Type(), buf.Bytes(), nil
}

// has reports whether object h is stored. On disk it looks in the packs
// and for a loose object without go-git, which would load every pack
// index to answer.
func (v *view) has(h plumbing.Hash) bool {
	if _, ok := v.bt.object(h); ok {
		return true
	}
	if v.packs != nil {
		if v.packs.Has(h) {
			return true
		}
		hex := h.String()
		if _, err := os.Stat(filepath.Join(v.gitDir, "objects", hex[:2], hex[2:])); err == nil {
			return true
		}
		for _, d := range v.alts {
			if _, err := os.Stat(filepath.Join(d, hex[:2], hex[2:])); err == nil {
				return true
			}
		}
		return false
	}
	return v.s.HasEncodedObject(h) == nil
}

// alternateLoose reads object h, of type t or any type for AnyObject,
// stored loose in one of the alternates; notFound is the error to return
// when none holds it.
func (v *view) alternateLoose(t plumbing.ObjectType, h plumbing.Hash, notFound error) (plumbing.ObjectType, []byte, error) {
	for _, d := range v.alts {
		got, data, err := gitobj.ReadLoose(d, h)
		if errors.Is(err, gitobj.ErrNotLoose) {
			continue
		}
		if err != nil {
			return plumbing.InvalidObject, nil, err
		}
		if t != plumbing.AnyObject && got != t {
			return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
		}
		return got, data, nil
	}
	return plumbing.InvalidObject, nil, notFound
}

// blob returns the content of blob h; it may be shared with the cache and
// must not be modified.
func (v *view) blob(h plumbing.Hash) ([]byte, error) {
	_, data, err := v.raw(plumbing.BlobObject, h)
	return data, err
}

// size returns the type and size of object h without reading its
// content: from the batch, the header of its pack entry (or of its
// delta's), the header of a loose object on disk, or go-git's object
// (in memory, where the content is held already, or in a pack with an
// index older than version 2, which go-git reads whole).
func (v *view) size(h plumbing.Hash) (plumbing.ObjectType, int64, error) {
	if o, ok := v.bt.object(h); ok {
		return o.Type, int64(len(o.Data)), nil
	}
	if v.packs != nil {
		t, n, err := v.packs.Size(h)
		if !errors.Is(err, gitobj.ErrNotInPack) {
			return t, n, err
		}
	}
	if v.gitDir != "" {
		// The repository's own loose objects, then its alternates'.
		for _, dir := range append([]string{filepath.Join(v.gitDir, "objects")}, v.alts...) {
			t, n, err := gitobj.LooseSize(dir, h)
			if !errors.Is(err, fs.ErrNotExist) {
				return t, n, err
			}
		}
	}
	o, err := v.object(plumbing.AnyObject, h)
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	return o.Type(), o.Size(), nil
}

// boundedBlob returns the content of blob h, the file what, after
// checking its size against v.maxFile from its header: over it, a
// *revision.LimitError naming the file, and nothing is inflated.
func (v *view) boundedBlob(h plumbing.Hash, what string) ([]byte, error) {
	if v.maxFile > 0 {
		_, n, err := v.size(h)
		if err != nil {
			return nil, err
		}
		if n > v.maxFile {
			return nil, fileLimit(what, n, v.maxFile)
		}
	}
	return v.blob(h)
}

// fileLimit is the error of a file of n bytes over the bound max.
func fileLimit(what string, n, max int64) error {
	return &revision.LimitError{What: fmt.Sprintf("file %q (%d bytes)", what, n), Limit: "gitrepo.Options.MaxFileBytes", Max: max}
}

// put stores an object of type t with content data and returns its hash.
func (v *view) put(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	v.written = append(v.written, h)
	if v.has(h) {
		return h, nil
	}
	if v.bt != nil {
		v.bt.put(h, t, data)
		return h, nil
	}
	if v.gitDir != "" {
		return h, gitobj.WriteLoose(v.gitDir, h, t, data)
	}
	o := v.s.NewEncodedObject()
	o.SetType(t)
	o.SetSize(int64(len(data)))
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	got, err := v.s.SetEncodedObject(o)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("store object: %w", err)
	}
	if got != h {
		return plumbing.ZeroHash, fmt.Errorf("store object: hash %s, want %s", got, h)
	}
	return h, nil
}

func (v *view) putBlob(data []byte) (plumbing.Hash, error) {
	return v.put(plumbing.BlobObject, data)
}

// encode returns the canonical encoding of an object that go-git encodes.
func encode(e interface {
	Encode(plumbing.EncodedObject) error
}, t plumbing.ObjectType) ([]byte, error) {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	if err := e.Encode(o); err != nil {
		return nil, err
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, rd)
	return b.Bytes(), err
}

// readShared runs fn on a remote's mirror for a Repository whose reads
// accept a mirror up to Options.RemoteReadMaxAge old, once the mirror is
// that fresh. Rather than each asking the remote for its refs, the reads
// that find the window lapsed share one staged fetch (refresh), which
// asks once and fetches only when the refs moved: readers that start
// together after a lapse (a controller's workers) make one request, not
// one each.
func (r *Repository) readShared(ctx context.Context, fn func(v *view) error) error {
	for try := 1; ; try++ {
		asked, err := r.remote.refresh(ctx, r.st, r.newView)
		if err != nil {
			return err
		}
		// A fetch joined late may have asked before the window: ask again,
		// a bounded number of times (a fetch slower than the window).
		if time.Since(asked) < r.remote.maxAge && r.remote.askedAfterChange(asked) || try >= fetchMaxTries {
			break
		}
	}
	return r.st.read(ctx, func() error { return fn(r.newView()) })
}
