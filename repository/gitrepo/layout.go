package gitrepo

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
)

// Porch's git layout: ref prefixes, commit messages and the initial commit.
const (
	draftsPrefix           = "drafts/"
	proposedPrefix         = "proposed/"
	deletionProposedPrefix = "deletionProposed/"

	initialFileName      = "README.md"
	initialFileContent   = "Created by porch"
	initialCommitMessage = "Initial commit: Creating main branch"

	defaultDraftMessage = "Intermediate commit"
	approveMessage      = "Approving package revision %s/%d"
	deleteMessage       = "Delete %s"

	kptfileName = "Kptfile"
)

func branchRef(name string) plumbing.ReferenceName { return plumbing.NewBranchReferenceName(name) }
func tagRef(name string) plumbing.ReferenceName    { return plumbing.NewTagReferenceName(name) }

func draftRef(full, ws string) plumbing.ReferenceName {
	return branchRef(draftsPrefix + full + "/" + ws)
}

func proposedRef(full, ws string) plumbing.ReferenceName {
	return branchRef(proposedPrefix + full + "/" + ws)
}

// deletionProposedRef names the branch that marks revision ver ("vN", or
// the branch name for the placeholder) of full as proposed for deletion.
func deletionProposedRef(full, ver string) plumbing.ReferenceName {
	return branchRef(deletionProposedPrefix + full + "/" + ver)
}

func versionTagRef(full string, n int) plumbing.ReferenceName {
	return tagRef(full + "/v" + strconv.Itoa(n))
}

// parseVersion returns N for "vN" (N >= 1) and -1 otherwise.
func parseVersion(ver string) int {
	rest, ok := strings.CutPrefix(ver, "v")
	if !ok || rest == "" || rest[0] == '0' {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return -1
	}
	return n
}

// splitLast splits s at its last slash; ok is false without one.
func splitLast(s string) (head, tail string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 || i == len(s)-1 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// annotate appends the kpt: line to message as Porch does.
func annotate(message string, a gitobj.Annotation) string {
	b, err := json.Marshal(a)
	if err != nil {
		panic(err) // strings only
	}
	return message + "\n\nkpt:" + string(b) + "\n"
}

// The workspace of a tag <full>/<ver> (DESIGN.md, "Layout") is decided
// by these three functions and nowhere else: objectWorkspace derives what
// the tag's objects say, tagWorkspace applies the rule, and
// tagWorkspaceMatches applies the same rule to a workspace record of
// cad-paths (a hash of what objectWorkspace said). Their callers are
// listed, and each is checked against tagWorkspace on tags of every
// kind, by TestTagWorkspaceOneRule.

// objectWorkspace returns the workspace the objects of a tag give package
// full: the workspaceName of the kpt: line for full in the tag's message
// (tagAnns: an annotated tag's, such as an adopted revision's), else in
// the tagged commit c's message, else "" (they give none). It is a fact
// of immutable objects, kept in cad-paths' workspace records: a change
// to what it answers must bump index.WorkspaceVersion
// (TestDerivationGolden says so).
func objectWorkspace(tagAnns []gitobj.Annotation, c *gitobj.CommitInfo, full string) string {
	for _, anns := range [][]gitobj.Annotation{tagAnns, c.Annotations} {
		for _, a := range anns {
			if a.PackagePath == full && a.WorkspaceName != "" {
				return a.WorkspaceName
			}
		}
	}
	return ""
}

// tagWorkspace returns the workspace of the tag <full>/<ver> whose
// objects give objWS (objectWorkspace): for a v<N> tag, objWS, or ver
// when they give none; for any other tag ver, so that a tag put by hand
// on an approval commit does not share that revision's key (and its
// metadata).
func tagWorkspace(ver, objWS string) string {
	if parseVersion(ver) <= 0 || objWS == "" {
		return ver
	}
	return objWS
}

// tagWorkspaceMatches reports whether the tag <full>/<ver> has workspace
// ws, whose index.WsHash is wsHash, when its objects' workspace hashes to
// rec (index.WsHash of what objectWorkspace said, as a workspace record
// holds it): tagWorkspace's rule on a hash.
func tagWorkspaceMatches(ver string, rec plumbing.Hash, ws string, wsHash plumbing.Hash) bool {
	if parseVersion(ver) <= 0 || rec == noWorkspaceHash {
		return ver == ws
	}
	return rec == wsHash
}

// noWorkspaceHash is the workspace record of objects that give none.
var noWorkspaceHash = index.WsHash("")

// names reports whether one of anns names package full: the registration
// that makes a directory without a package marker a package revision.
func names(anns []gitobj.Annotation, full string) bool {
	for _, a := range anns {
		if a.PackagePath == full {
			return true
		}
	}
	return false
}

// validBranchName checks a branch name against git's ref name rules
// (repository.CheckBranchName).
func validBranchName(name string) error {
	return repository.CheckBranchName(name)
}

// signature returns a git signature at the repository's clock time.
func (r *Repository) signature(name, email string) object.Signature {
	return object.Signature{Name: name, Email: email, When: r.opts.Clock()}
}

func (r *Repository) committer() object.Signature {
	return r.signature(r.opts.CommitterName, r.opts.CommitterEmail)
}

// author returns the author for a call that names name and email, falling
// back to the spec's author and then to the committer.
func (r *Repository) author(name, email string) object.Signature {
	if name == "" && email == "" {
		name, email = r.spec.Git.Author, r.spec.Git.Email
	}
	if name == "" && email == "" {
		return r.committer()
	}
	if name == "" {
		name = email
	}
	return r.signature(name, email)
}

// fullPath returns the repository path of package pkg.
func (r *Repository) fullPath(pkg string) string {
	if r.dir == "" {
		return pkg
	}
	return r.dir + "/" + pkg
}

// relPath returns the package path of repository path full, and false
// when full is not under the repository's directory.
func (r *Repository) relPath(full string) (string, bool) {
	if r.dir == "" {
		return full, full != ""
	}
	rest, ok := strings.CutPrefix(full, r.dir+"/")
	return rest, ok && rest != ""
}
