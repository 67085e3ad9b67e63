// Package yamlmemo remembers, for the length of one operation, which YAML
// contents revision's bounds check found within which bounds, so that an
// operation that checks a package and then renders it (the engine's
// Update, Clone and Upgrade with a pipeline) parses each file for its
// bounds once instead of twice.
//
// A memo lives in a context (see [With]); revision.CheckYAML and
// CheckYAMLFiles consult the one their context carries. An entry is keyed
// by the SHA-256 of the bytes that were checked and by the per-file
// bounds they were checked against, and only a check that passed adds
// one, so nothing can claim a file checked: a file changed after its
// check, or checked under other bounds, is simply not found and is checked
// again. The package is internal so that only cad's own operations create
// memos.
//
// The tests that show each file is parsed once per operation count the
// check's parses through a hook they install (SetParseHook, with a
// [Counter]); no context or production caller carries a counter.
package yamlmemo

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
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

// Memo holds the contents found within bounds during one operation. It
// is safe for concurrent use.
type Memo struct {
	mu   sync.Mutex
	seen map[key]Counts
}

// Lookup returns the counts of content sum when it passed a check under
// exactly lim, and whether it did.
func (m *Memo) Lookup(sum Sum, lim Limits) (Counts, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.seen[key{sum, lim}]
	return c, ok
}

// Store records that content sum passed a check under lim with counts c.
func (m *Memo) Store(sum Sum, lim Limits, c Counts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[key]Counts{}
	}
	m.seen[key{sum, lim}] = c
}

type memoKey struct{}

// With returns ctx carrying a new, empty Memo, or ctx itself when it
// carries one already (an operation within an operation shares it).
func With(ctx context.Context) context.Context {
	if From(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, memoKey{}, &Memo{})
}

// From returns the Memo ctx carries, or nil.
func From(ctx context.Context) *Memo {
	m, _ := ctx.Value(memoKey{}).(*Memo)
	return m
}

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

// SetParseHook makes fn called with the Sum of every content the bounds
// check parses, in every goroutine of the process, and returns the
// function that puts back the hook before; nil fn removes the hook. It is
// for tests (which must not run in parallel with other parsing tests
// while it is set); nothing else sets it.
func SetParseHook(fn func(Sum)) (restore func()) {
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
