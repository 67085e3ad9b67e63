//go:build !((linux || darwin || freebsd) && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64))

package wasmfn

// mapMemory reports false: the linear memory grows in Go's heap here.
func mapMemory(uint64) ([]byte, bool) { return nil, false }

func unmapMemory([]byte) {}
