package policy

import "github.com/smg-go/smg/domain/worker"

// A cache_aware tree and the load boards its picks are made on (SelectBoard). For each board
// the tree keeps the board index of each tenant id, and keeps each listed worker's tie value
// on the board equal to its picks in this tree (radixTree.processed), so the board's
// least-loaded worker is the one Select would find by reading every candidate: lowest
// in-flight load, then fewest picks, then lowest index. Call every method with the tree's
// lock held.

// maxTreeBoards bounds the boards a tree keeps; past it the closed ones are dropped, then all
// (a board used again is set up again, O(n log n)).
const maxTreeBoards = 16

// slotUnknown marks a tenant id whose index on a board was not looked up yet.
const slotUnknown = -2

// boardSlots maps tenant ids to one board's indexes: -1 not listed, slotUnknown not looked up.
type boardSlots struct{ of []int32 }

// useBoard returns b's slots, registering b on first use: its listed workers' tie values
// are set to their picks in this tree. c is b's list.
func (t *radixTree) useBoard(b *worker.LoadBoard, c []*worker.Live) *boardSlots {
	if bs := t.boards[b]; bs != nil {
		return bs
	}
	if len(t.boards) >= maxTreeBoards {
		for ob := range t.boards {
			if ob.Closed() {
				delete(t.boards, ob)
			}
		}
		if len(t.boards) >= maxTreeBoards {
			clear(t.boards)
		}
	}
	if t.boards == nil {
		t.boards = map[*worker.LoadBoard]*boardSlots{}
	}
	bs := &boardSlots{}
	t.boards[b] = bs
	for i, w := range c {
		var picks uint64
		if id, ok := t.ids[w.URL]; ok {
			bs.set(id, int32(i))
			picks = t.processed[id]
		}
		b.SetTie(i, picks)
	}
	return bs
}

// slot returns the index of tenant id's worker on board b (-1 when it is not listed),
// looked up by URL once per id and board.
func (t *radixTree) slot(b *worker.LoadBoard, bs *boardSlots, id int32) int {
	bs.grow(id)
	s := bs.of[id]
	if s == slotUnknown {
		s = int32(b.Index(t.names[id]))
		bs.of[id] = s
	}
	return int(s)
}

// tieOnBoards copies tenant id's picks to its tie value on every board that lists it.
func (t *radixTree) tieOnBoards(id int32) {
	for b, bs := range t.boards {
		if i := t.slot(b, bs, id); i >= 0 {
			b.SetTie(i, t.processed[id])
		}
	}
}

// forgetOnBoards resets freed tenant id on every board: its tie value to 0 (its picks were
// reset) and its index to be looked up again (the id may come back for another URL).
func (t *radixTree) forgetOnBoards(id int32) {
	for b, bs := range t.boards {
		if i := t.slot(b, bs, id); i >= 0 {
			b.SetTie(i, 0)
		}
		bs.of[id] = slotUnknown
	}
}

func (bs *boardSlots) grow(id int32) {
	for int(id) >= len(bs.of) {
		bs.of = append(bs.of, slotUnknown)
	}
}

func (bs *boardSlots) set(id, i int32) {
	bs.grow(id)
	bs.of[id] = i
}
