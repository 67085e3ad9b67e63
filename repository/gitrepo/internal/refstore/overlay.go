package refstore

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// A reader that finds the journal of a transaction past its commit point
// (a writer died before completing it) completes it first (store.read).
// A reader that cannot, because it may not write to the git directory,
// reads the refs as the journal completes them instead: the overlay is
// the journal's outcome, computed once per journal as recover would apply
// it and laid over the refs on disk by every lookup, so that such a reader
// never sees a write half done.

// refOverlay is the refs a pending journal sets (zero: deletes), and the
// journal it was read from.
type refOverlay struct {
	refs    map[string]plumbing.Hash
	journal os.FileInfo
}

// LoadOverlay makes the overlay match the journal on disk: none when
// there is no journal, else what completing it would set. The caller
// holds the store's lock, shared or exclusive.
func (f *FSRefs) LoadOverlay() error {
	fi, err := os.Stat(f.journalPath())
	if notExist(err) {
		f.setOverlay(nil)
		return nil
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	cur := f.ov
	f.mu.Unlock()
	if cur != nil && os.SameFile(cur.journal, fi) && cur.journal.ModTime().Equal(fi.ModTime()) && cur.journal.Size() == fi.Size() {
		return nil
	}
	data, err := os.ReadFile(f.journalPath())
	if err != nil {
		return fmt.Errorf("read %s: %w", journalName, err)
	}
	updates, err := parseJournal(data)
	if err != nil {
		return fmt.Errorf("%s: %w", journalName, err)
	}
	ov := &refOverlay{refs: map[string]plumbing.Hash{}, journal: fi}
	for _, u := range updates {
		// As recover decides: a ref still at its old value, or damaged,
		// gets the new one; one at another value was changed since by
		// another program and stays.
		h, _, err := f.refOnDisk(u.Name)
		if err != nil && !IsDamaged(err) {
			return err
		}
		if err == nil && h != u.Old {
			continue
		}
		ov.refs[string(u.Name)] = u.New
	}
	f.setOverlay(ov)
	return nil
}

// setOverlay sets the overlay; nil removes it.
func (f *FSRefs) setOverlay(ov *refOverlay) {
	f.mu.Lock()
	f.ov = ov
	f.mu.Unlock()
}

// overlaid returns the value the overlay gives ref name (zero: deleted),
// and whether it gives one.
func (f *FSRefs) overlaid(name string) (plumbing.Hash, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ov == nil {
		return plumbing.ZeroHash, false
	}
	h, ok := f.ov.refs[name]
	return h, ok
}

// overlayUnder calls set for every ref of the overlay that match selects.
func (f *FSRefs) overlayUnder(match func(name string) bool, set func(name string, h plumbing.Hash)) {
	f.mu.Lock()
	var names []string
	var hashes []plumbing.Hash
	if f.ov != nil {
		for n, h := range f.ov.refs {
			if match(n) {
				names, hashes = append(names, n), append(hashes, h)
			}
		}
	}
	f.mu.Unlock()
	for i, n := range names {
		set(n, hashes[i])
	}
}

// overlaySnap returns s with the overlay laid over it, for a snapshot of
// the refs under prefixes and named in extra.
func (f *FSRefs) overlaySnap(s *RefSnap, prefixes []string, extra []plumbing.ReferenceName) *RefSnap {
	var m map[plumbing.ReferenceName]plumbing.Hash
	f.overlayUnder(func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		for _, e := range extra {
			if string(e) == name {
				return true
			}
		}
		return false
	}, func(name string, h plumbing.Hash) {
		if m == nil {
			m = make(map[plumbing.ReferenceName]plumbing.Hash, s.Len())
			for i, n := range s.Names {
				m[plumbing.ReferenceName(n)] = s.Hashes[i]
			}
		}
		if h.IsZero() {
			delete(m, plumbing.ReferenceName(name))
		} else {
			m[plumbing.ReferenceName(name)] = h
		}
	})
	if m == nil {
		return s
	}
	return SnapOf(m)
}
