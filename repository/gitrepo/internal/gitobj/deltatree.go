package gitobj

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Finding one entry of a packed tree without building the tree.
//
// As Porch writes a repository, every approval commit's root tree holds
// every package of the branch, and each one is stored in the pack as a
// delta on the previous one, in chains of up to 50. A list looks one
// entry up in each tagged commit's root tree; building each of those
// trees (10,000 packages at the root: 360 KB) to scan it once made the
// first list of 50,000 revisions copy that much per tag (issue 22
// measured 17.6 GB allocated and 130 s of CPU). Here a delta-built tree
// of ropeMinSize or more is instead a
// rope: the pieces of its chain's bottom (a whole tree, read once per
// chain and indexed once: where each entry starts and a hash table of
// the names) and of the deltas' literal bytes that make it up. A delta
// on a rope makes a rope by slicing pieces, without copying a byte, and
// an entry is found by skipping each piece of the bottom through its
// index and parsing only the bytes around the deltas' insertions: the
// cost of a lookup is the number of pieces (a few per delta on the
// chain), not the tree's size. A rope grown past MaxRopePieces is built
// into a new bottom.
//
// Anything unusual (an object that is not a tree, a malformed bottom, a
// name twice in it) is left to the plain path, which builds the tree and
// scans it, so the answers are those of ScanTree whatever the input.

// Cache kinds of this file, after those of kinds.go.
const (
	kindRope     = kindPacked + 1 + iota // a *rope, by pack and offset
	kindRopeBase                         // a *ropeBase, by pack and offset
)

// ropeMinSize is the size of the smallest tree looked up through ropes:
// a few pieces per level of its chain cost more to compose than a small
// tree costs to build (trees of a few hundred entries and less, such as
// the directories of packages in directories).
const ropeMinSize = 16 << 10

// MaxRopePieces bounds a rope: a longer one is built into a new bottom.
var MaxRopePieces = 512 // a variable for the tests

// ErrRopeUnfit says the rope path does not answer; the plain path does.
var ErrRopeUnfit = errors.New("not fit for a rope")

// ropeBase is a whole tree object, the bottom of a delta chain, indexed.
type ropeBase struct {
	buf    []byte
	starts []int32 // where each entry starts, and len(buf) last
	table  []int32 // open addressing on the name's hash: entry index + 1, 0 empty
}

var ropeSeed = maphash.MakeSeed()

// entryName returns the name of the entry starting at s in b, and where
// its id starts; ok is false when the entry is not whole in b.
func entryName(b []byte, s int) (name []byte, id int, ok bool) {
	sp := bytes.IndexByte(b[s:], ' ')
	if sp < 0 {
		return nil, 0, false
	}
	nul := bytes.IndexByte(b[s+sp+1:], 0)
	if nul < 0 {
		return nil, 0, false
	}
	id = s + sp + 1 + nul + 1
	if id+20 > len(b) {
		return nil, 0, false
	}
	return b[s+sp+1 : s+sp+1+nul], id, true
}

// newRopeBase indexes the tree object buf; it fails (ErrRopeUnfit) on a
// malformed tree or one that holds a name twice.
func newRopeBase(buf []byte) (*ropeBase, error) {
	if len(buf) >= 1<<31-1 {
		return nil, ErrRopeUnfit
	}
	b := &ropeBase{buf: buf}
	for s := 0; s < len(buf); {
		_, id, ok := entryName(buf, s)
		if !ok {
			return nil, ErrRopeUnfit
		}
		b.starts = append(b.starts, int32(s))
		s = id + 20
	}
	n := len(b.starts)
	b.starts = append(b.starts, int32(len(buf)))
	size := 8
	for size < 2*n {
		size *= 2
	}
	b.table = make([]int32, size)
	for i := range n {
		name, _, _ := entryName(buf, int(b.starts[i]))
		slot := int(maphash.Bytes(ropeSeed, name)) & (size - 1)
		for b.table[slot] != 0 {
			if other, _, _ := entryName(buf, int(b.starts[b.table[slot]-1])); bytes.Equal(other, name) {
				return nil, ErrRopeUnfit
			}
			slot = (slot + 1) & (size - 1)
		}
		b.table[slot] = int32(i + 1)
	}
	return b, nil
}

