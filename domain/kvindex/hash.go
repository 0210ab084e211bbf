package kvindex

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// rootKey is the parent key of a chain's first block.
const rootKey uint64 = 0x736d672d70667831 // "smg-pfx1"

// hasher computes chained block keys with a reusable buffer; not safe for concurrent use.
type hasher struct{ buf []byte }

// next is the key of a block of tokens following parent, with extra-key fingerprint
// extra (0 = none): XXH3-64 seeded with the parent's key over the token ids as 4-byte
// little-endian values, followed by extra as 8 little-endian bytes when it is not 0.
func (h *hasher) next(parent, extra uint64, tokens []uint32) uint64 {
	n := 4 * len(tokens)
	if extra != 0 {
		n += 8
	}
	if cap(h.buf) < n {
		h.buf = make([]byte, n)
	}
	b := h.buf[:n]
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(b[4*i:4*i+4], t)
	}
	if extra != 0 {
		binary.LittleEndian.PutUint64(b[n-8:], extra)
	}
	return xxh3.HashSeed(b, parent)
}

// BlockKeys returns the index keys of the full blocks of tokens, chunked by blockSize
// (the partial tail has no key); nil when blockSize < 1. The same keys the index stores,
// for callers that share entries elsewhere (speculative entries, a shared index).
func BlockKeys(tokens []uint32, blockSize int) []uint64 {
	if blockSize < 1 {
		return nil
	}
	var h hasher
	keys := make([]uint64, len(tokens)/blockSize)
	parent := rootKey
	for i := range keys {
		parent = h.next(parent, 0, tokens[i*blockSize:(i+1)*blockSize])
		keys[i] = parent
	}
	return keys
}
