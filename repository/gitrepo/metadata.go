package gitrepo

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// metadataRef holds the labels and annotations of revisions (see
// repository.MetadataWriter), which Porch keeps in Kubernetes. It is one
// commit history whose tree has a blob <package path>/<workspace>.json per
// revision that has metadata: canonical JSON of revision.Metadata. It sits
// outside refs/heads and refs/tags, so clones of the repository do not see
// it unless they ask, and Porch ignores it; every write to it is a
// compare-and-swap in the same atomic update as the revision change it
// belongs to.
const metadataRef = plumbing.ReferenceName("refs/cad/metadata")

// metadataMessage is the message of metadata commits.
const metadataMessage = "Update package revision metadata"

// kindMetadata caches parsed metadata blobs.
const kindMetadata byte = 100

// metadataPath is where x's metadata lives in the metadata tree. A
// workspace is a DNS label (no dot), so "<ws>.json" never names a package
// directory.
func metadataPath(x *rev) string {
	return x.full + "/" + x.key.Workspace + ".json"
}

// metadataRoot returns the metadata ref's value and its commit's tree, read
// once per view; zero hashes when the ref does not exist.
func (v *view) metadataRoot() (ref, tree plumbing.Hash, err error) {
	if v.md != nil {
		return v.md.ref, v.md.tree, nil
	}
	h, ok, err := v.ref(metadataRef)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	st := &mdState{}
	if ok {
		c, err := v.commit(h)
		if err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, err
		}
		st.ref, st.tree = h, c.Tree
	}
	v.md = st
	return st.ref, st.tree, nil
}

// mdState is the metadata ref as a view read it.
type mdState struct{ ref, tree plumbing.Hash }

