package gitrepo

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/internal/porchtask"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/revision"
)

func itoa(n int) string { return strconv.Itoa(n) }

// CreateDraft starts a draft of key's package and workspace whose content
// is opts.Files. Nothing is written until Commit, which creates the branch
// drafts/<path>/<workspace> with a commit on the registered branch's head
// (no parent in an empty repository) that replaces the package directory.
// Errors are *repository.Error matching repository.ErrInvalidInput for a
// bad key, ErrAlreadyExists when the package has a revision with that
// workspace, ErrClosed, ErrUnavailable, or wrapping ctx's error. Commit
// returns ErrAlreadyExists when another writer created the workspace
// meanwhile, ErrInvalidInput when the content has no root Kptfile.
func (r *Repository) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	const op = "create draft"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if key.Repository != "" && key.Repository != r.name {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "key names repository %q", key.Repository)
	}
	if err := key.ValidateNew(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	key.Repository = r.name
	var base plumbing.Hash
	var tags tagsDigest
	err := r.read(ctx, func(v *view) error {
		var err error
		// The package's tags first, then the check: a tag added between
		// the two is seen by the check, one added after changes the
		// digest the draft's first commit compares.
		if tags, err = v.tagsDigest(r.fullPath(key.Package)); err != nil {
			return err
		}
		if err := r.checkWorkspaceFree(v, key); err != nil {
			return err
		}
		h, _, err := v.ref(branchRef(r.branch))
		base = h
		return err
	})
	if err != nil {
		return nil, r.wrapErr(op, key, err)
	}
	meta := revision.Meta{Key: key, Lifecycle: revision.LifecycleDraft}
	return revision.NewDraft(meta, opts.Files, r.commitFunc(base, tags)), nil
}

// tagsDigest is a digest of the names and values of a package's tags
// (the refs its published revisions are read from), as a new draft's
// workspace check saw them; ok is false where none was taken.
type tagsDigest struct {
	sum [sha256.Size]byte
	ok  bool
}

// tagsDigest returns the digest of the tags of the package at full as
// they are stored on disk (refstore's Digest). It takes none (ok false)
// in memory, in a write batch and in a view that read every ref before
// (whose tags may be older than the disk's).
func (v *view) tagsDigest(full string) (tagsDigest, error) {
	if v.fr == nil || v.bt != nil || v.refs != nil {
		return tagsDigest{}, nil
	}
	sum, err := v.fr.Digest("refs/tags/" + full + "/")
	return tagsDigest{sum: sum, ok: err == nil}, err
}

// checkWorkspaceFreeSince is checkWorkspaceFree for a new draft's first
// commit, whose CreateDraft checked the workspace with the package's
// tags at digest seen: when the tags are as they were, a revision with
// the workspace could only have appeared as a draft or a proposal
// branch, so only those are looked at (the draft's own branch by the
// caller, which also creates it only if it still does not exist); else
// the whole check runs again. So the check, which at thousands of tags
// costs most of a new draft, runs once per draft.
func (r *Repository) checkWorkspaceFreeSince(v *view, key revision.Key, seen tagsDigest) error {
	full := r.fullPath(key.Package)
	if seen.ok {
		now, err := v.tagsDigest(full)
		if err != nil {
			return err
		}
		if now == seen {
			_, proposed, err := v.ref(proposedRef(full, key.Workspace))
			if err != nil || !proposed {
				return err
			}
		}
	}
	return r.checkWorkspaceFree(v, key)
}

// checkWorkspaceFree returns an error matching ErrAlreadyExists when
// key's package has a revision with key's workspace.
func (r *Repository) checkWorkspaceFree(v *view, key revision.Key) error {
	x, err := r.resolve(v, revision.Key{Package: key.Package, Workspace: key.Workspace})
	if err == nil {
		return r.errorf("create draft", key, repository.ErrAlreadyExists, "package %q already has a %s revision with workspace %q", key.Package, x.lifecycle, key.Workspace)
	}
	if !isNotFound(err) {
		return err
	}
	if key.Workspace == r.branch {
		return r.errorf("create draft", key, repository.ErrInvalidInput, "workspace %q is the registered branch's, reserved for the placeholder revision", key.Workspace)
	}
	return nil
}

