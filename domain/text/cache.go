package text

import (
	"strings"
	"sync"
	"sync/atomic"
)

// EncodeCacheOptions configure an EncodeCache (SMG's two tokenizer cache layers; flags
// --tokenizer-cache-enable-l0, --tokenizer-cache-l0-max-entries,
// --tokenizer-cache-l0-max-memory, --tokenizer-cache-enable-l1,
// --tokenizer-cache-l1-max-memory).
type EncodeCacheOptions struct {
	// L0 caches whole inputs (exact match), at most L0MaxEntries of them and L0MaxBytes
	// of accounted memory (entryOverhead + text bytes + 4 bytes per id each).
	L0           bool
	L0MaxEntries int
	L0MaxBytes   int64
	// L1 caches the pieces of an input between its added tokens (chat templates put one
	// at every message boundary), at most L1MaxBytes of accounted memory: a conversation's
	// earlier messages and a shared system prompt are encoded once.
	L1         bool
	L1MaxBytes int64
}

// Defaults of EncodeCacheOptions' bounds (SMG's for the entries and L1; L0's memory bound is
// this gateway's).
const (
	DefaultCacheL0MaxEntries = 10000
	DefaultCacheL0MaxBytes   = 64 << 20
	DefaultCacheL1MaxBytes   = 50 << 20
)

// l1MinPiece is the shortest piece L1 caches: shorter ones ("assistant\n") encode faster
// than a lookup pays for itself.
const l1MinPiece = 32

// entryOverhead is the accounted fixed cost of one entry (key, list links, slice headers).
const entryOverhead = 96

// EncodeCacheStats are an EncodeCache's counters since it was made (layer L0 and L1).
type EncodeCacheStats struct {
	// Hits and Misses count lookups: L0 one per Encode, L1 one per cacheable piece of an
	// input that missed L0 and holds added tokens.
	L0Hits, L0Misses, L1Hits, L1Misses uint64
	// Evictions count entries removed to make room.
	L0Evictions, L1Evictions uint64
	// ReusedBytes count input bytes served by hits.
	L0ReusedBytes, L1ReusedBytes uint64
	// Entries and Bytes are what each layer holds now (accounted memory).
	L0Entries, L1Entries int
	L0Bytes, L1Bytes     int64
}

// EncodeCache remembers token ids of inputs (L0) and of their pieces between added tokens
// (L1), keyed by tokenizer (one per model) and text, least recently used first out. Attach
// it with Tokenizer.UseCache; one cache may serve every model. Safe for concurrent use.
type EncodeCache struct {
	l0, l1 *lru
}

// NewEncodeCache returns a cache with the enabled layers, or nil when none is (a nil cache
// caches nothing).
func NewEncodeCache(o EncodeCacheOptions) *EncodeCache {
	c := &EncodeCache{}
	if o.L0 && o.L0MaxEntries > 0 && o.L0MaxBytes > 0 {
		c.l0 = newLRU(o.L0MaxEntries, o.L0MaxBytes)
	}
	if o.L1 && o.L1MaxBytes > 0 {
		c.l1 = newLRU(0, o.L1MaxBytes)
	}
	if c.l0 == nil && c.l1 == nil {
		return nil
	}
	return c
}

// Stats returns the counters and sizes (zero for a nil cache or a disabled layer).
func (c *EncodeCache) Stats() EncodeCacheStats {
	var s EncodeCacheStats
	if c == nil {
		return s
	}
	if c.l0 != nil {
		s.L0Hits, s.L0Misses, s.L0Evictions, s.L0ReusedBytes, s.L0Entries, s.L0Bytes = c.l0.stats()
	}
	if c.l1 != nil {
		s.L1Hits, s.L1Misses, s.L1Evictions, s.L1ReusedBytes, s.L1Entries, s.L1Bytes = c.l1.stats()
	}
	return s
}

// UseCache makes Encode consult c (nil: no cache). Encode's results are the same with or
// without it.
func (t *Tokenizer) UseCache(c *EncodeCache) { t.cache.Store(c) }

type cacheKey struct {
	tok     *Tokenizer
	special bool // addSpecialTokens (L0 only)
	text    string
}

type lruEntry struct {
	key        cacheKey
	ids        []uint32
	size       int64
	prev, next *lruEntry
}

// lru is a map with a doubly linked recency list (head: most recent), bounded by entries
// (0: no bound) and accounted bytes.
type lru struct {
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	m     map[cacheKey]*lruEntry
	head  *lruEntry
	tail  *lruEntry
	bytes int64

	hits, misses, evictions, reused atomic.Uint64
}

func newLRU(maxEntries int, maxBytes int64) *lru {
	return &lru{maxEntries: maxEntries, maxBytes: maxBytes, m: map[cacheKey]*lruEntry{}}
}

// get appends the cached ids of k to dst; ok is false on a miss. Counts the lookup.
func (l *lru) get(k cacheKey, dst []uint32) ([]uint32, bool) {
	l.mu.Lock()
	e, ok := l.m[k]
	if ok {
		l.unlink(e)
		l.pushFront(e)
		dst = append(dst, e.ids...)
	}
	l.mu.Unlock()
	if ok {
		l.hits.Add(1)
		l.reused.Add(uint64(len(k.text)))
	} else {
		l.misses.Add(1)
	}
	return dst, ok
}

// put stores a copy of ids under k (the text is copied too: k.text may be a slice of a
// larger prompt), evicting the least recently used entries beyond the bounds. An entry
// larger than an eighth of the byte bound is not stored.
func (l *lru) put(k cacheKey, ids []uint32) {
	size := entryOverhead + int64(len(k.text)) + 4*int64(len(ids))
	if size > l.maxBytes/8 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[k]; ok {
		return // a concurrent miss stored it first
	}
	k.text = strings.Clone(k.text)
	e := &lruEntry{key: k, ids: append([]uint32(nil), ids...), size: size}
	l.m[k] = e
	l.pushFront(e)
	l.bytes += size
	for l.tail != nil && (l.bytes > l.maxBytes || (l.maxEntries > 0 && len(l.m) > l.maxEntries)) {
		old := l.tail
		l.unlink(old)
		delete(l.m, old.key)
		l.bytes -= old.size
		l.evictions.Add(1)
	}
}

func (l *lru) pushFront(e *lruEntry) {
	e.prev, e.next = nil, l.head
	if l.head != nil {
		l.head.prev = e
	}
	l.head = e
	if l.tail == nil {
		l.tail = e
	}
}

func (l *lru) unlink(e *lruEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (l *lru) stats() (hits, misses, evictions, reused uint64, entries int, bytes int64) {
	l.mu.Lock()
	entries, bytes = len(l.m), l.bytes
	l.mu.Unlock()
	return l.hits.Load(), l.misses.Load(), l.evictions.Load(), l.reused.Load(), entries, bytes
}
