package engine

import (
	"context"
	"sync"

	"github.com/configasdata/cad/revision"
)

// WithReferenceSnapshot returns an Engine that works as e does, except
// that its Deletes check the references to a Draft or Proposed revision
// (see Delete) against one listing of the Engine's repositories, taken by
// the first such check, instead of listing every repository for each
// delete: for deleting many drafts in one operation, such as a
// PackageVariantSet's removal (n deletes then cost one listing, not n).
// Use it for that one operation and drop it. It answers as a fresh
// listing would for those lifecycles: a revision counts as created from a
// draft or proposal only through the draft's workspace, and a revision
// created after the listing would have had to be cloned or upgraded from
// a published revision of that workspace, which cannot exist beside the
// draft. The revisions deleted through it are taken out of the listing.
// Deletes of DeletionProposed revisions, and any other operation, read
// the repositories as e does. The snapshot holds one entry per revision
// created by a clone or an upgrade, for the returned Engine's life. The
// returned Engine is safe for concurrent use; an Engine derived from it
// (Using) shares its snapshot.
func (e *Engine) WithReferenceSnapshot() *Engine {
	return &Engine{opts: e.opts, refs: &refSnapshot{}}
}

// refSnapshot is the listing of an Engine from WithReferenceSnapshot: the
// revisions created from another, with what they were created from.
type refSnapshot struct {
	mu    sync.Mutex
	taken bool
	refs  []refEntry
}

// refEntry is a revision (by) created by a clone or an upgrade.
type refEntry struct {
	by       revision.Key
	creation *revision.Creation
}

// referencedFrom returns the revisions of the snapshot created from
// target, listing the repositories on the first call.
func (s *refSnapshot) referencedFrom(ctx context.Context, e *Engine, target revision.Key) ([]revision.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.taken {
		var refs []refEntry
		err := e.eachRevision(ctx, func(name string, pr revision.PackageRevision) {
			m := pr.Meta()
			if c := m.Creation; c != nil && (c.Source != nil || c.NewUpstream != nil) {
				k := m.Key
				k.Repository = name
				refs = append(refs, refEntry{by: k, creation: c})
			}
		})
		if err != nil {
			return nil, err
		}
		s.refs, s.taken = refs, true
	}
	var by []revision.Key
	for _, r := range s.refs {
		if r.by != target && createdFrom(r.creation, target) {
			by = append(by, r.by)
		}
	}
	return by, nil
}

// deleted takes key out of the snapshot.
func (s *refSnapshot) deleted(key revision.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.refs {
		if r.by == key {
			s.refs = append(s.refs[:i], s.refs[i+1:]...)
			return
		}
	}
}
