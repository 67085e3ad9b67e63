package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// A write batch (repository.Batch) of a repository on local disk. The
// batch is a handle on the repository (a *Repository sharing its core,
// with bt set) wrapped in a batchRepo that offers the repository's reads
// and writes and Commit and Discard. The writes made through it are
// planned as every write is (update), on a view that lays the batch over
// the repository: the refs the batch set over those on disk, its objects
// beside the stored ones. What a plan writes goes to the batch instead of
// the disk: its objects to memory, its ref updates into the batch's refs,
// the first one of each ref recording the value the ref had (its base).
// No object or ref is written until Commit (what reads learn of objects,
// by their ids, may go to cad-paths as for every read),
// which, under the exclusive lock:
//
//  1. writes the objects the batch's final refs reach as one pack
//     (gitobj.WritePack: the pack and its index synced, then renamed), which no
//     ref names yet;
//  2. moves every ref the batch changed from its base to its final value
//     in one journal transaction (refstore.go), which checks every base
//     and fails with a conflict, changing nothing, when another writer
//     moved a ref since.
//
// A crash before the journal's commit point leaves the refs as they were
// (the pack is garbage, as git gc sees it); after it, the journal rolls
// forward. The metadata ref's history is squashed: the batch's many
// metadata commits become one, on the ref's base, with the final tree.

var _ repository.Batcher = (*Repository)(nil)

// batch is the state of a write batch of a Repository.
type batch struct {
	r *Repository // the batch's handle
	// planMu serialises the batch's writes, and Commit with them.
	planMu sync.Mutex
	// mu guards the fields below, read by every view of the batch.
	mu    sync.Mutex
	ended bool
	refs  map[plumbing.ReferenceName]plumbing.Hash // final values; zero: deleted
	base  map[plumbing.ReferenceName]plumbing.Hash // values before the batch
	order []plumbing.ReferenceName                 // the refs in the order first changed
	objs  map[plumbing.Hash]gitobj.PackObject
	// stored are the objects the batch's writes used that were stored
	// already: loose ones among them are synced before the commit, as
	// a write without a batch syncs them.
	stored map[plumbing.Hash]bool
	// reads is what the batch's writes read from disk (batchreads.go).
	reads *readSet
}

// BeginBatch starts a write batch (see repository.Batch): the writes
// made through it are held in memory, seen by the reads made through it,
// and written by its Commit: on local disk as one pack and one ref
// transaction, to a remote as one atomic push (remotebatch.go). The
// batch offers the repository's reads and writes, SetMetadata, Adopt,
// Range, Location and Spec; not Watch, Version nor maintenance. Errors
// are *repository.Error matching repository.ErrNotSupported for a
// repository in memory or a remote that does not take atomic pushes,
// ErrUnavailable when the remote cannot be reached, ErrClosed, or
// wrapping ctx's error.
func (r *Repository) BeginBatch(ctx context.Context) (repository.Batch, error) {
	const op = "begin batch"
	if err := r.enter(ctx, op, revision.Key{}); err != nil {
		return nil, err
	}
	if r.remote != nil {
		return r.beginRemoteBatch(ctx) // remotebatch.go
	}
	if r.st.fsrefs == nil {
		return nil, r.errorf(op, revision.Key{}, repository.ErrNotSupported, "a repository in memory does not batch its writes")
	}
	return r.newBatch(), nil
}

// newBatch returns a new batch of r.
func (r *Repository) newBatch() *batchRepo {
	b := &batch{refs: map[plumbing.ReferenceName]plumbing.Hash{}, base: map[plumbing.ReferenceName]plumbing.Hash{},
		objs: map[plumbing.Hash]gitobj.PackObject{}, stored: map[plumbing.Hash]bool{}, reads: newReadSet()}
	b.r = &Repository{core: r.core, bt: b}
	return &batchRepo{r: b.r}
}

