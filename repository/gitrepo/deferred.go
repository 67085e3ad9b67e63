package gitrepo

import (
	"cmp"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/index"
)

// deferredTrees are the package trees one list left to the first read of
// their revisions (tagRev, with view.deferTrees): a root tree and a path
// each. A read resolves its own with those of the revisions whose root
// trees lie next to its own in the pack (deferredBatch of them, in pack
// order): on Porch's flat layout the root trees of consecutive approvals
// are one delta chain, whose bottom is inflated once for all of them, and
// a read of every listed revision, in the list's order, would otherwise
// inflate a bottom for each. What is found is recorded in cad-paths, one
// append a batch. Safe for concurrent use.
type deferredTrees struct {
	mu    sync.Mutex
	items []deferredTree
	// order is items' indexes in the pack order of their root trees and
	// rank where each stands in it; both made on the first resolve.
	order []int32
	rank  []int32
}

// deferredTree is one package tree to find: the package's path under a
// commit's root tree, and what was found.
type deferredTree struct {
	root  plumbing.Hash
	full  string
	tree  plumbing.Hash
	state treeState
}

// treeState is where the lookup of a deferredTree stands.
type treeState uint8

const (
	treeUnknown treeState = iota // not looked up
	treeFound                    // tree is the package tree
	treeNone                     // the root tree has no directory there
	treeFailed                   // a read failed: looked up again when its own revision is read
)

// deferredBatch is how many package trees a read resolves together.
const deferredBatch = 48

// add registers the package tree at full under root and returns its index.
func (d *deferredTrees) add(root plumbing.Hash, full string) int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.items = append(d.items, deferredTree{root: root, full: full})
	d.order, d.rank = nil, nil // made again with the new item
	return int32(len(d.items) - 1)
}

// tree returns the package tree of item i, found in v, and false when its
// root tree has no directory at its path; the items next to it in the
// pack are looked up with it.
func (d *deferredTrees) tree(v *view, i int32) (plumbing.Hash, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch it := &d.items[i]; it.state {
	case treeFound:
		return it.tree, true, nil
	case treeNone:
		return plumbing.ZeroHash, false, nil
	}
	if d.order == nil {
		d.sort(v)
	}
	p := int(d.rank[i])
	lo := max(0, p-deferredBatch/2)
	hi := min(len(d.order), lo+deferredBatch)
	var learnt []index.PathRecord
	var own error
	for _, j := range d.order[lo:hi] {
		it := &d.items[j]
		if it.state == treeFound || it.state == treeNone || (it.state == treeFailed && j != i) {
			continue
		}
		h, ok, fresh, err := v.knownOrSubtree(it.root, it.full)
		switch {
		case err != nil:
			it.state = treeFailed
			if j == i {
				own = err
			}
		case !ok:
			it.state = treeNone
		default:
			it.state, it.tree = treeFound, h
			if !fresh {
				continue
			}
			learnt = append(learnt, index.PathRecord{Key: index.PathKey36(it.root, it.full), Tree: h})
		}
	}
	v.paths.Add(learnt...)
	if own != nil {
		return plumbing.ZeroHash, false, own
	}
	it := &d.items[i]
	return it.tree, it.state == treeFound, nil
}

// sort makes order and rank: items by where their root trees lie in the
// packs (those in no pack last, in the order they came); d.mu is held.
func (d *deferredTrees) sort(v *view) {
	at := make([]packPos, len(d.items))
	d.order = make([]int32, len(d.items))
	for i, it := range d.items {
		d.order[i], at[i] = int32(i), packPos{pack: noPack}
		if v.packs != nil {
			if p, off, ok := v.packs.Offset(it.root); ok {
				at[i] = packPos{pack: p, off: off}
			}
		}
	}
	slices.SortStableFunc(d.order, func(a, b int32) int {
		if c := cmp.Compare(at[a].pack, at[b].pack); c != 0 {
			return c
		}
		return cmp.Compare(at[a].off, at[b].off)
	})
	d.rank = make([]int32, len(d.items))
	for p, i := range d.order {
		d.rank[i] = int32(p)
	}
}
