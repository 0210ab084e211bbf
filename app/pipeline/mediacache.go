package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/smg-go/smg/domain/media"
)

// DefaultMediaCacheBytes bounds the prepared images kept for reuse (their pixel_values,
// 4 bytes per value): a chat that sends its images again on every turn, and every retry of
// an attempt, prepares each image once.
const DefaultMediaCacheBytes = 256 << 20

type mediaKey struct {
	proc *media.Processor
	hash string
}

// mediaCache is a byte-bounded LRU of prepared items keyed by processor and content hash.
// Items are shared read-only.
type mediaCache struct {
	mu    sync.Mutex
	lru   *lru.Cache[mediaKey, media.Item]
	bytes int64
	max   int64
	hits  int64
}

func newMediaCache(maxBytes int64) *mediaCache {
	c := &mediaCache{max: maxBytes}
	c.lru, _ = lru.NewWithEvict[mediaKey, media.Item](1<<20, func(_ mediaKey, it media.Item) {
		c.bytes -= itemBytes(it)
	})
	return c
}

func itemBytes(it media.Item) int64 { return 4 * int64(len(it.PixelValues)) }

// key is raw's cache key under p.
func (c *mediaCache) key(p *media.Processor, raw []byte) mediaKey {
	sum := sha256.Sum256(raw)
	return mediaKey{proc: p, hash: hex.EncodeToString(sum[:])}
}

// get returns the item prepared before under k, if it is still kept.
func (c *mediaCache) get(k mediaKey) (media.Item, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.lru.Get(k)
	if ok {
		c.hits++
	}
	return it, ok
}

// put keeps it under k unless it alone is larger than the cache.
func (c *mediaCache) put(k mediaKey, it media.Item) {
	if itemBytes(it) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lru.Contains(k) {
		c.lru.Add(k, it)
		c.bytes += itemBytes(it)
		for c.bytes > c.max {
			c.lru.RemoveOldest()
		}
	}
}

// prepare returns the prepared item for raw under p, from the cache when the same bytes
// were prepared by the same processor before.
func (c *mediaCache) prepare(p *media.Processor, raw []byte) (media.Item, error) {
	k := c.key(p, raw)
	if it, ok := c.get(k); ok {
		return it, nil
	}
	it, err := p.ProcessImage(raw)
	if err != nil {
		return it, err
	}
	c.put(k, it)
	return it, nil
}