// done reports whether b ended; a nil b (no batch) never does.
func (b *batch) done() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended
}

// batchDone returns an *repository.Error matching
// repository.ErrBatchDone when r is the handle of a batch that ended.
func (r *Repository) batchDone(op string, key revision.Key) error {
	if r.bt.done() {
		return &repository.Error{Op: op, Repository: r.name, Key: key, Err: repository.ErrBatchDone}
	}
	return nil
}

// viewIn returns a new view, laid over by r's batch when r is a batch's
// handle.
func (r *Repository) viewIn() *view {
	v := r.newView()
	v.bt = r.bt
	return v
}

// readBatch runs fn as read does, on a view laid over by r's batch.
func (r *Repository) readBatch(ctx context.Context, fn func(v *view) error) error {
	if err := r.batchDone("read", revision.Key{}); err != nil {
		return err
	}
	return r.st.read(ctx, func() error { return fn(r.viewIn()) })
}

// updateBatch runs the write plan into r's batch instead of the disk.
// After the batch ended it returns an error matching
// repository.ErrBatchDone and writes nothing.
func (r *Repository) updateBatch(ctx context.Context, plan func(v *view) (*txn, error)) error {
	b := r.bt
	b.planMu.Lock()
	defer b.planMu.Unlock()
	if err := r.batchDone("write", revision.Key{}); err != nil {
		return err
	}
	return r.st.read(ctx, func() error {
		v := r.viewIn()
		v.reads = newReadSet()
		t, err := plan(v)
		if err != nil || t == nil || len(t.updates) == 0 {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return b.merge(t.updates, v.written, v.reads)
	})
}

// merge adds the ref updates of one planned write to b. The plan read
// every old value through b, under planMu, so they hold; a ref b did not
// change yet records its old value as its base.
func (b *batch) merge(updates []refstore.RefUpdate, written []plumbing.Hash, reads *readSet) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range updates {
		cur, ok := b.refs[u.Name]
		if ok && cur != u.Old {
			return fmt.Errorf("%w: %s is %s in the batch, expected %s", refstore.ErrConflictRef, u.Name, refstore.HashOrNone(cur), refstore.HashOrNone(u.Old))
		}
	}
	for _, h := range written {
		if _, ok := b.objs[h]; !ok {
			b.stored[h] = true
		}
	}
	b.reads.add(reads)
	for _, u := range updates {
		if _, ok := b.refs[u.Name]; !ok {
			b.base[u.Name] = u.Old
			b.order = append(b.order, u.Name)
		}
		b.refs[u.Name] = u.New
	}
	return nil
}

