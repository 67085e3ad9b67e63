package gitrepo

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/internal/porchtask"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// rev is a revision as found in the refs.
type rev struct {
	key       revision.Key
	lifecycle revision.Lifecycle
	full      string                 // package path in the repository
	ref       plumbing.ReferenceName // the draft or proposed branch, the tag, or the registered branch
	refHash   plumbing.Hash          // the ref's value (a commit, or an annotated tag)
	commit    *gitobj.CommitInfo
	pkgTree   plumbing.Hash
	// deferTree says pkgTree is not known yet: the package's tree is
	// looked up under full in commit.Tree when the files are first read
	// (a published revision its commit registers, as a list finds it;
	// see tagRev).
	deferTree bool
	dpRef     plumbing.ReferenceName // the deletionProposed branch, for published revisions
	dpHash    plumbing.Hash          // its value; zero when absent
	md        revision.Metadata      // from the metadata ref
	published *object.Signature      // for the placeholder, see attachPublished
	task      json.RawMessage        // the creation task, see view.taskIn
}

// version is the revision's Meta.Version: the commit (the package tree
// for the placeholder, which unrelated commits on the branch leave alone)
// and the lifecycle.
func (x *rev) version() string {
	h := x.commit.Hash
	if x.key.IsPlaceholder() {
		h = x.pkgTree
	}
	return versionOf(h, x.lifecycle, x.md.Hash())
}

// versionOf returns the Version of a revision at h (its commit, or the
// placeholder's package tree) in lifecycle lc with metadata hash mh, built
// in one allocation.
func versionOf(h plumbing.Hash, lc revision.Lifecycle, mh string) string {
	lower := lowerLifecycle(lc)
	n := 2*len(h) + 1 + len(lower)
	if mh != "" {
		n += 1 + len(mh)
	}
	var hx [2 * len(plumbing.Hash{})]byte
	hex.Encode(hx[:], h[:])
	var b strings.Builder
	b.Grow(n)
	b.Write(hx[:])
	b.WriteByte('.')
	b.WriteString(lower)
	if mh != "" {
		b.WriteByte('.')
		b.WriteString(mh)
	}
	return b.String()
}

// lowerLifecycle returns lc in lower case, without allocating for the
// four lifecycles.
func lowerLifecycle(lc revision.Lifecycle) string {
	switch lc {
	case revision.LifecycleDraft:
		return "draft"
	case revision.LifecycleProposed:
		return "proposed"
	case revision.LifecyclePublished:
		return "published"
	case revision.LifecycleDeletionProposed:
		return "deletionproposed"
	}
	return strings.ToLower(string(lc))
}

// creationTask returns x's creation task: the one found through its
// history when draftRev or tagRev found x, else its commit's own.
func (x *rev) creationTask() json.RawMessage {
	if x.task != nil {
		return x.task
	}
	return taskOf(x.commit, x.full, x.key.Workspace)
}

// meta returns x's Meta.
func (x *rev) meta() revision.Meta {
	m := x.compact(nil)
	return m.meta(x.key.Repository)
}

// revMeta is what a revision's Meta is built from, kept compactly: a
// list of 50,000 revisions holds one per revision, so it keeps the few
// fields Meta is computed from (136 bytes, where a Meta with its Version
// is about 300) and builds Version and Commit on each call.
type revMeta struct {
	pkg, ws string // Key.Package and Key.Workspace
	num     int    // Key.Revision
	// commit is the revision's commit (the branch head for the
	// placeholder); tree is its package tree, Version's hash for the
	// placeholder.
	commit, tree plumbing.Hash
	// rootOnly says tree is the commit's root tree, the package's tree
	// being looked up under the package's path on the first read.
	rootOnly bool
	lc       lifecycleCode
	pubBy    string    // PublishedBy
	pubAt    time.Time // PublishedAt
	more     *revMore  // nil when the revision has none of it
}

// revMore is the part of a Meta few revisions have.
type revMore struct {
	lc       revision.Lifecycle // when it is none of the four lifecycles
	md       revision.Metadata
	mdHash   string // md.Hash()
	creation *revision.Creation
}

// lifecycleCode is a revision.Lifecycle in one byte; lcOther means the
// lifecycle is in revMore.
type lifecycleCode uint8

const (
	lcOther lifecycleCode = iota
	lcDraft
	lcProposed
	lcPublished
	lcDeletionProposed
)

var lifecycles = [...]revision.Lifecycle{
	lcDraft:            revision.LifecycleDraft,
	lcProposed:         revision.LifecycleProposed,
	lcPublished:        revision.LifecyclePublished,
	lcDeletionProposed: revision.LifecycleDeletionProposed,
}

// compact returns x's revMeta, its publisher's string from in (which may
// be nil): a list's publishers are mostly the same few.
func (x *rev) compact(in *interner) revMeta {
	m := revMeta{pkg: x.key.Package, ws: x.key.Workspace, num: x.key.Revision, commit: x.commit.Hash, tree: x.pkgTree}
	if x.deferTree {
		m.tree, m.rootOnly = x.commit.Tree, true
	}
	var lc revision.Lifecycle // when it is none of the four
	switch x.lifecycle {
	case revision.LifecycleDraft:
		m.lc = lcDraft
	case revision.LifecycleProposed:
		m.lc = lcProposed
	case revision.LifecyclePublished:
		m.lc = lcPublished
	case revision.LifecycleDeletionProposed:
		m.lc = lcDeletionProposed
	default:
		lc = x.lifecycle
	}
	creation := porchtask.Decode(x.creationTask())
	if lc != "" || !x.md.IsZero() || creation != nil {
		m.more = &revMore{lc: lc, creation: creation}
		if !x.md.IsZero() {
			m.more.md, m.more.mdHash = x.md.Clone(), x.md.Hash()
		}
	}
	var by *object.Signature
	switch {
	case x.key.IsPlaceholder():
		by = x.published
	case x.lifecycle.IsPublished():
		by = &x.commit.Author
	}
	if by != nil {
		m.pubBy = by.Email
		if m.pubBy == "" {
			m.pubBy = by.Name
		}
		m.pubBy = in.intern(m.pubBy)
		m.pubAt = by.When
	}
	return m
}

