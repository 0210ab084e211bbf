package policy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/worker"
)

// leastLoadedTenant picks the least-loaded candidate among the tenants recorded at the
// matched node, skips candidates that are not tenants there and tenants that are not
// candidates, breaks ties at random, and leaves its scratch flags clear.
func TestLeastLoadedTenantAmongTheNodesTenants(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	const prompt = "You are a helpful assistant. Hello"
	var ids []int32
	for i := range 8 {
		id := tr.tenantID(fmt.Sprintf("http://127.0.0.1:%d", 9000+i))
		ids = append(ids, id)
		if i != 3 { // worker 3 never served the prompt
			tr.insert(prompt, id)
		}
	}
	gone := tr.tenantID("http://127.0.0.1:8999") // a tenant at the node that is not a candidate
	tr.insert(prompt, gone)
	m, n := tr.match(prompt)
	require.Equal(t, len(prompt), m)

	loads := []int64{5, 4, 6, 0, 2, 7, 2, 9}
	seen := map[int]int{}
	for range 200 {
		seen[leastLoadedTenant(tr, n, ids, loads)]++
	}
	assert.Len(t, seen, 2, "only the two tied least-loaded tenants, not worker 3 (load 0, no stamp): %v", seen)
	assert.Positive(t, seen[4])
	assert.Positive(t, seen[6])
	for id, on := range tr.marks {
		assert.False(t, on, "scratch flag %d left set", id)
	}
	assert.Equal(t, -1, leastLoadedTenant(tr, n, ids[3:4], loads[3:4]), "no candidate is a tenant here")
}

// BenchmarkLeastLoadedTenant is the worst case: every one of n candidates is a tenant of the
// matched node (a prompt every worker has served).
func BenchmarkLeastLoadedTenant(b *testing.B) {
	for _, n := range []int{2, 64, 512, 4096} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			tr := newRadixTree()
			ids := make([]int32, n)
			loads := make([]int64, n)
			for i := range n {
				ids[i] = tr.tenantID(fmt.Sprintf("http://127.0.0.1:%d", 10000+i))
				loads[i] = int64(i % 7)
				tr.insert("You are a helpful assistant. Hello", ids[i])
			}
			_, node := tr.match("You are a helpful assistant. Hello")
			for b.Loop() {
				leastLoadedTenant(tr, node, ids, loads)
			}
		})
	}
}

// BenchmarkLeastLoadedTenantOn is BenchmarkLeastLoadedTenant on the load-board path
// (SelectBoard): the same worst case, every candidate a tenant of the matched node.
func BenchmarkLeastLoadedTenantOn(b *testing.B) {
	for _, n := range []int{2, 64, 512, 4096} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			tr := newRadixTree()
			ws := make([]*worker.Live, n)
			for i := range n {
				ws[i] = worker.NewLive(worker.Worker{URL: fmt.Sprintf("http://127.0.0.1:%d", 10000+i)}, worker.StatusReady)
				for range i % 7 {
					ws[i].Hold()
				}
				tr.insert("You are a helpful assistant. Hello", tr.tenantID(ws[i].URL))
			}
			board := worker.NewLoadBoard(ws)
			bs := tr.useBoard(board, ws)
			_, node := tr.match("You are a helpful assistant. Hello")
			for b.Loop() {
				leastLoadedTenantOn(tr, node, ws, board, bs)
			}
		})
	}
}

// leastLoadedTenantOn reads each tenant's candidate index from a per-board slot cache: a
// freed tenant id taken by another worker, and another board, are looked up afresh.
func TestLeastLoadedTenantOnFollowsIDReuseAndBoards(t *testing.T) {
	t.Parallel()
	const prompt = "You are a helpful assistant. Hello"
	live := func(url string, load int) *worker.Live {
		l := worker.NewLive(worker.Worker{URL: url}, worker.StatusReady)
		for range load {
			l.Hold()
		}
		return l
	}
	a, b, c := live("http://127.0.0.1:9001", 0), live("http://127.0.0.1:9002", 5), live("http://127.0.0.1:9003", 0)
	tr := newRadixTree()
	tr.insert(prompt, tr.tenantID(a.URL))
	tr.insert(prompt, tr.tenantID(b.URL))
	cands := []*worker.Live{b, c}
	board := worker.NewLoadBoard(cands)
	_, n := tr.match(prompt)
	best, load := leastLoadedTenantOn(tr, n, cands, board, tr.useBoard(board, cands))
	require.Equal(t, 0, best, "a is no candidate; b is the only listed tenant")
	require.Equal(t, int64(5), load)

	idA := tr.ids[a.URL]
	tr.removeTenant(a.URL)
	require.Equal(t, idA, tr.tenantID(c.URL), "c takes a's freed id")
	tr.insert(prompt, tr.ids[c.URL])
	_, n = tr.match(prompt)
	best, _ = leastLoadedTenantOn(tr, n, cands, board, tr.useBoard(board, cands))
	require.Equal(t, 1, best, "c (load 0) is found under the reused id")

	other := []*worker.Live{c, b}
	ob := worker.NewLoadBoard(other)
	best, _ = leastLoadedTenantOn(tr, n, other, ob, tr.useBoard(ob, other))
	require.Equal(t, 0, best, "another board's indexes")
}

// A board used by a tree orders idle workers by the tree's picks per worker, set when the
// board is first used and kept as picks are made and tenants freed: what Select's scan finds.
func TestBoardTiesFollowTheTreesPicks(t *testing.T) {
	t.Parallel()
	ws := make([]*worker.Live, 3)
	for i := range ws {
		ws[i] = worker.NewLive(worker.Worker{URL: fmt.Sprintf("http://127.0.0.1:%d", 9100+i)}, worker.StatusReady)
	}
	tr := newRadixTree()
	tr.insert("a", tr.tenantID(ws[0].URL))
	tr.insert("b", tr.tenantID(ws[0].URL))
	tr.insert("c", tr.tenantID(ws[1].URL))
	b := worker.NewLoadBoard(ws)
	min := func() int { i, _, _ := b.Min(); return i }
	require.Equal(t, 0, min(), "before the tree uses it: by index")
	tr.useBoard(b, ws)
	require.Equal(t, 2, min(), "no picks yet")
	tr.insert("d", tr.tenantID(ws[2].URL))
	tr.insert("e", tr.tenantID(ws[2].URL))
	require.Equal(t, 1, min(), "one pick against two")
	tr.removeTenant(ws[0].URL)
	require.Equal(t, 0, min(), "a freed tenant's picks are back to 0")
}
