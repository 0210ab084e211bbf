package kvevents

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/smg-go/smg/test/sim/kvcache"
)

// Encoding is the msgpack shape of a KVEventBatch payload. Every shape keeps the outer
// batch positional, [ts, [events…], dp_rank] (msgspec array_like EventBatch; the rank is
// always set, so the array has three elements); the shapes differ in the events.
type Encoding string

const (
	// EncodingVLLM is current vLLM (after vllm-project/vllm#42892): each event a tagged
	// map, the class name under "type", default-valued optional fields omitted.
	// BlockStored carries block_hashes (unsigned 64-bit: the last 8 bytes of the digest,
	// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1), parent_block_hash (nil for a prompt's first
	// block), token_ids, block_size, lora_id (nil for the base model), medium "GPU",
	// lora_name nil, extra_keys (nil per block), group_idx 0 and kv_cache_spec_kind
	// "full_attention", as a captured v0.26.0 batch does. BlockRemoved carries
	// block_hashes, medium and group_idx.
	EncodingVLLM Encoding = "vllm"
	// EncodingVLLMArray is legacy vLLM (before #42892): tagged arrays,
	// ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id,
	// medium], ["BlockRemoved", block_hashes, medium], ["AllBlocksCleared"].
	EncodingVLLMArray Encoding = "vllm-array"
	// EncodingSGLang is current SGLang (since sgl-project/sglang#37482,
	// python/sglang/srt/mem_cache/events.py): tagged maps with block_hashes and
	// parent_block_hash as signed int64 (the same 64 bits reinterpreted), token_ids,
	// block_size (the page size), lora_id nil (SGLang names a LoRA instead: lora_name, here
	// "lora-<id>", present only for a LoRA, whose hashes live in their own namespace),
	// medium "GPU"; BlockRemoved block_hashes and medium. The batch's third element is
	// attn_dp_rank.
	EncodingSGLang Encoding = "sglang"
	// EncodingSGLangArray is SGLang before #37482 (@612d5790 disaggregation/kv_events.py):
	// ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id],
	// ["BlockRemoved", block_hashes], ["AllBlocksCleared"], hashes signed int64.
	EncodingSGLangArray Encoding = "sglang-array"
)

// EncodingFor is the encoding of engine ("vllm" or "sglang"); array selects the legacy
// tagged-array generation. Other engines (TokenSpeed) use vLLM's shape, whose servicer
// bridge (SMG kv_events.py) is engine-neutral.
func EncodingFor(engine string, array bool) Encoding {
	switch {
	case engine == EngineSGLang && array:
		return EncodingSGLangArray
	case engine == EngineSGLang:
		return EncodingSGLang
	case array:
		return EncodingVLLMArray
	}
	return EncodingVLLM
}

func (e Encoding) valid() error {
	switch e {
	case EncodingVLLM, EncodingVLLMArray, EncodingSGLang, EncodingSGLangArray:
		return nil
	}
	return fmt.Errorf("kv events: encoding %q: want %q, %q, %q or %q", e, EncodingVLLM, EncodingVLLMArray, EncodingSGLang, EncodingSGLangArray)
}

func (e Encoding) maps() bool   { return e == EncodingVLLM || e == EncodingSGLang }
func (e Encoding) sglang() bool { return e == EncodingSGLang || e == EncodingSGLangArray }

// encodeBatch is the msgpack payload of one KVEventBatch.
func encodeBatch(e Encoding, ts float64, events []kvcache.Event, rank int) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	w := &writer{enc: enc, e: e}
	w.arrayLen(3)
	w.do(enc.EncodeFloat64(ts))
	w.arrayLen(len(events))
	for _, ev := range events {
		w.event(ev)
	}
	w.do(enc.EncodeInt(int64(rank)))
	if w.err != nil {
		return nil, fmt.Errorf("kv events: encode batch: %w", w.err)
	}
	return buf.Bytes(), nil
}

// writer keeps the first encoder error, so the shapes read as straight-line code.
type writer struct {
	enc *msgpack.Encoder
	e   Encoding
	err error
}

