package policy

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/smg-go/smg/domain/worker"
)

// radixTree is cache_aware's approximate radix tree over request text for one model
// (smg-spec.md §5.5; SGLang's approximate prefix tree). Edges are byte strings; every node
// records, per tenant (worker URL), the logical time of the last insert through it. A
// node's tenants are a subset of its parent's, because an insert stamps the whole path.
// Not safe for concurrent use: cacheAwareTree holds the lock.
//
// Layout, for a few bytes per cached character: edge text lives in the tree's textArena,
// outside the garbage-collected heap (a split shares the bytes, an edge's removal frees them,
// compactSome moves edges out of sparse chunks); a stamp is 8 bytes (tenant id, 32-bit
// logical time); a leaf has no children slice. See BenchmarkCacheAwareTreeMemory for the
// figures.
type radixTree struct {
	root  node
	clock uint32     // logical time, +1 per insert; rebased before it wraps
	arena *textArena // every edge's bytes

	ids       map[string]int32 // tenant URL → id
	names     []string         // id → URL, "" when free
	free      []int32          // reusable ids
	size      []int            // id → characters (bytes) stamped with that tenant
	processed []uint64         // id → inserts made for it (min-load tie-break)
	total     int              // characters (bytes) stored in the tree
	marks     []bool           // id → scratch flag, all false between uses (leastLoadedTenant)

	boards map[*worker.LoadBoard]*boardSlots // the load boards picks were made on (board.go)
}

// scratchMarks returns the id-indexed scratch flags, one per tenant id ever assigned, all
// false; the caller sets and clears the ones it uses under the tree's lock.
func (t *radixTree) scratchMarks() []bool {
	if len(t.marks) < len(t.names) {
		t.marks = append(t.marks, make([]bool, len(t.names)-len(t.marks))...)
	}
	return t.marks
}

type node struct {
	text     string // edge label from the parent ("" for the root), in the tree's arena
	parent   *node
	children []*node // sorted by text[0]; nil for a leaf
	tenants  []stamp
}

// stamp is one tenant's last insert through a node.
type stamp struct {
	tenant int32
	at     uint32 // radixTree.clock at the insert
}

// clockRebase is how far rebase moves every stamp back when the clock is about to wrap:
// stamps older than that many inserts collapse to 0 (the oldest), newer ones keep their order.
const clockRebase = 1 << 31

func newRadixTree() *radixTree {
	t := &radixTree{ids: map[string]int32{}}
	attachArena(t)
	return t
}

// tenantID returns url's id, allocating one on first use.
func (t *radixTree) tenantID(url string) int32 {
	if id, ok := t.ids[url]; ok {
		return id
	}
	var id int32
	if n := len(t.free); n > 0 {
		id, t.free = t.free[n-1], t.free[:n-1]
		t.names[id] = url
	} else {
		id = int32(len(t.names))
		t.names = append(t.names, url)
		t.size = append(t.size, 0)
		t.processed = append(t.processed, 0)
	}
	t.ids[url] = id
	return id
}

