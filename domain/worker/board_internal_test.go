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

// requireMatchesLoads checks b against a scan of the workers' loads: Min names a worker
// with the lowest load and Sum is their total.
func requireMatchesLoads(t *testing.T, b *LoadBoard, ws []*Live) {
	t.Helper()
	i, sum, ok := b.Min()
	require.True(t, ok)
	lowest, total := ws[0].Load(), int64(0)
	for _, w := range ws {
		lowest = min(lowest, w.Load())
		total += w.Load()
	}
	require.Equal(t, lowest, ws[i].Load(), "Min is a least-loaded worker")
	require.Equal(t, total, sum)
}

func TestLoadBoardFollowsHoldsAndUnholds(t *testing.T) {
	ws := boardWorkers(37)
	ws[3].Hold() // loads from before the board are read at build
	b := NewLoadBoard(ws)
	requireMatchesLoads(t, b, ws)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		w := ws[r.IntN(len(ws))]
		if w.Load() > 0 && r.IntN(2) == 0 {
			w.Unhold()
		} else {
			w.Hold()
		}
		requireMatchesLoads(t, b, ws)
	}
}

func TestLoadBoardTakesIdleWorkersInTurn(t *testing.T) {
	ws := boardWorkers(4)
	b := NewLoadBoard(ws)
	var got []int
	for range 8 {
		i, _, ok := b.Min()
		require.True(t, ok)
		got = append(got, i)
		ws[i].Hold() // picked: one request in flight...
		ws[i].Unhold()
	}
	// ...done at once: it goes to the back of the idle ones.
	require.Equal(t, []int{0, 1, 2, 3, 0, 1, 2, 3}, got)

	ws[1].Hold()
	ws[0].Hold()
	ws[0].Hold()
	i, sum, _ := b.Min()
	require.Contains(t, []int{2, 3}, i)
	require.Equal(t, int64(3), sum)
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
	b1.Close()
	b1.Close()
	_, _, ok := b1.Min()
	require.False(t, ok)
	require.Equal(t, 1, boardsOf(ws[0]))
	require.Equal(t, 0, boardsOf(ws[2]))
	ws[0].Hold()
	requireMatchesLoads(t, b2, ws[:2])
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
	requireMatchesLoads(t, kept, ws)
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
		requireMatchesLoads(t, b, ws)
	}
}

func TestLoadBoardLevelsAreCapped(t *testing.T) {
	ws := boardWorkers(2)
	b := NewLoadBoard(ws)
	for range maxBoardLevel + 10 {
		ws[0].Hold()
	}
	i, sum, _ := b.Min()
	require.Equal(t, 1, i)
	require.Equal(t, int64(maxBoardLevel+10), sum, "the sum counts the true load")
	require.Len(t, b.head, maxBoardLevel+1)
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
