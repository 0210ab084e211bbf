package kvindex

import (
	"strconv"
	"sync"

	"github.com/smg-go/smg/domain/kvevent"
)

// DefaultMaxBlocks is Options.MaxBlocks when unset: about 200 MB of entries.
const DefaultMaxBlocks = 1 << 20

// Options configure an Index.
type Options struct {
	// MaxBlocks bounds the (worker, block) entries held; past it the least recently used
	// blocks are evicted. 0 means DefaultMaxBlocks.
	MaxBlocks int
}

// Stats is a snapshot of an Index's size and of what it dropped.
type Stats struct {
	// Blocks are distinct blocks; Entries (worker, block) pairs, the quantity MaxBlocks
	// bounds; Workers workers with state; Namespaces (model, LoRA, block size) triples.
	Blocks, Entries, Workers, Namespaces int
	// Evicted counts entries dropped to respect MaxBlocks.
	Evicted uint64
	// Orphans counts stored blocks dropped because their parent is unknown for that worker
	// (stored before the subscription began, or evicted); Partial stored blocks shorter
	// than their block size; UnknownRemovals removals naming no known block.
	Orphans, Partial, UnknownRemovals uint64
	// Ignored counts events the index does not use: a cache tier other than GPU, a KV
	// cache group other than 0, or a store without a block size.
	Ignored uint64
}

// Hit is one worker's match for a query.
type Hit struct {
	// Blocks is the number of consecutive leading blocks of the query the worker holds.
	Blocks int
	// BlockSize is the worker's block size in tokens.
	BlockSize int
}

// Tokens is the matched prefix length in tokens.
func (h Hit) Tokens() int { return h.Blocks * h.BlockSize }

type nsKey struct {
	model, lora string
	blockSize   int
}

type modelKey struct{ model, lora string }

type namespace struct {
	key    nsKey
	blocks map[uint64]*node
}

// engineKey names a block in one worker's engine: its hash within a KV-cache group.
type engineKey struct {
	hash  uint64
	group int
}

type holder struct {
	slot uint32
	key  engineKey
}

// node is one block. Chains are linked (parent, child, more) so Match can follow a
// prompt with one pointer load per block instead of a map lookup; the namespace map stays
// the authority (a node whose parent was dropped is found through it).
type node struct {
	key uint64
	// mask has bit s set when worker slot s < 64 holds the block (Match reads only this
	// for small fleets); holders is the full list with engine keys.
	mask       uint64
	ns         *namespace
	parent     *node
	child      *node
	more       []*node
	holders    []holder
	prev, next *node
}

func (n *node) link(parent *node) {
	if parent == nil || n.parent != nil {
		return
	}
	n.parent = parent
	if parent.child == nil {
		parent.child = n
	} else {
		parent.more = append(parent.more, n)
	}
}

// childWith is the child of n with key k, or nil.
func (n *node) childWith(k uint64) *node {
	if n.child != nil && n.child.key == k {
		return n.child
	}
	for _, c := range n.more {
		if c.key == k {
			return c
		}
	}
	return nil
}

// unlink detaches n from its parent and its children from n.
func (n *node) unlink() {
	if p := n.parent; p != nil {
		if p.child == n {
			p.child = nil
			if last := len(p.more) - 1; last >= 0 {
				p.child = p.more[last]
				p.more = p.more[:last]
			}
		} else {
			for i, c := range p.more {
				if c == n {
					p.more = append(p.more[:i], p.more[i+1:]...)
					break
				}
			}
		}
	}
	if n.child != nil {
		n.child.parent = nil
	}
	for _, c := range n.more {
		c.parent = nil
	}
	n.parent, n.child, n.more = nil, nil, nil
}

func (n *node) addHolder(h holder) {
	n.holders = append(n.holders, h)
	if h.slot < 64 {
		n.mask |= 1 << h.slot
	}
}

func (n *node) removeHolder(h holder) {
	for i, o := range n.holders {
		if o == h {
			last := len(n.holders) - 1
			n.holders[i] = n.holders[last]
			n.holders = n.holders[:last]
			break
		}
	}
	if h.slot >= 64 {
		return
	}
	for _, o := range n.holders {
		if o.slot == h.slot {
			return
		}
	}
	n.mask &^= 1 << h.slot
}