// find returns the index of the entry called name, -1 if none.
func (b *ropeBase) find(name string) int {
	mask := len(b.table) - 1
	for slot := int(maphash.String(ropeSeed, name)) & mask; b.table[slot] != 0; slot = (slot + 1) & mask {
		i := int(b.table[slot] - 1)
		if got, _, _ := entryName(b.buf, int(b.starts[i])); string(got) == name {
			return i
		}
	}
	return -1
}

// entryAt returns the index of the entry that starts at off, -1 if none
// does.
func (b *ropeBase) entryAt(off int) int {
	i := sort.Search(len(b.starts), func(i int) bool { return int(b.starts[i]) >= off })
	if i < len(b.starts)-1 && int(b.starts[i]) == off {
		return i
	}
	return -1
}

func (b *ropeBase) cost() int64 { return int64(len(b.buf) + 4*len(b.starts) + 4*len(b.table) + 64) }

// rope is a tree object as pieces of its chain's bottom (cached apart,
// under baseKey) and of literal bytes.
type rope struct {
	baseKey plumbing.Hash
	size    int
	pieces  []piece
	lits    int // literal bytes held
}

// piece is n bytes at off in the bottom, or lit.
type piece struct {
	at, off, n int // at: where it starts in the rope
	lit        []byte
}

func (r *rope) cost() int64 { return int64(64 + 48*len(r.pieces) + r.lits) }

// getRope returns the rope cached at key and its bottom.
func getRope(cache *LRU, key plumbing.Hash) (*rope, *ropeBase, bool) {
	c, ok := cache.Get(kindRope, key)
	if !ok {
		return nil, nil, false
	}
	r := c.(*rope)
	b, ok := cache.Get(kindRopeBase, r.baseKey)
	if !ok {
		return nil, nil, false // its bottom was evicted: build it again
	}
	return r, b.(*ropeBase), true
}

// baseRope caches buf, a whole tree at key, as a bottom and returns the
// rope of it.
func baseRope(cache *LRU, key plumbing.Hash, buf []byte) (*rope, *ropeBase, error) {
	b, err := newRopeBase(buf)
	if err != nil {
		return nil, nil, err
	}
	r := &rope{baseKey: key, size: len(buf), pieces: []piece{{n: len(buf)}}}
	if len(buf) == 0 {
		r.pieces = nil
	}
	cache.Put(kindRopeBase, key, b, b.cost())
	cache.Put(kindRope, key, r, r.cost())
	return r, b, nil
}

// compose returns the rope delta makes of r.
func (r *rope) compose(delta []byte) (*rope, error) {
	dstSize, delta, ok := deltaHeader(delta, r.size)
	if !ok {
		return nil, errBadDelta
	}
	out := &rope{baseKey: r.baseKey, size: int(dstSize), pieces: make([]piece, 0, len(r.pieces)+4)}
	add := func(p piece) {
		p.at = 0
		if k := len(out.pieces); k > 0 {
			last := &out.pieces[k-1]
			p.at = last.at + last.n
			if p.lit == nil && last.lit == nil && last.off+last.n == p.off {
				last.n += p.n
				return
			}
		}
		if p.lit != nil {
			out.lits += len(p.lit)
		}
		out.pieces = append(out.pieces, p)
	}
	pos := 0
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			o, sz, rest, ok := deltaCopy(op, delta)
			if !ok {
				return nil, errBadDelta
			}
			delta = rest
			off, size := int(o), int(sz)
			if off+size > r.size || uint64(pos+size) > dstSize {
				return nil, errBadDelta
			}
			// The pieces of r over [off, off+size).
			i := sort.Search(len(r.pieces), func(i int) bool { return r.pieces[i].at+r.pieces[i].n > off })
			for rest, at := size, off; rest > 0; i++ {
				p := r.pieces[i]
				skip := at - p.at
				take := min(p.n-skip, rest)
				if p.lit != nil {
					add(piece{n: take, lit: p.lit[skip : skip+take]})
				} else {
					add(piece{off: p.off + skip, n: take})
				}
				rest -= take
				at += take
			}
			pos += size
		case op != 0:
			if int(op) > len(delta) || uint64(pos+int(op)) > dstSize {
				return nil, errBadDelta
			}
			add(piece{n: int(op), lit: delta[:op:op]})
			delta = delta[op:]
			pos += int(op)
		default:
			return nil, errBadDelta
		}
	}
	if uint64(pos) != dstSize {
		return nil, errBadDelta
	}
	return out, nil
}

