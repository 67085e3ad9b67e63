package gitrepo

import (
	"bytes"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// Workspace summaries. Every new draft checks that no revision of its
// package has its workspace, and a published revision's workspace is only
// in its tag's objects, so the check looks at every tag of the package:
// thousands for a package with thousands of revisions. A summary is a
// file, cad-workspaces/<hash of the package path>, that lists the
// workspace (a hash of it) of every tag of one package, for one state of
// the package's tags: the identity of packed-refs (device, inode, size,
// modification and change times) and the package's loose tags (names and
// values). A lookup whose state is the summary's looks at the tags the
// summary names for the workspace, and no other; one whose packed-refs is
// the summary's but whose loose tags differ (an approval since, a tag
// deleted or moved by any writer) also looks at the loose tags that are
// new, moved or gone since, and writes the summary again once
// wsSumRewriteAfter of them changed. Another
// packed-refs holds the summary when its lines under the package's tag
// prefix are those the summary was written for (their SHA-256, found by
// binary search), and the summary is written again for it. Anything else
// (another packed-refs with other lines, a damaged or missing file, a
// file of another package, a tag the summary names that is not there) is
// read as no summary: the lookup passes over every tag, as it did before,
// and writes one.
//
// A summary is a hint, never the answer: a tag it names is read as the
// full pass reads it, so it can at most spare the reads of tags whose
// workspace it knows is another. It is exact as long as a packed-refs
// with the summary's identity has the summary's content, which holds for
// every writer that replaces packed-refs (git, cad) unless a new file
// gets a freed inode, the same size and the same change time as the old
// one (within the clock's tick); the loose tags are read, so a raw write
// of a loose ref is seen. Summaries are written for packages with at
// least wsSumMin tags (below that the pass costs less than the file).
//
// The file's format (and how it is written) is package index's: see
// its doc, "cad-workspaces".

// wsSumMin is how many tags a package has before its workspace lookups
// keep a summary. A variable for the tests.
var wsSumMin = 32

// wsSumRewriteAfter is how many loose tags a lookup reads itself (new,
// moved or gone since the summary) before it writes the summary again.
// A variable for the tests.
var wsSumRewriteAfter = 8

// wsState reads the state of the tags under prefix (a package's,
// "refs/tags/<full>/") that a summary is kept for. ok is false when it
// cannot be known exactly without reading every tag: refs of an
// unfinished journal laid over the disk under prefix, a loose tag that
// is damaged or symbolic, packed-refs that cannot be read, or a platform
// where a file's change time is not known.
func wsState(f *refstore.FSRefs, prefix string) (st index.WSSumState, ok bool) {
	packed, loose, ok := f.PrefixState(prefix)
	if !ok {
		return st, false
	}
	if packed != nil {
		if st.Packed, ok = refstore.PackedIdentity(packed); !ok {
			return st, false
		}
	}
	for _, l := range loose {
		st.Loose = append(st.Loose, index.WSLoose{Ver: l.Name, H: l.Hash})
	}
	return st, true
}

// wsEffective is what tagEffectiveWS found: the workspace a tag gives
// its package, by name when exact, else as a record's hash; known is false
// when the objects cannot be read.
type wsEffective struct {
	name         string
	hash         plumbing.Hash
	exact, known bool
}

// may reports whether the tag can have workspace ws, as
// tagMayHaveWorkspace answers.
func (e wsEffective) may(ws string) bool {
	if !e.known {
		return true
	}
	if e.exact {
		return e.name == ws
	}
	return e.hash == index.WsHash(ws)
}

// hash8 is the summary's hash of the workspace.
func (e wsEffective) hash8() [8]byte {
	if e.exact {
		return index.WSHash8(e.name)
	}
	return [8]byte(e.hash[:8])
}

// tagEffectiveWS returns the workspace tag <wl.full>/<ver> at h gives its
// package, from what tagMayHaveWorkspace reads (and as it reads it:
// remembered, recorded in cad-paths, else the objects, learnt into wl).
func (r *Repository) tagEffectiveWS(v *view, wl *wsLookup, ver string, h plumbing.Hash) wsEffective {
	r.wsTagsRead.Add(1)
	if parseVersion(ver) <= 0 {
		return wsEffective{name: tagWorkspace(ver, ""), exact: true, known: true}
	}
	full := wl.full
	if w, ok := r.tagWS.get(h, full); ok {
		return wsEffective{name: tagWorkspace(ver, w), exact: true, known: true}
	}
	if !wl.loaded {
		wl.loaded, wl.recs = true, v.paths.Workspaces(full)
	}
	if got, ok := wl.recs.Get(h); ok {
		if got == noWorkspaceHash { // the objects give none
			return wsEffective{name: tagWorkspace(ver, ""), exact: true, known: true}
		}
		return wsEffective{hash: got, known: true}
	}
	c, err := v.commit(h)
	if err != nil {
		return wsEffective{}
	}
	w := objectWorkspace(v.tagAnnotations(h), c, full)
	r.tagWS.put(h, full, w)
	wl.learnt = append(wl.learnt, index.WsRecord(full, h, w))
	return wsEffective{name: tagWorkspace(ver, w), exact: true, known: true}
}

// tagEffectiveWSFew is tagEffectiveWS for one of a few tags: the tag's
// commit (and annotated tag) is read before the package's workspace
// records, which are read all at once (some 60 bytes a tag), are loaded;
// the records answer only when the objects cannot be read. What the
// objects say is not appended to cad-paths (the approval that made the
// tag recorded it, or the next pass over every tag does).
func (r *Repository) tagEffectiveWSFew(v *view, wl *wsLookup, ver string, h plumbing.Hash) wsEffective {
	if parseVersion(ver) > 0 && !wl.loaded {
		if _, ok := r.tagWS.get(h, wl.full); !ok {
			if c, err := v.commit(h); err == nil {
				r.wsTagsRead.Add(1)
				w := objectWorkspace(v.tagAnnotations(h), c, wl.full)
				r.tagWS.put(h, wl.full, w)
				return wsEffective{name: tagWorkspace(ver, w), exact: true, known: true}
			}
		}
	}
	return r.tagEffectiveWS(v, wl, ver, h)
}

// resolveWorkspace finds the published revision of key's package with
// key's workspace (key.Revision is 0), as resolve's pass over the
// package's tags does, with the package's summary when it holds: done is
// false when the refs are not read from disk, and resolve passes over
// the tags itself.
func (r *Repository) resolveWorkspace(v *view, key revision.Key, full string) (x *rev, done bool, err error) {
	// In a write batch the tags are the files' and the batch's, and the
	// batch records what its writes read: both are v.tagsOf's.
	if v.fr == nil || v.refs != nil || v.gitDir == "" || v.bt != nil {
		return nil, false, nil
	}
	prefix := "refs/tags/" + full + "/"
	wl := &wsLookup{full: full}
	defer func() { v.paths.Add(wl.learnt...) }()
	st, stOK := wsState(v.fr, prefix)
	if stOK {
		if sum, ok := index.ReadWSSummary(v.gitDir, full); ok && summaryHolds(sum, v.gitDir, prefix, st) {
			x, ok, err := r.resolveBySummary(v, wl, key, full, sum, st)
			if err != nil || ok {
				return x, true, err
			}
		}
	}
	// Every tag of the package; no summary is written of a state with a
	// damaged tag (left out and warned about).
	damaged := false
	tags, err := v.fr.Children(prefix, func(err error) { // as v.tagsOf
		damaged = true
		if v.damaged != nil {
			v.damaged(err)
		}
	})
	if err != nil {
		return nil, true, err
	}
	var best *rev
	entries := make([]index.WSSumEntry, 0, len(tags))
	complete := stOK && !damaged && len(tags) >= wsSumMin
	for name, h := range tags {
		ver := shortName(name)[len(full)+1:]
		e := r.tagEffectiveWS(v, wl, ver, h)
		if complete && e.known {
			entries = append(entries, index.WSSumEntry{WS: e.hash8(), Ver: ver})
		} else {
			complete = false
		}
		if !e.may(key.Workspace) {
			continue
		}
		if best, err = r.betterTagRev(v, key, ver, name, h, best); err != nil {
			return nil, true, err
		}
	}
	if complete {
		// Written only when the state did not change during the pass.
		if after, ok := wsState(v.fr, prefix); ok && sameWSState(st, after) {
			slices.SortFunc(entries, index.CompareWSSumEntry)
			sum := &index.WSSummary{Full: full, State: st, Entries: entries}
			if id, lines, ok := refstore.PackedLines(v.gitDir, prefix); ok && id == st.Packed {
				sum.Lines[0] = 1
				copy(sum.Lines[1:], lines[:])
			}
			index.WriteWSSummary(v.gitDir, sum)
		}
	}
	if best == nil {
		return nil, true, r.errorf("get", key, repository.ErrNotFound, "no revision %s", keyString(key))
	}
	return best, true, nil
}

// betterTagRev reads tag <full>/<ver> at h as resolve does, and returns
// it when it matches key and has a higher revision than best, else best.
func (r *Repository) betterTagRev(v *view, key revision.Key, ver string, name plumbing.ReferenceName, h plumbing.Hash, best *rev) (*rev, error) {
	x, err := r.tagRev(v, key.Package, ver, name, h)
	if err != nil {
		return nil, err
	}
	if x != nil && key.Matches(x.key) && (best == nil || x.key.Revision > best.key.Revision) {
		return x, nil
	}
	return best, nil
}

// sameWSState reports whether a and b are the same state of the tags.
func sameWSState(a, b index.WSSumState) bool {
	return a.Packed == b.Packed && slices.Equal(a.Loose, b.Loose)
}

// resolveBySummary is resolveWorkspace with summary sum, whose
// packed-refs is the one on disk; st is the state of the tags. It reads
// the tags sum gives key's workspace, and every loose tag, now or when
// sum was written; ok is false when sum does not hold (a tag it names is
// not there), and the caller passes over every tag. When the loose tags
// changed since sum, it writes the summary of the state st.
func (r *Repository) resolveBySummary(v *view, wl *wsLookup, key revision.Key, full string, sum *index.WSSummary, st index.WSSumState) (best *rev, ok bool, err error) {
	// The loose tags that are not what they were when sum was written
	// (new, moved, or removed, when packed-refs may hold another value):
	// read here, whatever sum says of them. A tag's workspace in sum is a
	// fact of its name and value, so sum holds for the others.
	looseNow := make(map[string]plumbing.Hash, len(st.Loose))
	for _, l := range st.Loose {
		looseNow[l.Ver] = l.H
	}
	direct := map[string]bool{}
	looseThen := make(map[string]plumbing.Hash, len(sum.State.Loose))
	for _, l := range sum.State.Loose {
		looseThen[l.Ver] = l.H
		if h, ok := looseNow[l.Ver]; !ok || h != l.H {
			direct[l.Ver] = true
		}
	}
	for _, l := range st.Loose {
		if h, ok := looseThen[l.Ver]; !ok || h != l.H {
			direct[l.Ver] = true
		}
	}
	named, ok := sum.Named(index.WSHash8(key.Workspace))
	if !ok {
		return nil, false, nil
	}
	for _, ver := range named {
		if direct[ver] {
			continue
		}
		// A tag as it was when sum was written: packed (packed-refs is
		// sum's), or loose with the same value.
		name := tagRef(full + "/" + ver)
		h, found, err := v.ref(name)
		if err != nil {
			return nil, false, err
		}
		if !found {
			return nil, false, nil
		}
		if !r.tagEffectiveWSFew(v, wl, ver, h).may(key.Workspace) {
			continue
		}
		if best, err = r.betterTagRev(v, key, ver, name, h, best); err != nil {
			return nil, false, err
		}
	}
	changed := sum.Repacked || !sameWSState(sum.State, st)
	var fresh []index.WSSumEntry
	complete := true
	for ver := range direct {
		name := tagRef(full + "/" + ver)
		h, found := looseNow[ver]
		if !found {
			// Loose no longer: what packed-refs holds, if anything.
			if h, found, err = v.ref(name); err != nil {
				return nil, false, err
			}
			if !found {
				continue
			}
		}
		e := r.tagEffectiveWSFew(v, wl, ver, h)
		if e.known {
			fresh = append(fresh, index.WSSumEntry{WS: e.hash8(), Ver: ver})
		} else {
			complete = false
		}
		if !e.may(key.Workspace) {
			continue
		}
		if best, err = r.betterTagRev(v, key, ver, name, h, best); err != nil {
			return nil, false, err
		}
	}
	// Written again when it names another packed-refs, or once enough
	// loose tags changed: until then a lookup reads the few that did
	// (an approval adds one) instead of writing the whole summary.
	if changed && complete && (sum.Repacked || len(direct) >= wsSumRewriteAfter) {
		if old, ok := sum.All(); ok {
			entries := make([]index.WSSumEntry, 0, len(old)+len(fresh))
			for _, e := range old {
				if !direct[e.Ver] {
					entries = append(entries, e)
				}
			}
			entries = append(entries, fresh...)
			slices.SortFunc(entries, index.CompareWSSumEntry)
			index.WriteWSSummary(v.gitDir, &index.WSSummary{Full: full, State: st, Lines: sum.Lines, Entries: entries})
		}
	}
	if best == nil {
		return nil, true, r.errorf("get", key, repository.ErrNotFound, "no revision %s", keyString(key))
	}
	return best, true, nil
}

// summaryHolds reports whether summary s holds for packed-refs as st found it:
// it is the file s names, or another whose lines under prefix are those
// s was written for (then s.Repacked is set, and s takes st's identity).
func summaryHolds(s *index.WSSummary, gitDir, prefix string, st index.WSSumState) bool {
	if s.State.Packed == st.Packed {
		return true
	}
	if s.Lines[0] != 1 || st.Packed[0] != 1 {
		return false
	}
	id, lines, ok := refstore.PackedLines(gitDir, prefix)
	if !ok || id != st.Packed || !bytes.Equal(lines[:], s.Lines[1:]) {
		return false
	}
	s.State.Packed, s.Repacked = st.Packed, true
	return true
}
