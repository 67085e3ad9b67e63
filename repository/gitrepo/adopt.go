package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/revision"
)

var _ repository.Adopter = (*Repository)(nil)

// adoptMessage is the message of the tag or draft commit that registers
// an adopted directory, before its kpt: line.
const adoptMessage = "Adopting %s at %s"

// Adopt registers the directory <path> (key.Package under
// spec.git.directory) of the commit opts.Ref names (a commit id, a full
// ref name, or a branch or tag name, tried in that order) as the revision
// key, Kptfile or not, without rewriting any file:
//
//   - Published: the annotated tag <path>/v<N> on that commit, whose
//     message ends with the kpt: line naming the package, workspace and
//     revision (the registration; a directory with a Kptfile or a cad
//     package file needs none, but gets it all the same). The registered
//     branch is left alone.
//   - Draft: the branch drafts/<path>/<workspace> at a new commit whose
//     tree and parent are that commit and whose message ends with the
//     kpt: line, as a draft commit's does.
//
// Both are one compare-and-swap. See repository.Adopter for the errors;
// they are *repository.Error.
func (r *Repository) Adopt(ctx context.Context, key revision.Key, opts repository.AdoptOptions) (revision.PackageRevision, error) {
	const op = "adopt"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	if key.Repository != "" && key.Repository != r.name {
		return nil, r.errorf(op, key, repository.ErrInvalidInput, "key names repository %q", key.Repository)
	}
	key.Repository = r.name
	// The static checks first, with a stand-in number.
	if _, _, err := opts.Normalize(key, func() (int, error) { return 1, nil }); err != nil {
		return nil, err
	}
	full := r.fullPath(key.Package)
	var result *rev
	err := r.update(ctx, func(v *view) (*txn, error) {
		k, o, err := opts.Normalize(key, func() (int, error) { return r.nextRevision(v, full) })
		if err != nil {
			return nil, err
		}
		c, err := r.resolveContent(v, o.Ref)
		if errors.Is(err, errNoContent) {
			return nil, r.errorf(op, k, repository.ErrNotFound, "%w", err)
		} else if err != nil {
			return nil, err
		}
		tree, ok, err := v.packageTree(c, full, true)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errorf(op, k, repository.ErrNotFound, "no directory %q at %s", full, o.Ref)
		}
		if k.Workspace == r.branch {
			return nil, r.errorf(op, k, repository.ErrInvalidInput, "workspace %q is the registered branch's", k.Workspace)
		}
		if err := r.checkWorkspaceFree(v, k); err != nil {
			return nil, err
		}
		msg := o.Message
		if msg == "" {
			msg = fmt.Sprintf(adoptMessage, full, o.Ref)
		}
		author := r.author(o.AuthorName, o.AuthorEmail)
		t := &txn{}
		if o.Lifecycle == revision.LifecyclePublished {
			tag := versionTagRef(full, k.Revision)
			if _, taken, err := v.ref(tag); err != nil {
				return nil, err
			} else if taken {
				return nil, r.errorf(op, k, repository.ErrAlreadyExists, "package %q already has revision %d (tag %s)", k.Package, k.Revision, shortName(tag))
			}
			to := &object.Tag{
				Name: shortName(tag), Tagger: author, TargetType: plumbing.CommitObject, Target: c.Hash,
				Message: annotate(msg+"\n", gitobj.Annotation{PackagePath: full, WorkspaceName: k.Workspace, Revision: itoa(k.Revision)}),
			}
			data, err := encode(to, plumbing.TagObject)
			if err != nil {
				return nil, err
			}
			th, err := v.put(plumbing.TagObject, data)
			if err != nil {
				return nil, err
			}
			t.set(tag, plumbing.ZeroHash, th)
			result = &rev{
				key: k, lifecycle: revision.LifecyclePublished, full: full, ref: tag, refHash: th, commit: c,
				pkgTree: tree, dpRef: deletionProposedRef(full, "v"+itoa(k.Revision)),
			}
		} else {
			msg = annotate(msg+"\n", gitobj.Annotation{PackagePath: full, WorkspaceName: k.Workspace, Revision: "0"})
			h, err := v.putCommit(c.Tree, []plumbing.Hash{c.Hash}, author, r.committer(), msg)
			if err != nil {
				return nil, err
			}
			dc, err := v.commit(h)
			if err != nil {
				return nil, err
			}
			dref := draftRef(full, k.Workspace)
			t.set(dref, plumbing.ZeroHash, h)
			result = &rev{key: k, lifecycle: revision.LifecycleDraft, full: full, ref: dref, refHash: h, commit: dc, pkgTree: tree}
		}
		// No leftover metadata of an earlier revision of the workspace.
		if err := r.planMetadata(v, t, result, revision.Metadata{}); err != nil {
			return nil, err
		}
		return t, nil
	})
	if err != nil {
		return nil, r.wrapErr(op, key, err)
	}
	r.log.Debug("adopted", "key", keyString(result.key), "commit", result.commit.Hash.String())
	return r.revision(result), nil
}

var errNoContent = errors.New("no such content")

// resolveContent returns the commit ref names: a commit id, a full ref
// name, a branch or a tag.
func (r *Repository) resolveContent(v *view, ref string) (*gitobj.CommitInfo, error) {
	var candidates []plumbing.ReferenceName
	switch {
	case plumbing.IsHash(ref):
		c, err := v.commit(plumbing.NewHash(ref))
		if err != nil {
			if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, errNotCommit) {
				return nil, fmt.Errorf("%w: no commit %s", errNoContent, ref)
			}
			return nil, err
		}
		return c, nil
	case strings.HasPrefix(ref, "refs/"):
		candidates = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	default:
		if validBranchName(ref) != nil {
			return nil, fmt.Errorf("%w: no ref %q", errNoContent, ref)
		}
		candidates = []plumbing.ReferenceName{branchRef(ref), tagRef(ref)}
	}
	for _, name := range candidates {
		h, ok, err := v.ref(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		c, err := v.commit(h)
		if errors.Is(err, errNotCommit) {
			return nil, fmt.Errorf("%w: ref %q does not name a commit", errNoContent, ref)
		}
		return c, err
	}
	return nil, fmt.Errorf("%w: no commit, branch or tag %q", errNoContent, ref)
}

var _ repository.Locator = (*Repository)(nil)

// Location returns repository.TypeGit and spec.git.repo without
// credentials.
func (r *Repository) Location() (typ repository.Type, address string) {
	return repository.TypeGit, redactURL(r.spec.Git.Repo)
}
