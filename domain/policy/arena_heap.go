//go:build !(linux || darwin || freebsd)

package policy

// mapChunk returns n bytes of heap memory where anonymous mappings are not available.
func mapChunk(n int) []byte { return make([]byte, n) }

// unmapChunk leaves b to the collector.
func unmapChunk([]byte) {}