// OpenDraft opens the Draft revision key selects for editing. Errors are
// *repository.Error matching repository.ErrNotFound when there is none,
// ErrImmutable when the revision is not a Draft, ErrInvalidInput for a
// malformed key, ErrClosed, ErrUnavailable, or wrapping ctx's error. The
// draft's Commit returns ErrConflict when the draft changed since.
func (r *Repository) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	const op = "open draft"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if err := key.ValidateLookup(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	var x *rev
	var files revision.Files
	err := r.read(ctx, func(v *view) error {
		var err error
		if x, err = r.resolve(v, key); err != nil {
			return err
		}
		if x.lifecycle != revision.LifecycleDraft {
			return r.errorf(op, x.key, repository.ErrImmutable, "revision is %s, not Draft", x.lifecycle)
		}
		files, err = v.files(x.pkgTree, r.log.Warn)
		return err
	})
	if err != nil {
		return nil, r.wrapErr(op, key, err)
	}
	return revision.NewDraft(x.meta(), files, r.commitFunc(plumbing.ZeroHash, tagsDigest{})), nil
}

// commitFunc returns the CommitFunc of a draft; base is the branch head a
// new draft starts from, tags the digest of its package's tags its
// workspace check saw (checkWorkspaceFreeSince).
func (r *Repository) commitFunc(base plumbing.Hash, tags tagsDigest) revision.CommitFunc {
	return func(ctx context.Context, meta revision.Meta, files revision.Files, opts revision.CommitOptions) (revision.PackageRevision, error) {
		const op = "commit"
		key := meta.Key
		if err := r.enter(ctx, op, key); err != nil {
			return nil, err
		}
		if files.Len() == 0 {
			// git keeps no empty directory, so an empty package could not
			// be read back.
			return nil, r.errorf(op, key, repository.ErrInvalidInput, "package must contain at least one file")
		}
		if opts.Metadata != nil {
			if err := opts.Metadata.Validate(); err != nil {
				return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
			}
		}
		full := r.fullPath(key.Package)
		dref := draftRef(full, key.Workspace)
		var result *rev
		err := r.update(ctx, func(v *view) (*txn, error) {
			cur, exists, err := v.ref(dref)
			if err != nil {
				return nil, err
			}
			parent := base
			task := porchtask.Encode(opts.Creation)
			var md revision.Metadata // the new revision's metadata
			if opts.Metadata != nil {
				md = opts.Metadata.Clone()
			}
			if meta.Version == "" {
				if exists {
					return nil, r.errorf(op, key, repository.ErrAlreadyExists, "draft %s was created by another writer", keyString(key))
				}
				if err := r.checkWorkspaceFreeSince(v, key, tags); err != nil {
					return nil, err
				}
			} else {
				if !exists {
					return nil, r.errorf(op, key, repository.ErrConflict, "draft %s is no longer a draft", keyString(key))
				}
				x, err := r.draftRev(v, key.Package, key.Workspace, revision.LifecycleDraft, dref, cur)
				if err != nil {
					return nil, err
				}
				if x == nil || x.version() != meta.Version {
					return nil, r.errorf(op, key, repository.ErrConflict, "draft %s changed since it was opened", keyString(key))
				}
				parent = cur
				if opts.Metadata == nil {
					md = x.md
				}
				if task == nil {
					// Every commit of the revision repeats its creation task.
					task = x.creationTask()
				}
			}
			var rootTree plumbing.Hash
			var parents []plumbing.Hash
			if !parent.IsZero() {
				pc, err := v.commit(parent)
				if err != nil {
					return nil, err
				}
				rootTree, parents = pc.Tree, []plumbing.Hash{parent}
			}
			pkgTree, err := v.putFiles(files)
			if err != nil {
				return nil, err
			}
			if pkgTree, err = v.keepGitlinks(rootTree, full, pkgTree, files, r.log.Warn); err != nil {
				return nil, err
			}
			root, err := v.replaceSubtree(rootTree, full, pkgTree)
			if err != nil {
				return nil, err
			}
			msg := opts.Message
			if msg == "" {
				msg = defaultDraftMessage
			}
			// As Porch writes a draft commit: the message, a newline, then
			// the kpt: line after a blank line.
			msg = annotate(msg+"\n", gitobj.Annotation{PackagePath: full, WorkspaceName: key.Workspace, Revision: "0", Task: task})
			h, err := v.putCommit(root, parents, r.author(opts.AuthorName, opts.AuthorEmail), r.committer(), msg)
			if err != nil {
				return nil, err
			}
			c, err := v.commit(h)
			if err != nil {
				return nil, err
			}
			result = &rev{key: key, lifecycle: revision.LifecycleDraft, full: full, ref: dref, refHash: h, commit: c, pkgTree: pkgTree, md: md}
			t := &txn{}
			t.set(dref, cur, h)
			// A new draft starts with the metadata it was given and with no
			// leftover of an earlier revision of its workspace.
			if opts.Metadata != nil || meta.Version == "" {
				if err := r.planMetadata(v, t, result, md); err != nil {
					return nil, err
				}
			}
			return t, nil
		})
		if err != nil {
			return nil, r.wrapErr(op, key, err)
		}
		r.log.Debug("committed draft", "key", keyString(key), "commit", result.commit.Hash.String())
		return revision.NewWithFiles(result.meta(), files), nil
	}
}

