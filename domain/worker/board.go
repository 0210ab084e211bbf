package worker

import (
	"sync"
	"weak"
)

// LoadBoard keeps a fixed list of workers ordered by in-flight load (Live.Load), so that
// the least-loaded worker and the sum of the loads are read in O(1) whatever the list's
// length: each worker's Hold and Unhold move it in an indexed binary heap in O(log n),
// instead of every selection reading every worker. Among workers with the same load, Min
// returns the one with the smallest tie value (SetTie, 0 until set), then the lowest index:
// a policy that sets its own tie-break (cache_aware: the picks it made per worker) gets
// exactly the order it would get from reading every worker.
//
// A board is built for one candidate list (a selection view's prefills or one pairing
// group's decodes) and answers for exactly that slice (For). It follows loads until Close,
// or until it is garbage: workers reference their boards weakly, so a board dropped with its
// view stops costing anything once collected. Safe for concurrent use.
type LoadBoard struct {
	ws    []*Live
	byURL map[string]int32

	mu     sync.Mutex
	closed bool
	load   []int64  // entry → load as last synced
	tie    []uint64 // entry → tie value (SetTie)
	heap   []int32  // entries, a binary min-heap by (load, tie, entry)
	pos    []int32  // entry → its index in heap
	sum    int64    // Σ loads as last synced
}

// boardRef is one board a Live is listed on (weakly), and its entry there.
type boardRef struct {
	b weak.Pointer[LoadBoard]
	i int32
}

// NewLoadBoard builds a board over ws (in that order; the board keeps the slice, so the
// caller must not change it) and attaches it to each worker. O(len(ws) log len(ws)).
func NewLoadBoard(ws []*Live) *LoadBoard {
	n := len(ws)
	b := &LoadBoard{
		ws: ws, byURL: make(map[string]int32, n),
		load: make([]int64, n), tie: make([]uint64, n), heap: make([]int32, n), pos: make([]int32, n),
	}
	for i, w := range ws {
		b.byURL[w.URL] = int32(i)
		b.heap[i], b.pos[i] = int32(i), int32(i) // all at load 0, tie 0: ordered by entry
	}
	wp := weak.Make(b)
	for i, w := range ws {
		w.attach(boardRef{b: wp, i: int32(i)})
	}
	// Loads read after the board is published on every worker: a Hold that did not see the
	// board added its request before this read (atomics are sequentially consistent), one
	// that saw it syncs the entry itself; sync is idempotent.
	for i := range ws {
		b.sync(int32(i))
	}
	return b
}

// For reports whether b is the board of exactly the slice c (same backing array and length).
func (b *LoadBoard) For(c []*Live) bool {
	return b != nil && len(c) == len(b.ws) && (len(c) == 0 || &c[0] == &b.ws[0])
}

// Min returns the index of the least-loaded worker (ties: the smallest tie value, then the
// lowest index) and the sum of all loads, in O(1). ok is false for an empty or closed board.
func (b *LoadBoard) Min() (i int, sum int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || len(b.ws) == 0 {
		return -1, 0, false
	}
	return int(b.heap[0]), b.sum, true
}

// SetTie sets the tie value of the worker at index i (smaller goes first among equal
// loads), in O(log n). An index out of range is ignored.
func (b *LoadBoard) SetTie(i int, v uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || i < 0 || i >= len(b.ws) || b.tie[i] == v {
		return
	}
	b.tie[i] = v
	b.fix(b.pos[i])
}

// Index returns the index of the worker with url, or -1.
func (b *LoadBoard) Index(url string) int {
	if i, ok := b.byURL[url]; ok {
		return int(i)
	}
	return -1
}

// Closed reports whether Close was called.
func (b *LoadBoard) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close stops the board following loads and detaches it from its workers; Min reports
// !ok afterwards. Idempotent.
func (b *LoadBoard) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	wp := weak.Make(b)
	for _, w := range b.ws {
		w.detach(wp)
	}
}

// sync moves entry i to its worker's current load. Idempotent: it reads the load, so a sync
// that races with another Hold only ever moves the entry to a load the worker had.
func (b *LoadBoard) sync(i int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	load := max(b.ws[i].Load(), 0)
	if load == b.load[i] {
		return
	}
	b.sum += load - b.load[i]
	b.load[i] = load
	b.fix(b.pos[i])
}

// less orders entries by (load, tie, entry).
func (b *LoadBoard) less(x, y int32) bool {
	if b.load[x] != b.load[y] {
		return b.load[x] < b.load[y]
	}
	if b.tie[x] != b.tie[y] {
		return b.tie[x] < b.tie[y]
	}
	return x < y
}

// fix restores the heap order around heap index k after its entry's key changed.
func (b *LoadBoard) fix(k int32) {
	h := b.heap
	for k > 0 { // up
		p := (k - 1) / 2
		if !b.less(h[k], h[p]) {
			break
		}
		b.swap(k, p)
		k = p
	}
	n := int32(len(h))
	for { // down
		l := 2*k + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && b.less(h[r], h[l]) {
			m = r
		}
		if !b.less(h[m], h[k]) {
			return
		}
		b.swap(k, m)
		k = m
	}
}

func (b *LoadBoard) swap(x, y int32) {
	h := b.heap
	h[x], h[y] = h[y], h[x]
	b.pos[h[x]], b.pos[h[y]] = x, y
}

// attach lists the worker on a board (copy on write: Hold reads the list without a lock),
// dropping boards that were collected.
func (l *Live) attach(r boardRef) {
	l.boardMu.Lock()
	defer l.boardMu.Unlock()
	l.setBoards(r.b, &r)
}

// detach takes the worker off board wp, dropping boards that were collected.
func (l *Live) detach(wp weak.Pointer[LoadBoard]) {
	l.boardMu.Lock()
	defer l.boardMu.Unlock()
	l.setBoards(wp, nil)
}

// setBoards publishes the worker's board list without wp's entry and the collected boards,
// plus add when not nil. Call it with boardMu held.
func (l *Live) setBoards(wp weak.Pointer[LoadBoard], add *boardRef) {
	var old []boardRef
	if p := l.boards.Load(); p != nil {
		old = *p
	}
	refs := make([]boardRef, 0, len(old)+1)
	for _, r := range old {
		if r.b != wp && r.b.Value() != nil {
			refs = append(refs, r)
		}
	}
	if add != nil {
		refs = append(refs, *add)
	}
	if len(refs) == 0 {
		l.boards.Store(nil)
		return
	}
	l.boards.Store(&refs)
}

// syncBoards moves the worker on every board it is listed on to its current load.
func (l *Live) syncBoards() {
	p := l.boards.Load()
	if p == nil {
		return
	}
	for _, r := range *p {
		if b := r.b.Value(); b != nil {
			b.sync(r.i)
		}
	}
}
