package gitobj

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// randomTree returns the raw content of a tree of n entries with names
// drawn from a few shapes, some of them sharing prefixes and holding
// spaces, in git's order.
func randomTree(rng *rand.Rand, n int) []byte {
	names := map[string]bool{}
	for len(names) < n {
		switch rng.Intn(3) {
		case 0:
			names[fmt.Sprintf("pkg-%05d", rng.Intn(100000))] = true
		case 1:
			names[fmt.Sprintf("a %d b", rng.Intn(1000))] = true
		default:
			names[string(rune('a'+rng.Intn(26)))] = true
		}
	}
	var out []byte
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		mode := "40000"
		if rng.Intn(2) == 0 {
			mode = "100644"
		}
		var id [20]byte
		rng.Read(id[:])
		// Ids holding spaces and NULs, where a scan could lose its step.
		if rng.Intn(3) == 0 {
			id[rng.Intn(20)] = 0
			id[rng.Intn(20)] = ' '
		}
		out = append(out, mode+" "+name+"\x00"...)
		out = append(out, id[:]...)
	}
	return out
}

// randomDelta encodes target as a git delta on base: runs of target
// found anywhere in base (so copies start and end inside entries) are
// copied, the rest inserted.
func randomDelta(rng *rand.Rand, base, target []byte) []byte {
	d := binary.AppendUvarint(nil, uint64(len(base)))
	d = binary.AppendUvarint(d, uint64(len(target)))
	for pos := 0; pos < len(target); {
		l := min(1+rng.Intn(200), len(target)-pos)
		if i := bytes.Index(base, target[pos:pos+l]); i >= 0 && l >= 4 {
			op := byte(0x80)
			var args []byte
			for k := range 4 {
				if b := byte(i >> (8 * k)); b != 0 {
					op |= 1 << k
					args = append(args, b)
				}
			}
			for k := range 3 {
				if b := byte(l >> (8 * k)); b != 0 {
					op |= 0x10 << k
					args = append(args, b)
				}
			}
			d = append(append(d, op), args...)
		} else {
			l = min(l, 127)
			d = append(append(d, byte(l)), target[pos:pos+l]...)
		}
		pos += l
	}
	return d
}

// change returns tree with some entries replaced by others.
func change(rng *rand.Rand, tree []byte) []byte {
	entries, err := ParseTree(tree)
	if err != nil {
		panic(err)
	}
	other, _ := ParseTree(randomTree(rng, 1+rng.Intn(4)))
	for _, o := range other {
		if len(entries) > 0 && rng.Intn(2) == 0 {
			i := rng.Intn(len(entries))
			entries = slices.Delete(entries, i, i+1)
		}
		i, found := slices.BinarySearchFunc(entries, o.Name, func(e TreeEntry, n string) int { return CompareEntries(e, TreeEntry{Name: n, Mode: e.Mode}) })
		if found {
			entries[i] = o
		} else {
			entries = slices.Insert(entries, i, o)
		}
	}
	var out []byte
	for _, e := range entries {
		out = append(out, strings.TrimLeft(e.Mode.String(), "0")+" "+e.Name+"\x00"...)
		out = append(out, e.Hash[:]...)
	}
	return out
}

// Ropes built through chains of random deltas find every entry, and miss
// every absent name, exactly as a scan of the built tree does.
func TestRopeFindsWhatScanFinds(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cache := NewLRU(64 << 20)
	for round := range 200 {
		tree := randomTree(rng, 1+rng.Intn(60))
		key := plumbing.Hash{0: byte(round), 1: byte(round >> 8), 19: 1}
		r, b, err := baseRope(cache, key, tree)
		if err != nil {
			t.Fatal(err)
		}
		for depth := range 8 {
			next := change(rng, tree)
			if rng.Intn(4) == 0 {
				next = slices.Clone(tree) // a delta that changes nothing
			}
			if r, err = r.compose(randomDelta(rng, tree, next)); err != nil {
				t.Fatalf("round %d depth %d: %v", round, depth, err)
			}
			if got := r.flatten(b); !bytes.Equal(got, next) {
				t.Fatalf("round %d depth %d: the rope holds another tree", round, depth)
			}
			tree = next
			entries, _ := ParseTree(tree)
			names := []string{"", "zz", "pkg-", "a", "a 1"}
			for _, e := range entries {
				names = append(names, e.Name)
			}
			for _, name := range names {
				want, wantOK, wantErr := ScanTree(tree, name)
				got, ok, err := r.find(b, name)
				if err != nil || wantErr != nil || ok != wantOK || got != want {
					t.Fatalf("round %d depth %d, %q: rope %v %v %v, scan %v %v %v", round, depth, name, got, ok, err, want, wantOK, wantErr)
				}
			}
		}
	}
}

// A bottom that is no tree, or holds a name twice, is left to the plain
// path; so is a delta that does not fit the rope.
func TestRopeUnfit(t *testing.T) {
	if _, err := newRopeBase([]byte("100644 a\x00short")); !errors.Is(err, ErrRopeUnfit) {
		t.Fatalf("a cut tree: %v", err)
	}
	id := string(make([]byte, 20))
	if _, err := newRopeBase([]byte("100644 a\x00" + id + "100644 a\x00" + id)); !errors.Is(err, ErrRopeUnfit) {
		t.Fatalf("a name twice: %v", err)
	}
	tree := []byte("100644 a\x00" + id)
	r, b, err := baseRope(NewLRU(1<<20), plumbing.Hash{1}, tree)
	if err != nil {
		t.Fatal(err)
	}
	// Source size wrong, copy out of the base, an insertion cut short.
	for _, d := range [][]byte{{5, 5, 0x90, 5}, {byte(len(tree)), 40, 0x91, 10, 40}, {byte(len(tree)), 5, 5, 'a'}} {
		if _, err := r.compose(d); err == nil {
			t.Fatalf("delta %v composed", d)
		}
	}
	// A tree cut short by a delta is left to the scan, which reports it.
	short, err := r.compose([]byte{byte(len(tree)), 12, 0x90, 12})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := short.find(b, "b"); !errors.Is(err, ErrRopeUnfit) {
		t.Fatalf("a cut tree: %v", err)
	}
}