// ref returns the value b gives ref name (zero: deleted) and whether b
// changed it.
func (b *batch) ref(name plumbing.ReferenceName) (plumbing.Hash, bool) {
	if b == nil {
		return plumbing.ZeroHash, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.refs[name]
	return h, ok
}

// overlay lays b's refs under prefix (directly under it when direct)
// over m, the refs on disk.
func (b *batch) overlay(m map[plumbing.ReferenceName]plumbing.Hash, prefix string, direct bool) map[plumbing.ReferenceName]plumbing.Hash {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, h := range b.refs {
		rest, ok := strings.CutPrefix(string(name), prefix)
		if !ok || rest == "" || (direct && strings.Contains(rest, "/")) {
			continue
		}
		if h.IsZero() {
			delete(m, name)
		} else {
			m[name] = h
		}
	}
	return m
}

// overlaySnap returns s with b's branches, tags and metadata ref laid
// over it.
func (b *batch) overlaySnap(s *refstore.RefSnap) *refstore.RefSnap {
	b.mu.Lock()
	n := len(b.refs)
	b.mu.Unlock()
	if n == 0 {
		return s
	}
	m := make(map[plumbing.ReferenceName]plumbing.Hash, s.Len()+n)
	for i, name := range s.Names {
		m[plumbing.ReferenceName(name)] = s.Hashes[i]
	}
	b.mu.Lock()
	for name, h := range b.refs {
		if !name.IsBranch() && !name.IsTag() && name != metadataRef {
			continue
		}
		if h.IsZero() {
			delete(m, name)
		} else {
			m[name] = h
		}
	}
	b.mu.Unlock()
	return refstore.SnapOf(m)
}

// childNames lays b's refs directly under prefix over names, the names
// (relative to prefix) of those on disk. A nil b returns names.
func (b *batch) childNames(prefix string, names []string) []string {
	if b == nil {
		return names
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, h := range b.refs {
		rest, ok := strings.CutPrefix(string(name), prefix)
		if !ok || rest == "" || strings.Contains(rest, "/") {
			continue
		}
		if h.IsZero() {
			names = deleteString(names, rest)
		} else {
			names = append(names, rest)
		}
	}
	return names
}

func deleteString(s []string, x string) []string {
	out := s[:0]
	for _, e := range s {
		if e != x {
			out = append(out, e)
		}
	}
	return out
}

// object returns object h when b holds it.
func (b *batch) object(h plumbing.Hash) (gitobj.PackObject, bool) {
	if b == nil {
		return gitobj.PackObject{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.objs[h]
	return o, ok
}

// put holds object h in b.
func (b *batch) put(h plumbing.Hash, t plumbing.ObjectType, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objs[h] = gitobj.PackObject{Hash: h, Type: t, Data: data}
}

// commit writes the batch: one pack of the objects its refs reach and
// one ref transaction (see batchRepo.Commit).
func (b *batch) commit(ctx context.Context) error {
	const op = "commit batch"
	r := b.r
	b.planMu.Lock()
	defer b.planMu.Unlock()
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return r.errorf(op, revision.Key{}, repository.ErrBatchDone, "the batch was committed or discarded")
	}
	b.ended = true
	var updates []refstore.RefUpdate
	for _, name := range b.order {
		if old, new := b.base[name], b.refs[name]; old != new {
			updates = append(updates, refstore.RefUpdate{Name: name, Old: old, New: new})
		}
	}
	b.mu.Unlock()
	defer b.drop()
	if len(updates) == 0 {
		return nil
	}
	if r.remote != nil {
		return b.commitRemote(ctx, updates) // remotebatch.go
	}
	if r.closed.Load() {
		return &repository.Error{Op: op, Repository: r.name, Err: repository.ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return &repository.Error{Op: op, Repository: r.name, Err: err}
	}
	err := r.st.write(ctx, func() error {
		v := r.newView()
		v.bt = b
		b.mu.Lock()
		reads := b.reads
		b.mu.Unlock()
		if err := reads.check(v); err != nil {
			return err
		}
		if err := b.squashMetadata(v, updates, reads); err != nil {
			return err
		}
		objs, err := b.reachable(updates)
		if err != nil {
			return err
		}
		if len(objs) > 0 {
			if _, err := gitobj.WritePack(r.st.gitDir, objs, v.fr.SyncFile); err != nil {
				return err
			}
			refstore.Fault("batch-pack-written")
			// Open it now: the directory's time may not have moved
			// since the last scan (a coarse clock, two batches at once).
			r.st.packs.Rescan()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		defer r.written()
		// The batch's objects are in the pack, synced; the loose
		// objects its writes used are synced as every write syncs them.
		return v.fr.Transact(updates, true, b.storedObjects())
	})
	if errors.Is(err, refstore.ErrRetry) {
		err = fmt.Errorf("%w: %w", repository.ErrConflict, err)
	}
	if err != nil {
		return r.wrapErr(op, revision.Key{}, err)
	}
	r.log.Debug("committed batch", "refs", len(updates))
	// Maintenance works on the repository, not through the ended batch.
	(&Repository{core: r.core}).autoMaintain(ctx) // maintenance.go
	return nil
}

// storedObjects returns the stored objects the batch's writes used.
func (b *batch) storedObjects() []plumbing.Hash {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]plumbing.Hash, 0, len(b.stored))
	for h := range b.stored {
		out = append(out, h)
	}
	return out
}

// discard drops the batch's writes (see batchRepo.Discard).
func (b *batch) discard() {
	b.planMu.Lock()
	defer b.planMu.Unlock()
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
	b.drop()
}

// drop releases what b holds.
func (b *batch) drop() {
	b.mu.Lock()
	b.objs, b.refs, b.base, b.order, b.stored, b.reads = nil, map[plumbing.ReferenceName]plumbing.Hash{}, nil, nil, nil, nil
	b.mu.Unlock()
}

// squashMetadata replaces the metadata ref's final value in updates, the
// last of the batch's chain of metadata commits, by one commit of its
// tree on the ref's base. When another writer moved the ref since the
// batch read it, the batch's changes (each revision's metadata file it
// set or removed) are laid over the ref's new tree instead, and the
// commit goes on the new value: unless the other writer changed one of
// the same files, which is a conflict. The caller holds the exclusive
// lock.
func (b *batch) squashMetadata(v *view, updates []refstore.RefUpdate, reads *readSet) error {
	for i, u := range updates {
		if u.Name != metadataRef || u.New.IsZero() {
			continue
		}
		if _, ok := b.object(u.New); !ok {
			return nil // not the batch's commit
		}
		c, err := v.commit(u.New)
		if err != nil {
			return err
		}
		tree, parent := c.Tree, u.Old
		cur := u.Old // a remote's mirror in memory: the push checks it
		if v.fr != nil {
			if cur, _, err = v.fr.Ref(metadataRef); err != nil {
				return err
			}
		}
		if cur != u.Old {
			if tree, err = b.rebaseMetadata(v, u.Old, cur, tree, reads); err != nil {
				return err
			}
			parent = cur
			updates[i].Old = cur
		}
		var parents []plumbing.Hash
		if !parent.IsZero() {
			parents = []plumbing.Hash{parent}
		}
		if tree.IsZero() {
			if tree, err = v.putTree(nil); err != nil {
				return err
			}
		}
		h, err := v.putCommit(tree, parents, b.r.committer(), b.r.committer(), metadataMessage+"\n")
		if err != nil {
			return err
		}
		updates[i].New = h
	}
	return nil
}

// rebaseMetadata returns the tree of metadata commit cur with the changes
// from the tree of commit base to tree final laid over it. A file
// changed both by the batch and since base is a conflict.
func (b *batch) rebaseMetadata(v *view, base, cur, final plumbing.Hash, reads *readSet) (plumbing.Hash, error) {
	treeOf := func(h plumbing.Hash) (plumbing.Hash, error) {
		if h.IsZero() {
			return plumbing.ZeroHash, nil
		}
		c, err := v.commit(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return c.Tree, nil
	}
	baseTree, err := treeOf(base)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	out, err := treeOf(cur)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var changes []fileChange
	if err := diffTrees(v, baseTree, final, "", &changes); err != nil {
		return plumbing.ZeroHash, err
	}
	// The metadata the batch's writes read and did not change must be
	// as they read it (an approval's readiness, a Version).
	mine := map[string]bool{}
	for _, ch := range changes {
		mine[ch.path] = true
	}
	if err := reads.checkMetadata(v, out, mine); err != nil {
		return plumbing.ZeroHash, err
	}
	for _, ch := range changes {
		segs := strings.Split(ch.path, "/")
		now, err := fileAt(v, out, segs)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if now != ch.old {
			return plumbing.ZeroHash, fmt.Errorf("%w: metadata %s was changed by another writer", refstore.ErrConflictRef, ch.path)
		}
		if out, err = v.replaceEntry(out, segs, ch.new, modeRegular); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return out, nil
}

// fileChange is a file that differs between two trees: its blob in each
// (zero: absent).
type fileChange struct {
	path     string
	old, new plumbing.Hash
}

// diffTrees appends to out the files that differ between trees a and b
// (zero: empty), under directory prefix; it reads only the directories
// that differ.
func diffTrees(v *view, a, b plumbing.Hash, prefix string, out *[]fileChange) error {
	if a == b {
		return nil
	}
	entries := func(h plumbing.Hash) (map[string]gitobj.TreeEntry, error) {
		m := map[string]gitobj.TreeEntry{}
		if h.IsZero() {
			return m, nil
		}
		es, err := v.tree(h)
		for _, e := range es {
			m[e.Name] = e
		}
		return m, err
	}
	ea, err := entries(a)
	if err != nil {
		return err
	}
	eb, err := entries(b)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for n := range ea {
		names[n] = true
	}
	for n := range eb {
		names[n] = true
	}
	for n := range names {
		x, y := ea[n], eb[n]
		if x == y {
			continue
		}
		p := prefix + n
		dirX, dirY := x.Mode == modeDir, y.Mode == modeDir
		switch {
		case (dirX || x.Hash.IsZero()) && (dirY || y.Hash.IsZero()):
			var ha, hb plumbing.Hash
			if dirX {
				ha = x.Hash
			}
			if dirY {
				hb = y.Hash
			}
			if err := diffTrees(v, ha, hb, p+"/", out); err != nil {
				return err
			}
		case !dirX && !dirY:
			*out = append(*out, fileChange{path: p, old: x.Hash, new: y.Hash})
		default:
			return fmt.Errorf("metadata tree: %s is a file on one side and a directory on the other", p)
		}
	}
	return nil
}

// fileAt returns the blob at segs under tree root, zero when there is
// none.
func fileAt(v *view, root plumbing.Hash, segs []string) (plumbing.Hash, error) {
	for i, s := range segs {
		if root.IsZero() {
			return plumbing.ZeroHash, nil
		}
		entries, err := v.tree(root)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		e, ok := findEntry(entries, s)
		if !ok {
			return plumbing.ZeroHash, nil
		}
		if i == len(segs)-1 {
			if e.Mode == modeDir {
				return plumbing.ZeroHash, fmt.Errorf("metadata tree: %s is a directory", strings.Join(segs, "/"))
			}
			return e.Hash, nil
		}
		if e.Mode != modeDir {
			return plumbing.ZeroHash, nil
		}
		root = e.Hash
	}
	return plumbing.ZeroHash, nil
}

// reachable returns the objects of b that the new values of updates
// reach, stopping at objects b does not hold (they are stored).
func (b *batch) reachable(updates []refstore.RefUpdate) ([]gitobj.PackObject, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[plumbing.Hash]bool{}
	var out []gitobj.PackObject
	var stack []plumbing.Hash
	for _, u := range updates {
		if !u.New.IsZero() {
			stack = append(stack, u.New)
		}
	}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		o, ok := b.objs[h]
		if !ok || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, o)
		switch o.Type {
		case plumbing.CommitObject:
			c, ok := gitobj.DecodeCommit(h, o.Data)
			if !ok {
				return nil, fmt.Errorf("batch: commit %s does not parse", h)
			}
			stack = append(stack, c.Tree)
			stack = append(stack, c.Parents...)
		case plumbing.TreeObject:
			entries, err := gitobj.ParseTree(o.Data)
			if err != nil {
				return nil, fmt.Errorf("batch: tree %s: %w", h, err)
			}
			for _, e := range entries {
				if e.Mode != filemode.Submodule {
					stack = append(stack, e.Hash)
				}
			}
		}
	}
	return out, nil
}

// batchRepo is the repository.Batch BeginBatch returns: the reads and
// writes of a handle whose writes go to its batch, and Commit and
// Discard. It offers the optional interfaces a batch can honour
// (MetadataWriter, Adopter, RangeLister, Locator, Specified), not those
// of the repository as a whole (Watcher, Versioner, Maintainer,
// Notifiable, Batcher).
type batchRepo struct{ r *Repository }

var (
	_ repository.Batch          = (*batchRepo)(nil)
	_ repository.MetadataWriter = (*batchRepo)(nil)
	_ repository.Adopter        = (*batchRepo)(nil)
	_ repository.RangeLister    = (*batchRepo)(nil)
	_ repository.Locator        = (*batchRepo)(nil)
	_ repository.Specified      = (*batchRepo)(nil)
)

// Name returns the repository's name.
func (b *batchRepo) Name() string { return b.r.name }

// List lists as the repository does, the batch's writes included. After
// the batch ended it returns an error matching repository.ErrBatchDone.
func (b *batchRepo) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	return b.r.List(ctx, opts)
}

// Range ranges as the repository does, the batch's writes included.
// After the batch ended it returns an error matching
// repository.ErrBatchDone.
func (b *batchRepo) Range(ctx context.Context, opts repository.ListOptions) iter.Seq2[revision.PackageRevision, error] {
	return b.r.Range(ctx, opts)
}

// Get gets as the repository does, the batch's writes included. After
// the batch ended it returns an error matching repository.ErrBatchDone.
func (b *batchRepo) Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error) {
	return b.r.Get(ctx, key)
}

// CreateDraft starts a draft whose Commit writes into the batch. After
// the batch ended it returns an error matching repository.ErrBatchDone.
func (b *batchRepo) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	return b.r.CreateDraft(ctx, key, opts)
}

