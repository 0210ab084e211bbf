package policy

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The radix tree's eviction pass runs in batches with the lock released in between; these
// tests change the tree between the scan and the removals, as concurrent picks would.

func filledTree(t *testing.T, n int) (*radixTree, int32, []string) {
	t.Helper()
	tr := newRadixTree()
	id := tr.tenantID("http://127.0.0.1:8000")
	var texts []string
	for i := range n {
		s := fmt.Sprintf("%c%099d", 'A'+i, i) // 100 bytes, distinct first byte
		texts = append(texts, s)
		tr.insert(s, id)
	}
	require.Equal(t, 100*n, tr.size[id])
	require.Equal(t, 100*n, tr.total)
	return tr, id, texts
}

func TestEvictionKeepsALeafUsedDuringThePass(t *testing.T) {
	t.Parallel()
	tr, id, texts := filledTree(t, 10)
	p := tr.planEviction(500)
	require.NotNil(t, p)
	for !tr.scanSome(p, 3) {
	}
	tr.insert(texts[0], id) // the oldest prompt is used again before the removals
	p.order()
	for !tr.evictSome(p, 2) {
	}
	assert.Equal(t, 500, tr.size[id])
	assert.Equal(t, 500, tr.total)
	for i, s := range texts {
		m, _ := tr.match(s)
		kept := i == 0 || i >= 6
		assert.Equal(t, kept, m == len(s), "text %d kept=%v", i, kept)
	}
}

func TestEvictionSkipsNodesRemovedDuringThePass(t *testing.T) {
	t.Parallel()
	tr, id, _ := filledTree(t, 10)
	other := tr.tenantID("http://127.0.0.1:8001")
	tr.insert("Z-other-tenant", other)
	p := tr.planEviction(500)
	for !tr.scanSome(p, math.MaxInt) {
	}
	tr.removeTenant("http://127.0.0.1:8000")
	p.order()
	for !tr.evictSome(p, 1) {
	}
	assert.Equal(t, 0, tr.size[id])
	assert.Equal(t, len("Z-other-tenant"), tr.total)
}

func TestEvictionPromotesParentsOldestFirst(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	id := tr.tenantID("w")
	shared := fmt.Sprintf("%0200d", 0)
	tr.insert(shared+"aaaa", id) // oldest: shared prefix with two leaves
	tr.insert(shared+"bbbb", id)
	tr.insert("x"+fmt.Sprintf("%099d", 1), id) // newer, unrelated
	require.Equal(t, 308, tr.size[id])
	tr.evict(100)
	// both leaves go first, then their parent (promoted), then the newer text would fit
	assert.Equal(t, 100, tr.size[id])
	m, _ := tr.match("x" + fmt.Sprintf("%099d", 1))
	assert.Equal(t, 100, m)
	m, _ = tr.match(shared + "aaaa")
	assert.Equal(t, 0, m)
}

func TestLCP(t *testing.T) {
	t.Parallel()
	base := "0123456789abcdefghijklmnopqrstuvwxyz"
	for i := 0; i <= len(base); i++ {
		b := []byte(base)
		if i < len(b) {
			b[i] = '#'
		}
		assert.Equal(t, i, lcp(base, string(b)), "mismatch at %d", i)
		assert.Equal(t, i, lcp(base[:i], base), "prefix of length %d", i)
	}
}
