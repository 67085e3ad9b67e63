package gitrepo

import (
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// refSnap is the refs of a repository read once, for a read that looks
// many up (a list): their names sorted, their values beside them. On disk
// it is, when no loose ref adds to or overrides packed-refs, the parsed
// packed-refs itself (its names are substrings of one copy of the file),
// so a list of 50,000 tags holds its refs once, not again in a map.
// Immutable once built.
type refSnap struct {
	names  []string
	hashes []plumbing.Hash
}

// snapOf returns the snapshot of the refs in m.
func snapOf(m map[plumbing.ReferenceName]plumbing.Hash) *refSnap {
	s := &refSnap{names: make([]string, 0, len(m)), hashes: make([]plumbing.Hash, 0, len(m))}
	for name := range m {
		s.names = append(s.names, string(name))
	}
	slices.Sort(s.names)
	for _, n := range s.names {
		s.hashes = append(s.hashes, m[plumbing.ReferenceName(n)])
	}
	return s
}

// len returns the number of refs.
func (s *refSnap) len() int { return len(s.names) }

// get returns the value of ref name.
func (s *refSnap) get(name plumbing.ReferenceName) (plumbing.Hash, bool) {
	i, ok := slices.BinarySearch(s.names, string(name))
	if !ok {
		return plumbing.ZeroHash, false
	}
	return s.hashes[i], true
}

// prefixed returns the positions [lo, hi) of the refs whose names start
// with prefix.
func (s *refSnap) prefixed(prefix string) (lo, hi int) {
	lo = sort.SearchStrings(s.names, prefix)
	hi = lo
	for hi < len(s.names) && strings.HasPrefix(s.names[hi], prefix) {
		hi++
	}
	return lo, hi
}

// snapshot reads every ref under the prefixes (each ending in a slash)
// and the refs named in extra, as under and ref read them: loose refs
// over packed-refs, a damaged loose ref left out and reported to damaged.
func (f *fsRefs) snapshot(prefixes []string, extra []plumbing.ReferenceName, damaged func(error)) (*refSnap, error) {
	names, hashes, err := f.packed()
	if err != nil {
		return nil, err
	}
	wanted := func(n string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				return true
			}
		}
		return slices.Contains(extra, plumbing.ReferenceName(n))
	}
	// Loose refs: those found, and those damaged (left out even when
	// packed).
	loose := map[string]plumbing.Hash{}
	drop := map[string]bool{}
	visit := func(name string) error {
		h, ok, err := f.loose(name)
		if err != nil {
			if !isDamaged(err) {
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
	for _, prefix := range prefixes {
		if err := f.walkLoose(prefix, visit); err != nil {
			return nil, err
		}
	}
	for _, name := range extra {
		if err := visit(string(name)); err != nil {
			return nil, err
		}
	}
	// The packed refs alone, when nothing is to be added, overridden,
	// dropped or filtered: the parsed packed-refs, shared.
	all := len(loose) == 0 && len(drop) == 0
	for i := 0; all && i < len(names); i++ {
		all = wanted(names[i])
	}
	if all {
		return &refSnap{names: names, hashes: hashes}, nil
	}
	s := &refSnap{names: make([]string, 0, len(names)+len(loose)), hashes: make([]plumbing.Hash, 0, len(names)+len(loose))}
	looseNames := make([]string, 0, len(loose))
	for n := range loose {
		looseNames = append(looseNames, n)
	}
	slices.Sort(looseNames)
	i, j := 0, 0
	for i < len(names) || j < len(looseNames) {
		switch {
		case j == len(looseNames) || (i < len(names) && names[i] < looseNames[j]):
			if n := names[i]; wanted(n) && !drop[n] {
				s.names, s.hashes = append(s.names, n), append(s.hashes, hashes[i])
			}
			i++
		default:
			n := looseNames[j]
			if i < len(names) && names[i] == n {
				i++ // the loose value wins
			}
			s.names, s.hashes = append(s.names, n), append(s.hashes, loose[n])
			j++
		}
	}
	return s, nil
}