// flatten builds the rope's content.
func (r *rope) flatten(b *ropeBase) []byte {
	out := make([]byte, 0, r.size)
	for _, p := range r.pieces {
		if p.lit != nil {
			out = append(out, p.lit...)
		} else {
			out = append(out, b.buf[p.off:p.off+p.n]...)
		}
	}
	return out
}

// find returns the first entry called name in the rope's tree, as
// ScanTree does on its content, or ErrRopeUnfit.
func (r *rope) find(b *ropeBase, name string) (TreeEntry, bool, error) {
	found := func(raw []byte) (TreeEntry, bool, error) {
		sp := bytes.IndexByte(raw, ' ')
		mode, err := filemode.New(string(raw[:sp]))
		if err != nil {
			return TreeEntry{}, false, fmt.Errorf("malformed tree: %w", err)
		}
		e := TreeEntry{Name: name, Mode: mode}
		copy(e.Hash[:], raw[len(raw)-20:])
		return e, true, nil
	}
	target := b.find(name)
	var carry []byte // the start of an entry the next piece ends
	for _, p := range r.pieces {
		data := p.lit
		if data == nil {
			data = b.buf[p.off : p.off+p.n]
		}
		for len(data) > 0 {
			if len(carry) > 0 {
				// Complete the entry carried over: it ends 20 bytes after
				// its first NUL (a mode holds none, a name neither).
				end := -1
				if nul := bytes.IndexByte(carry, 0); nul >= 0 {
					if end = nul + 21 - len(carry); end <= 0 {
						return TreeEntry{}, false, ErrRopeUnfit
					}
				} else if nul := bytes.IndexByte(data, 0); nul >= 0 {
					end = nul + 21
				}
				if end < 0 || end > len(data) {
					carry = append(carry, data...)
					break
				}
				carry = append(carry, data[:end]...)
				got, id, ok := entryName(carry, 0)
				if !ok || id+20 != len(carry) {
					return TreeEntry{}, false, ErrRopeUnfit
				}
				if string(got) == name {
					return found(carry)
				}
				carry = carry[:0]
				data = data[end:]
				if p.lit == nil {
					p.n -= end
					p.off += end
				}
				continue
			}
			if p.lit == nil {
				if i := b.entryAt(p.off); i >= 0 {
					// In step with the bottom: skip its whole entries.
					j := sort.Search(len(b.starts), func(j int) bool { return int(b.starts[j]) > p.off+p.n }) - 1
					if target >= i && target < j {
						s, e := int(b.starts[target]), int(b.starts[target+1])
						return found(b.buf[s:e])
					}
					skip := int(b.starts[j]) - p.off
					data = data[skip:]
					p.off += skip
					p.n -= skip
					if len(data) == 0 {
						break
					}
				}
			}
			// One entry out of data, or its start carried over.
			got, id, ok := entryName(data, 0)
			if !ok {
				carry = append(carry[:0], data...)
				break
			}
			if string(got) == name {
				return found(data[:id+20])
			}
			data = data[id+20:]
			if p.lit == nil {
				p.off += id + 20
				p.n -= id + 20
			}
		}
	}
	if len(carry) > 0 {
		return TreeEntry{}, false, ErrRopeUnfit // a tree cut short
	}
	return TreeEntry{}, false, nil
}

