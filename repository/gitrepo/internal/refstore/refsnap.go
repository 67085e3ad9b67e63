package refstore

import (
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// RefSnap is the refs of a repository read once, for a read that looks
// many up (a list): their names sorted, their values beside them. On disk
// it is, when no loose ref adds to or overrides packed-refs, the parsed
// packed-refs itself (its names are substrings of one copy of the file),
// so a list of 50,000 tags holds its refs once, not again in a map.
// Immutable once built.
type RefSnap struct {
	Names  []string
	Hashes []plumbing.Hash
}

// SnapOf returns the snapshot of the refs in m.
func SnapOf(m map[plumbing.ReferenceName]plumbing.Hash) *RefSnap {
	s := &RefSnap{Names: make([]string, 0, len(m)), Hashes: make([]plumbing.Hash, 0, len(m))}
	for name := range m {
		s.Names = append(s.Names, string(name))
	}
	slices.Sort(s.Names)
	for _, n := range s.Names {
		s.Hashes = append(s.Hashes, m[plumbing.ReferenceName(n)])
	}
	return s
}

// Len returns the number of refs.
func (s *RefSnap) Len() int { return len(s.Names) }

// Get returns the value of ref name.
func (s *RefSnap) Get(name plumbing.ReferenceName) (plumbing.Hash, bool) {
	i, ok := slices.BinarySearch(s.Names, string(name))
	if !ok {
		return plumbing.ZeroHash, false
	}
	return s.Hashes[i], true
}

// Prefixed returns the positions [lo, hi) of the refs whose names start
// with prefix.
func (s *RefSnap) Prefixed(prefix string) (lo, hi int) {
	lo = sort.SearchStrings(s.Names, prefix)
	hi = lo
	for hi < len(s.Names) && strings.HasPrefix(s.Names[hi], prefix) {
		hi++
	}
	return lo, hi
}

// Snapshot reads every ref under the prefixes (each ending in a slash)
// and the refs named in extra: loose refs over packed-refs, a damaged
// loose ref left out (even when packed) and reported to damaged, as is a
// damaged line of packed-refs that holds or may hold a selected ref. Its
// cost follows the refs it selects: the packed ones are found by binary
// search.
func (f *FSRefs) Snapshot(prefixes []string, extra []plumbing.ReferenceName, damaged func(error)) (*RefSnap, error) {
	return f.snapshot(prefixes, extra, damaged, nil, nil)
}

// snapshot is Snapshot; when paths is set, it also appends the paths of
// the directories the refs were read from (each prefix's root and the
// directory above it, present or not, and every directory below) and of
// every loose ref file found whose name starts with none of byDir, for a
// Stamp.
func (f *FSRefs) snapshot(prefixes []string, extra []plumbing.ReferenceName, damaged func(error), paths *[]string, byDir []string) (*RefSnap, error) {
	names, hashes, bad, err := f.packedAll()
	if err != nil {
		return nil, err
	}
	// Loose refs: those found, and those damaged.
	loose := map[string]plumbing.Hash{}
	drop := map[string]bool{}
	visit := func(name string, d fs.DirEntry) error {
		var h plumbing.Hash
		var ok bool
		var err error
		if d != nil {
			h, ok, err = f.looseWalked(name, d)
		} else {
			h, ok, err = f.loose(name)
		}
		if err != nil {
			if !IsDamaged(err) {
				return err
			}
			drop[name] = true
			damaged(err)
			return nil
		}
		if ok {
			loose[name] = h
		}
		return nil
	}
	walk := visit
	if paths != nil {
		walk = func(name string, d fs.DirEntry) error {
			if !slices.ContainsFunc(byDir, func(p string) bool { return strings.HasPrefix(name, p) }) {
				*paths = append(*paths, filepath.Join(f.GitDir, filepath.FromSlash(name)))
			}
			return visit(name, d)
		}
	}
	for _, prefix := range prefixes {
		if paths != nil {
			root := filepath.Join(f.GitDir, filepath.FromSlash(prefix))
			*paths = append(*paths, root, filepath.Dir(root))
		}
		if err := f.walkLoose(prefix, walk, walkDirs(paths)); err != nil {
			return nil, err
		}
	}
	for _, name := range extra {
		if err := visit(string(name), nil); err != nil {
			return nil, err
		}
	}
	f.pruneSeen(len(loose))
	reportPackedDamage(bad, prefixes, extra, func(name string) bool {
		_, ok := loose[name]
		return ok || drop[name]
	}, damaged)
	// The packed refs selected, as spans of the sorted names, in order.
	type span struct{ lo, hi int }
	var spans []span
	for _, p := range prefixes {
		lo := sort.SearchStrings(names, p)
		hi := lo
		for hi < len(names) && strings.HasPrefix(names[hi], p) {
			hi++
		}
		spans = append(spans, span{lo, hi})
	}
	for _, name := range extra {
		if i, ok := slices.BinarySearch(names, string(name)); ok {
			spans = append(spans, span{i, i + 1})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo - b.lo })
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.lo <= merged[n-1].hi {
			merged[n-1].hi = max(merged[n-1].hi, sp.hi)
		} else if sp.lo < sp.hi {
			merged = append(merged, sp)
		}
	}
	// Nothing added, overridden, dropped or left out: the parsed
	// packed-refs, shared.
	if len(loose) == 0 && len(drop) == 0 && (len(names) == 0 || len(merged) == 1 && merged[0] == span{0, len(names)}) {
		return f.overlaySnap(&RefSnap{Names: names, Hashes: hashes}, prefixes, extra), nil
	}
	looseNames := make([]string, 0, len(loose))
	for n := range loose {
		looseNames = append(looseNames, n)
	}
	slices.Sort(looseNames)
	s := &RefSnap{}
	add := func(n string, h plumbing.Hash) { s.Names, s.Hashes = append(s.Names, n), append(s.Hashes, h) }
	j := 0 // the next loose ref
	for _, sp := range merged {
		for i := sp.lo; i < sp.hi; i++ {
			n := names[i]
			for ; j < len(looseNames) && looseNames[j] < n; j++ {
				add(looseNames[j], loose[looseNames[j]])
			}
			if j < len(looseNames) && looseNames[j] == n {
				continue // the loose value wins, added next
			}
			if !drop[n] {
				add(n, hashes[i])
			}
		}
	}
	for ; j < len(looseNames); j++ {
		add(looseNames[j], loose[looseNames[j]])
	}
	return f.overlaySnap(s, prefixes, extra), nil
}
