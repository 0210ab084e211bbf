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

// prepare returns the prepared item for raw under p, from the cache when the same bytes
// were prepared by the same processor before.
func (c *mediaCache) prepare(p *media.Processor, raw []byte) (media.Item, error) {
	sum := sha256.Sum256(raw)
	k := mediaKey{proc: p, hash: hex.EncodeToString(sum[:])}
	c.mu.Lock()
	if it, ok := c.lru.Get(k); ok {
		c.hits++
		c.mu.Unlock()
		return it, nil
	}
	c.mu.Unlock()
	it, err := p.ProcessImage(raw)
	if err != nil || itemBytes(it) > c.max {
		return it, err
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
	return it, nil
}