func (n *node) child(b byte) (int, *node) {
	cs := n.children
	lo, hi := 0, len(cs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cs[m].text[0] < b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(cs) && cs[lo].text[0] == b {
		return lo, cs[lo]
	}
	return lo, nil
}

func (n *node) stampIndex(id int32) int {
	for i, s := range n.tenants {
		if s.tenant == id {
			return i
		}
	}
	return -1
}

// lcp returns the length of the longest common prefix of a and b, comparing eight bytes
// at a time.
func lcp(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64([]byte(a[i : i+8]))
		y := binary.LittleEndian.Uint64([]byte(b[i : i+8]))
		if d := x ^ y; d != 0 {
			return i + bits.TrailingZeros64(d)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// match returns the length of the longest prefix of text stored in the tree and the deepest
// node the match reached (a partial edge match counts, and returns that child).
func (t *radixTree) match(text string) (int, *node) {
	n, i := &t.root, 0
	for i < len(text) {
		_, c := n.child(text[i])
		if c == nil {
			break
		}
		k := lcp(c.text, text[i:])
		i += k
		n = c
		if k < len(c.text) {
			break
		}
	}
	return i, n
}

// insert stores text for tenant id, stamping every node on its path with a fresh time.
func (t *radixTree) insert(text string, id int32) {
	if t.clock == math.MaxUint32 {
		t.rebase()
	}
	t.clock++
	now := t.clock
	t.processed[id]++
	t.tieOnBoards(id)
	n, i := &t.root, 0
	for i < len(text) {
		pos, c := n.child(text[i])
		if c == nil {
			leaf := &node{text: t.arena.alloc(text[i:]), parent: n, tenants: []stamp{{id, now}}}
			n.children = append(n.children, nil)
			copy(n.children[pos+1:], n.children[pos:])
			n.children[pos] = leaf
			t.size[id] += len(leaf.text)
			t.total += len(leaf.text)
			return
		}
		k := lcp(c.text, text[i:])
		if k < len(c.text) {
			c = t.split(n, pos, c, k)
		}
		i += k
		if s := c.stampIndex(id); s >= 0 {
			c.tenants[s].at = now
		} else {
			c.tenants = append(c.tenants, stamp{id, now})
			t.size[id] += len(c.text)
		}
		n = c
	}
}

// rebase moves every stamp and the clock back by clockRebase (stamps older than that become
// 0). An eviction plan made before sees changed times and skips those entries: it evicts less.
func (t *radixTree) rebase() {
	var walk func(*node)
	walk = func(n *node) {
		for i := range n.tenants {
			n.tenants[i].at -= min(n.tenants[i].at, clockRebase)
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(&t.root)
	t.clock -= clockRebase
}

// split cuts child c (at index pos of parent p) after k bytes and returns the new upper node,
// which inherits c's tenants. Sizes do not change: the same characters (the same arena
// bytes), in two nodes.
func (t *radixTree) split(p *node, pos int, c *node, k int) *node {
	mid := &node{
		text:     c.text[:k],
		parent:   p,
		children: []*node{c},
		tenants:  slices.Clone(c.tenants),
	}
	c.text = c.text[k:]
	c.parent = mid
	p.children[pos] = mid
	return mid
}

// detach removes n (which has no tenants, hence no tenanted descendants) and its subtree.
func (t *radixTree) detach(n *node) {
	p := n.parent
	for i, c := range p.children {
		if c == n {
			p.children = slices.Delete(p.children, i, i+1)
			break
		}
	}
	if len(p.children) == 0 {
		p.children = nil // a leaf again: no backing array
	}
	var drop func(*node)
	drop = func(x *node) {
		t.total -= len(x.text)
		t.arena.free(x.text)
		x.text = ""
		x.parent = nil // marks x removed for eviction plans made earlier
		for _, c := range x.children {
			drop(c)
		}
	}
	drop(n)
}

// removeStamp drops tenant id from n and accounts its size.
func (t *radixTree) removeStamp(n *node, s int) {
	id := n.tenants[s].tenant
	n.tenants = append(n.tenants[:s], n.tenants[s+1:]...)
	t.size[id] -= len(n.text)
}

// isLeafFor reports whether no child of n carries tenant id.
func (n *node) isLeafFor(id int32) bool {
	for _, c := range n.children {
		if c.stampIndex(id) >= 0 {
			return false
		}
	}
	return true
}

// maxTenantSize returns the largest tenant's share of the tree, in bytes.
func (t *radixTree) maxTenantSize() int {
	m := 0
	for id, s := range t.size {
		if t.names[id] != "" {
			m = max(m, s)
		}
	}
	return m
}

// compaction is a pass moving the edges out of the arena's sparse chunks, so that they are
// unmapped. Like an eviction pass it runs in batches with the lock released in between: a
// node split meanwhile may keep a retired chunk referenced until a later pass, which is safe
// (a chunk is unmapped only when nothing references it).
type compaction struct {
	stack []*node
}

// planCompaction returns a compaction pass when the arena is fragmented, else nil.
func (t *radixTree) planCompaction() *compaction {
	if !t.arena.fragmented() || !t.arena.retireSparse() {
		return nil
	}
	return &compaction{stack: append([]*node(nil), t.root.children...)}
}

// compactSome moves the edges of up to budget nodes and reports whether the pass is done.
func (t *radixTree) compactSome(c *compaction, budget int) bool {
	for ; budget > 0 && len(c.stack) > 0; budget-- {
		n := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		if n.parent == nil {
			continue // removed since it was pushed
		}
		n.text = t.arena.moveIfRetired(n.text)
		c.stack = append(c.stack, n.children...)
	}
	return len(c.stack) == 0
}

// evictPlan is an eviction pass in progress (smg-spec.md §5.5 step 7). scanSome walks the
// tree in batches collecting the leaves of every tenant over budget; evictSome then removes
// them oldest first. Both re-check what they touch, so the caller may release the tree lock
// between batches: nodes removed meanwhile are skipped, leaves used or extended meanwhile are
// kept, and nodes added meanwhile are recent and not eviction candidates anyway.
type evictPlan struct {
	maxSize  int
	over     []bool   // by tenant id: over budget when the plan was made
	stack    []*node  // DFS frontier of the scan
	chunks   [][]leaf // leaves collected by the scan, in fixed-size chunks (no big copies under the lock)
	leaves   []leaf   // all chunks, sorted by stamp time, once the scan is done
	next     int      // next entry of leaves
	promoted leafHeap
}

// planEviction returns a pass that trims every tenant holding more than maxSize characters,
// or nil when none does.
func (t *radixTree) planEviction(maxSize int) *evictPlan {
	over := make([]bool, len(t.size))
	anyOver := false
	for id, s := range t.size {
		if s > maxSize && t.names[id] != "" {
			over[id], anyOver = true, true
		}
	}
	if !anyOver {
		return nil
	}
	return &evictPlan{maxSize: maxSize, over: over, stack: append([]*node(nil), t.root.children...)}
}

// scanSome visits up to budget nodes of the plan's traversal and reports whether the scan is
// finished.
func (t *radixTree) scanSome(p *evictPlan, budget int) bool {
	for ; budget > 0 && len(p.stack) > 0; budget-- {
		n := p.stack[len(p.stack)-1]
		p.stack = p.stack[:len(p.stack)-1]
		if n.parent == nil {
			continue // removed since it was pushed
		}
		p.stack = append(p.stack, n.children...)
		for _, s := range n.tenants {
			if int(s.tenant) < len(p.over) && p.over[s.tenant] && n.isLeafFor(s.tenant) {
				if k := len(p.chunks) - 1; k < 0 || len(p.chunks[k]) == cap(p.chunks[k]) {
					p.chunks = append(p.chunks, make([]leaf, 0, 4096))
				}
				k := len(p.chunks) - 1
				p.chunks[k] = append(p.chunks[k], leaf{n, s.tenant, s.at})
			}
		}
	}
	if len(p.stack) > 0 {
		return false
	}
	p.stack = nil
	return true
}

// order sorts the collected leaves oldest first; call it once the scan is finished. It reads
// only the plan, so it needs no tree lock.
func (p *evictPlan) order() {
	p.leaves = slices.Concat(p.chunks...)
	p.chunks = nil
	slices.SortFunc(p.leaves, func(a, b leaf) int { return cmp.Compare(a.at, b.at) })
}

// evictSome removes up to budget LRU (tenant, leaf) entries of the plan, re-validating each
// against changes made while the lock was released (a leaf used or extended since is kept),
// and reports whether the pass is finished.
func (t *radixTree) evictSome(p *evictPlan, budget int) bool {
	for ; budget > 0; budget-- {
		e, ok := p.pop()
		if !ok {
			return true
		}
		id := e.tenant
		if t.size[id] <= p.maxSize || e.n.parent == nil {
			continue // tenant fits now, or the node was removed
		}
		s := e.n.stampIndex(id)
		if s < 0 || e.n.tenants[s].at != e.at || !e.n.isLeafFor(id) {
			continue // purged, used since the plan, or extended since
		}
		t.removeStamp(e.n, s)
		parent := e.n.parent
		if len(e.n.tenants) == 0 {
			t.detach(e.n)
		}
		if parent != &t.root {
			if ps := parent.stampIndex(id); ps >= 0 && parent.isLeafFor(id) {
				heap.Push(&p.promoted, leaf{parent, id, parent.tenants[ps].at})
			}
		}
	}
	return p.next >= len(p.leaves) && len(p.promoted) == 0
}

// pop returns the oldest remaining entry of the plan: the sorted leaves merged with the
// promoted parents.
func (p *evictPlan) pop() (leaf, bool) {
	hasLeaf, hasPromoted := p.next < len(p.leaves), len(p.promoted) > 0
	switch {
	case hasLeaf && (!hasPromoted || p.leaves[p.next].at <= p.promoted[0].at):
		p.next++
		return p.leaves[p.next-1], true
	case hasPromoted:
		return heap.Pop(&p.promoted).(leaf), true
	}
	return leaf{}, false
}

// evict runs a whole eviction pass at once.
func (t *radixTree) evict(maxSize int) {
	if p := t.planEviction(maxSize); p != nil {
		for !t.scanSome(p, math.MaxInt) {
		}
		p.order()
		for !t.evictSome(p, math.MaxInt) {
		}
	}
}

// removeTenant drops url from every node and frees its id.
func (t *radixTree) removeTenant(url string) {
	id, ok := t.ids[url]
	if !ok {
		return
	}
	var walk func(*node)
	walk = func(n *node) {
		for i := 0; i < len(n.children); {
			c := n.children[i]
			s := c.stampIndex(id)
			if s < 0 {
				i++
				continue
			}
			t.removeStamp(c, s)
			if len(c.tenants) == 0 {
				t.detach(c) // removes children[i]; do not advance
				continue
			}
			walk(c)
			i++
		}
	}
	walk(&t.root)
	delete(t.ids, url)
	t.names[id] = ""
	t.size[id] = 0
	t.processed[id] = 0
	t.forgetOnBoards(id)
	t.free = append(t.free, id)
}

type leaf struct {
	n      *node
	tenant int32
	at     uint32
}

type leafHeap []leaf

func (h leafHeap) Len() int           { return len(h) }
func (h leafHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h leafHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *leafHeap) Push(x any)        { *h = append(*h, x.(leaf)) }
func (h *leafHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
