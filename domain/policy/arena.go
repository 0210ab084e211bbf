package policy

import (
	"runtime"
	"slices"
	"unsafe"
)

// textArena holds the edge text of one radix tree outside the garbage-collected heap, in
// chunks mapped from the OS (arena_mmap.go; plain heap slices where mmap is not available).
// The bulk of a big tree is its text: kept off the heap, it does not raise the collector's
// target (with --gogc 400 every live heap byte allows four more of garbage before a
// collection), and the collector never scans it.
//
// Edges are strings pointing into a chunk. A chunk is filled by bumping an offset and counts
// the bytes nodes still reference; a chunk nothing references is returned to the OS, and
// compact moves the live edges out of sparse chunks so that they empty. Not safe for
// concurrent use (the tree's lock covers it).
type textArena struct {
	chunks []*chunk // sorted by base address
	cur    *chunk   // the chunk new edges go to (nil before the first)
	mapped int      // bytes mapped, all chunks
	live   int      // bytes referenced by edges
}

type chunk struct {
	mem     []byte
	base    uintptr
	used    int  // bump offset
	live    int  // bytes referenced by edges
	retired bool // compact is moving its edges out: no new edges
}

// chunkSize is the size of a shared chunk; an edge longer than chunkSize/4 gets a chunk of
// its own, returned to the OS when the edge goes.
const chunkSize = 1 << 20

func newTextArena() *textArena { return &textArena{} }

// alloc returns a copy of s in the arena.
func (a *textArena) alloc(s string) string {
	n := len(s)
	if n == 0 {
		return ""
	}
	var c *chunk
	if n > chunkSize/4 {
		c = a.newChunk(n)
	} else {
		if a.cur == nil || a.cur.used+n > len(a.cur.mem) {
			a.cur = a.newChunk(chunkSize)
		}
		c = a.cur
	}
	p := c.mem[c.used : c.used+n : c.used+n]
	copy(p, s)
	c.used += n
	c.live += n
	a.live += n
	return unsafe.String(&p[0], n)
}

// free releases s, an edge returned by alloc (or a substring of one that no other edge
// counts). A chunk left with no references is unmapped, or rewound if it is the current one.
func (a *textArena) free(s string) {
	if len(s) == 0 {
		return
	}
	c := a.find(uintptr(unsafe.Pointer(unsafe.StringData(s))))
	c.live -= len(s)
	a.live -= len(s)
	if c.live > 0 {
		return
	}
	if c == a.cur {
		c.used = 0
		return
	}
	a.release(c)
}

// find returns the chunk holding the byte at address p.
func (a *textArena) find(p uintptr) *chunk {
	i, _ := slices.BinarySearchFunc(a.chunks, p, func(c *chunk, p uintptr) int {
		switch {
		case c.base+uintptr(len(c.mem)) <= p:
			return -1
		case c.base > p:
			return 1
		}
		return 0
	})
	return a.chunks[i]
}

func (a *textArena) newChunk(n int) *chunk {
	mem := mapChunk(n)
	c := &chunk{mem: mem, base: uintptr(unsafe.Pointer(unsafe.SliceData(mem)))}
	i, _ := slices.BinarySearchFunc(a.chunks, c.base, func(x *chunk, b uintptr) int {
		switch {
		case x.base < b:
			return -1
		case x.base > b:
			return 1
		}
		return 0
	})
	a.chunks = slices.Insert(a.chunks, i, c)
	a.mapped += len(mem)
	return c
}

func (a *textArena) release(c *chunk) {
	i := slices.Index(a.chunks, c)
	a.chunks = slices.Delete(a.chunks, i, i+1)
	a.mapped -= len(c.mem)
	unmapChunk(c.mem)
	c.mem = nil
}

// fragmented reports whether enough mapped memory is unreferenced for compact to be worth
// a walk of the tree: over a third of the mapping, and more than two chunks.
func (a *textArena) fragmented() bool {
	waste := a.mapped - a.live
	return waste > 2*chunkSize && waste > a.mapped/3
}

// retireSparse marks the chunks less than half referenced (not the current one) as retired
// and reports whether there is any: their edges are to be moved by moveIfRetired. An edge's
// own chunk is sparse when a split left only part of it referenced.
func (a *textArena) retireSparse() bool {
	found := false
	for _, c := range a.chunks {
		if c != a.cur && c.live < len(c.mem)/2 {
			c.retired, found = true, true
		}
	}
	return found
}

// moveIfRetired returns s, copied to a live chunk if it lies in a retired one (which is
// unmapped once its last edge has moved).
func (a *textArena) moveIfRetired(s string) string {
	if len(s) == 0 || !a.find(uintptr(unsafe.Pointer(unsafe.StringData(s)))).retired {
		return s
	}
	out := a.alloc(s)
	a.free(s)
	return out
}

// releaseAll unmaps every chunk; the arena is unusable afterwards. The tree calls it through
// runtime.AddCleanup once it is unreachable.
func (a *textArena) releaseAll() {
	for _, c := range a.chunks {
		unmapChunk(c.mem)
		c.mem = nil
	}
	a.chunks, a.cur, a.mapped, a.live = nil, nil, 0, 0
}

// attachArena gives t an arena that is unmapped when t becomes unreachable.
func attachArena(t *radixTree) {
	t.arena = newTextArena()
	runtime.AddCleanup(t, (*textArena).releaseAll, t.arena)
}
