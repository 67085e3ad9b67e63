package wasmfn

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// boundedMemory allocates one run's linear memory and enforces
// Options.MaxMemory: a growth past it is refused (memory.grow returns -1
// to the module) and recorded, so that a run that then fails is reported
// as over its memory bound. Where the system can (mapMemory), the whole
// bound is reserved as address space outside Go's heap and the memory
// grows in place: the host holds only the pages the module touched, never
// more than the bound, and nothing is copied. Elsewhere the buffer grows by
// doubling in Go's heap, capped at the bound, so a run holds at most the
// bound plus, while it grows, the previous buffer being copied.
type boundedMemory struct {
	limit   uint64
	buf     []byte
	mapped  []byte // the reserved bound, when mapMemory gave it
	refused atomic.Bool
}

var _ experimental.MemoryAllocator = (*boundedMemory)(nil)

// Allocate implements experimental.MemoryAllocator. A run has one memory
// (WebAssembly 2.0), so the allocator is its own linear memory.
func (m *boundedMemory) Allocate(capacity, _ uint64) experimental.LinearMemory {
	if capacity > m.limit {
		capacity = m.limit
	}
	if mapped, ok := mapMemory(m.limit); ok {
		m.mapped = mapped
		m.buf = mapped[:0]
		return m
	}
	m.buf = make([]byte, 0, capacity)
	return m
}

// Reallocate implements experimental.LinearMemory.
func (m *boundedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused.Store(true)
		return nil
	}
	if m.mapped != nil {
		m.buf = m.mapped[:size]
	} else if size > uint64(cap(m.buf)) {
		c := max(size, min(2*uint64(cap(m.buf)), m.limit))
		next := make([]byte, size, c)
		copy(next, m.buf)
		m.buf = next
	} else {
		m.buf = m.buf[:size]
	}
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *boundedMemory) Free() {
	if m.mapped != nil {
		unmapMemory(m.mapped)
	}
	m.buf, m.mapped = nil, nil
}
