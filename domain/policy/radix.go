package policy

import (
	"container/heap"
	"strings"
)

// radixTree is cache_aware's approximate radix tree over request text for one model
// (smg-spec.md §5.5; SGLang's approximate prefix tree). Edges are byte strings; every node
// records, per tenant (worker URL), the logical time of the last insert through it. A
// node's tenants are a subset of its parent's, because an insert stamps the whole path.
// Not safe for concurrent use: cacheAwareTree holds the lock.
type radixTree struct {
	root  node
	clock uint64 // logical time, +1 per insert

	ids       map[string]int32 // tenant URL → id
	names     []string         // id → URL, "" when free
	free      []int32          // reusable ids
	size      []int            // id → characters (bytes) stamped with that tenant
	processed []uint64         // id → inserts made for it (min-load tie-break)
	total     int              // characters (bytes) stored in the tree
}

type node struct {
	text     string // edge label from the parent ("" for the root)
	parent   *node
	children []*node // sorted by text[0]
	tenants  []stamp
}

type stamp struct {
	tenant int32
	at     uint64
}

func newRadixTree() *radixTree { return &radixTree{ids: map[string]int32{}} }

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

func lcp(a, b string) int {
	n := min(len(a), len(b))
	i := 0
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
	t.clock++
	now := t.clock
	t.processed[id]++
	n, i := &t.root, 0
	for i < len(text) {
		pos, c := n.child(text[i])
		if c == nil {
			leaf := &node{text: strings.Clone(text[i:]), parent: n, tenants: []stamp{{id, now}}}
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

// split cuts child c (at index pos of parent p) after k bytes and returns the new upper node,
// which inherits c's tenants. Sizes do not change: the same characters, in two nodes.
func (t *radixTree) split(p *node, pos int, c *node, k int) *node {
	mid := &node{
		text:     c.text[:k],
		parent:   p,
		children: []*node{c},
		tenants:  append([]stamp(nil), c.tenants...),
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
			p.children = append(p.children[:i], p.children[i+1:]...)
			break
		}
	}
	var drop func(*node)
	drop = func(x *node) {
		t.total -= len(x.text)
		for _, c := range x.children {
			drop(c)
		}
	}
	drop(n)
	n.parent = nil
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

// evict trims every tenant holding more than maxSize characters by removing its least
// recently used leaves (parents become leaves as their children go) until it fits.
func (t *radixTree) evict(maxSize int) {
	over := map[int32]bool{}
	for id, s := range t.size {
		if s > maxSize && t.names[id] != "" {
			over[int32(id)] = true
		}
	}
	if len(over) == 0 {
		return
	}
	var h leafHeap
	stack := append([]*node(nil), t.root.children...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = append(stack[:len(stack)-1], n.children...)
		for _, s := range n.tenants {
			if over[s.tenant] && n.isLeafFor(s.tenant) {
				h = append(h, leaf{n, s.tenant, s.at})
			}
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		e := heap.Pop(&h).(leaf)
		if t.size[e.tenant] <= maxSize {
			continue
		}
		s := e.n.stampIndex(e.tenant)
		if s < 0 {
			continue
		}
		t.removeStamp(e.n, s)
		p := e.n.parent
		if len(e.n.tenants) == 0 {
			t.detach(e.n)
		}
		if p != nil && p != &t.root {
			if ps := p.stampIndex(e.tenant); ps >= 0 && p.isLeafFor(e.tenant) {
				heap.Push(&h, leaf{p, e.tenant, p.tenants[ps].at})
			}
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
	t.free = append(t.free, id)
}

type leaf struct {
	n      *node
	tenant int32
	at     uint64
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
