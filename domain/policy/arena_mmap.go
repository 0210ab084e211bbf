//go:build linux || darwin || freebsd

package policy

import "syscall"

// mapChunk returns n bytes of anonymous private memory from the OS, outside the Go heap;
// heap memory if the mapping fails.
func mapChunk(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}

// unmapChunk returns b, from mapChunk, to the OS. Heap fallbacks are left to the collector.
func unmapChunk(b []byte) {
	if syscall.Munmap(b) != nil {
		return // a heap fallback (EINVAL): the collector frees it
	}
}
