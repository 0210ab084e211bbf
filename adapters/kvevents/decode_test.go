package kvevents_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/kvevent"
)

// Frames below are built from the wire facts of ../shared/reference/kv-routing.md §1.5
// (vLLM legacy tagged arrays, current tagged maps with "type") and §2.2 (SGLang).

func pack(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	require.NoError(t, err)
	return b
}

func seq(from, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func u32s(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

const bigHash = uint64(15760518052499183552) // > 2^63, from a captured v0.26.0 run (§1.5)

func TestDecodeVLLMCurrentMapEvents(t *testing.T) {
	t.Parallel()
	payload := pack(t, []any{1.7e9, []any{
		map[string]any{"type": "BlockStored", "block_hashes": []any{bigHash, uint64(7)}, "parent_block_hash": nil,
			"token_ids": seq(0, 32), "block_size": 16, "medium": "GPU", "extra_keys": []any{nil, nil},
			"group_idx": 0, "kv_cache_spec_kind": "full_attention"},
		map[string]any{"type": "BlockRemoved", "block_hashes": []any{uint64(7)}, "medium": "GPU"},
		map[string]any{"type": "AllBlocksCleared"},
	}, 0})
	b, err := kvevents.DecodeBatch(payload)
	require.NoError(t, err)
	assert.InDelta(t, 1.7e9, b.Timestamp, 1)
	assert.True(t, b.HasDPRank)
	assert.Equal(t, 0, b.DPRank)
	require.Len(t, b.Events, 3)
	st := b.Events[0]
	assert.Equal(t, kvevent.Stored, st.Kind)
	assert.False(t, st.HasParent)
	assert.Equal(t, 16, st.BlockSize)
	assert.Equal(t, "GPU", st.Medium)
	require.Len(t, st.Blocks, 2)
	assert.Equal(t, bigHash, st.Blocks[0].EngineHash)
	assert.Equal(t, u32s(0, 16), st.Blocks[0].Tokens)
	assert.Equal(t, u32s(16, 16), st.Blocks[1].Tokens)
	assert.Zero(t, st.Blocks[0].Extra)
	assert.Equal(t, kvevent.Event{Kind: kvevent.Removed, Removed: []uint64{7}, Medium: "GPU"}, b.Events[1])
	assert.Equal(t, kvevent.Cleared, b.Events[2].Kind)
}

func TestDecodeVLLMLegacyArrayEvents(t *testing.T) {
	t.Parallel()
	payload := pack(t, []any{1.5, []any{
		// [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name, extra_keys, group_idx, spec kind]
		[]any{"BlockStored", []any{uint64(11)}, uint64(10), seq(100, 16), 16, 3, "GPU", "adapter-a", []any{[]any{"adapter-a"}}, 1, "full_attention"},
		[]any{"BlockRemoved", []any{uint64(11), bigHash}, "GPU", 1},
		[]any{"AllBlocksCleared"},
	}})
	b, err := kvevents.DecodeBatch(payload)
	require.NoError(t, err)
	assert.False(t, b.HasDPRank, "a 2-element batch omits the default rank")
	require.Len(t, b.Events, 3)
	st := b.Events[0]
	assert.True(t, st.HasParent)
	assert.Equal(t, uint64(10), st.Parent)
	assert.Equal(t, "adapter-a", st.LoRAName)
	assert.True(t, st.HasLoRAID)
	assert.Equal(t, int64(3), st.LoRAID)
	assert.Equal(t, 1, st.Group)
	require.Len(t, st.Blocks, 1)
	assert.Zero(t, st.Blocks[0].Extra, "an extra key holding only the LoRA name adds nothing")
	assert.Equal(t, []uint64{11, bigHash}, b.Events[1].Removed)
	assert.Equal(t, 1, b.Events[1].Group)
	assert.Equal(t, kvevent.Cleared, b.Events[2].Kind)
}

func TestDecodeExtraKeysFingerprint(t *testing.T) {
	t.Parallel()
	mk := func(extra any) kvevent.Block {
		b, err := kvevents.DecodeBatch(pack(t, []any{0, []any{map[string]any{"type": "BlockStored",
			"block_hashes": []any{1}, "token_ids": seq(0, 4), "block_size": 4, "extra_keys": []any{extra}}}}))
		require.NoError(t, err)
		return b.Events[0].Blocks[0]
	}
	img1 := mk([]any{[]any{"mm-hash-1", 0}})
	img2 := mk([]any{[]any{"mm-hash-2", 0}})
	assert.NotZero(t, img1.Extra)
	assert.NotEqual(t, img1.Extra, img2.Extra)
	assert.Equal(t, img1.Extra, mk([]any{[]any{"mm-hash-1", 0}}).Extra)
	assert.Zero(t, mk(nil).Extra)
}

func TestDecodeSGLang(t *testing.T) {
	t.Parallel()
	neg := int64(-5)
	t.Run("legacy arrays with signed hashes and a short last page", func(t *testing.T) {
		t.Parallel()
		// SGLang @612d5790: [tag, block_hashes, parent, token_ids, block_size, lora_id] + medium.
		b, err := kvevents.DecodeBatch(pack(t, []any{2.0, []any{
			[]any{"BlockStored", []any{neg, int64(6)}, nil, seq(0, 6), 4, nil, "GPU"},
			[]any{"BlockRemoved", []any{neg}},
		}, 1}))
		require.NoError(t, err)
		assert.Equal(t, 1, b.DPRank)
		st := b.Events[0]
		assert.Equal(t, uint64(0xFFFFFFFFFFFFFFFB), st.Blocks[0].EngineHash, "int64 reinterpreted as uint64")
		assert.Len(t, st.Blocks[1].Tokens, 2, "the last page may be shorter than the page size")
		assert.False(t, st.HasLoRAID)
		assert.Equal(t, []uint64{0xFFFFFFFFFFFFFFFB}, b.Events[1].Removed)
	})
	t.Run("salted store with a trailing metadata map", func(t *testing.T) {
		t.Parallel()
		b, err := kvevents.DecodeBatch(pack(t, []any{2.0, []any{
			[]any{"BlockStored", []any{1}, nil, seq(0, 4), 4, nil, "GPU", map[string]any{"cache_salt": "s1", "lora_name": "l"}},
		}}))
		require.NoError(t, err)
		st := b.Events[0]
		assert.Equal(t, "l", st.LoRAName)
		assert.NotZero(t, st.Blocks[0].Extra, "a salt keeps the chain apart")
	})
	t.Run("map events and a map batch", func(t *testing.T) {
		t.Parallel()
		b, err := kvevents.DecodeBatch(pack(t, map[string]any{"ts": 3, "attn_dp_rank": 2, "events": []any{
			map[string]any{"type": "BlockStored", "block_hashes": []any{1}, "token_ids": seq(0, 4), "block_size": 4,
				"cache_salt": "s2", "session_id": "x"},
		}}))
		require.NoError(t, err)
		assert.Equal(t, 2, b.DPRank)
		assert.InDelta(t, 3.0, b.Timestamp, 0)
		assert.NotZero(t, b.Events[0].Blocks[0].Extra)
	})
}

func TestDecodeHashBytes(t *testing.T) {
	t.Parallel()
	digest := make([]byte, 32)
	for i := range digest {
		digest[i] = byte(i)
	}
	b, err := kvevents.DecodeBatch(pack(t, []any{0, []any{map[string]any{"type": "BlockRemoved", "block_hashes": []any{digest}}}}))
	require.NoError(t, err)
	assert.Equal(t, []uint64{0x18191a1b1c1d1e1f}, b.Events[0].Removed, "last 8 bytes, big-endian (§1.6)")
}

func TestDecodeSkipsUnknownEventTypes(t *testing.T) {
	t.Parallel()
	b, err := kvevents.DecodeBatch(pack(t, []any{0, []any{map[string]any{"type": "BlockTouched", "x": 1}, []any{"AllBlocksCleared"}}}))
	require.NoError(t, err)
	require.Len(t, b.Events, 1)
	assert.Equal(t, kvevent.Cleared, b.Events[0].Kind)
}

func TestDecodeGarbage(t *testing.T) {
	t.Parallel()
	valid := pack(t, []any{0, []any{map[string]any{"type": "BlockStored", "block_hashes": []any{1, 2},
		"token_ids": seq(0, 32), "block_size": 16}}})
	cases := map[string][]byte{
		"empty":                  nil,
		"not msgpack":            []byte("hello world"),
		"a string":               pack(t, "BlockStored"),
		"huge declared array":    {0xdd, 0xff, 0xff, 0xff, 0xff},
		"batch of one":           pack(t, []any{0}),
		"events not a list":      pack(t, []any{0, 5}),
		"events nil":             pack(t, []any{0, nil}),
		"event without type":     pack(t, []any{0, []any{map[string]any{"block_hashes": []any{1}}}}),
		"tokens do not fit":      pack(t, []any{0, []any{[]any{"BlockStored", []any{1}, nil, seq(0, 17), 16}}}),
		"negative token":         pack(t, []any{0, []any{[]any{"BlockStored", []any{1}, nil, []any{-1}, 1}}}),
		"nil hash":               pack(t, []any{0, []any{[]any{"BlockRemoved", []any{nil}}}}),
		"trailing bytes":         append(append([]byte{}, valid...), 0x01),
		"tag not a string":       pack(t, []any{0, []any{[]any{7}}}),
		"extra_keys count wrong": pack(t, []any{0, []any{map[string]any{"type": "BlockStored", "block_hashes": []any{1}, "token_ids": seq(0, 4), "block_size": 4, "extra_keys": []any{nil, nil}}}}),
	}
	for i := 1; i < len(valid); i++ {
		cases["truncated at "+string(rune('A'+i%26))+string(rune('a'+i/26))] = valid[:i]
	}
	for name, payload := range cases {
		_, err := kvevents.DecodeBatch(payload)
		assert.ErrorIs(t, err, kvevents.ErrPayload, name)
	}
}
