package gitrepo

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// A write planned in a batch decides on what it reads, as every write
// does: that a workspace is free (the refs of the package), the next
// revision number (its tags), a Version (a ref and a revision's
// metadata). Without a batch the exclusive lock keeps all of it as it was
// read until the write lands; a batch lands later, so every plan records
// what it read from disk (not from the batch), and Commit, under the
// exclusive lock, reads it again: anything another writer changed since
// is a conflict, and nothing of the batch is written. The metadata ref is
// the exception: it moves with every metadata change of any revision, so
// for it the revisions' metadata files read are compared instead
// (rebaseMetadata).

// readSet is what one write's plan (or a whole batch) read.
type readSet struct {
	refs     map[plumbing.ReferenceName]plumbing.Hash // zero: absent
	prefixes map[prefixKey]string                     // what was under prefix, encoded
	allRefs  string                                   // every ref, encoded; "" when not read
	md       map[string]string                        // metadata file path: the Metadata's hash
	// stale: two reads of the same thing differed, so another writer
	// changed it during the batch.
	stale string
}

// How a prefix was read.
const (
	readChildren byte = iota
	readUnder
	readNames
)

type prefixKey struct {
	kind   byte
	prefix string
}

func newReadSet() *readSet {
	return &readSet{refs: map[plumbing.ReferenceName]plumbing.Hash{}, prefixes: map[prefixKey]string{}, md: map[string]string{}}
}

// ref records that ref name was read at h.
func (s *readSet) ref(name plumbing.ReferenceName, h plumbing.Hash) {
	if s == nil {
		return
	}
	if old, ok := s.refs[name]; ok && old != h {
		s.stale = string(name)
	}
	s.refs[name] = h
}

// prefix records the refs m read under prefix.
func (s *readSet) prefix(kind byte, prefix string, m map[plumbing.ReferenceName]plumbing.Hash) {
	if s == nil {
		return
	}
	s.setPrefix(prefixKey{kind, prefix}, encodeRefs(m))
}

// names records the names read directly under prefix.
func (s *readSet) names(prefix string, names []string) {
	if s == nil {
		return
	}
	sorted := slices.Sorted(slices.Values(names))
	s.setPrefix(prefixKey{readNames, prefix}, strings.Join(sorted, "\n"))
}

func (s *readSet) setPrefix(k prefixKey, enc string) {
	if old, ok := s.prefixes[k]; ok && old != enc {
		s.stale = k.prefix
	}
	s.prefixes[k] = enc
}

// all records a snapshot of every ref.
func (s *readSet) all(snap *refstore.RefSnap) {
	if s == nil {
		return
	}
	enc := encodeSnap(snap)
	if s.allRefs != "" && s.allRefs != enc {
		s.stale = "refs"
	}
	s.allRefs = enc
}

// metadata records that the metadata file p was read as Metadata of
// hash mh. The first read counts: later ones may read what the batch
// itself wrote there (rebaseMetadata compares the files the batch
// changed).
func (s *readSet) metadata(p, mh string) {
	if s == nil {
		return
	}
	if _, ok := s.md[p]; !ok {
		s.md[p] = mh
	}
}

// add merges o, one plan's reads, into s, the batch's.
func (s *readSet) add(o *readSet) {
	for n, h := range o.refs {
		s.ref(n, h)
	}
	for k, enc := range o.prefixes {
		s.setPrefix(k, enc)
	}
	if o.allRefs != "" {
		if s.allRefs != "" && s.allRefs != o.allRefs {
			s.stale = "refs"
		}
		s.allRefs = o.allRefs
	}
	for p, mh := range o.md {
		s.metadata(p, mh)
	}
	if o.stale != "" {
		s.stale = o.stale
	}
}

// encodeRefs encodes refs m, sorted, leaving out the metadata ref.
func encodeRefs(m map[plumbing.ReferenceName]plumbing.Hash) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(m)) {
		if n == metadataRef {
			continue
		}
		b.WriteString(string(n))
		b.WriteByte(' ')
		b.WriteString(m[n].String())
		b.WriteByte('\n')
	}
	return b.String()
}

func encodeSnap(s *refstore.RefSnap) string {
	var b strings.Builder
	for i, n := range s.Names {
		if n == string(metadataRef) {
			continue
		}
		b.WriteString(n)
		b.WriteByte(' ')
		b.WriteString(s.Hashes[i].String())
		b.WriteByte('\n')
	}
	return b.String()
}

// check reads again, from disk, what s records (but the metadata ref) and
// returns an error matching refstore.ErrConflictRef naming the first thing that
// changed. The caller holds the exclusive lock.
func (s *readSet) check(v *view) error {
	changed := func(what string) error {
		return fmt.Errorf("%w: %s changed since the batch read it", refstore.ErrConflictRef, what)
	}
	if s.stale != "" {
		return changed(s.stale)
	}
	f := v.fr
	for name, h := range s.refs {
		if name == metadataRef {
			continue
		}
		cur, _, err := f.Ref(name)
		if err != nil {
			return err
		}
		if cur != h {
			return changed(string(name))
		}
	}
	for k, enc := range s.prefixes {
		var now string
		switch k.kind {
		case readChildren, readUnder:
			read := f.Children
			if k.kind == readUnder {
				read = f.Under
			}
			m, err := read(k.prefix, v.damaged)
			if err != nil {
				return err
			}
			now = encodeRefs(m)
		case readNames:
			names, err := f.ChildNames(k.prefix)
			if err != nil {
				return err
			}
			now = strings.Join(slices.Sorted(slices.Values(names)), "\n")
		}
		if now != enc {
			return changed(k.prefix)
		}
	}
	if s.allRefs != "" {
		snap, err := f.Snapshot([]string{"refs/heads/", "refs/tags/"}, []plumbing.ReferenceName{metadataRef}, v.damaged)
		if err != nil {
			return err
		}
		if encodeSnap(snap) != s.allRefs {
			return changed("the refs")
		}
	}
	return nil
}

// checkMetadata compares the metadata files s records as read with the
// metadata tree cur, leaving out those in skip (the batch changed them:
// rebaseMetadata compares them). It returns an error matching
// refstore.ErrConflictRef naming the first that differs.
func (s *readSet) checkMetadata(v *view, cur plumbing.Hash, skip map[string]bool) error {
	for p, mh := range s.md {
		if skip[p] {
			continue
		}
		blob, err := fileAt(v, cur, strings.Split(p, "/"))
		if err != nil {
			return err
		}
		var md revision.Metadata
		if !blob.IsZero() {
			data, err := v.boundedBlob(blob, p)
			if err != nil && !errors.Is(err, revision.ErrLimit) {
				return err
			}
			if md, err = revision.ParseMetadata(data); err != nil {
				md = revision.Metadata{} // read as none, as attachMetadata does
			}
		}
		if md.Hash() != mh {
			return fmt.Errorf("%w: metadata %s changed since the batch read it", refstore.ErrConflictRef, p)
		}
	}
	return nil
}
