package worker

import (
	"sync"
	"weak"
)

// maxBoardLevel caps the load levels a LoadBoard keeps lists for: a worker with more
// in-flight requests sits in the top list (its true load still counts in Sum). Only the
// order among workers that all carry more than this many requests is lost.
const maxBoardLevel = 1 << 16

// LoadBoard keeps a fixed list of workers ordered by in-flight load (Live.Load), so that
// the least-loaded worker and the sum of the loads are read in O(1) whatever the list's
// length: each worker's Hold and Unhold move it between per-load lists in O(1), instead of
// every selection reading every worker. Among workers with the same load, Min returns the
// one that has had that load longest (a freshly built board: list order), so idle workers
// are taken in turn.
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
	level  []int32 // entry → load level it is listed at
	exact  []int64 // entry → load as last synced (level is it capped at maxBoardLevel)
	prev   []int32 // entry → previous entry at its level, -1 at the head
	next   []int32 // entry → next entry at its level, -1 at the tail
	head   []int32 // level → first entry, -1 when empty
	tail   []int32 // level → last entry
	min    int32   // lowest non-empty level
	sum    int64   // Σ loads as last synced
}

// boardRef is one board a Live is listed on (weakly), and its entry there.
type boardRef struct {
	b weak.Pointer[LoadBoard]
	i int32
}

// NewLoadBoard builds a board over ws (in that order; the board keeps the slice, so the
// caller must not change it) and attaches it to each worker. O(len(ws)).
func NewLoadBoard(ws []*Live) *LoadBoard {
	n := len(ws)
	b := &LoadBoard{
		ws: ws, byURL: make(map[string]int32, n),
		level: make([]int32, n), exact: make([]int64, n), prev: make([]int32, n), next: make([]int32, n),
		head: []int32{-1}, tail: []int32{-1},
	}
	for i, w := range ws {
		b.byURL[w.URL] = int32(i)
		b.prev[i], b.next[i] = -1, -1
		b.push(int32(i), 0)
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

// Min returns the index of the least-loaded worker (ties: the longest at that load) and the
// sum of all loads, in O(1). ok is false for an empty or closed board.
func (b *LoadBoard) Min() (i int, sum int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || len(b.ws) == 0 {
		return -1, 0, false
	}
	return int(b.head[b.min]), b.sum, true
}

// Index returns the index of the worker with url, or -1.
func (b *LoadBoard) Index(url string) int {
	if i, ok := b.byURL[url]; ok {
		return int(i)
	}
	return -1
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
	nl := int32(min(load, maxBoardLevel))
	ol := b.level[i]
	b.sum += load - b.exact[i]
	b.exact[i] = load
	if nl == ol {
		return
	}
	b.unlink(i)
	b.push(i, nl)
	switch {
	case nl < b.min:
		b.min = nl
	case ol == b.min && b.head[ol] < 0:
		for l := ol + 1; l <= nl; l++ {
			if b.head[l] >= 0 {
				b.min = l
				break
			}
		}
	}
}

// push appends entry i at level l's tail and records its level.
func (b *LoadBoard) push(i, l int32) {
	for int(l) >= len(b.head) {
		b.head, b.tail = append(b.head, -1), append(b.tail, -1)
	}
	b.level[i] = l
	b.prev[i], b.next[i] = b.tail[l], -1
	if t := b.tail[l]; t >= 0 {
		b.next[t] = i
	} else {
		b.head[l] = i
	}
	b.tail[l] = i
}

// unlink removes entry i from its level's list.
func (b *LoadBoard) unlink(i int32) {
	l, p, n := b.level[i], b.prev[i], b.next[i]
	if p >= 0 {
		b.next[p] = n
	} else {
		b.head[l] = n
	}
	if n >= 0 {
		b.prev[n] = p
	} else {
		b.tail[l] = p
	}
	b.prev[i], b.next[i] = -1, -1
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
