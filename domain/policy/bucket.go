package policy

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Bucket routes prefill requests by size (smg-spec.md §5.6; prefill only, New rejects it for
// the decode leg). Per model, each worker URL owns a contiguous range of request sizes; at
// first the k workers split [0, 4096) into k equal ranges, the last open-ended. The size is
// Request.Tokens when known, else the rune count of Request.Text, else 0.
//
// Per pick, over the sizes routed in the last BucketAdjustInterval (5 s): if the candidates'
// totals are imbalanced (max − min > BalanceAbsThreshold and max > BalanceRelThreshold × min)
// the candidate with the smallest total wins (ties random); else the owner of the size's range;
// if that owner is not a candidate, a random candidate. Every BucketAdjustInterval the ranges
// are recomputed from the window's sorted sizes so each worker gets about equal total work,
// unless the per-worker average changed by less than 2× since the last recompute.
// Recomputing happens lazily during Select; there is no timer.
type Bucket struct {
	absThresh float64
	relThresh float64
	interval  time.Duration
	now       func() time.Time

	mu     sync.Mutex
	models map[string]*bucketState
}

type bucketState struct {
	mu         sync.Mutex
	urls       []string // range owners, in order of first sight
	known      map[string]bool
	upper      []int // upper[i] is the inclusive upper bound of urls[i]'s range
	totals     map[string]int
	window     []bucketEntry // FIFO of routed sizes; live entries are window[head:]
	head       int
	lastAdjust time.Time
	prevAvg    float64
}

type bucketEntry struct {
	at   time.Time
	url  string
	size int
}

const bucketInitialMax = 4096

var (
	_ Policy        = (*Bucket)(nil)
	_ WorkerRemover = (*Bucket)(nil)
)

func newBucket(o Options) *Bucket {
	return &Bucket{
		absThresh: float64(o.BalanceAbsThreshold), relThresh: o.BalanceRelThreshold,
		interval: o.BucketAdjustInterval, now: o.now, models: map[string]*bucketState{},
	}
}

// Name returns "bucket".
func (*Bucket) Name() string { return wire.PolicyBucket }

// NeedsText returns true (the request size is its text length when tokens are unknown).
func (*Bucket) NeedsText() bool { return true }

func (p *Bucket) state(model string) *bucketState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.models[model]
	if st == nil {
		st = &bucketState{totals: map[string]int{}, known: map[string]bool{}}
		p.models[model] = st
	}
	return st
}

// Select returns the candidate as described on the type; -1 for no candidates.
func (p *Bucket) Select(c []*worker.Live, req *Request) int {
	if len(c) == 0 {
		return -1
	}
	size := 0
	if req != nil {
		size = req.Tokens
		if size <= 0 {
			size = runeCount(req.Text)
		}
	}
	now := p.now()
	st := p.state(treeKey(c, req))
	st.mu.Lock()
	defer st.mu.Unlock()

	st.expire(now.Add(-p.interval))
	st.learn(c)
	if st.lastAdjust.IsZero() {
		st.lastAdjust = now
	} else if now.Sub(st.lastAdjust) >= p.interval {
		st.adjust()
		st.lastAdjust = now
	}

	chosen := p.imbalanced(st, c)
	if chosen < 0 {
		owner := sort.SearchInts(st.upper, size) // first range whose upper bound >= size
		if owner < len(st.urls) {
			chosen = indexOfURL(c, st.urls[owner])
		}
		if chosen < 0 {
			chosen = randomIndex(c)
		}
	}
	url := c[chosen].URL
	st.totals[url] += size
	st.window = append(st.window, bucketEntry{now, url, size})
	return chosen
}

// imbalanced returns the candidate with the smallest window total when the candidates'
// totals are imbalanced, else -1.
func (p *Bucket) imbalanced(st *bucketState, c []*worker.Live) int {
	minI, ties := -1, 0
	lo, hi := math.MaxInt, math.MinInt
	for i, w := range c {
		t := st.totals[w.URL]
		hi = max(hi, t)
		switch {
		case t < lo:
			lo, minI, ties = t, i, 1
		case t == lo:
			ties++
			if rand.IntN(ties) == 0 {
				minI = i
			}
		}
	}
	if float64(hi-lo) > p.absThresh && float64(hi) > p.relThresh*float64(lo) {
		return minI
	}
	return -1
}

