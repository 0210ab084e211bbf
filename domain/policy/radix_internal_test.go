package policy

import (
	"fmt"
	"math"
	"testing"
	"unsafe"

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

// A split gives both halves their own bytes: evicting one half must not leave the other
// pinning the whole original edge.
func TestSplitCopiesBothHalves(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	id := tr.tenantID("w")
	tr.insert("abcdefghijklmnop", id)
	addr := func(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
	orig := addr(tr.root.children[0].text)
	tr.insert("abcdXYZ", id)
	mid := tr.root.children[0]
	require.Equal(t, "abcd", mid.text)
	require.Len(t, mid.children, 2)
	low := mid.children[0]
	if low.text[0] != 'e' {
		low = mid.children[1]
	}
	require.Equal(t, "efghijklmnop", low.text)
	assert.NotEqual(t, orig, addr(mid.text), "upper half shares the old edge's bytes")
	assert.NotEqual(t, orig+4, addr(low.text), "lower half shares the old edge's bytes")
	assert.Equal(t, 16+3, tr.total)
}

// A stamp is 8 bytes: the per-worker timestamps are most of a shared node's cost.
func TestStampIsEightBytes(t *testing.T) {
	t.Parallel()
	assert.EqualValues(t, 8, unsafe.Sizeof(stamp{}))
}

// Before the 32-bit clock wraps, every stamp moves back: recent inserts keep their order and
// eviction still removes the least recently used text first.
func TestClockRebaseKeepsLRUOrder(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	id := tr.tenantID("w")
	tr.insert("a-oldest", id)
	tr.clock = math.MaxUint32 - 2
	tr.insert("b-middle", id) // MaxUint32-1
	tr.insert("c-newest", id) // MaxUint32
	tr.insert("d-after-the-wrap", id)
	assert.Equal(t, uint32(clockRebase), tr.clock)
	tr.evict(len("b-middle") + len("c-newest") + len("d-after-the-wrap"))
	for s, kept := range map[string]bool{"a-oldest": false, "b-middle": true, "c-newest": true, "d-after-the-wrap": true} {
		m, _ := tr.match(s)
		assert.Equal(t, kept, m == len(s), s)
	}
	tr.evict(len("d-after-the-wrap"))
	m, _ := tr.match("c-newest")
	assert.Equal(t, 0, m, "the stamp made just before the rebase is older than the one after")
	m, _ = tr.match("d-after-the-wrap")
	assert.Equal(t, len("d-after-the-wrap"), m)
}