// UpdateLifecycle moves the revision key selects to lifecycle to, as
// Porch does in git:
//
//   - Draft to Proposed pushes proposed/<path>/<workspace> and deletes
//     drafts/<path>/<workspace> in one atomic ref update; Proposed to
//     Draft the reverse;
//   - Proposed to Published commits the proposal's package tree onto the
//     registered branch (a merge of the branch head and the proposal),
//     tags it <path>/v<N> with N one more than the package's highest vN
//     tag, and deletes the proposal branch, in one compare-and-swap;
//   - Published to DeletionProposed creates deletionProposed/<path>/v<N>
//     (deletionProposed/<path>/<branch> for the placeholder), and back
//     deletes it.
//
// Errors are *repository.Error matching repository.ErrNotFound,
// ErrInvalidTransition for a change not in revision.Transitions,
// ErrConflict when the revision changed since opts.Version (or since it
// was read, when another writer won a race), ErrInvalidInput, ErrClosed,
// ErrUnavailable, or wrapping ctx's error.
func (r *Repository) UpdateLifecycle(ctx context.Context, key revision.Key, to revision.Lifecycle, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	const op = "update lifecycle"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if err := key.ValidateLookup(); err != nil {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	expected := opts.Version
	var result *rev
	approved := false
	err := r.update(ctx, func(v *view) (*txn, error) {
		approved = false
		x, err := r.resolveAt(v, op, key, &expected)
		if err != nil {
			return nil, err
		}
		if err := revision.CheckTransition(x.lifecycle, to); err != nil {
			return nil, r.errorf(op, x.key, repository.ErrInvalidTransition, "%w", err)
		}
		t := &txn{}
		y := *x
		switch {
		case x.lifecycle == revision.LifecycleDraft && to == revision.LifecycleProposed:
			y.ref = proposedRef(x.full, x.key.Workspace)
			t.set(y.ref, plumbing.ZeroHash, x.refHash)
			t.del(x.ref, x.refHash)
		case x.lifecycle == revision.LifecycleProposed && to == revision.LifecycleDraft:
			y.ref = draftRef(x.full, x.key.Workspace)
			t.set(y.ref, plumbing.ZeroHash, x.refHash)
			t.del(x.ref, x.refHash)
		case x.lifecycle == revision.LifecycleProposed && to == revision.LifecyclePublished:
			approved = true
			return r.planApprove(v, x, opts, &result)
		case to == revision.LifecycleDeletionProposed:
			t.set(x.dpRef, plumbing.ZeroHash, x.commit.Hash)
			y.dpHash = x.commit.Hash
		case to == revision.LifecyclePublished: // from DeletionProposed
			t.del(x.dpRef, x.dpHash)
			y.dpHash = plumbing.ZeroHash
		}
		y.lifecycle = to
		result = &y
		return t, nil
	})
	if err != nil {
		return nil, r.wrapErr(op, key, err)
	}
	if approved {
		// What the approval knows, for the next process: where the
		// package lies in the new root tree (a Get of the revision then
		// reads no root tree), and the workspace its tag gives it (a new
		// draft's check then reads no commit).
		c := result.commit
		r.st.paths.Add(index.PathRecord{Key: index.PathKey36(c.Tree, result.full), Tree: result.pkgTree},
			index.WsRecord(result.full, c.Hash, objectWorkspace(nil, c, result.full)))
	}
	r.log.Debug("updated lifecycle", "key", keyString(result.key), "lifecycle", string(to))
	return r.revision(result), nil
}

// planApprove plans the approval of proposal x.
func (r *Repository) planApprove(v *view, x *rev, opts repository.UpdateOptions, result **rev) (*txn, error) {
	bref := branchRef(r.branch)
	head, hasHead, err := v.ref(bref)
	if err != nil {
		return nil, err
	}
	var baseTree plumbing.Hash
	var parents []plumbing.Hash
	if hasHead {
		hc, err := v.commit(head)
		if err != nil {
			return nil, err
		}
		baseTree, parents = hc.Tree, []plumbing.Hash{head}
	}
	parents = append(parents, x.commit.Hash)
	n, err := r.nextRevision(v, x.full)
	if err != nil {
		return nil, err
	}
	root, err := v.replaceSubtree(baseTree, x.full, x.pkgTree)
	if err != nil {
		return nil, err
	}
	msg := annotate(fmt.Sprintf(approveMessage, x.full, n), gitobj.Annotation{PackagePath: x.full, WorkspaceName: x.key.Workspace, Revision: itoa(n),
		Task: x.creationTask()})
	h, err := v.putCommit(root, parents, r.author(opts.AuthorName, opts.AuthorEmail), r.committer(), msg)
	if err != nil {
		return nil, err
	}
	c, err := v.commit(h)
	if err != nil {
		return nil, err
	}
	tag := versionTagRef(x.full, n)
	t := &txn{}
	// Tag first and proposal last, so that even a crash half-way never
	// loses the approved content.
	t.set(tag, plumbing.ZeroHash, h)
	t.set(bref, head, h)
	t.del(x.ref, x.refHash)
	if err := r.guardMetadata(v, t, x); err != nil {
		return nil, err
	}
	key := x.key
	key.Revision = n
	*result = &rev{
		key: key, lifecycle: revision.LifecyclePublished, full: x.full, ref: tag, refHash: h, commit: c,
		pkgTree: x.pkgTree, dpRef: deletionProposedRef(x.full, "v"+itoa(n)), md: x.md,
	}
	return t, nil
}

// nextRevision returns one more than the highest vN tag of package full.
// Tags count whatever their content, so that no number is handed out
// twice while its tag exists; the number of a deleted highest tag is
// handed out again, as Porch does.
func (r *Repository) nextRevision(v *view, full string) (int, error) {
	prefix := "refs/tags/" + full + "/"
	var vers []string
	if v.fr != nil { // a snapshot leaves damaged refs out: their numbers count
		var err error
		if vers, err = v.fr.ChildNames(prefix); err != nil {
			return 0, err
		}
		v.reads.names(prefix, vers)
		vers = v.bt.childNames(prefix, vers)
	} else {
		tags, err := v.children(prefix)
		if err != nil {
			return 0, err
		}
		for name := range tags {
			vers = append(vers, string(name)[len(prefix):])
		}
	}
	high := 0
	for _, ver := range vers {
		if n := parseVersion(ver); n > high {
			high = n
		}
	}
	return high + 1, nil
}

// Delete removes the revision key selects: a draft's or proposal's branch;
// for a revision proposed for deletion its tag and deletionProposed
// branch, or, for the placeholder, the package directory from the branch
// with a commit "Delete <path>". Errors are *repository.Error matching
// repository.ErrNotFound, ErrImmutable for a Published revision,
// ErrConflict when the revision changed since opts.Version, ErrInvalidInput,
// ErrClosed, ErrUnavailable, or wrapping ctx's error.
func (r *Repository) Delete(ctx context.Context, key revision.Key, opts repository.UpdateOptions) error {
	const op = "delete"
	if err := r.enter(ctx, op, key); err != nil {
		return err
	}
	if err := key.ValidateLookup(); err != nil {
		return r.errorf(op, key, repository.ErrInvalidInput, "%w", err)
	}
	expected := opts.Version
	err := r.update(ctx, func(v *view) (*txn, error) {
		x, err := r.resolveAt(v, op, key, &expected)
		if err != nil {
			return nil, err
		}
		t := &txn{}
		switch x.lifecycle {
		case revision.LifecycleDraft, revision.LifecycleProposed:
			t.del(x.ref, x.refHash)
		case revision.LifecyclePublished:
			return nil, r.errorf(op, x.key, repository.ErrImmutable, "a Published revision must be proposed for deletion before it is deleted")
		case revision.LifecycleDeletionProposed:
			if !x.key.IsPlaceholder() {
				t.del(x.ref, x.refHash)
				t.del(x.dpRef, x.dpHash)
				break
			}
			hc, err := v.commit(x.refHash)
			if err != nil {
				return nil, err
			}
			root, err := v.replaceSubtree(hc.Tree, x.full, plumbing.ZeroHash)
			if err != nil {
				return nil, err
			}
			h, err := v.putCommit(root, []plumbing.Hash{x.refHash}, r.author(opts.AuthorName, opts.AuthorEmail), r.committer(), fmt.Sprintf(deleteMessage, x.full))
			if err != nil {
				return nil, err
			}
			t.set(x.ref, x.refHash, h)
			t.del(x.dpRef, x.dpHash)
		}
		// The revision's metadata goes with it, in the same update.
		if !x.md.IsZero() {
			if err := r.planMetadata(v, t, x, revision.Metadata{}); err != nil {
				return nil, err
			}
		}
		return t, nil
	})
	return r.wrapErr(op, key, err)
}

func isNotFound(err error) bool { return errors.Is(err, repository.ErrNotFound) }

// resolveAt resolves key in v and checks it is at *expected, the Version
// the caller read; an empty *expected is set to the version found, so that
// a write planned again after a lost race still applies to the same state.
// A revision gone or changed since is ErrConflict.
func (r *Repository) resolveAt(v *view, op string, key revision.Key, expected *string) (*rev, error) {
	x, err := r.resolve(v, key)
	if err != nil {
		if *expected != "" && isNotFound(err) {
			return nil, r.errorf(op, key, repository.ErrConflict, "revision %s changed since version %s: %w", keyString(key), *expected, err)
		}
		return nil, err
	}
	if *expected == "" {
		*expected = x.version()
	} else if x.version() != *expected {
		return nil, r.errorf(op, x.key, repository.ErrConflict, "revision changed since version %s", *expected)
	}
	return x, nil
}