// LookupEntry finds entry name in the packed tree h through ropes (see
// the top of this file); a tree under ropeMinSize is built, as at builds
// it, and scanned. It returns ErrRopeUnfit when h is not in a pack, or
// anything else stops this path; the caller then reads the tree whole.
// A small tree is built in *final, the caller's (see ObjectScratch).
func (pr *PackReader) LookupEntry(h plumbing.Hash, name string, cache *LRU, final *[]byte) (TreeEntry, bool, error) {
	if cache == nil {
		return TreeEntry{}, false, ErrRopeUnfit
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	p, off, err := pr.locate(h)
	if err != nil {
		return TreeEntry{}, false, ErrRopeUnfit
	}
	key := packKey(p, off)
	if r, b, ok := getRope(cache, key); ok {
		return r.find(b, name)
	}
	if _, ok := cache.Get(kindPacked, key); ok {
		return TreeEntry{}, false, ErrRopeUnfit // built already
	}
	pr.touched()
	p.used()
	e, err := readPackEntry(p, off)
	if err != nil {
		return TreeEntry{}, false, ErrRopeUnfit
	}
	switch e.typ {
	case packObjTree:
		if len(e.data) < ropeMinSize {
			return ScanTree(e.data, name)
		}
	case packObjOfsDelt, packObjRefDelt:
		if size, n := binary.Uvarint(e.data); n > 0 {
			if size, n = binary.Uvarint(e.data[n:]); n > 0 && size < ropeMinSize {
				return pr.smallDelta(p, e, name, cache, final)
			}
		}
	default:
		return TreeEntry{}, false, ErrRopeUnfit
	}
	r, b, err := pr.ropeAt(p, off, &e, cache)
	if err != nil {
		return TreeEntry{}, false, ErrRopeUnfit
	}
	return r.find(b, name)
}

// smallDelta scans the small tree the delta entry e of p builds, as at
// builds it: its base through the cache (and into it, as at keeps an
// object's direct base), the tree in *final.
func (pr *PackReader) smallDelta(p *packFile, e packEntry, name string, cache *LRU, final *[]byte) (TreeEntry, bool, error) {
	bp, boff := p, e.baseOff
	if e.typ == packObjRefDelt {
		var err error
		if bp, boff, err = pr.locate(e.baseHash); err != nil {
			return TreeEntry{}, false, ErrRopeUnfit
		}
	}
	t, base, err := pr.at(bp, boff, cache, nil)
	if err != nil || t != plumbing.TreeObject {
		return TreeEntry{}, false, ErrRopeUnfit
	}
	cache.Put(kindPacked, packKey(bp, boff), &packedObject{t: t, data: base}, int64(len(base))+96)
	data, err := applyDelta(*final, base, e.data)
	if err != nil {
		return TreeEntry{}, false, ErrRopeUnfit
	}
	if cap(data) <= 4<<20 {
		*final = data
	}
	return ScanTree(data, name)
}

// ropeAt returns the rope of the tree at off in p: the chain is followed
// down to a cached rope or a whole object, then composed upwards, each
// level's rope cached.
func (pr *PackReader) ropeAt(p *packFile, off int64, first *packEntry, cache *LRU) (*rope, *ropeBase, error) {
	type step struct {
		key   plumbing.Hash
		delta []byte
	}
	var chain []step
	var r *rope
	var b *ropeBase
	cp, coff := p, off
	for {
		if len(chain) > maxDeltaDepth {
			return nil, nil, ErrRopeUnfit
		}
		key := packKey(cp, coff)
		var ok bool
		if r, b, ok = getRope(cache, key); ok {
			break
		}
		if c, ok := cache.Get(kindPacked, key); ok {
			o := c.(*packedObject)
			if o.t != plumbing.TreeObject {
				return nil, nil, ErrRopeUnfit
			}
			var err error
			if r, b, err = baseRope(cache, key, o.data); err != nil {
				return nil, nil, err
			}
			break
		}
		var e packEntry
		if len(chain) == 0 && first != nil {
			e = *first // read by the caller
		} else {
			pr.touched()
			cp.used()
			var err error
			if e, err = readPackEntry(cp, coff); err != nil {
				return nil, nil, err
			}
		}
		var err error
		if e.typ == packObjTree {
			// A chain's bottom, or a large whole tree that is likely
			// one: indexed once, for the deltas on it too. Its pages of
			// the pack count as entries read, one per 512 bytes, so
			// that reading many of them (10,000 packages at the root
			// are 360 KB a tree) does not keep megabytes of the pack
			// resident until the next drop.
			pr.touchedN(len(e.data) / 512)
			if r, b, err = baseRope(cache, key, e.data); err != nil {
				return nil, nil, err
			}
			break
		}
		if e.typ != packObjOfsDelt && e.typ != packObjRefDelt {
			return nil, nil, ErrRopeUnfit
		}
		chain = append(chain, step{key, e.data})
		if e.typ == packObjRefDelt {
			if cp, coff, err = pr.locate(e.baseHash); err != nil {
				return nil, nil, ErrRopeUnfit
			}
		} else {
			coff = e.baseOff
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		next, err := r.compose(chain[i].delta)
		if err != nil {
			return nil, nil, err
		}
		if len(next.pieces) > MaxRopePieces {
			if r, b, err = baseRope(cache, chain[i].key, next.flatten(b)); err != nil {
				return nil, nil, err
			}
			continue
		}
		r = next
		cache.Put(kindRope, chain[i].key, r, r.cost())
	}
	return r, b, nil
}