// lifecycle returns m's Lifecycle.
func (m *revMeta) lifecycle() revision.Lifecycle {
	if m.lc == lcOther {
		if m.more == nil {
			return ""
		}
		return m.more.lc
	}
	return lifecycles[m.lc]
}

// meta returns the Meta m describes, of a revision in repository repo.
func (m *revMeta) meta(repo string) revision.Meta {
	lc := m.lifecycle()
	placeholder := m.num == revision.Placeholder
	h := m.commit
	if placeholder {
		h = m.tree
	}
	var out revision.Meta
	if m.more != nil {
		out.Metadata, out.Creation = m.more.md, m.more.creation
		out.Version = versionOf(h, lc, m.more.mdHash)
	} else {
		out.Version = versionOf(h, lc, "")
	}
	out.Key = revision.Key{Repository: repo, Package: m.pkg, Workspace: m.ws, Revision: m.num}
	out.Lifecycle = lc
	out.Commit = out.Version[:2*len(h)] // the commit's id starts the version
	if placeholder {
		out.Commit = m.commit.String()
	}
	out.PublishedBy, out.PublishedAt = m.pubBy, m.pubAt
	return out
}

// revision returns x as a PackageRevision whose files are read on demand
// from its package tree.
func (r *Repository) revision(x *rev) revision.PackageRevision {
	return r.lazy(x, nil)
}

// lazy returns x as a *lazyRev; in is compact's.
func (r *Repository) lazy(x *rev, in *interner) *lazyRev {
	return &lazyRev{r: r, revMeta: x.compact(in)}
}

// lazyRev is a revision whose files and info are read on demand from its
// package tree: one value per revision, as small as it can be, since a
// list of a large repository holds many. Its Meta is built on each call
// from its revMeta. It behaves as revision.NewWithInfo's value does: a
// read's success is kept, a failure is not, and Info reads only the
// Kptfile until the files have been read. Safe for concurrent use.
type lazyRev struct {
	r *Repository
	revMeta
	// dt and di: a list's revision whose package tree is left to its
	// first read (rootOnly) finds it through the list's deferredTrees,
	// item di.
	dt *deferredTrees
	di int32

	mu  sync.Mutex
	got *lazyGot // nil until a read succeeds
}

// lazyGot is what a lazyRev has read.
type lazyGot struct {
	files *revision.Files
	info  *revision.Info
	tree  plumbing.Hash // the package tree found for a rootOnly revMeta
}

// gotten returns l.got, made on first use; l.mu is held.
func (l *lazyRev) gotten() *lazyGot {
	if l.got == nil {
		l.got = &lazyGot{}
	}
	return l.got
}

// Meta returns the revision's Meta, the same value on every call (its
// Version and Commit strings are built anew each time). It cannot fail.
func (l *lazyRev) Meta() revision.Meta { return l.meta(l.r.name) }

// key returns the revision's key.
func (l *lazyRev) key() revision.Key {
	return revision.Key{Repository: l.r.name, Package: l.pkg, Workspace: l.ws, Revision: l.num}
}