// attachMetadata sets x.md from the metadata tree. A blob that does not
// parse is ignored with a warning: metadata never makes a revision
// unreadable.
func (r *Repository) attachMetadata(v *view, x *rev) error {
	if x == nil {
		return nil
	}
	if v.reads != nil {
		defer func() { v.reads.metadata(metadataPath(x), x.md.Hash()) }()
	}
	_, tree, err := v.metadataRoot()
	if err != nil || tree.IsZero() {
		return err
	}
	p := metadataPath(x)
	dir, name := p[:strings.LastIndexByte(p, '/')], p[strings.LastIndexByte(p, '/')+1:]
	sub, ok, err := v.subtree(tree, dir)
	if err != nil || !ok {
		return err
	}
	entries, err := v.tree(sub)
	if err != nil {
		return err
	}
	e, ok := findEntry(entries, name)
	if !ok || e.Mode != modeRegular {
		return nil
	}
	if c, ok := v.cache.Get(kindMetadata, e.Hash); ok {
		x.md = c.(revision.Metadata)
		return nil
	}
	data, err := v.boundedBlob(e.Hash, p)
	if errors.Is(err, revision.ErrLimit) {
		r.log.Warn("ignoring revision metadata over the file bound", "path", p, "error", err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	md, err := revision.ParseMetadata(data)
	if err != nil {
		r.log.Warn("ignoring unreadable revision metadata", "path", p, "error", err.Error())
		return nil
	}
	v.cache.Put(kindMetadata, e.Hash, md, int64(64+len(data)*2))
	x.md = md
	return nil
}

// planMetadata adds to t the update of the metadata ref that sets the
// metadata of revision x to md (zero Metadata removes it). It adds nothing
// when the tree does not change.
func (r *Repository) planMetadata(v *view, t *txn, x *rev, md revision.Metadata) error {
	old, tree, err := v.metadataRoot()
	if err != nil {
		return err
	}
	var blob plumbing.Hash
	if !md.IsZero() {
		data, err := md.Marshal()
		if err != nil {
			return err
		}
		if blob, err = v.putBlob(data); err != nil {
			return err
		}
	}
	root, err := v.replaceEntry(tree, strings.Split(metadataPath(x), "/"), blob, modeRegular)
	if err != nil {
		return err
	}
	if root == tree || (tree.IsZero() && root.IsZero()) {
		return nil
	}
	if root.IsZero() {
		if root, err = v.putTree(nil); err != nil {
			return err
		}
	}
	var parents []plumbing.Hash
	if !old.IsZero() {
		parents = []plumbing.Hash{old}
	}
	h, err := v.putCommit(root, parents, r.committer(), r.committer(), metadataMessage+"\n")
	if err != nil {
		return err
	}
	t.set(metadataRef, old, h)
	return nil
}

// guardMetadata adds to t, the approval of proposal x, a move of the
// metadata ref to a new commit with the same tree. The caller checked x's
// readiness (its Kptfile and its metadata) against the Version it read;
// with the metadata ref in the same atomic update, a metadata change that
// lands between that read and the push (a condition set False by another
// process on the remote) makes the push fail and the write be planned
// again, where resolveAt sees the new Version and refuses with
// ErrConflict. When the ref does not exist yet it is created only for a
// revision whose Kptfile has readiness gates, the one case where its
// creation by a racing writer could matter. The other way round, a
// metadata change that fetched this approval half applied on the remote
// (the new metadata commit but still the proposal, which a git server
// may show between its ref writes) keeps the proposal's ref in its push
// (SetMetadata), so that it cannot land on top of it.
func (r *Repository) guardMetadata(v *view, t *txn, x *rev) error {
	old, tree, err := v.metadataRoot()
	if err != nil {
		return err
	}
	var parents []plumbing.Hash
	if old.IsZero() {
		info, err := v.info(x.pkgTree)
		if err != nil || len(info.ReadinessGates) == 0 {
			return err
		}
		if tree, err = v.putTree(nil); err != nil {
			return err
		}
	} else {
		parents = []plumbing.Hash{old}
	}
	h, err := v.putCommit(tree, parents, r.committer(), r.committer(), metadataMessage+"\n")
	if err != nil {
		return err
	}
	t.set(metadataRef, old, h)
	return nil
}

// SetMetadata replaces the labels and annotations of the revision key
// selects, in the metadata ref (see metadataRef), and returns the revision
// with its new Version. See repository.MetadataWriter. Errors are
// *repository.Error matching repository.ErrNotFound, ErrInvalidInput,
// ErrConflict when the revision changed since opts.Version, ErrClosed,
// ErrUnavailable, or wrapping ctx's error.
func (r *Repository) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	const op = "set metadata"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if err := key.ValidateLookup(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	if err := md.Validate(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	md = md.Clone()
	expected := opts.Version
	var result *rev
	err := r.update(ctx, func(v *view) (*txn, error) {
		x, err := r.resolveAt(v, op, key, &expected)
		if err != nil {
			return nil, err
		}
		if x.lifecycle.IsPublished() && !x.md.ReadinessEqual(md) {
			return nil, r.errorf(op, x.key, repository.ErrImmutable, "the readiness gates and conditions of a %s revision cannot change", x.lifecycle)
		}
		y := *x
		y.md = md
		result = &y
		if x.md.Equal(md) {
			return nil, nil
		}
		t := &txn{}
		if err := r.planMetadata(v, t, x, md); err != nil {
			return nil, err
		}
		if len(t.updates) > 0 && (x.lifecycle == revision.LifecycleDraft || x.lifecycle == revision.LifecycleProposed) {
			// The change holds only while the draft or proposal does:
			// on a remote, the fetch may have seen the metadata commit
			// of an approval (or deletion) of it whose removal of the
			// proposal had not landed yet. Its readiness is settable
			// only there, so a published revision's ref is not kept.
			t.keep(x.ref, x.refHash)
		}
		return t, nil
	})
	if err != nil {
		return nil, r.wrapErr(op, key, err)
	}
	r.log.Debug("set metadata", "key", keyString(result.key), "labels", len(md.Labels), "annotations", len(md.Annotations))
	return r.revision(result), nil
}
