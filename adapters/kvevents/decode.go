package kvevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/smg-go/smg/domain/kvevent"
)

// ErrPayload is wrapped by every DecodeBatch error: the payload is not a KVEventBatch.
var ErrPayload = errors.New("kvevents: bad payload")

// DecodeBatch decodes one msgpack KVEventBatch payload (ZMQ frame 3) of any known
// generation into b.Events, b.Timestamp and b.DPRank; the caller sets b.Seq from frame 2.
//
// Accepted shapes (reference kv-routing.md §1.5, §2.2): the batch as an array
// [ts, events, dp_rank?] or a map {ts, events, data_parallel_rank | attn_dp_rank}; each
// event as a legacy tagged array ["BlockStored", block_hashes, parent_block_hash,
// token_ids, block_size, lora_id, medium, lora_name | SGLang metadata map, extra_keys,
// group_idx, ...] / ["BlockRemoved", block_hashes, medium, group_idx] /
// ["AllBlocksCleared"], or a current tagged map with the class name under "type". Unknown
// map keys and trailing array fields are skipped; unknown event types are skipped. Hashes
// may be uint64, int64 or bytes (last 8 bytes, big-endian). Errors wrap ErrPayload; a
// truncated or mistyped payload never panics.
func DecodeBatch(payload []byte) (kvevent.Batch, error) {
	r := bytes.NewReader(payload)
	d := &decoder{r: r, d: msgpack.NewDecoder(r)}
	b, err := d.batch()
	if err != nil {
		return kvevent.Batch{}, fmt.Errorf("%w: %v", ErrPayload, err)
	}
	if r.Len() != 0 {
		return kvevent.Batch{}, fmt.Errorf("%w: %d trailing bytes", ErrPayload, r.Len())
	}
	return b, nil
}

type decoder struct {
	r *bytes.Reader
	d *msgpack.Decoder
}

func (d *decoder) peek() (byte, error) { return d.d.PeekCode() }

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

// length guards a declared container length against the bytes left: every element takes
// at least one byte, so a larger length is garbage and must not drive an allocation.
func (d *decoder) length(n int, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	if n > d.r.Len() {
		return 0, fmt.Errorf("length %d exceeds the %d bytes left", n, d.r.Len())
	}
	return n, nil
}

func (d *decoder) arrayLen() (int, error) { return d.length(d.d.DecodeArrayLen()) }
func (d *decoder) mapLen() (int, error)   { return d.length(d.d.DecodeMapLen()) }

// isNil consumes a nil and reports true, or leaves a non-nil value unread.
func (d *decoder) isNil() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, err
	}
	if c == msgpcode.Nil {
		return true, d.d.DecodeNil()
	}
	return false, nil
}

func (d *decoder) batch() (kvevent.Batch, error) {
	var b kvevent.Batch
	c, err := d.peek()
	if err != nil {
		return b, err
	}
	switch {
	case isArray(c):
		n, err := d.arrayLen()
		if err != nil {
			return b, err
		}
		if n < 2 {
			return b, fmt.Errorf("batch array of %d elements, want [ts, events, dp_rank?]", n)
		}
		if b.Timestamp, err = d.number(); err != nil {
			return b, fmt.Errorf("ts: %v", err)
		}
		if b.Events, err = d.events(); err != nil {
			return b, err
		}
		if n >= 3 {
			if err := d.dpRank(&b); err != nil {
				return b, err
			}
		}
		return b, d.skipN(n - 3)
	case isMap(c):
		n, err := d.mapLen()
		if err != nil {
			return b, err
		}
		seen := false
		for i := 0; i < n; i++ {
			k, err := d.d.DecodeString()
			if err != nil {
				return b, fmt.Errorf("batch key: %v", err)
			}
			switch k {
			case "ts":
				b.Timestamp, err = d.number()
			case "events":
				b.Events, err = d.events()
				seen = true
			case "data_parallel_rank", "attn_dp_rank":
				err = d.dpRank(&b)
			default:
				err = d.d.Skip()
			}
			if err != nil {
				return b, fmt.Errorf("batch %s: %v", k, err)
			}
		}
		if !seen {
			return b, errors.New("batch map without events")
		}
		return b, nil
	}
	return b, fmt.Errorf("batch is msgpack code %#x, want array or map", c)
}

