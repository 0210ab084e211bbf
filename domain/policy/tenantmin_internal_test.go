package policy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