// Files returns the package's files, read on first use. Errors wrap a
// *repository.Error (ErrClosed, ErrUnavailable, or ctx's error).
func (l *lazyRev) Files(ctx context.Context) (revision.Files, error) {
	if err := l.r.batchDone("read files", l.key()); err != nil {
		return revision.Files{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got != nil && l.got.files != nil {
		return *l.got.files, nil
	}
	if err := ctx.Err(); err != nil {
		return revision.Files{}, err
	}
	f, err := l.load(ctx)
	if err != nil {
		return revision.Files{}, fmt.Errorf("read files of %s: %w", l.key(), err)
	}
	l.gotten().files = &f
	return f, nil
}

// Info returns what the package's Kptfile (or PackageFile) records. Errors
// are Files' and revision.InfoFromFiles'.
func (l *lazyRev) Info(ctx context.Context) (revision.Info, error) {
	if err := l.r.batchDone("read info", l.key()); err != nil {
		return revision.Info{}, err
	}
	l.mu.Lock()
	if l.got != nil && l.got.info != nil {
		defer l.mu.Unlock()
		return *l.got.info, nil
	}
	if l.got == nil || l.got.files == nil {
		defer l.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return revision.Info{}, err
		}
		info, err := l.loadInfo(ctx)
		if err != nil {
			return revision.Info{}, fmt.Errorf("%s: %w", l.key(), err)
		}
		l.gotten().info = &info
		return info, nil
	}
	l.mu.Unlock()
	f, err := l.Files(ctx)
	if err != nil {
		return revision.Info{}, err
	}
	info, err := revision.InfoFromFiles(f)
	if err != nil {
		return revision.Info{}, fmt.Errorf("%s: %w", l.key(), err)
	}
	return info, nil
}

func (l *lazyRev) loadInfo(ctx context.Context) (revision.Info, error) {
	r, key := l.r, l.key()
	if err := r.enter(ctx, "read info", key); err != nil {
		return revision.Info{}, err
	}
	var out revision.Info
	err := r.st.read(ctx, func() error {
		v := r.viewIn()
		tree, err := l.packageTree(v)
		if err != nil {
			return err
		}
		out, err = v.info(tree)
		return err
	})
	if err != nil {
		return revision.Info{}, r.wrapErr("read info", key, err)
	}
	return out, nil
}

// deferTrees is whether List, Range and Get find the published revisions
// their commits register without their package trees (tagRev); the tests
// of cad-paths turn it off to have lists learn every package tree.
var deferTrees = true

// packageTree returns the revision's package tree, looked up in its
// commit's root tree on the first call for a revision a list found by its
// refs and commit alone (rootOnly); l.mu is held. A commit with no
// directory at the package's path gives a *DamagedRefError for the tag.
func (l *lazyRev) packageTree(v *view) (plumbing.Hash, error) {
	if !l.rootOnly {
		return l.tree, nil
	}
	if l.got != nil && !l.got.tree.IsZero() {
		return l.got.tree, nil
	}
	full := l.r.fullPath(l.pkg)
	tag := tagRef(full + "/" + l.ws) // a tag not of the form v<N>: its name is the workspace
	if l.num > 0 {
		tag = versionTagRef(full, l.num)
	}
	var h plumbing.Hash
	var ok bool
	var err error
	if l.dt != nil {
		h, ok, err = l.dt.tree(v, l.di)
	} else {
		h, ok, err = v.packageTree(&gitobj.CommitInfo{Hash: l.commit, Tree: l.tree}, full, true)
	}
	if err != nil {
		return plumbing.ZeroHash, dangling(tag, err)
	}
	if !ok {
		return plumbing.ZeroHash, &DamagedRefError{Ref: string(tag),
			Reason: fmt.Sprintf("its commit %s registers the package but has no directory %s", l.commit, full)}
	}
	l.gotten().tree = h
	return h, nil
}

func (l *lazyRev) load(ctx context.Context) (revision.Files, error) {
	r, key := l.r, l.key()
	if err := r.enter(ctx, "read files", key); err != nil {
		return revision.Files{}, err
	}
	var f revision.Files
	err := r.st.read(ctx, func() error {
		v := r.viewIn()
		tree, err := l.packageTree(v)
		if err != nil {
			return err
		}
		f, err = v.files(tree, r.log.Warn)
		return err
	})
	if err != nil {
		return revision.Files{}, r.wrapErr("read files", key, err)
	}
	return f, nil
}

// List returns the revisions opts selects, in repository.SortRevisions
// order. It reads the refs and the commits they point at, and the trees
// down to each package for drafts, proposals, the registered branch's
// packages and tags whose commit does not register their package (a kpt:
// annotation naming it, as Porch and cad write); a published revision its
// commit registers has its package tree looked up on the first read of
// its files, which fails with a *DamagedRefError when the commit has no
// directory there. It never reads file contents.
//
// A ref that can hold a revision (or the metadata ref, or the registered
// branch) and cannot be read (empty, not an object id, naming a missing
// object, a damaged line of packed-refs) is left out, and List returns
// the other revisions with an *repository.Error wrapping a
// *repository.DamageError that holds a *DamagedRefError per such ref
// (matching repository.ErrDamaged and ErrCorrupt). Other errors are
// *repository.Error matching repository.ErrClosed, ErrUnavailable (a
// remote that cannot be reached), or wrapping ctx's error, with no
// revisions.
func (r *Repository) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	if err := r.enter(ctx, "list", revision.Key{}); err != nil {
		return nil, err
	}
	var revs []revision.PackageRevision
	var damaged []error
	// What the list learns goes to cad-paths once, when it ends.
	learnt := &pathLog{}
	defer learnt.flush(r.st.paths)
	err := r.read(ctx, func(v *view) error {
		v.learnt = learnt
		damaged = damaged[:0]
		v.damaged = r.collectDamage(&damaged)
		var err error
		revs, err = r.list(ctx, v, opts)
		return err
	})
	if err != nil {
		return nil, r.wrapErr("list", revision.Key{}, err)
	}
	err = r.wrapErr("list", revision.Key{}, repository.NewDamageError(damaged))
	// The order of repository.SortRevisions, sorting the keys directly.
	slices.SortStableFunc(revs, func(a, b revision.PackageRevision) int {
		ka, kb := &a.(*lazyRev).revMeta, &b.(*lazyRev).revMeta
		if c := strings.Compare(ka.pkg, kb.pkg); c != 0 {
			return c
		}
		if ka.num != kb.num {
			return ka.num - kb.num
		}
		return strings.Compare(ka.ws, kb.ws)
	})
	return revs, err
}

// collectDamage returns a view's damaged func for a list: it warns of
// each damaged ref and appends to out those that can hold what a list
// returns (see relevant), and those of packed-refs lines whose ref name
// is unknown.
func (r *Repository) collectDamage(out *[]error) func(error) {
	return func(err error) {
		r.log.Warn("leaving out a damaged ref", "error", err)
		var d *DamagedRefError
		if errors.As(err, &d) && !strings.HasSuffix(d.Ref, "...") && !r.relevant(plumbing.ReferenceName(d.Ref)) {
			return
		}
		*out = append(*out, err)
	}
}

// list finds the revisions opts selects, filtering on what the ref names
// tell before reading any object. Each is a *lazyRev.
func (r *Repository) list(ctx context.Context, v *view, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	l, err := r.startListing(v, opts)
	if err != nil {
		return nil, err
	}
	// The placeholders first, while little else is held: reading the
	// trees of every package on the branch is the step that needs the
	// most memory, on the heap and in the pack's pages, which are dropped
	// before the refs are read. They go last in the result all the same,
	// as in Range (the sort below keeps the order of equal keys).
	phs, err := l.placeholders()
	if err != nil {
		return nil, err
	}
	r.st.dropPages()
	last := make([]revision.PackageRevision, 0, len(phs))
	for _, x := range phs {
		if pr := l.revision(x); pr != nil {
			last = append(last, pr)
		}
	}
	phs = nil
	// Each revision found becomes its PackageRevision at once, so that
	// what was read to find it (its commit) is not kept to the end.
	out := make([]revision.PackageRevision, 0, len(l.names)+len(last))
	add := func(x *rev) {
		if pr := l.revision(x); pr != nil {
			out = append(out, pr)
		}
	}
	if err := l.refs(ctx, len(l.names), add); err != nil {
		return nil, err
	}
	return append(out, last...), nil
}

