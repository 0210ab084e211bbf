package kvevents_test

import (
	"testing"

	"github.com/smg-go/smg/adapters/kvevents"
)

// FuzzDecodeBatch checks that no payload makes the decoder panic or hang.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(pack(f, []any{1.0, []any{map[string]any{"type": "BlockStored", "block_hashes": []any{bigHash},
		"token_ids": seq(0, 16), "block_size": 16, "extra_keys": []any{[]any{"a", 1}}}}, 0}))
	f.Add(pack(f, []any{1.0, []any{[]any{"BlockStored", []any{1}, 2, seq(0, 4), 4, 1, "GPU", map[string]any{"cache_salt": "s"}}}}))
	f.Add(pack(f, map[string]any{"ts": 1, "events": []any{[]any{"BlockRemoved", []any{[]byte{1, 2}}}}}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		_, _ = kvevents.DecodeBatch(payload)
	})
}