func (d *decoder) skipN(n int) error {
	for ; n > 0; n-- {
		if err := d.d.Skip(); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) dpRank(b *kvevent.Batch) error {
	if null, err := d.isNil(); err != nil || null {
		return err
	}
	v, err := d.d.DecodeInt64()
	if err != nil {
		return fmt.Errorf("dp rank: %v", err)
	}
	if v < 0 || v > math.MaxInt32 {
		return fmt.Errorf("dp rank %d out of range", v)
	}
	b.DPRank, b.HasDPRank = int(v), true
	return nil
}

// number decodes a float or an integer as float64.
func (d *decoder) number() (float64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Float || c == msgpcode.Double {
		return d.d.DecodeFloat64()
	}
	v, err := d.int()
	return float64(v), err
}

// int decodes a msgpack integer (nil is an error, unlike the library's DecodeInt64).
func (d *decoder) int() (int64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Nil {
		return 0, errors.New("nil where an integer belongs")
	}
	return d.d.DecodeInt64()
}

func (d *decoder) str() (string, error) {
	if null, err := d.isNil(); err != nil || null {
		return "", err
	}
	return d.d.DecodeString()
}

func (d *decoder) events() ([]kvevent.Event, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, fmt.Errorf("events: %v", err)
	}
	if n < 0 {
		return nil, errors.New("events is nil")
	}
	out := make([]kvevent.Event, 0, n)
	for i := 0; i < n; i++ {
		ev, ok, err := d.event()
		if err != nil {
			return nil, fmt.Errorf("event %d: %v", i, err)
		}
		if ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// hash decodes a block hash: uint64 as is, int64 reinterpreted, bytes as the big-endian
// value of their last 8 bytes (vLLM maybe_convert_block_hash with int hashes off).
func (d *decoder) hash() (uint64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if msgpcode.IsBin(c) || msgpcode.IsString(c) {
		raw, err := d.d.DecodeBytes()
		if err != nil {
			return 0, err
		}
		if len(raw) == 0 {
			return 0, errors.New("empty hash bytes")
		}
		var tail [8]byte
		if len(raw) >= 8 {
			copy(tail[:], raw[len(raw)-8:])
		} else {
			copy(tail[8-len(raw):], raw)
		}
		return binary.BigEndian.Uint64(tail[:]), nil
	}
	if c == msgpcode.Nil {
		return 0, errors.New("nil hash")
	}
	return d.d.DecodeUint64()
}

func (d *decoder) hashes() ([]uint64, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	out := make([]uint64, n)
	for i := range out {
		if out[i], err = d.hash(); err != nil {
			return nil, fmt.Errorf("hash %d: %v", i, err)
		}
	}
	return out, nil
}

func (d *decoder) tokens() ([]uint32, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	out := make([]uint32, n)
	for i := range out {
		v, err := d.int()
		if err != nil {
			return nil, fmt.Errorf("token %d: %v", i, err)
		}
		if v < 0 || v > math.MaxUint32 {
			return nil, fmt.Errorf("token %d: id %d out of range", i, v)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

// extraKeys decodes vLLM's extra_keys: one entry per block, nil or a tuple. The tuple's
// leading LoRA name (vLLM puts it first, reference §1.6) is dropped when it equals
// loraName, since the LoRA already separates index namespaces; the rest is fingerprinted
// with XXH64 over its msgpack bytes (0 when nothing is left).
func (d *decoder) extraKeys() ([][]msgpack.RawMessage, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	out := make([][]msgpack.RawMessage, n)
	for i := range out {
		if null, err := d.isNil(); err != nil {
			return nil, err
		} else if null {
			continue
		}
		m, err := d.arrayLen()
		if err != nil {
			return nil, fmt.Errorf("extra_keys %d: %v", i, err)
		}
		for j := 0; j < m; j++ {
			raw, err := d.d.DecodeRaw()
			if err != nil {
				return nil, fmt.Errorf("extra_keys %d: %v", i, err)
			}
			out[i] = append(out[i], raw)
		}
	}
	return out, nil
}

func fingerprint(keys []msgpack.RawMessage, loraName string) uint64 {
	if len(keys) > 0 && loraName != "" {
		if s, err := msgpack.NewDecoder(bytes.NewReader(keys[0])).DecodeString(); err == nil && s == loraName {
			keys = keys[1:]
		}
	}
	if len(keys) == 0 {
		return 0
	}
	h := xxhash.New()
	for _, k := range keys {
		_, _ = h.Write(k)
	}
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}

// saltFingerprint is the Extra of a chain's first block when SGLang names a cache_salt.
func saltFingerprint(salt string) uint64 {
	if salt == "" {
		return 0
	}
	if v := xxhash.Sum64String("cache_salt\x00" + salt); v != 0 {
		return v
	}
	return 1
}
