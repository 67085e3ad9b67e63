package gitrepo

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
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
	ck := plumbing.ComputeHash(plumbing.BlobObject, []byte(x.commit.hash.String()+"\x00"+x.full))
	if c, ok := v.cache.get(kindPublished, ck); ok {
		x.published = c.(*object.Signature)
		return nil
	}
	var found *object.Signature
	c := x.commit
	for i := 0; i < maxPublishedWalk; i++ {
		if namesPackage(c, x.full) {
			sig := c.author
			found = &sig
			break
		}
		if len(c.parents) == 0 {
			break
		}
		next, err := v.commit(c.parents[0])
		if err != nil {
			return err
		}
		c = next
	}
	v.cache.put(kindPublished, ck, found, 128)
	x.published = found
	return nil
}

// namesPackage reports whether a kpt: annotation of c names package full.
func namesPackage(c *commitInfo, full string) bool {
	for _, a := range c.annotations {
		if a.PackagePath == full {
			return true
		}
	}
	return false
}