func (w *writer) do(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) arrayLen(n int) { w.do(w.enc.EncodeArrayLen(n)) }
func (w *writer) str(s string)   { w.do(w.enc.EncodeString(s)) }
func (w *writer) null()          { w.do(w.enc.EncodeNil()) }
func (w *writer) int(v int64)    { w.do(w.enc.EncodeInt(v)) }

// hash writes an engine block hash: unsigned for vLLM, the same bits as a signed int64
// for SGLang (hash_str_to_int64).
func (w *writer) hash(h uint64) {
	if w.e.sglang() {
		w.do(w.enc.EncodeInt(int64(h)))
		return
	}
	w.do(w.enc.EncodeUint(h))
}

func (w *writer) hashes(hs []uint64) {
	w.arrayLen(len(hs))
	for _, h := range hs {
		w.hash(h)
	}
}

// key opens one map entry; in the array shapes fields are positional and keys vanish.
func (w *writer) key(k string) {
	if w.e.maps() {
		w.str(k)
	}
}

// head opens an event: a map of n fields (tag included) or an array of n elements.
func (w *writer) head(tag string, n int) {
	if w.e.maps() {
		w.do(w.enc.EncodeMapLen(n))
		w.str("type")
	} else {
		w.arrayLen(n)
	}
	w.str(tag)
}

func (w *writer) event(ev kvcache.Event) {
	switch {
	case ev.Stored != nil:
		w.stored(ev.Stored)
	case ev.Removed != nil:
		w.removed(ev.Removed)
	default:
		w.head("AllBlocksCleared", 1)
	}
}

func (w *writer) stored(s *kvcache.BlockStored) {
	sglangLoRA := w.e == EncodingSGLang && s.LoraID != 0
	n := fieldCount(w.e, 11, 7, 7, 6)
	if sglangLoRA {
		n++
	}
	w.head("BlockStored", n)
	w.key("block_hashes")
	w.hashes(s.BlockHashes)
	w.key("parent_block_hash")
	if s.HasParent {
		w.hash(s.ParentBlockHash)
	} else {
		w.null()
	}
	w.key("token_ids")
	w.arrayLen(len(s.TokenIDs))
	for _, t := range s.TokenIDs {
		w.do(w.enc.EncodeUint(uint64(t)))
	}
	w.key("block_size")
	w.int(int64(s.BlockSize))
	w.key("lora_id")
	if s.LoraID != 0 && w.e != EncodingSGLang {
		w.int(s.LoraID)
	} else {
		w.null()
	}
	if w.e == EncodingSGLangArray {
		return
	}
	w.key("medium")
	w.str("GPU")
	if sglangLoRA {
		w.key("lora_name")
		w.str("lora-" + strconv.FormatInt(s.LoraID, 10))
	}
	if w.e != EncodingVLLM {
		return
	}
	w.key("lora_name")
	w.null()
	w.key("extra_keys")
	w.arrayLen(len(s.BlockHashes))
	for range s.BlockHashes {
		w.null()
	}
	w.key("group_idx")
	w.int(0)
	w.key("kv_cache_spec_kind")
	w.str("full_attention")
}

func (w *writer) removed(r *kvcache.BlockRemoved) {
	w.head("BlockRemoved", fieldCount(w.e, 4, 3, 3, 2))
	w.key("block_hashes")
	w.hashes(r.BlockHashes)
	if w.e == EncodingSGLangArray {
		return
	}
	w.key("medium")
	w.str("GPU")
	if w.e == EncodingVLLM {
		w.key("group_idx")
		w.int(0)
	}
}

// fieldCount picks an event's map entry or array element count (tag included) by
// encoding.
func fieldCount(e Encoding, vllm, vllmArray, sglang, sglangArray int) int {
	switch e {
	case EncodingVLLMArray:
		return vllmArray
	case EncodingSGLang:
		return sglang
	case EncodingSGLangArray:
		return sglangArray
	}
	return vllm
}
