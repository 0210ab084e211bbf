package policy

import (
	"hash/maphash"
	"slices"
	"sort"
	"sync"

	"github.com/smg-go/smg/domain/worker"
)

// hash64 is FNV-1a 64 followed by the murmur3 fmix64 finalizer: deterministic across
// processes and releases (so gateway replicas agree on ring positions), well spread for
// near-identical inputs such as "url#1", "url#2". Stdlib-only stand-in for SMG's blake3
// (smg-spec.md §5.7); positions therefore differ from SMG's, the behaviour does not.
func hash64(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return fmix64(h)
}

func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb3fe1a85ec53
	h ^= h >> 33
	return h
}

// ring is a consistent-hash ring: vnodes positions per unique worker URL at
// hash64("<url>#<i>"), sorted (smg-spec.md §5.7). Immutable once built.
type ring struct {
	points []uint64 // sorted positions
	owners []int32  // owners[k] indexes urls for points[k]
	urls   []string // sorted, unique
}

func buildRing(c []*worker.Live, vnodes int) *ring {
	urls := make([]string, 0, len(c))
	for _, w := range c {
		urls = append(urls, w.URL)
	}
	slices.Sort(urls)
	urls = slices.Compact(urls)
	r := &ring{urls: urls}
	type pt struct {
		pos   uint64
		owner int32
	}
	pts := make([]pt, 0, len(urls)*vnodes)
	var buf []byte
	for o, u := range urls {
		for i := range vnodes {
			buf = append(buf[:0], u...)
			buf = append(buf, '#')
			buf = appendInt(buf, i)
			pts = append(pts, pt{hash64(string(buf)), int32(o)})
		}
	}
	slices.SortFunc(pts, func(a, b pt) int {
		switch {
		case a.pos < b.pos:
			return -1
		case a.pos > b.pos:
			return 1
		}
		return int(a.owner - b.owner)
	})
	r.points = make([]uint64, len(pts))
	r.owners = make([]int32, len(pts))
	for k, p := range pts {
		r.points[k], r.owners[k] = p.pos, p.owner
	}
	return r
}

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// walk visits the distinct workers clockwise from pos (the first point >= pos, wrapping) and
// returns the candidate index of the first one present in c for which accept returns true,
// or -1. accept may be nil (accept all).
func (r *ring) walk(pos uint64, c []*worker.Live, accept func(int) bool) int {
	if len(r.points) == 0 {
		return -1
	}
	start := sort.Search(len(r.points), func(k int) bool { return r.points[k] >= pos })
	var seenBuf [64]bool
	var seen []bool
	if len(r.urls) > len(seenBuf) {
		seen = make([]bool, len(r.urls))
	} else {
		seen = seenBuf[:len(r.urls)]
	}
	left := len(r.urls)
	for k := 0; k < len(r.points) && left > 0; k++ {
		o := r.owners[(start+k)%len(r.points)]
		if seen[o] {
			continue
		}
		seen[o] = true
		left--
		i := indexOfURL(c, r.urls[o])
		if i >= 0 && (accept == nil || accept(i)) {
			return i
		}
	}
	return -1
}

// ringCache keeps one ring per distinct candidate set. A ring over exactly the candidates
// maps a key as SMG's per-model ring does when it skips ineligible workers, because a URL's
// positions do not depend on the other members. The decode leg sees a few distinct sets
// (one per pairing class); the cache is dropped whole when it reaches maxRings.
type ringCache struct {
	vnodes int
	seed   maphash.Seed

	mu    sync.RWMutex
	rings map[uint64]*ring
}

const maxRings = 64

func newRingCache(vnodes int) *ringCache {
	return &ringCache{vnodes: vnodes, seed: maphash.MakeSeed(), rings: map[uint64]*ring{}}
}

// get returns the ring for the candidate set c (order-independent), building it on a miss.
// A fingerprint collision can only make ring.walk skip foreign URLs, never return a
// non-candidate.
func (rc *ringCache) get(c []*worker.Live) *ring {
	var sum, xor uint64
	for _, w := range c {
		h := maphash.String(rc.seed, w.URL)
		sum += h
		xor ^= fmix64(h)
	}
	fp := sum ^ (xor<<1 | xor>>63) ^ uint64(len(c))
	rc.mu.RLock()
	r := rc.rings[fp]
	rc.mu.RUnlock()
	if r != nil {
		return r
	}
	r = buildRing(c, rc.vnodes)
	rc.mu.Lock()
	if len(rc.rings) >= maxRings {
		clear(rc.rings)
	}
	rc.rings[fp] = r
	rc.mu.Unlock()
	return r
}

// RemoveWorker drops every cached ring (they are rebuilt on demand).
func (rc *ringCache) RemoveWorker(string) {
	rc.mu.Lock()
	clear(rc.rings)
	rc.mu.Unlock()
}
