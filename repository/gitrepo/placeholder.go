package gitrepo

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
)

// kindPublished caches, per branch head and package, the author of the
// newest commit whose kpt: annotation names the package.
const kindPublished byte = 101

// maxPublishedWalk bounds the commits attachPublished reads back from the
// branch head.
const maxPublishedWalk = 5000

// attachPublished sets x.published for placeholder x: the author of the
// newest commit on the branch's first-parent history, from the head, whose
// kpt: annotation names x's package, which is where Porch takes a
// placeholder's publishedBy and publishedAt from (an approval of cad or
// Porch, usually). Unrelated commits (other packages, commits without an
// annotation) are skipped; after maxPublishedWalk commits, or at the root,
// x is left without one. The answer is cached per head and package.
func (r *Repository) attachPublished(v *view, x *rev) error {
	if x == nil || x.commit == nil {
		return nil
	}
	ck := plumbing.ComputeHash(plumbing.BlobObject, []byte(x.commit.Hash.String()+"\x00"+x.full))
	if c, ok := v.cache.Get(kindPublished, ck); ok {
		x.published = c.(*object.Signature)
		return nil
	}
	var found *object.Signature
	c := x.commit
	for i := 0; i < maxPublishedWalk; i++ {
		if namesPackage(c, x.full) {
			sig := c.Author
			found = &sig
			break
		}
		if len(c.Parents) == 0 {
			break
		}
		next, err := v.commit(c.Parents[0])
		if err != nil {
			return err
		}
		c = next
	}
	v.cache.Put(kindPublished, ck, found, 128)
	x.published = found
	return nil
}

// attachPublishedAll is attachPublished for placeholders xs of one branch
// head, in one walk of the history for all of them rather than one walk
// each.
func (r *Repository) attachPublishedAll(v *view, xs []*rev) error {
	if len(xs) < 2 {
		for _, x := range xs {
			if err := r.attachPublished(v, x); err != nil {
				return err
			}
		}
		return nil
	}
	head := xs[0].commit
	key := func(full string) plumbing.Hash {
		return plumbing.ComputeHash(plumbing.BlobObject, []byte(head.Hash.String()+"\x00"+full))
	}
	want := map[string][]*rev{}
	for _, x := range xs {
		if c, ok := v.cache.Get(kindPublished, key(x.full)); ok {
			x.published = c.(*object.Signature)
			continue
		}
		want[x.full] = append(want[x.full], x)
	}
	found := map[string]*object.Signature{}
	c := head
	for i := 0; i < maxPublishedWalk && len(found) < len(want); i++ {
		for _, a := range c.Annotations {
			if _, ok := want[a.PackagePath]; ok && found[a.PackagePath] == nil {
				sig := c.Author
				found[a.PackagePath] = &sig
			}
		}
		if len(c.Parents) == 0 {
			break
		}
		next, err := v.commit(c.Parents[0])
		if err != nil {
			return err
		}
		c = next
	}
	for full, pending := range want {
		sig := found[full]
		v.cache.Put(kindPublished, key(full), sig, 128)
		for _, x := range pending {
			x.published = sig
		}
	}
	return nil
}

// namesPackage reports whether a kpt: annotation of c names package full.
func namesPackage(c *gitobj.CommitInfo, full string) bool {
	for _, a := range c.Annotations {
		if a.PackagePath == full {
			return true
		}
	}
	return false
}
