package kvevent

import (
	"encoding/binary"
	"errors"
	"time"
)

// Shared is a speculative prefix entry one gateway replica shares with the others: the
// replica just routed a prompt to Worker, so Worker will hold its leading full blocks
// (BlockSize tokens each) under Model, until Expires unless an event says otherwise.
type Shared struct {
	// Origin names the publishing replica (receivers skip their own entries).
	Origin string
	// Worker is the worker URL, Model the model id ("" for a worker serving several).
	Worker, Model string
	// BlockSize is the worker's block size in tokens (> 0).
	BlockSize int
	// Tokens are the prompt's token ids; only the leading full blocks count.
	Tokens []uint32
	// Expires is when the entry stops counting.
	Expires time.Time
}

// sharedVersion is the first byte of an encoded Shared.
const sharedVersion = 1

// maxSharedString bounds the origin, worker and model strings of an encoded Shared.
const maxSharedString = 4096

// ErrBadShared is returned by DecodeShared for bytes that are not an encoded Shared.
var ErrBadShared = errors.New("kvevent: not an encoded shared entry")

// EncodeShared is s's wire form: version byte 1, then origin, worker and model (uvarint
// length + bytes), block size (uvarint), expiry (unix ms, varint), token count (uvarint)
// and the full blocks' token ids (4 bytes little-endian each). Tokens past the last full
// block are not sent.
func EncodeShared(s Shared) []byte {
	n := 0
	if s.BlockSize > 0 {
		n = len(s.Tokens) / s.BlockSize * s.BlockSize
	}
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(s.Origin)+len(s.Worker)+len(s.Model)+3*binary.MaxVarintLen64+4*n)
	b = append(b, sharedVersion)
	for _, str := range []string{s.Origin, s.Worker, s.Model} {
		b = binary.AppendUvarint(b, uint64(len(str)))
		b = append(b, str...)
	}
	b = binary.AppendUvarint(b, uint64(max(s.BlockSize, 0)))
	b = binary.AppendVarint(b, s.Expires.UnixMilli())
	b = binary.AppendUvarint(b, uint64(n))
	for _, t := range s.Tokens[:n] {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	return b
}

// DecodeShared reads EncodeShared's form. Errors: ErrBadShared for a wrong version, a
// truncated or oversized field, a zero block size, or trailing bytes.
func DecodeShared(b []byte) (Shared, error) {
	var s Shared
	if len(b) == 0 || b[0] != sharedVersion {
		return s, ErrBadShared
	}
	b = b[1:]
	var strs [3]string
	for i := range strs {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > maxSharedString || uint64(len(b)-k) < l {
			return Shared{}, ErrBadShared
		}
		strs[i] = string(b[k : k+int(l)])
		b = b[k+int(l):]
	}
	s.Origin, s.Worker, s.Model = strs[0], strs[1], strs[2]
	bs, k := binary.Uvarint(b)
	if k <= 0 || bs == 0 || bs > 1<<20 {
		return Shared{}, ErrBadShared
	}
	b = b[k:]
	ms, k := binary.Varint(b)
	if k <= 0 {
		return Shared{}, ErrBadShared
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) != 4*n {
		return Shared{}, ErrBadShared
	}
	b = b[k:]
	s.BlockSize, s.Expires = int(bs), time.UnixMilli(ms)
	s.Tokens = make([]uint32, n)
	for i := range s.Tokens {
		s.Tokens[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return s, nil
}
