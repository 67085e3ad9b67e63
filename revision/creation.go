package revision

import "slices"

// CreationOp names the operation that created a revision.
type CreationOp string

// Creation operations. They are the types of Porch's creation task; a copy
// is Porch's "edit".
const (
	CreatedByInit    CreationOp = "init"
	CreatedByClone   CreationOp = "clone"
	CreatedByCopy    CreationOp = "edit"
	CreatedByUpgrade CreationOp = "upgrade"
)

// Creation records how a revision was created: the operation and what it
// started from. It is the one fact of Porch's task list that cad keeps (a
// revision has no history of tasks): Porch writes it as the creation task
// in the kpt: annotation of its commits, and Porch's readers (porchctl
// rpkg upgrade, the upstream check of a delete) read it from there.
// Backends that keep Porch's layout record it where Porch does (see
// CommitOptions.Creation); it is informative and never changes what a
// revision is.
//
// Keys name revisions by repository, package and workspace, with Revision
// 0, as Porch's PackageRevision names do.
type Creation struct {
	// Op is the operation.
	Op CreationOp
	// Description, Keywords and Site are, for CreatedByInit, what the
	// package was initialised with.
	Description string
	Keywords    []string
	Site        string
	// Source is, for CreatedByClone from a registered repository, the
	// upstream revision; for CreatedByCopy, the revision copied.
	Source *Key
	// Git is, for CreatedByClone from a git repository that is not
	// registered, where the upstream is.
	Git *GitUpstreamRef
	// OldUpstream, NewUpstream and Local are, for CreatedByUpgrade, the
	// upstream the local revision was based on, the upstream it moves to,
	// and the local revision; Strategy is the merge strategy.
	OldUpstream, NewUpstream, Local *Key
	// Strategy is, for CreatedByClone and CreatedByUpgrade, the update
	// strategy; empty means resource-merge.
	Strategy UpdateStrategy
}

// GitUpstreamRef is a package in a git repository: its URL, the ref (a tag
// or branch) and the package's directory.
type GitUpstreamRef struct {
	Repo, Ref, Directory string
}

// Clone returns a deep copy of o; nil for nil.
func (o *Creation) Clone() *Creation {
	if o == nil {
		return nil
	}
	out := *o
	out.Keywords = slices.Clone(o.Keywords)
	for _, p := range []**Key{&out.Source, &out.OldUpstream, &out.NewUpstream, &out.Local} {
		if *p != nil {
			k := **p
			*p = &k
		}
	}
	if o.Git != nil {
		g := *o.Git
		out.Git = &g
	}
	return &out
}

// Equal reports whether o and p record the same origin; two nils are equal.
func (o *Creation) Equal(p *Creation) bool {
	if o == nil || p == nil {
		return o == p
	}
	keyEq := func(a, b *Key) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
	gitEq := o.Git == nil && p.Git == nil || o.Git != nil && p.Git != nil && *o.Git == *p.Git
	return o.Op == p.Op && o.Description == p.Description && slices.Equal(o.Keywords, p.Keywords) && o.Site == p.Site &&
		keyEq(o.Source, p.Source) && gitEq && keyEq(o.OldUpstream, p.OldUpstream) && keyEq(o.NewUpstream, p.NewUpstream) &&
		keyEq(o.Local, p.Local) && o.Strategy == p.Strategy
}
