package kvcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrTooLarge is returned by [Cache.Acquire] for a prompt that needs more blocks than the
// whole cache holds: it could never run (a real engine refuses such a context length at
// start-up).
var ErrTooLarge = errors.New("kvcache: prompt needs more blocks than the cache holds")

// Config sizes a [Cache].
type Config struct {
	// BlockSize is the number of tokens per block (vLLM --block-size, default 16; SGLang
	// --page-size, default 1); must be >= 1.
	BlockSize int
	// Blocks is the capacity in blocks; must be >= 1.
	Blocks int
	// Sink receives the cache's events; nil drops them.
	Sink Sink
}

// Stats are a cache's counters. Counts run since creation or the last [Cache.ResetCounters];
// BlocksUsed is a gauge.
type Stats struct {
	// PromptTokens totals the prompt tokens of every admitted lease.
	PromptTokens int64
	// CachedTokens totals the prefix hits of every admitted lease (block-aligned tokens).
	CachedTokens int64
	// EvictedBlocks counts cached blocks evicted to make room (not those dropped by Clear).
	EvictedBlocks int64
	// BlocksUsed is the number of blocks holding KV now: blocks held by running requests
	// plus cached blocks nobody holds (evictable).
	BlocksUsed int64
}

// Cache is a paged KV cache with prefix matching by chained block hashes and LRU eviction
// of unreferenced blocks. A request takes a [Lease] ([Cache.Acquire]) that holds its
// matched blocks and reserves the rest, [Lease.Commit]s its full blocks once their KV is
// computed (or received), and [Lease.Release]s everything at its end. Safe for concurrent
// use.
type Cache struct {
	bs, capacity int
	sink         Sink

	// pub serialises publishing: taken before mu is released, so batches reach the sink in
	// the order the cache changed while the sink runs without mu.
	pub sync.Mutex

	mu    sync.Mutex
	table map[uint64]*block // committed blocks by hash
	// lru lists the committed blocks nobody holds, least recently used first.
	lru     blockList
	used    int           // blocks holding KV: committed, plus private blocks of leases
	freed   chan struct{} // closed (and cleared) when blocks are released; nil = no waiter
	prompt  int64
	cached  int64
	evicted int64
}

type block struct {
	hash       uint64
	refs       int
	inTable    bool
	prev, next *block
	inLRU      bool
}

// New returns an empty cache; an error when BlockSize or Blocks is below 1.
func New(cfg Config) (*Cache, error) {
	if cfg.BlockSize < 1 || cfg.Blocks < 1 {
		return nil, fmt.Errorf("kvcache: block size %d and capacity %d blocks must be >= 1", cfg.BlockSize, cfg.Blocks)
	}
	return &Cache{bs: cfg.BlockSize, capacity: cfg.Blocks, sink: cfg.Sink, table: map[uint64]*block{}}, nil
}

// BlockSize is the number of tokens per block.
func (c *Cache) BlockSize() int { return c.bs }

// Capacity is the number of blocks the cache holds.
func (c *Cache) Capacity() int { return c.capacity }

// Lease is one request's hold on the cache, from [Cache.Acquire] to [Lease.Release]. Its
// methods are not safe for concurrent use with each other.
type Lease struct {
	c       *Cache
	ids     []uint32
	hashes  []uint64
	extra   int64
	hit     int      // matched blocks (a prefix of hashes)
	held    []*block // committed blocks referenced by the lease
	private int      // reserved blocks not in the table (uncommitted, partial tail, duplicates)
	done    bool
	commit  bool
	waited  time.Duration
}

