package kvcache

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// BlockHashes returns the chained hashes of the full blocks of ids: one per complete run of
// blockSize tokens, in prompt order; a trailing partial block has no hash (it is never
// cached, as in vLLM: vllm/v1/core/kv_cache_utils.py hashes full blocks only).
//
// Block i's hash is xxhash64 over parent (8 bytes little-endian; 0 for the first block),
// extraKey (8 bytes little-endian: the LoRA id, or 0) and the block's token ids (4 bytes
// little-endian each), so it depends on every token before it. This is the simulated
// *engine's* hash, like vLLM's sha256-of-(parent, tokens, extra_keys) and SGLang's per-page
// SHA-256 chain (shared/reference/kv-routing.md §1.6, §2.3) but not byte-compatible with
// either: a gateway must learn hashes from the KV events (or hash token ids itself), never
// assume this function. dst is reused when it has the capacity. blockSize < 1 gives nil.
func BlockHashes(dst []uint64, ids []uint32, blockSize int, extraKey int64) []uint64 {
	dst = dst[:0]
	if blockSize < 1 {
		return dst
	}
	n := len(ids) / blockSize
	var (
		d      xxhash.Digest
		parent uint64
		buf    [16 + 4*64]byte
	)
	for b := 0; b < n; b++ {
		binary.LittleEndian.PutUint64(buf[0:8], parent)
		binary.LittleEndian.PutUint64(buf[8:16], uint64(extraKey))
		blk := ids[b*blockSize : (b+1)*blockSize]
		if len(blk) <= 64 { // one shot
			for i, id := range blk {
				binary.LittleEndian.PutUint32(buf[16+4*i:], id)
			}
			parent = xxhash.Sum64(buf[:16+4*len(blk)])
			dst = append(dst, parent)
			continue
		}
		d.Reset()
		_, _ = d.Write(buf[:16])
		for len(blk) > 0 {
			k := min(len(blk), 64)
			for i, id := range blk[:k] {
				binary.LittleEndian.PutUint32(buf[16+4*i:], id)
			}
			_, _ = d.Write(buf[16 : 16+4*k])
			blk = blk[k:]
		}
		parent = d.Sum64()
		dst = append(dst, parent)
	}
	return dst
}