// expire drops window entries routed before cutoff (amortised O(1) per entry: the slice is
// compacted only once the expired head is at least half of it).
func (st *bucketState) expire(cutoff time.Time) {
	for st.head < len(st.window) && st.window[st.head].at.Before(cutoff) {
		e := st.window[st.head]
		if st.totals[e.url] -= e.size; st.totals[e.url] <= 0 {
			delete(st.totals, e.url)
		}
		st.window[st.head] = bucketEntry{}
		st.head++
	}
	if st.head > 0 && st.head >= len(st.window)/2 {
		st.window = append(st.window[:0], st.window[st.head:]...)
		st.head = 0
	}
}

// live returns the entries still in the window.
func (st *bucketState) live() []bucketEntry { return st.window[st.head:] }

// learn appends candidates not seen before as range owners and, if any, resets the ranges.
func (st *bucketState) learn(c []*worker.Live) {
	added := false
	for _, w := range c {
		if !st.known[w.URL] {
			st.known[w.URL] = true
			st.urls = append(st.urls, w.URL)
			added = true
		}
	}
	if added {
		st.resetRanges()
	}
}

// resetRanges splits [0, 4096) evenly over the owners; the last range is open-ended.
func (st *bucketState) resetRanges() {
	k := len(st.urls)
	st.upper = make([]int, k)
	if k == 0 {
		return
	}
	gap := bucketInitialMax / k
	for i := range st.upper {
		st.upper[i] = (i+1)*gap - 1
	}
	st.upper[k-1] = math.MaxInt
	st.prevAvg = 0
}

// adjust recomputes the ranges from the window so each owner gets about equal total size.
func (st *bucketState) adjust() {
	k := len(st.urls)
	if k == 0 || len(st.live()) == 0 {
		return
	}
	sizes := make([]int, len(st.live()))
	total := 0
	for i, e := range st.live() {
		sizes[i] = e.size
		total += e.size
	}
	avg := float64(total) / float64(k)
	if st.prevAvg > 0 && avg < 2*st.prevAvg && avg > st.prevAvg/2 {
		return
	}
	st.prevAvg = avg
	sort.Ints(sizes)
	upper := make([]int, k)
	j, acc, prev := 0, 0, -1
	for _, s := range sizes {
		acc += s
		if j < k-1 && float64(acc) >= avg*float64(j+1) {
			upper[j] = max(s, prev+1)
			prev = upper[j]
			j++
		}
	}
	for ; j < k; j++ {
		upper[j] = prev + 1
		prev = upper[j]
	}
	upper[k-1] = math.MaxInt
	st.upper = upper
}

// RemoveWorker drops url's range and window entries in every model and resets the ranges.
func (p *Bucket) RemoveWorker(url string) {
	p.mu.Lock()
	states := make([]*bucketState, 0, len(p.models))
	for _, st := range p.models {
		states = append(states, st)
	}
	p.mu.Unlock()
	for _, st := range states {
		st.mu.Lock()
		for i, u := range st.urls {
			if u == url {
				st.urls = append(st.urls[:i], st.urls[i+1:]...)
				st.resetRanges()
				break
			}
		}
		delete(st.totals, url)
		delete(st.known, url)
		w := st.window[:0]
		for _, e := range st.live() {
			if e.url != url {
				w = append(w, e)
			}
		}
		clear(st.window[len(w):])
		st.window, st.head = w, 0
		st.mu.Unlock()
	}
}

// runeCount counts the UTF-8 code points of s as the bytes that are not continuation bytes
// (10xxxxxx), eight bytes at a time; equal to utf8.RuneCountInString for valid UTF-8.
func runeCount(s string) int {
	const high = 0x8080808080808080
	cont, i := 0, 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		cont += bits.OnesCount64(w & ^(w << 1) & high)
	}
	for ; i < len(s); i++ {
		if s[i]&0xC0 == 0x80 {
			cont++
		}
	}
	return len(s) - cont
}