// listing is one list in progress: the refs it reads, in the order it
// reads them, and how far it has come. List runs one under a single hold
// of the lock; Range runs one a batch of refs at a time.
type listing struct {
	r      *Repository
	v      *view
	opts   repository.ListOptions
	names  []plumbing.ReferenceName // in pack order; read from next on
	hashes []plumbing.Hash          // their values
	at     []packPos                // where their objects lie
	next   int
	seen   interner // the publishers
	// deferred are the package trees of the revisions found that their
	// first reads look up (tagRev), nil when there are none.
	deferred *deferredTrees
}

// interner hands out one string for equal strings: the revisions of a
// list share their publishers' strings.
type interner map[string]string

// intern returns s, or an equal string an earlier call returned; it
// remembers a few hundred. A nil *interner returns s.
func (in *interner) intern(s string) string {
	if in == nil {
		return s
	}
	if t, ok := (*in)[s]; ok {
		return t
	}
	if *in == nil {
		*in = interner{}
	}
	if len(*in) < 256 {
		(*in)[s] = s
	}
	return s
}

// startListing reads the refs that can hold revisions opts selects.
func (r *Repository) startListing(v *view, opts repository.ListOptions) (*listing, error) {
	v.deferTrees, v.sweep = deferTrees, true
	refs, err := r.candidateRefs(v, opts)
	if err != nil {
		return nil, err
	}
	names, hashes, at := v.packOrder(refs)
	return &listing{r: r, v: v, opts: opts, names: names, hashes: hashes, at: at}, nil
}

// revision returns x as its PackageRevision when opts selects it, and nil
// otherwise (x nil included).
func (l *listing) revision(x *rev) revision.PackageRevision {
	if x == nil {
		return nil
	}
	pr := l.r.lazy(x, &l.seen)
	if !l.opts.Matches(pr.Meta()) {
		return nil
	}
	if pr.rootOnly {
		if l.deferred == nil {
			l.deferred = &deferredTrees{items: make([]deferredTree, 0, len(l.names)-l.next)}
		}
		pr.dt, pr.di = l.deferred, l.deferred.add(pr.tree, l.r.fullPath(pr.pkg))
	}
	return pr
}

// refs reads the next n refs (fewer at the end) and calls add with each
// revision found; refs that hold none, or that opts does not select by
// their names, are skipped before any object is read.
func (l *listing) refs(ctx context.Context, n int, add func(*rev)) error {
	r, v, opts := l.r, l.v, l.opts
	wantPkg := func(pkg string) bool {
		return (opts.Package == "" || opts.Package == pkg) &&
			(opts.PackagePrefix == "" || opts.PackagePrefix == pkg || strings.HasPrefix(pkg, opts.PackagePrefix+"/"))
	}
	wantLC := func(lc ...revision.Lifecycle) bool {
		if len(opts.Lifecycles) == 0 {
			return true
		}
		for _, l := range lc {
			if slices.Contains(opts.Lifecycles, l) {
				return true
			}
		}
		return false
	}
	end := min(l.next+n, len(l.names))
	for ; l.next < end; l.next++ {
		name, h := l.names[l.next], l.hashes[l.next]
		if err := ctx.Err(); err != nil {
			return err
		}
		v.hint.h, v.hint.at = h, l.at[l.next]
		if l.next%256 == 0 && l.at[l.next].pack != noPack {
			// The refs' objects are read in pack order: what lies
			// before has been read.
			v.packs.DropBefore(l.at[l.next].pack, l.at[l.next].off)
		}
		switch {
		case name.IsBranch():
			b := shortName(name)
			var lc revision.Lifecycle
			var rest string
			if s, ok := strings.CutPrefix(b, draftsPrefix); ok {
				lc, rest = revision.LifecycleDraft, s
			} else if s, ok := strings.CutPrefix(b, proposedPrefix); ok {
				lc, rest = revision.LifecycleProposed, s
			} else {
				continue
			}
			full, ws, ok := splitLast(rest)
			if !ok {
				continue
			}
			pkg, ok := r.relPath(full)
			if !ok || !wantPkg(pkg) || (opts.Workspace != "" && opts.Workspace != ws) || opts.Revision != 0 || !wantLC(lc) {
				continue
			}
			x, err := r.draftRev(v, pkg, ws, lc, name, h)
			if refstore.IsDamaged(err) {
				v.damaged(err)
				continue
			}
			if err != nil {
				return err
			}
			add(x)
		case name.IsTag():
			full, ver, ok := splitLast(shortName(name))
			if !ok {
				continue // a release tag
			}
			pkg, ok := r.relPath(full)
			if !ok || !wantPkg(pkg) || !wantLC(revision.LifecyclePublished, revision.LifecycleDeletionProposed) {
				continue
			}
			if n := parseVersion(ver); opts.Revision != 0 && opts.Revision != n {
				continue
			}
			x, err := r.tagRev(v, pkg, ver, name, h)
			if refstore.IsDamaged(err) {
				v.damaged(err)
				continue
			}
			if err != nil {
				return err
			}
			add(x)
		}
	}
	return nil
}

// done reports whether every ref has been read.
func (l *listing) done() bool { return l.next >= len(l.names) }

