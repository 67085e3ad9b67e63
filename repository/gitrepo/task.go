package gitrepo

import (
	"encoding/json"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
)

// kindTask caches, per commit, package, workspace and revision number, the
// creation task found by walking back from the commit (see taskIn). A
// commit's history never changes, so neither does the answer.
const kindTask byte = 102

// maxTaskWalk bounds the commits taskIn reads back from a revision's
// commit.
const maxTaskWalk = 1000

// creationTypes are the task types that create a revision, the ones a
// revision's creation task can be; Porch's other types (render, push, and
// the historic patch, eval and update) describe later edits.
var creationTypes = map[string]bool{"init": true, "clone": true, "edit": true, "upgrade": true}

// taskOf returns the task of commit c's annotation for package full and
// workspace ws, nil when it has none.
func taskOf(c *gitobj.CommitInfo, full, ws string) json.RawMessage {
	for _, a := range c.Annotations {
		if a.PackagePath == full && a.WorkspaceName == ws && len(a.Task) > 0 {
			return a.Task
		}
	}
	return nil
}

// annotatedFor reports whether annotation a belongs to the revision of
// package full in workspace ws with revision number num: its package and
// workspace match, or, for commits Porch wrote before annotations carried
// a workspace, its package and revision number.
func annotatedFor(a gitobj.Annotation, full, ws string, num int) bool {
	if a.PackagePath != full {
		return false
	}
	return a.WorkspaceName == ws || (a.WorkspaceName == "" && num > 0 && a.Revision == strconv.Itoa(num))
}

// creationTaskOf returns the creation task (see creationTypes) that c's
// annotations give the revision (full, ws, num), nil when none does.
func creationTaskOf(c *gitobj.CommitInfo, full, ws string, num int) json.RawMessage {
	for _, a := range c.Annotations {
		if len(a.Task) == 0 || !annotatedFor(a, full, ws, num) {
			continue
		}
		var t struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(a.Task, &t) == nil && creationTypes[t.Type] {
			return a.Task
		}
	}
	return nil
}

// namesRevision reports whether one of c's annotations belongs to the
// revision (full, ws, num).
func namesRevision(c *gitobj.CommitInfo, full, ws string, num int) bool {
	for _, a := range c.Annotations {
		if annotatedFor(a, full, ws, num) {
			return true
		}
	}
	return false
}

// taskIn returns the creation task of the revision (full, ws, num) whose
// commit is c, nil when it has none. cad repeats the task on every commit
// it writes for a revision, so it is usually on c itself. Porch writes it
// only on the revision's first commit: its later edits ("Intermediate
// commit", "Rendering package") and its approval (a merge of the registered
// branch and the proposal) carry an annotation without a task. So, as Porch
// does, the history is searched, and stops at the first commit whose
// annotation holds a creation task. From a merge the walk goes into the
// merged side (parents after the first: the proposal, where Porch puts
// it), never back along the registered branch, whose history holds other
// revisions; from other commits to the parent; and it goes only to commits
// annotated for the same revision (the newest by author time when several
// are). A published revision's commit that is not a merge has no proposal
// behind it (an adopted or hand-made tag), so its walk ends at once. The
// cost is the length of the revision's own chain of commits, never the size
// of the repository's history; the walk stops after maxTaskWalk commits,
// and a commit that cannot be read ends it too (a revision's metadata never
// makes it unreadable). The answer is cached by commit.
func (v *view) taskIn(c *gitobj.CommitInfo, full, ws string, num int) json.RawMessage {
	if t := creationTaskOf(c, full, ws, num); t != nil {
		return t
	}
	if t := taskOf(c, full, ws); t != nil {
		// A task of another type on the commit itself is what cad wrote.
		return t
	}
	if len(c.Parents) == 0 || (num > 0 && len(c.Parents) == 1) {
		return nil
	}
	ck := plumbing.ComputeHash(plumbing.BlobObject, []byte(c.Hash.String()+"\x00"+full+"\x00"+ws+"\x00"+strconv.Itoa(num)))
	if e, ok := v.cache.Get(kindTask, ck); ok {
		return e.(json.RawMessage)
	}
	var found json.RawMessage
	for i := 0; i < maxTaskWalk && found == nil; i++ {
		parents := c.Parents
		if len(parents) > 1 {
			parents = parents[1:]
		}
		var next *gitobj.CommitInfo
		for _, p := range parents {
			pc, err := v.commit(p)
			if err != nil || !namesRevision(pc, full, ws, num) {
				continue
			}
			if next == nil || pc.Author.When.After(next.Author.When) {
				next = pc
			}
		}
		if next == nil {
			break
		}
		c = next
		found = creationTaskOf(c, full, ws, num)
	}
	v.cache.Put(kindTask, ck, found, int64(128+len(found)))
	return found
}
