//go:build (linux || darwin || freebsd) && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package wasmfn

import "syscall"

// mapMemory reserves n bytes of zeroed address space outside Go's heap
// (anonymous, private, not reserved in swap): pages cost memory only once
// the module touches them. It reports false when the system refuses, and
// the caller then allocates in Go's heap.
func mapMemory(n uint64) ([]byte, bool) {
	if n == 0 {
		return nil, false
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, false
	}
	return b, true
}

// unmapMemory returns a mapping of mapMemory to the system.
func unmapMemory(b []byte) { _ = syscall.Munmap(b) }