// placeholders returns the placeholder revisions opts can select, after
// the refs: those of the packages on the registered branch.
func (l *listing) placeholders() ([]*rev, error) {
	opts := l.opts
	if opts.Revision != 0 && opts.Revision != revision.Placeholder {
		return nil, nil
	}
	if opts.Workspace != "" && opts.Workspace != l.r.branch {
		return nil, nil
	}
	phs, err := l.r.placeholders(l.v, opts.Package, opts.PackagePrefix)
	if refstore.IsDamaged(err) {
		// The other revisions are listed all the same.
		l.v.damaged(err)
		return nil, nil
	}
	return phs, err
}

// packOrder returns the names of refs, their values and where their
// objects lie, in the order the objects lie in the packs, those in no
// pack last. Read in that order, each commit's
// trees are mostly deltas on the previous commit's, still in the cache: a
// list resolves each object's delta chain once, not once per tag.
func (v *view) packOrder(refs *refstore.RefSnap) ([]plumbing.ReferenceName, []plumbing.Hash, []packPos) {
	type at struct {
		i int32 // in refs, which is sorted by name
		packPos
	}
	all := make([]at, refs.Len())
	for i, h := range refs.Hashes {
		all[i] = at{i: int32(i), packPos: packPos{pack: noPack}}
		if v.packs != nil {
			if p, off, ok := v.packs.Offset(h); ok {
				all[i].pack, all[i].off = p, off
			}
		}
	}
	slices.SortFunc(all, func(a, b at) int {
		if a.pack != b.pack {
			return cmp.Compare(a.pack, b.pack)
		}
		if a.off != b.off {
			return cmp.Compare(a.off, b.off)
		}
		return cmp.Compare(a.i, b.i)
	})
	names := make([]plumbing.ReferenceName, len(all))
	hashes := make([]plumbing.Hash, len(all))
	pos := make([]packPos, len(all))
	for k, a := range all {
		names[k], hashes[k], pos[k] = plumbing.ReferenceName(refs.Names[a.i]), refs.Hashes[a.i], a.packPos
	}
	return names, hashes, pos
}

// packPos is where an object lies: a pack's id (gitobj.PackReader.Offset)
// and an offset in it; noPack for an object in no pack.
type packPos struct {
	pack uint32
	off  int64
}

// noPack is packPos.pack for an object in no pack.
const noPack = ^uint32(0)

