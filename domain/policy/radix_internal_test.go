package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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

// Edge text lives in the arena: a split shares the bytes, removing a node frees them, and
// the arena's referenced bytes always equal the tree's size.
func TestArenaHoldsExactlyTheTreesText(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	a, b := tr.tenantID("a"), tr.tenantID("b")
	tr.insert("abcdefghijklmnop", a)
	orig := uintptr(unsafe.Pointer(unsafe.StringData(tr.root.children[0].text)))
	tr.insert("abcdXYZ", b)
	mid := tr.root.children[0]
	require.Equal(t, "abcd", mid.text)
	assert.Equal(t, orig, uintptr(unsafe.Pointer(unsafe.StringData(mid.text))), "a split copies nothing")
	assert.Equal(t, 16+3, tr.total)
	assert.Equal(t, tr.total, tr.arena.live)
	tr.removeTenant("a")
	assert.Equal(t, 7, tr.total)
	assert.Equal(t, tr.total, tr.arena.live, "the removed edge's bytes are freed")
	tr.removeTenant("b")
	assert.Zero(t, tr.arena.live)
}

// After eviction frees most of the text, compaction moves the survivors out of the sparse
// chunks and returns them to the OS; the text still matches.
func TestCompactionReturnsSparseChunks(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	id := tr.tenantID("w")
	var texts []string
	for i := range 4000 { // 4000 × 2 KB: 8 MB in 8 chunks
		s := fmt.Sprintf("%06d", i) + strings.Repeat(string(rune('a'+i%26)), 2042)
		texts = append(texts, s)
		tr.insert(s, id)
	}
	mapped := tr.arena.mapped
	require.GreaterOrEqual(t, mapped, 8*chunkSize)
	for i, s := range texts {
		if i%8 == 0 {
			tr.insert(s, id) // 1 in 8 used again: the others are the LRU ones
		}
	}
	tr.evict(len(texts) / 8 * 2048) // keep an eighth, spread over every chunk
	require.Equal(t, tr.total, tr.arena.live)
	require.Equal(t, mapped, tr.arena.mapped, "every chunk still holds a survivor")
	c := tr.planCompaction()
	require.NotNil(t, c)
	for !tr.compactSome(c, 100) {
	}
	assert.Equal(t, tr.total, tr.arena.live)
	assert.LessOrEqual(t, tr.arena.mapped, 3*chunkSize, "the survivors fit in two chunks plus the current one")
	for i := 0; i < len(texts); i += 8 {
		m, _ := tr.match(texts[i])
		require.Equal(t, len(texts[i]), m, "text %d survives the move", i)
	}
	assert.Nil(t, tr.planCompaction(), "nothing left to compact")
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

// An edge longer than a quarter chunk gets a chunk of its own, unmapped with it; when a
// split leaves most of it unreferenced, compaction moves the rest into a shared chunk.
func TestLongEdgesGetTheirOwnChunk(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	a, b := tr.tenantID("a"), tr.tenantID("b")
	long := strings.Repeat("x", 3*chunkSize) // a 3 MiB prompt
	tr.insert(long, a)
	require.Equal(t, 3*chunkSize, tr.arena.mapped)
	tr.insert(long[:1000]+"y", b) // split after 1000 bytes; "y" goes to a shared chunk
	require.Equal(t, 4*chunkSize, tr.arena.mapped)
	tr.removeTenant("a") // the 3 MiB leaf goes: 1000 bytes of its chunk stay referenced
	require.Equal(t, tr.total, tr.arena.live)
	require.Equal(t, 4*chunkSize, tr.arena.mapped)
	c := tr.planCompaction()
	require.NotNil(t, c)
	for !tr.compactSome(c, math.MaxInt) {
	}
	assert.Equal(t, tr.total, tr.arena.live)
	assert.Equal(t, chunkSize, tr.arena.mapped, "the big chunk is unmapped")
	m, _ := tr.match(long[:1000] + "y")
	assert.Equal(t, 1001, m)
	tr.removeTenant("b")
	assert.Zero(t, tr.arena.live)
}

// Inserts, removals and eviction and compaction passes interleaved batch by batch (as with
// the lock released between batches) keep the arena consistent: its referenced bytes equal
// the tree's size, and every path from the root spells a prefix of some inserted text.
func TestArenaStaysConsistentUnderInterleavedPasses(t *testing.T) {
	t.Parallel()
	tr := newRadixTree()
	r := rand.New(rand.NewPCG(1, 2))
	urls := []string{"w0", "w1", "w2"}
	var inserted []string
	compactions := 0
	word := func() string { return fmt.Sprintf("w%d ", r.IntN(500)) }
	newText := func() string {
		var b strings.Builder
		for b.Len() < 200+r.IntN(2000) {
			b.WriteString(word())
		}
		return b.String()
	}
	insert := func() {
		s := newText()
		if len(inserted) > 0 && r.IntN(3) == 0 {
			old := inserted[r.IntN(len(inserted))]
			s = old[:r.IntN(len(old))] + s
		}
		inserted = append(inserted, s)
		tr.insert(s, tr.tenantID(urls[r.IntN(len(urls))]))
	}
	for round := range 6 {
		for range 1200 {
			insert()
		}
		if round%3 == 2 {
			tr.removeTenant(urls[r.IntN(len(urls))])
		}
		if p := tr.planEviction(60_000); p != nil {
			for !tr.scanSome(p, 500) {
				insert()
			}
			p.order()
			for !tr.evictSome(p, 200) {
				insert()
			}
		}
		if c := tr.planCompaction(); c != nil {
			compactions++
			for !tr.compactSome(c, 300) {
				insert()
			}
		}
		require.Equal(t, tr.total, tr.arena.live, "round %d", round)
	}
	slices.Sort(inserted)
	var walk func(n *node, path string)
	paths := 0
	walk = func(n *node, path string) {
		path += n.text
		if len(n.children) == 0 && n != &tr.root {
			paths++
			i, _ := slices.BinarySearch(inserted, path)
			require.True(t, i < len(inserted) && strings.HasPrefix(inserted[i], path), "path of %d bytes is no inserted prefix", len(path))
		}
		for _, c := range n.children {
			walk(c, path)
		}
	}
	walk(&tr.root, "")
	require.Positive(t, paths)
	require.Positive(t, compactions)
	t.Logf("%d compactions, %d texts inserted, %d leaves, %d bytes live, %d mapped", compactions, len(inserted), paths, tr.arena.live, tr.arena.mapped)
}
