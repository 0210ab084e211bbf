package worker

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func boardWorkers(n int) []*Live {
	ws := make([]*Live, n)
	for i := range ws {
		ws[i] = NewLive(Worker{URL: fmt.Sprintf("http://w%d:8000", i)}, StatusReady)
	}
	return ws
}

func boardsOf(l *Live) int {
	if p := l.boards.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// requireMatchesLoads checks b against a scan of the workers' loads: Min names the worker
// a scan by (load, tie, index) finds (ties: the tie values set, nil for none), and Sum is
// their total.
func requireMatchesLoads(t *testing.T, b *LoadBoard, ws []*Live, ties []uint64) {
	t.Helper()
	i, sum, ok := b.Min()
	require.True(t, ok)
	want, total := 0, int64(0)
	tie := func(k int) uint64 {
		if ties == nil {
			return 0
		}
		return ties[k]
	}
	for k, w := range ws {
		total += w.Load()
		if l, wl := w.Load(), ws[want].Load(); l < wl || (l == wl && tie(k) < tie(want)) {
			want = k
		}
	}
	require.Equal(t, want, i, "Min is the first by (load, tie, index)")
	require.Equal(t, total, sum)
}

func TestLoadBoardFollowsHoldsUnholdsAndTies(t *testing.T) {
	ws := boardWorkers(37)
	ws[3].Hold() // loads from before the board are read at build
	b := NewLoadBoard(ws)
	requireMatchesLoads(t, b, ws, nil)
	ties := make([]uint64, len(ws))
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		k := r.IntN(len(ws))
		switch w := ws[k]; {
		case r.IntN(4) == 0:
			ties[k] = uint64(r.IntN(5))
			b.SetTie(k, ties[k])
		case w.Load() > 0 && r.IntN(2) == 0:
			w.Unhold()
		default:
			w.Hold()
		}
		requireMatchesLoads(t, b, ws, ties)
	}
}

// With the picks made per worker as the tie value, idle workers are taken in turn.
func TestLoadBoardTakesIdleWorkersInTurn(t *testing.T) {
	ws := boardWorkers(4)
	b := NewLoadBoard(ws)
	picks := make([]uint64, len(ws))
	var got []int
	for range 8 {
		i, _, ok := b.Min()
		require.True(t, ok)
		got = append(got, i)
		ws[i].Hold() // picked: one request in flight...
		picks[i]++
		b.SetTie(i, picks[i])
		ws[i].Unhold() // ...done at once
	}
	require.Equal(t, []int{0, 1, 2, 3, 0, 1, 2, 3}, got)

	ws[1].Hold()
	ws[0].Hold()
	ws[0].Hold()
	i, sum, _ := b.Min()
	require.Equal(t, 2, i, "2 and 3 are idle with two picks each: the lower index")
	require.Equal(t, int64(3), sum)
	b.SetTie(-1, 0) // out of range: ignored, no panic
	b.SetTie(4, 0)
	b.SetTie(2, 9) // 2 now has more picks than 3
	i, _, _ = b.Min()
	require.Equal(t, 3, i)
	b.Close()
	b.SetTie(3, 99) // a closed board ignores ties
	_, _, ok := b.Min()
	require.False(t, ok)
}

func TestLoadBoardForIsTheBuiltSlice(t *testing.T) {
	ws := boardWorkers(3)
	b := NewLoadBoard(ws)
	require.True(t, b.For(ws))
	require.False(t, b.For(ws[:2]))
	require.False(t, b.For(append([]*Live(nil), ws...)))
	var nilBoard *LoadBoard
	require.False(t, nilBoard.For(ws))
	require.Equal(t, 2, b.Index("http://w2:8000"))
	require.Equal(t, -1, b.Index("http://w9:8000"))
}

func TestLoadBoardCloseDetaches(t *testing.T) {
	ws := boardWorkers(3)
	b1, b2 := NewLoadBoard(ws), NewLoadBoard(ws[:2])
	require.Equal(t, 2, boardsOf(ws[0]))
	require.False(t, b1.Closed())
	b1.Close()
	b1.Close()
	require.True(t, b1.Closed())
	_, _, ok := b1.Min()
	require.False(t, ok)
	require.Equal(t, 1, boardsOf(ws[0]))
	require.Equal(t, 0, boardsOf(ws[2]))
	ws[0].Hold()
	requireMatchesLoads(t, b2, ws[:2], nil)
	b2.Close()
	require.Equal(t, 0, boardsOf(ws[0]))
	_, _, ok = NewLoadBoard(nil).Min()
	require.False(t, ok, "an empty board has no minimum")
}

func TestLoadBoardDroppedIsPrunedAfterCollection(t *testing.T) {
	ws := boardWorkers(2)
	func() { _ = NewLoadBoard(ws) }()
	require.Equal(t, 1, boardsOf(ws[0]))
	for range 5 {
		runtime.GC()
	}
	ws[0].Hold() // a collected board costs nothing on the hold path
	kept := NewLoadBoard(ws)
	require.Equal(t, 1, boardsOf(ws[0]), "attaching drops the collected board")
	requireMatchesLoads(t, kept, ws, nil)
}

// Holds and unholds race with boards being built and closed; once they stop, every board
// still open agrees with the loads.
func TestLoadBoardConsistentUnderConcurrentBuilds(t *testing.T) {
	ws := boardWorkers(16)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 5000 {
				w := ws[r.IntN(len(ws))]
				w.Hold()
				if r.IntN(3) > 0 {
					w.Unhold()
				}
			}
		}()
	}
	var open []*LoadBoard
	for k := range 200 {
		b := NewLoadBoard(ws)
		if k%2 == 0 {
			b.Close()
		} else {
			open = append(open, b)
		}
	}
	wg.Wait()
	for _, b := range open {
		requireMatchesLoads(t, b, ws, nil)
	}
}

// BenchmarkHoldUnhold is one Hold and Unhold of a worker listed on 0, 1 or 2 load boards:
// what a board adds to every selection's accounting.
func BenchmarkHoldUnhold(b *testing.B) {
	for _, boards := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("boards=%d", boards), func(b *testing.B) {
			ws := boardWorkers(64)
			for range boards {
				NewLoadBoard(ws)
			}
			b.ReportAllocs()
			for b.Loop() {
				ws[7].Hold()
				ws[7].Unhold()
			}
		})
	}
}