// candidateRefs returns the refs that can hold revisions opts selects:
// for a package or a package prefix only the refs under that path
// (drafts, proposals and tags), so that listing one package costs the same
// however many the repository holds; all refs otherwise.
func (r *Repository) candidateRefs(v *view, opts repository.ListOptions) (*refstore.RefSnap, error) {
	if opts.Package == "" && opts.PackagePrefix == "" {
		return v.allRefs()
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, p := range []string{opts.Package, opts.PackagePrefix} {
		if p == "" {
			continue
		}
		full := r.fullPath(p)
		for _, base := range []string{"refs/heads/" + draftsPrefix, "refs/heads/" + proposedPrefix, "refs/tags/"} {
			var refs map[plumbing.ReferenceName]plumbing.Hash
			var err error
			if p == opts.Package {
				refs, err = v.children(base + full + "/")
			} else {
				refs, err = v.under(base + full + "/")
			}
			if err != nil {
				return nil, err
			}
			for name, h := range refs {
				out[name] = h
			}
		}
		if opts.Package != "" {
			break // Package is the narrower selection
		}
	}
	return refstore.SnapOf(out), nil
}

// draftRev returns the draft or proposal on branch name at h, or nil when
// the branch holds no package at the package's path: no directory, or one
// with no package marker whose commit's kpt: annotation does not name it.
func (r *Repository) draftRev(v *view, pkg, ws string, lc revision.Lifecycle, name plumbing.ReferenceName, h plumbing.Hash) (*rev, error) {
	full := r.fullPath(pkg)
	c, err := v.refCommit(h)
	if err != nil {
		if errors.Is(err, errNotCommit) {
			return nil, nil
		}
		return nil, dangling(name, err)
	}
	tree, ok, err := v.packageTree(c, full, names(c.Annotations, full))
	if err != nil {
		return nil, dangling(name, err)
	}
	if !ok {
		r.log.Debug("ignoring branch without a package", "ref", name.String())
		return nil, nil
	}
	x := &rev{
		key:       revision.Key{Repository: r.name, Package: pkg, Workspace: ws},
		lifecycle: lc, full: full, ref: name, refHash: h, commit: c, pkgTree: tree,
	}
	x.task = v.taskIn(c, full, ws, 0)
	if err := r.attachMetadata(v, x); err != nil {
		return nil, err
	}
	return x, nil
}

// tagRev returns the published revision of tag name (full/ver) at h, or
// nil when the tagged commit has no package at the package's path (as for
// draftRev, the tag's own message counting as well as the commit's).
//
// In a view with deferTrees (List, Range and Get, which hand out
// revisions whose files are read later), a tag whose commit (or own
// message) registers the package is taken from its ref and commit alone:
// its package tree, when cad-paths does not know it (or in a list, which
// does not ask), is looked up on the first read of its files
// (rev.deferTree), and a commit
// with no directory there fails that read instead of leaving the tag out.
// A list of the flat layout then reads no root tree for the tags Porch
// and cad write, which hold every package of the branch (a delta chain's
// bottom of hundreds of KB for every 50 approvals).
func (r *Repository) tagRev(v *view, pkg, ver string, name plumbing.ReferenceName, h plumbing.Hash) (*rev, error) {
	full := r.fullPath(pkg)
	c, err := v.refCommit(h)
	if err != nil {
		if errors.Is(err, errNotCommit) {
			return nil, nil
		}
		return nil, dangling(name, err)
	}
	tagAnns := v.tagAnnotations(h)
	registered := names(tagAnns, full) || names(c.Annotations, full)
	tree, deferred := plumbing.ZeroHash, false
	// A tag not of the form v<N> is keyed as a placeholder, whose
	// Version is its package tree (rev.version): never deferred.
	if v.deferTrees && registered && parseVersion(ver) > 0 {
		// A list (v.learnt) asks cad-paths nothing here: a lookup per
		// tag reads a fan-out bucket each, more than the list needs; the
		// first read of the files asks it, in batches (deferred.go).
		var known bool
		if v.learnt == nil {
			tree, known = v.knownSubtree(c.Tree, full)
		}
		deferred = !known
	} else {
		t, ok, err := v.packageTree(c, full, registered)
		if err != nil || !ok {
			return nil, dangling(name, err)
		}
		tree = t
	}
	ws := tagWorkspace(ver, objectWorkspace(tagAnns, c, full))
	x := &rev{
		key:       revision.Key{Repository: r.name, Package: pkg, Workspace: ws, Revision: parseVersion(ver)},
		lifecycle: revision.LifecyclePublished, full: full, ref: name, refHash: h, commit: c, pkgTree: tree,
		deferTree: deferred, dpRef: deletionProposedRef(full, ver),
	}
	x.task = v.taskIn(c, full, ws, x.key.Revision)
	if x.key.IsPlaceholder() {
		// A tag not of the form v<N> has revision -1, as the branch's
		// placeholder does; its publisher is its commit's author, as for
		// the other tags and as Porch reads it.
		sig := c.Author
		x.published = &sig
	}
	if err := r.markDeletionProposed(v, x); err != nil {
		return nil, err
	}
	if err := r.attachMetadata(v, x); err != nil {
		return nil, err
	}
	return x, nil
}

func (r *Repository) markDeletionProposed(v *view, x *rev) error {
	dp, ok, err := v.ref(x.dpRef)
	if err != nil {
		return err
	}
	if ok {
		x.lifecycle, x.dpHash = revision.LifecycleDeletionProposed, dp
	}
	return nil
}

// placeholders returns the placeholder revisions of the packages on the
// branch head: only package pkg when it is set, else only those at and
// under prefix when that is set.
func (r *Repository) placeholders(v *view, pkg, prefix string) ([]*rev, error) {
	head, ok, err := v.ref(branchRef(r.branch))
	if err != nil || !ok {
		return nil, err
	}
	c, err := v.commit(head)
	if err != nil {
		return nil, dangling(branchRef(r.branch), err)
	}
	var found []pkgEntry
	if pkg != "" {
		tree, ok, err := v.packageTree(c, r.fullPath(pkg), false)
		if err != nil {
			return nil, err
		}
		if ok {
			found = []pkgEntry{{path: pkg, tree: tree}}
		}
	} else {
		base := r.dir
		if prefix != "" {
			base = r.fullPath(prefix)
		}
		dirTree, ok, err := v.subtree(c.Tree, base)
		if err != nil || !ok {
			return nil, err
		}
		if prefix != "" {
			// The prefix itself may be a package (a Kptfile at its top);
			// the cached entries are shared, so they are copied.
			under, err := v.packagesAt(dirTree, false)
			if err != nil {
				return nil, err
			}
			for _, p := range under {
				found = append(found, pkgEntry{path: path.Join(prefix, p.path), tree: p.tree})
			}
		} else if found, err = v.packages(dirTree); err != nil {
			return nil, err
		}
	}
	out := make([]*rev, 0, len(found))
	for _, p := range found {
		full := r.fullPath(p.path)
		x := &rev{
			key:       revision.Key{Repository: r.name, Package: p.path, Workspace: r.branch, Revision: revision.Placeholder},
			lifecycle: revision.LifecyclePublished, full: full, ref: branchRef(r.branch), refHash: head, commit: c, pkgTree: p.tree,
			dpRef: deletionProposedRef(full, r.branch),
		}
		if err := r.markDeletionProposed(v, x); err != nil {
			return nil, err
		}
		if err := r.attachMetadata(v, x); err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	if err := r.attachPublishedAll(v, out); err != nil {
		return nil, err
	}
	return out, nil
}

// dangling returns err as a *DamagedRefError for ref name when it says
// an object the ref leads to is missing, and err as it is otherwise.
func dangling(name plumbing.ReferenceName, err error) error {
	if err != nil && errors.Is(err, plumbing.ErrObjectNotFound) {
		return &DamagedRefError{Ref: string(name), Reason: "it leads to a missing object: " + err.Error()}
	}
	return err
}

// tagsOf returns the tags full/<ver> of package full, by name.
func (v *view) tagsOf(full string) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	return v.children("refs/tags/" + full + "/")
}

// shortName returns a branch or tag name without its refs/heads/ or
// refs/tags/ prefix (go-git's ReferenceName.Short is slow).
func shortName(name plumbing.ReferenceName) string {
	s := string(name)
	if rest, ok := strings.CutPrefix(s, "refs/heads/"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(s, "refs/tags/"); ok {
		return rest
	}
	return s
}

// resolve finds the revision key selects. It returns an error matching
// repository.ErrNotFound when there is none.
func (r *Repository) resolve(v *view, key revision.Key) (*rev, error) {
	notFound := func() (*rev, error) {
		return nil, r.errorf("get", key, repository.ErrNotFound, "no revision %s", keyString(key))
	}
	if key.Repository != "" && key.Repository != r.name {
		return notFound()
	}
	full := r.fullPath(key.Package)
	match := func(x *rev, err error) (*rev, error) {
		if err != nil {
			return nil, err
		}
		if x == nil || !key.Matches(x.key) {
			return notFound()
		}
		return x, nil
	}
	if key.Revision > 0 {
		name := versionTagRef(full, key.Revision)
		h, ok, err := v.ref(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return notFound()
		}
		return match(r.tagRev(v, key.Package, "v"+itoa(key.Revision), name, h))
	}
	if key.Revision == revision.Placeholder && (key.Workspace == "" || key.Workspace == r.branch) {
		phs, err := r.placeholders(v, key.Package, "")
		if err != nil {
			return nil, err
		}
		if len(phs) == 1 {
			return phs[0], nil
		}
		if key.Workspace == r.branch || key.Workspace == "" {
			return notFound()
		}
	}
	if key.Revision == 0 {
		for _, d := range []struct {
			name plumbing.ReferenceName
			lc   revision.Lifecycle
		}{{draftRef(full, key.Workspace), revision.LifecycleDraft}, {proposedRef(full, key.Workspace), revision.LifecycleProposed}} {
			h, ok, err := v.ref(d.name)
			if err != nil {
				return nil, err
			}
			if ok {
				x, err := r.draftRev(v, key.Package, key.Workspace, d.lc, d.name, h)
				if err != nil {
					return nil, err
				}
				if x != nil {
					return x, nil
				}
			}
		}
		if key.Workspace == r.branch {
			phs, err := r.placeholders(v, key.Package, "")
			if err != nil {
				return nil, err
			}
			if len(phs) == 1 {
				return phs[0], nil
			}
		}
	}
	// A published revision with this workspace: look through the
	// package's tags, whose workspaces the cad-paths records give
	// without reading their objects (tagMayHaveWorkspace).
	tags, err := v.tagsOf(full)
	if err != nil {
		return nil, err
	}
	var best *rev
	wl := &wsLookup{full: full}
	defer func() { v.paths.Add(wl.learnt...) }()
	for name, h := range tags {
		ver := shortName(name)[len(full)+1:]
		n := parseVersion(ver)
		if key.Revision != 0 && key.Revision != n {
			continue
		}
		if key.Workspace != "" && !r.tagMayHaveWorkspace(v, wl, ver, h, key.Workspace) {
			continue
		}
		x, err := r.tagRev(v, key.Package, ver, name, h)
		if err != nil {
			return nil, err
		}
		if x != nil && key.Matches(x.key) && (best == nil || x.key.Revision > best.key.Revision) {
			best = x
		}
	}
	if best == nil {
		return notFound()
	}
	return best, nil
}

// tagMayHaveWorkspace reports whether tag <wl.full>/<ver> at h, read as
// tagRev reads it, can have workspace ws; it reads only the tagged commit
// (and an annotated tag's message), not the package tree or metadata, and
// answers true when it cannot tell, so that tagRev decides. Looking a
// workspace up among a package's thousands of tags (every new draft
// checks that its workspace is free) then reads no tree, and no object
// when the answer is known: remembered in the Repository (tagWorkspaces)
// or recorded in cad-paths (workspace records, read once per lookup
// and written for what was read, in wl.learnt).
func (r *Repository) tagMayHaveWorkspace(v *view, wl *wsLookup, ver string, h plumbing.Hash, ws string) bool {
	if parseVersion(ver) <= 0 {
		return tagWorkspace(ver, "") == ws // whatever the objects say
	}
	full := wl.full
	if w, ok := r.tagWS.get(h, full); ok {
		return tagWorkspace(ver, w) == ws
	}
	if !wl.loaded {
		wl.loaded, wl.recs, wl.want = true, v.paths.Workspaces(full), index.WsHash(ws)
	}
	if got, ok := wl.recs.Get(h); ok {
		// A hash of the workspace: two names with one hash are told
		// apart by tagRev.
		return tagWorkspaceMatches(ver, got, ws, wl.want)
	}
	c, err := v.commit(h)
	if err != nil {
		return true
	}
	w := objectWorkspace(v.tagAnnotations(h), c, full)
	r.tagWS.put(h, full, w)
	wl.learnt = append(wl.learnt, index.WsRecord(full, h, w))
	return tagWorkspace(ver, w) == ws
}

// wsLookup is one workspace lookup among the tags of package full: the
// workspace records of cad-paths, read when first needed, and the
// records learnt from the objects.
type wsLookup struct {
	full   string
	loaded bool
	recs   index.WsRecords
	want   plumbing.Hash // index.WsHash of the workspace looked up
	learnt []index.PathRecord
}

// tagWorkspaces remembers the workspace a v<N> tag at an object (an
// annotated tag or a commit) gives a package through the objects'
// annotations ("" when they give none: the tag's name is then the
// workspace): a fact of immutable objects, valid in any state of the refs. It holds up to
// maxTagWorkspaces answers (some 100 bytes each), then starts again.
// The zero value is ready; it is safe for concurrent use.
type tagWorkspaces struct {
	mu sync.Mutex
	m  map[tagWSKey]string
}

type tagWSKey struct {
	h    plumbing.Hash
	full string
}

const maxTagWorkspaces = 1 << 17

func (t *tagWorkspaces) get(h plumbing.Hash, full string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.m[tagWSKey{h, full}]
	return w, ok
}

func (t *tagWorkspaces) put(h plumbing.Hash, full, ws string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTagWorkspaces {
		t.m = map[tagWSKey]string{}
	}
	t.m[tagWSKey{h, full}] = ws
}

// Get returns the revision key selects (see revision.Key): by revision
// number it reads one tag, by workspace the draft and proposal branches and
// then the package's tags. As in List, a published revision its commit
// registers is found without its package tree. Errors are
// *repository.Error matching
// repository.ErrInvalidInput for a key that selects nothing in
// particular, ErrNotFound when no revision matches, ErrClosed,
// ErrUnavailable, or wrapping ctx's error.
func (r *Repository) Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error) {
	if err := r.enter(ctx, "get", key); err != nil {
		return nil, err
	}
	if err := key.ValidateLookup(); err != nil {
		return nil, r.errorf("get", key, repository.ErrInvalidInput, "%w", err)
	}
	var x *rev
	err := r.read(ctx, func(v *view) error {
		v.deferTrees = deferTrees
		var err error
		x, err = r.resolve(v, key)
		return err
	})
	if err != nil {
		return nil, r.wrapErr("get", key, err)
	}
	return r.revision(x), nil
}

// Version returns a token of the repository's state: a hash of every ref
// of the layout (the registered branch, drafts, proposals, deletion
// proposals and package tags). It changes with every write and stays the
// same otherwise, whoever writes (this or another process, or git). On
// disk an unchanged repository's token costs a few lstats: the token is
// kept with a Stamp of the files the refs were read from and computed
// again only when one of them changed (internal/refstore, Stamp). The
// token and its Stamp are also kept for the process (up to 4,096 local
// repositories): another Repository opened on the same path and branch
// starts from them, and CachedVersion answers from them without opening
// the repository. Errors
// are *repository.Error matching ErrClosed or ErrUnavailable, or
// wrapping ctx's error.
func (r *Repository) Version(ctx context.Context) (string, error) {
	if err := r.enter(ctx, "version", revision.Key{}); err != nil {
		return "", err
	}
	if token, ok := r.versionKept(); ok {
		return token, nil
	}
	var token string
	err := r.read(ctx, func(v *view) error {
		var err error
		token, err = r.versionOf(v)
		return err
	})
	if err != nil {
		return "", r.wrapErr("version", revision.Key{}, err)
	}
	return token, nil
}

// versionStamp is a Version token and the Stamp of the refs it hashes.
type versionStamp struct {
	token string
	stamp *refstore.Stamp
}

// versionKept returns the token Version kept for a repository on local
// disk when no file the refs are read from changed since, without taking
// the store's locks: a write of this or another process changes a file
// of the Stamp at its first rename, so when every file is as it was, the
// refs were as they were at the first lstat, and the token is theirs. A
// journal left by a dead writer (which a read completes) is looked for
// first: ok is false then.
func (r *Repository) versionKept() (token string, ok bool) {
	fr := r.st.fsrefs
	if fr == nil || r.bt != nil || r.remote != nil || fr.Pending() {
		return "", false
	}
	kept := r.keptVersion()
	if !fr.Unchanged(kept.stamp) {
		return "", false
	}
	return kept.token, true
}

// keptVersion returns the token this Repository kept, or, when it kept
// none, the one another Repository of the same repository and branch
// left in versionMemo (a zero versionStamp when neither): the caller
// checks its Stamp.
func (r *Repository) keptVersion() versionStamp {
	r.versionMu.Lock()
	kept := r.version
	r.versionMu.Unlock()
	if kept.stamp != nil || r.memoKey == "" {
		return kept
	}
	if e, ok := versionMemo.Get(r.memoKey); ok && e.gitDir == r.st.gitDir {
		return versionStamp{token: e.token, stamp: e.stamp}
	}
	return kept
}

// versionOf returns the Version token of the refs v reads: on disk, the
// one kept while its Stamp holds, else a hash of the refs (kept with
// their Stamp when one can be trusted).
func (r *Repository) versionOf(v *view) (string, error) {
	if v.fr == nil || v.bt != nil || v.refs != nil {
		refs, err := v.allRefs()
		if err != nil {
			return "", err
		}
		return r.hashRefs(refs), nil
	}
	if kept := r.keptVersion(); v.fr.Unchanged(kept.stamp) {
		return kept.token, nil
	}
	// A package tag is created and removed, never rewritten in place
	// (not by cad, Porch, or git, which renames a new file over a ref):
	// its directory's identity covers it, and a thousand loose tags cost
	// a lstat per package rather than one per tag.
	refs, stamp, err := v.fr.SnapshotStamped([]string{"refs/heads/", "refs/tags/"}, []plumbing.ReferenceName{metadataRef}, []string{"refs/tags/"}, v.damaged)
	if err != nil {
		return "", err
	}
	token := r.hashRefs(refs)
	r.versionMu.Lock()
	r.version = versionStamp{token: token, stamp: stamp}
	r.versionMu.Unlock()
	if stamp != nil && r.memoKey != "" {
		versionMemo.Put(r.memoKey, memoEntry{gitDir: r.st.gitDir, token: token, stamp: stamp}, 1)
	}
	return token, nil
}

// hashRefs returns the Version token of refs: a hash of the names and
// values of those that can hold a revision.
func (r *Repository) hashRefs(refs *refstore.RefSnap) string {
	sum := sha256.New()
	for i, n := range refs.Names { // sorted
		if !r.relevant(plumbing.ReferenceName(n)) {
			continue
		}
		h := refs.Hashes[i]
		sum.Write([]byte(n))
		sum.Write([]byte{0})
		sum.Write(h[:])
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// relevant reports whether ref name can hold a revision.
func (r *Repository) relevant(name plumbing.ReferenceName) bool {
	switch {
	case name == branchRef(r.branch), name == metadataRef:
		return true
	case name.IsBranch():
		b := shortName(name)
		return strings.HasPrefix(b, draftsPrefix) || strings.HasPrefix(b, proposedPrefix) || strings.HasPrefix(b, deletionProposedPrefix)
	case name.IsTag():
		return strings.Contains(shortName(name), "/")
	}
	return false
}

func keyString(k revision.Key) string {
	k.Repository = ""
	return k.String()
}