// Acquire looks up the longest cached prefix of ids (token ids; extraKey is the LoRA id or
// 0, part of every block hash), holds those blocks and reserves blocks for the rest of the
// prompt, the partial tail included (ceil(len(ids)/BlockSize) in all), evicting
// unreferenced cached blocks in LRU order as needed. As in vLLM and SGLang the hit leaves
// at least one prompt token to compute, so it is at most floor((len(ids)-1)/BlockSize)
// blocks. When the blocks cannot be found because running requests hold them, Acquire
// waits until a lease is released (a real engine keeps such a request waiting in its
// queue) or ctx ends (ctx's error). A prompt larger than the cache is [ErrTooLarge]. ids is
// retained until the lease is released.
func (c *Cache) Acquire(ctx context.Context, ids []uint32, extraKey int64) (*Lease, error) {
	total := (len(ids) + c.bs - 1) / c.bs
	if total > c.capacity {
		return nil, fmt.Errorf("%w: %d tokens need %d blocks of %d tokens, the cache holds %d", ErrTooLarge, len(ids), total, c.bs, c.capacity)
	}
	l := &Lease{c: c, ids: ids, extra: extraKey, hashes: BlockHashes(nil, ids, c.bs, extraKey)}
	l.held = make([]*block, 0, len(l.hashes))
	maxHit := 0
	if len(ids) > 0 {
		maxHit = min(len(l.hashes), (len(ids)-1)/c.bs)
	}
	var waitStart time.Time
	for {
		c.mu.Lock()
		matched := l.held[:0]
		evictable := c.lru.n
		for len(matched) < maxHit {
			b, ok := c.table[l.hashes[len(matched)]]
			if !ok {
				break
			}
			if b.refs == 0 {
				evictable-- // about to be held
			}
			matched = append(matched, b)
		}
		hit := len(matched)
		need := total - hit
		if c.capacity-c.used+evictable >= need {
			for _, b := range matched {
				if b.refs == 0 {
					c.lru.remove(b)
				}
				b.refs++
			}
			l.held = matched
			var removed []uint64
			for c.capacity-c.used < need {
				b := c.lru.front()
				c.lru.remove(b)
				delete(c.table, b.hash)
				b.inTable = false
				c.used--
				c.evicted++
				removed = append(removed, b.hash)
			}
			c.used += need
			l.hit, l.private = hit, need
			if !waitStart.IsZero() {
				l.waited = time.Since(waitStart)
			}
			c.prompt += int64(len(ids))
			c.cached += int64(hit * c.bs)
			var evs []Event
			if len(removed) > 0 {
				evs = []Event{{Removed: &BlockRemoved{BlockHashes: removed}}}
			}
			c.unlockPublish(evs)
			return l, nil
		}
		if c.freed == nil {
			c.freed = make(chan struct{})
		}
		wait := c.freed
		c.mu.Unlock()
		if waitStart.IsZero() {
			waitStart = time.Now()
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// unlockPublish releases mu and hands evs (if any) to the sink, in cache-change order.
func (c *Cache) unlockPublish(evs []Event) {
	if len(evs) == 0 || c.sink == nil {
		c.mu.Unlock()
		return
	}
	c.pub.Lock()
	c.mu.Unlock()
	defer c.pub.Unlock()
	c.sink.Publish(evs)
}

// CachedTokens is the lease's prefix hit in tokens (a multiple of the block size).
func (l *Lease) CachedTokens() int { return l.hit * l.c.bs }

// Waited is how long Acquire waited for blocks held by other requests (0: admitted at
// once).
func (l *Lease) Waited() time.Duration { return l.waited }

// Blocks is the number of blocks the lease holds or reserves (ceil(prompt/BlockSize)).
func (l *Lease) Blocks() int { return (len(l.ids) + l.c.bs - 1) / l.c.bs }

// Commit records that the prompt's KV is now present (computed, or received through a
// handoff): every full block beyond the hit becomes cached, reported as BlockStored events
// (one per run of consecutive new blocks, with its parent's hash). A block already cached
// (one the hit's cap left out, or one a concurrent request committed first) is not stored
// again: the lease holds the cached copy and frees its own. Commit after Release, or
// twice, does nothing.
func (l *Lease) Commit() {
	if l.done || l.commit {
		return
	}
	l.commit = true
	c := l.c
	c.mu.Lock()
	var evs []Event
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		st := &BlockStored{BlockHashes: append([]uint64(nil), l.hashes[start:end]...),
			TokenIDs: append([]uint32(nil), l.ids[start*c.bs:end*c.bs]...), BlockSize: c.bs, LoraID: l.extra}
		if start > 0 {
			st.ParentBlockHash, st.HasParent = l.hashes[start-1], true
		}
		evs = append(evs, Event{Stored: st})
		start = -1
	}
	for i := l.hit; i < len(l.hashes); i++ {
		h := l.hashes[i]
		if b, dup := c.table[h]; dup {
			// Computed again (the hit's cap, or a concurrent request committed it first):
			// hold the cached copy and free this lease's own block.
			flush(i)
			if b.refs == 0 {
				c.lru.remove(b)
			}
			b.refs++
			l.held = append(l.held, b)
			l.private--
			c.used--
			continue
		}
		b := &block{hash: h, refs: 1, inTable: true}
		c.table[h] = b
		l.held = append(l.held, b)
		l.private--
		if start < 0 {
			start = i
		}
	}
	flush(len(l.hashes))
	c.unlockPublish(evs)
}

// Release ends the lease: held blocks nobody else holds become evictable (most recently
// used; the prompt's tail first, so a prefix outlives its extensions, as vLLM frees blocks
// in reverse order), reserved private blocks are freed, and waiting Acquires retry.
// Idempotent.
func (l *Lease) Release() {
	if l.done {
		return
	}
	l.done = true
	c := l.c
	c.mu.Lock()
	for i := len(l.held) - 1; i >= 0; i-- {
		b := l.held[i]
		b.refs--
		if b.refs > 0 {
			continue
		}
		if b.inTable {
			c.lru.pushBack(b)
		} else {
			c.used-- // dropped by Clear while held
		}
	}
	c.used -= l.private
	l.held, l.private = nil, 0
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
	c.mu.Unlock()
}

// Clear drops every cached block (SGLang /flush_cache, vLLM /reset_prefix_cache, or a
// restart) and publishes one Cleared event. Blocks held by running requests stay allocated
// until their leases end but are no longer matched.
func (c *Cache) Clear() {
	c.mu.Lock()
	for h, b := range c.table {
		delete(c.table, h)
		b.inTable = false
		if b.refs == 0 {
			c.lru.remove(b)
			c.used--
		}
	}
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
	c.unlockPublish([]Event{{Cleared: true}})
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{PromptTokens: c.prompt, CachedTokens: c.cached, EvictedBlocks: c.evicted, BlocksUsed: int64(c.used)}
}

// ResetCounters zeroes PromptTokens, CachedTokens and EvictedBlocks (not the contents).
func (c *Cache) ResetCounters() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompt, c.cached, c.evicted = 0, 0, 0
}

// blockList is an intrusive doubly-linked list of blocks.
type blockList struct {
	head, tail *block
	n          int
}

func (l *blockList) front() *block { return l.head }

func (l *blockList) pushBack(b *block) {
	b.prev, b.next, b.inLRU = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = b
	} else {
		l.head = b
	}
	l.tail = b
	l.n++
}

func (l *blockList) remove(b *block) {
	if !b.inLRU {
		return
	}
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		l.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.prev, b.next, b.inLRU = nil, nil, false
	l.n--
}
