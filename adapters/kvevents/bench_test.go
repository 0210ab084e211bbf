package kvevents_test

import (
	"testing"

	"github.com/smg-go/smg/adapters/kvevents"
)

// BenchmarkDecodeBatch decodes a current-generation vLLM batch: one BlockStored of 4
// blocks of 16 tokens (with extra_keys and the v0.26 fields) and one BlockRemoved.
func BenchmarkDecodeBatch(b *testing.B) {
	payload := pack(b, []any{1.7e9, []any{
		map[string]any{"type": "BlockStored", "block_hashes": []any{bigHash, 2, 3, 4}, "parent_block_hash": 1,
			"token_ids": seq(0, 64), "block_size": 16, "medium": "GPU", "extra_keys": []any{nil, nil, nil, nil},
			"group_idx": 0, "kv_cache_spec_kind": "full_attention"},
		map[string]any{"type": "BlockRemoved", "block_hashes": []any{9, 10}, "medium": "GPU"},
	}, 0})
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kvevents.DecodeBatch(payload); err != nil {
			b.Fatal(err)
		}
	}
}
