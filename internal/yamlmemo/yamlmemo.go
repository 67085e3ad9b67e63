// Package yamlmemo remembers which YAML contents revision's bounds check
// found within which bounds, so that content checked once (by the engine's
// Update, Clone or Upgrade and again by the render that follows, or by
// every save of a package whose files did not change) is parsed for its
// bounds once instead of every time.
//
// The memo is one per process, bounded (Entries contents, least recently
// used dropped first) and content-addressed: an entry is keyed by the
// SHA-256 of the bytes that were checked and by the per-file bounds they
// were checked against, and only a check that passed adds one, so nothing
// can claim a file checked: a file changed after its check, or checked
// under other bounds, is simply not found and is checked again. The check
// is a pure function of those bytes and bounds, which is what makes one
// memo for every caller correct; no context or caller carries it.
//
// The tests that show each file is parsed once per operation count the
// check's parses through a hook they install (SetParseHook, with a
// [Counter]), which empties the memo so that their counts start from
// nothing.
package yamlmemo

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"github.com/configasdata/cad/internal/lru"
)

// Sum identifies content: its SHA-256.
type Sum [sha256.Size]byte

// SumOf returns the Sum of data.
func SumOf(data []byte) Sum { return sha256.Sum256(data) }

// Limits are the per-file bounds a check applied, in the order of
// revision.YAMLLimits' per-file fields, defaults resolved.
type Limits [6]int

// Counts are what a passed check of one file measured: its documents and
// its nodes with aliases expanded, which the package bounds add up.
type Counts struct {
	Documents, Nodes int
}

type key struct {
	sum Sum
	lim Limits
}

// Entries bounds the memo: the contents it remembers at most (about 200
// bytes each, some 3 MB in all).
const Entries = 1 << 14

// memo is the process's memo.
var memo = lru.New[key, Counts](Entries, 1)

// Lookup returns the counts of content sum when it passed a check under
// exactly lim, and whether it did.
func Lookup(sum Sum, lim Limits) (Counts, bool) {
	return memo.Get(key{sum, lim})
}

// Store records that content sum passed a check under lim with counts c.
func Store(sum Sum, lim Limits, c Counts) {
	memo.Put(key{sum, lim}, c, 1)
}

// Reset empties the memo, so that every content is parsed again: for
// tests and benchmarks that measure the check itself.
func Reset() { memo.Clear() }

// Counter counts the parses of revision's bounds check by content, for
// tests: install its Add with SetParseHook. It is safe for concurrent use;
// its zero value is ready.
type Counter struct {
	mu sync.Mutex
	n  map[Sum]int
}

// Add counts one parse of the content sum.
func (c *Counter) Add(sum Sum) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[Sum]int{}
	}
	c.n[sum]++
}

// Of returns how many times data was parsed by the check.
func (c *Counter) Of(data []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[SumOf(data)]
}

// Most returns the highest count of parses of one content: 1 when no
// content was parsed twice, 0 when nothing was parsed.
func (c *Counter) Most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	most := 0
	for _, n := range c.n {
		most = max(most, n)
	}
	return most
}

// Total returns the parses counted, over all contents.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, n := range c.n {
		t += n
	}
	return t
}

// parseHook is the hook of SetParseHook; nil when none.
var parseHook atomic.Pointer[func(Sum)]

// SetParseHook empties the memo and makes fn called with the Sum of every
// content the bounds check parses, in every goroutine of the process, and
// returns the function that puts back the hook before; nil fn removes the
// hook. It is for tests (which must not run in parallel with other
// parsing tests while it is set); nothing else sets it.
func SetParseHook(fn func(Sum)) (restore func()) {
	Reset()
	var p *func(Sum)
	if fn != nil {
		p = &fn
	}
	old := parseHook.Swap(p)
	return func() { parseHook.Store(old) }
}

// Hooked reports whether a parse hook is set.
func Hooked() bool { return parseHook.Load() != nil }

// Parsed reports a parse of content sum to the hook, if one is set.
func Parsed(sum Sum) {
	if fn := parseHook.Load(); fn != nil {
		(*fn)(sum)
	}
}