// OpenDraft opens a draft, as the batch sees it, whose Commit writes
// into the batch. After the batch ended it returns an error matching
// repository.ErrBatchDone.
func (b *batchRepo) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	return b.r.OpenDraft(ctx, key)
}

// UpdateLifecycle changes a lifecycle in the batch. After the batch
// ended it returns an error matching repository.ErrBatchDone.
func (b *batchRepo) UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return b.r.UpdateLifecycle(ctx, key, to, opts)
}

// Delete deletes in the batch. After the batch ended it returns an error
// matching repository.ErrBatchDone.
func (b *batchRepo) Delete(ctx context.Context, key revision.Key, opts repository.UpdateOptions) error {
	return b.r.Delete(ctx, key, opts)
}

// SetMetadata sets a revision's metadata in the batch. After the batch
// ended it returns an error matching repository.ErrBatchDone.
func (b *batchRepo) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return b.r.SetMetadata(ctx, key, md, opts)
}

// Adopt adopts in the batch. After the batch ended it returns an error
// matching repository.ErrBatchDone.
func (b *batchRepo) Adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	return b.r.Adopt(ctx, key, opts)
}

// Location is the repository's.
func (b *batchRepo) Location() (repository.Type, string) { return b.r.Location() }

// Spec is the repository's.
func (b *batchRepo) Spec() repository.Spec { return b.r.Spec() }

// Commit writes the batch: one pack of the objects its refs reach and
// one ref transaction (see repository.Batch). Errors are
// *repository.Error matching repository.ErrConflict when another writer
// moved a ref the batch changed (or holds a ref's lock), ErrClosed,
// ErrBatchDone, or wrapping the file system's or ctx's error; then
// nothing of the batch is visible, and the pack, when it was written, is
// garbage no ref names (git gc removes it). As for every write, an error
// after the transaction's commit point says so ("the journal completes
// the write"): the batch is then written, completed by the next writer or
// reader if this process dies.
func (b *batchRepo) Commit(ctx context.Context) error { return b.r.bt.commit(ctx) }

// Discard drops the batch's writes (see repository.Batch).
func (b *batchRepo) Discard() { b.r.bt.discard() }

// Close discards the batch when it has not ended; it leaves the
// repository open and returns nil.
func (b *batchRepo) Close() error {
	b.r.bt.discard()
	return nil
}