type workerState struct {
	id     string
	slot   uint32
	engine map[engineKey]*node
}

// Index maps chained block keys to the workers holding them. Safe for concurrent use:
// lookups share a read lock, updates take the write lock.
type Index struct {
	mu         sync.RWMutex
	max        int
	namespaces map[nsKey]*namespace
	models     map[modelKey][]*namespace
	workers    map[string]*workerState
	slots      []*workerState
	free       []uint32
	lru        node // sentinel: lru.next is the most recently used
	stats      Stats
	h          hasher  // store's, under the write lock
	matched    []*node // store's, under the write lock
}

// New builds an empty Index.
func New(o Options) *Index {
	if o.MaxBlocks <= 0 {
		o.MaxBlocks = DefaultMaxBlocks
	}
	x := &Index{max: o.MaxBlocks, namespaces: map[nsKey]*namespace{}, models: map[modelKey][]*namespace{},
		workers: map[string]*workerState{}}
	x.lru.next, x.lru.prev = &x.lru, &x.lru
	return x
}

// ApplyBatch applies every event of b to worker's entries for model (the model the
// worker serves; "" for a wildcard worker).
func (x *Index) ApplyBatch(worker, model string, b kvevent.Batch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range b.Events {
		x.apply(worker, model, &b.Events[i])
	}
}

// Apply applies one event to worker's entries for model.
func (x *Index) Apply(worker, model string, ev kvevent.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.apply(worker, model, &ev)
}

// Reset drops every entry of worker (its engine cleared its cache, restarted, or its
// event stream lost events); the worker's later events rebuild them.
func (x *Index) Reset(worker string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if w := x.workers[worker]; w != nil {
		x.clearWorker(w)
	}
}

// RemoveWorker drops worker and all its entries.
func (x *Index) RemoveWorker(worker string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.workers[worker]
	if w == nil {
		return
	}
	x.clearWorker(w)
	delete(x.workers, worker)
	x.slots[w.slot] = nil
	x.free = append(x.free, w.slot)
}

// Stats returns a snapshot of the index's size and drop counters.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.stats
	s.Workers = len(x.workers)
	s.Namespaces = len(x.namespaces)
	return s
}

func (x *Index) apply(worker, model string, ev *kvevent.Event) {
	if ev.Kind != kvevent.Cleared && (ev.Group != 0 || (ev.Medium != "" && ev.Medium != "GPU")) {
		x.stats.Ignored++
		return
	}
	switch ev.Kind {
	case kvevent.Stored:
		x.store(x.worker(worker), model, ev)
	case kvevent.Removed:
		w := x.workers[worker]
		for _, h := range ev.Removed {
			k := engineKey{h, ev.Group}
			if w == nil || w.engine[k] == nil {
				x.stats.UnknownRemovals++
				continue
			}
			x.dropEntry(w, k)
		}
	case kvevent.Cleared:
		if w := x.workers[worker]; w != nil {
			x.clearWorker(w)
		}
	}
}

func (x *Index) worker(id string) *workerState {
	if w := x.workers[id]; w != nil {
		return w
	}
	w := &workerState{id: id, engine: map[engineKey]*node{}}
	if n := len(x.free); n > 0 {
		w.slot = x.free[n-1]
		x.free = x.free[:n-1]
		x.slots[w.slot] = w
	} else {
		w.slot = uint32(len(x.slots))
		x.slots = append(x.slots, w)
	}
	x.workers[id] = w
	return w
}

// lora is the namespace name of an event's adapter: its name, else its numeric id.
func lora(ev *kvevent.Event) string {
	if ev.LoRAName != "" {
		return ev.LoRAName
	}
	if ev.HasLoRAID && ev.LoRAID > 0 {
		return "lora-id:" + strconv.FormatInt(ev.LoRAID, 10)
	}
	return ""
}

