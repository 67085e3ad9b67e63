package fnruntime

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// The size model of the guards: what an operation allocates, in bytes,
// counted before it runs. The figures are upper bounds for go.starlark.net
// on 64-bit platforms, rounded up.
const (
	slotBytes  = 16   // one element of a list or tuple (an interface value)
	boxBytes   = 16   // a string or tuple boxed into an interface
	entryBytes = 96   // one dict or set entry with its share of the table
	growBytes  = 20   // one list element when its array is reallocated (1.25 slots)
	maxNesting = 1000 // deepest value the guards size or convert

	bucketBytes   = 456 // one bucket of a hash table: 8 entries of 56 bytes and a link
	builderFactor = 2   // a string built piecewise: its buffer doubles as it grows

	// maxIntBytes bounds the product of two integers: multiplying takes
	// time more than linear in the operands' size and cannot be
	// interrupted.
	maxIntBytes = 1 << 20
)

// sizeAdd and sizeMul add and multiply non-negative sizes, saturating at
// math.MaxInt64.
func sizeAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func sizeMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// seqLen returns the length of v, or 0 when it has none.
func seqLen(v starlark.Value) int64 {
	if n := starlark.Len(v); n > 0 {
		return int64(n)
	}
	return 0
}

// elemCost is what iterating v into a new list or tuple costs per
// element: its slot, plus the boxed string of each element when v is a
// view of a string's elements or code points.
func elemCost(v starlark.Value) int64 {
	switch t := v.Type(); {
	case strings.HasSuffix(t, ".elems"), strings.HasSuffix(t, ".codepoints"):
		return slotBytes + boxBytes
	}
	return slotBytes
}

// quotedSize bounds the length of s quoted as Starlark or JSON does: a
// byte that is not printable ASCII may become an escape of up to six
// bytes (\u00XX, \xNN, or its share of \UXXXXXXXX).
func quotedSize(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			n += 5
		}
	}
	return n
}

// errTooDeep is the sizer's failure on a value nested deeper than
// maxNesting.
var errTooDeep = fmt.Errorf("a value nested deeper than %d levels", maxNesting)

// renderSizer bounds the length of str() or repr() of values, and of
// their JSON or YAML encodings, without building them. A value that
// shares structure (a list holding the same list many times) renders
// each occurrence, so its rendering can be exponentially larger than its
// memory; the sizer counts each shared container once (memoised by
// identity) and stops as soon as the total passes limit, so it costs
// time in proportion to the distinct containers, not to the rendering.
type renderSizer struct {
	limit int64
	memo  map[any]int64
	path  map[any]bool
	depth int
}

func newRenderSizer(limit int64) *renderSizer {
	if limit <= 0 {
		limit = math.MaxInt64
	}
	return &renderSizer{limit: limit, memo: map[any]int64{}, path: map[any]bool{}}
}

// renderSize bounds the rendering of v; a result over limit means at
// least that much.
func renderSize(v starlark.Value, limit int64) (int64, error) {
	n, _, err := newRenderSizer(limit).size(v)
	return n, err
}

type tupleKey struct {
	p *starlark.Value
	n int
}

// size returns the bound for v and whether it met a cycle (then it is not
// memoised: a container rendered inside itself prints as [...]).
func (s *renderSizer) size(v starlark.Value) (n int64, cycle bool, err error) {
	var key any
	switch v := v.(type) {
	case starlark.String:
		return quotedSize(string(v)), false, nil
	case starlark.Bytes:
		return quotedSize(string(v)) + 1, false, nil
	case starlark.Int:
		return int64(v.BigInt().BitLen())/3 + 2, false, nil
	case starlark.Float, starlark.Bool, starlark.NoneType:
		return 32, false, nil
	case starlark.Tuple:
		if len(v) == 0 {
			return 2, false, nil
		}
		key = tupleKey{unsafe.SliceData(v), len(v)}
	case *starlark.List, *starlark.Dict, *starlark.Set, *starlarkstruct.Struct:
		key = v
	default:
		if n := starlark.Len(v); n > 0 {
			return sizeAdd(sizeMul(int64(n), 6), 64), false, nil
		}
		return 64, false, nil
	}
	if m, ok := s.memo[key]; ok {
		return m, false, nil
	}
	if s.path[key] {
		return 5, true, nil
	}
	if s.depth >= maxNesting {
		return 0, false, errTooDeep
	}
	s.path[key] = true
	s.depth++
	defer func() {
		delete(s.path, key)
		s.depth--
	}()
	n = 16
	add := func(x starlark.Value, extra int64) bool {
		m, c, e := s.size(x)
		if e != nil {
			err = e
			return false
		}
		cycle = cycle || c
		n = sizeAdd(n, sizeAdd(m, extra))
		return n <= s.limit
	}
	switch v := v.(type) {
	case starlark.Tuple:
		for _, x := range v {
			if !add(x, 2) {
				return n, cycle, err
			}
		}
	case *starlark.List:
		for i := 0; i < v.Len(); i++ {
			if !add(v.Index(i), 2) {
				return n, cycle, err
			}
		}
	case *starlark.Dict:
		it := v.Iterate()
		defer it.Done()
		var k starlark.Value
		for it.Next(&k) {
			val, _, _ := v.Get(k)
			if !add(k, 4) {
				return n, cycle, err
			}
			if val != nil && !add(val, 0) {
				return n, cycle, err
			}
		}
	case *starlark.Set:
		it := v.Iterate()
		defer it.Done()
		var k starlark.Value
		for it.Next(&k) {
			if !add(k, 2) {
				return n, cycle, err
			}
		}
	case *starlarkstruct.Struct:
		for _, name := range v.AttrNames() {
			val, _ := v.Attr(name)
			if val != nil && !add(val, int64(len(name))+5) {
				return n, cycle, err
			}
		}
	}
	if !cycle {
		s.memo[key] = n
	}
	return n, cycle, nil
}