func (x *Index) namespace(k nsKey) *namespace {
	if ns := x.namespaces[k]; ns != nil {
		return ns
	}
	ns := &namespace{key: k, blocks: map[uint64]*node{}}
	x.namespaces[k] = ns
	mk := modelKey{k.model, k.lora}
	x.models[mk] = append(x.models[mk], ns)
	return ns
}

func (x *Index) store(w *workerState, model string, ev *kvevent.Event) {
	if ev.BlockSize <= 0 {
		x.stats.Ignored++
		return
	}
	ns := x.namespace(nsKey{model, lora(ev), ev.BlockSize})
	parent, parentKey := (*node)(nil), rootKey
	if ev.HasParent {
		parent = w.engine[engineKey{ev.Parent, ev.Group}]
		if parent == nil || parent.ns != ns {
			x.stats.Orphans += uint64(len(ev.Blocks))
			x.dropEmpty(ns)
			return
		}
		parentKey = parent.key
	}
	start := len(x.matched)
	prev := parent
	for i, b := range ev.Blocks {
		if len(b.Tokens) != ev.BlockSize {
			x.stats.Partial += uint64(len(ev.Blocks) - i)
			break
		}
		parentKey = x.h.next(parentKey, b.Extra, b.Tokens)
		n := ns.blocks[parentKey]
		if n == nil {
			n = &node{key: parentKey, ns: ns}
			ns.blocks[parentKey] = n
			x.stats.Blocks++
			x.pushFront(n)
		}
		n.link(prev)
		prev = n
		k := engineKey{b.EngineHash, ev.Group}
		if old := w.engine[k]; old != n {
			if old != nil {
				x.dropEntry(w, k)
			}
			n.addHolder(holder{w.slot, k})
			w.engine[k] = n
			x.stats.Entries++
		}
		x.matched = append(x.matched, n)
	}
	// Touch leaf first so the chain's root ends up youngest, then the parent.
	for i := len(x.matched) - 1; i >= start; i-- {
		x.moveFront(x.matched[i])
	}
	x.matched = x.matched[:start]
	if parent != nil {
		x.moveFront(parent)
	}
	x.dropEmpty(ns)
	x.evict()
}

// dropEntry removes w's entry k, and its block when no worker holds it any more.
func (x *Index) dropEntry(w *workerState, k engineKey) {
	n := w.engine[k]
	delete(w.engine, k)
	x.stats.Entries--
	n.removeHolder(holder{w.slot, k})
	if len(n.holders) == 0 {
		x.dropNode(n)
	}
}

func (x *Index) clearWorker(w *workerState) {
	for k := range w.engine {
		x.dropEntry(w, k)
	}
}

// dropNode removes a block with all its entries.
func (x *Index) dropNode(n *node) {
	for _, h := range n.holders {
		delete(x.slots[h.slot].engine, h.key)
		x.stats.Entries--
	}
	n.holders, n.mask = nil, 0
	n.unlink()
	delete(n.ns.blocks, n.key)
	x.stats.Blocks--
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
	x.dropEmpty(n.ns)
}

// dropEmpty forgets a namespace without blocks, so churn across models stays bounded.
func (x *Index) dropEmpty(ns *namespace) {
	if len(ns.blocks) != 0 || x.namespaces[ns.key] != ns {
		return
	}
	delete(x.namespaces, ns.key)
	mk := modelKey{ns.key.model, ns.key.lora}
	list := x.models[mk]
	for i, s := range list {
		if s == ns {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(x.models, mk)
	} else {
		x.models[mk] = list
	}
}

func (x *Index) pushFront(n *node) {
	n.prev, n.next = &x.lru, x.lru.next
	x.lru.next.prev = n
	x.lru.next = n
}

func (x *Index) moveFront(n *node) {
	if n.prev == nil || x.lru.next == n {
		return
	}
	n.prev.next, n.next.prev = n.next, n.prev
	x.pushFront(n)
}

// evict drops least recently used blocks until the entries fit MaxBlocks.
func (x *Index) evict() {
	for x.stats.Entries > x.max && x.lru.prev != &x.lru {
		n := x.lru.prev
		x.stats.Evicted += uint64(len(n.holders))
		x.dropNode(n)
	}
}
