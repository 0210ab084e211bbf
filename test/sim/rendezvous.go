package sim

import "sync"

// rendezvous is the room registry of a prefill's bootstrap server: SGLang bootstrap rooms
// and vLLM Mooncake transfer ids. Either side may arrive first (engines.md §2.6 item 6).
// A slot lives while at least one side is attached; a key attached twice on the same side
// at once is a duplicate.
type rendezvous struct {
	mu sync.Mutex
	m  map[string]*slot
}

type side int

const (
	sideP side = iota // the prefill leg, in this process
	sideD             // a decode's claim/fetch on the bootstrap listener
)

// kvPayload is what the "KV transfer" carries from prefill to decode: the digest of the
// prompt as the prefill saw it, its length and the sending engine.
type kvPayload struct {
	Digest       uint64 `json:"digest,string"`
	PromptTokens int    `json:"prompt_tokens"`
	EngineID     string `json:"engine_id"`
	FirstToken   int32  `json:"first_token"`
	// DPRank is the SGLang prefill's routed_dp_rank (DPSize > 1): the decode checks its
	// disagg_prefill_dp_rank against it.
	DPRank *int `json:"dp_rank,omitempty"`
}

// slot is one room. Channels are closed at most once, under rendezvous.mu (got by the
// decode side alone, before it leaves).
type slot struct {
	key      string
	dArrived chan struct{} // the decode claimed the room
	pLeft    chan struct{} // the prefill side detached (done, timed out or aborted)
	dLeft    chan struct{} // the decode side detached
	got      chan struct{} // the decode side wrote the KV to its peer
	kv       chan kvPayload

	hasP, hasD, pGone, dGone bool
}

func newRendezvous() *rendezvous { return &rendezvous{m: make(map[string]*slot)} }

// arrive attaches side s to key. dup is true (and the slot nil) when that side is already
// attached.
func (rv *rendezvous) arrive(key string, s side) (sl *slot, dup bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	sl = rv.m[key]
	if sl == nil {
		sl = &slot{key: key, dArrived: make(chan struct{}), pLeft: make(chan struct{}),
			dLeft: make(chan struct{}), got: make(chan struct{}), kv: make(chan kvPayload, 1)}
		rv.m[key] = sl
	}
	if s == sideP {
		if sl.hasP {
			return nil, true
		}
		sl.hasP = true
		return sl, false
	}
	if sl.hasD {
		return nil, true
	}
	sl.hasD = true
	close(sl.dArrived)
	return sl, false
}

// leave detaches side s; peerSeen reports whether the other side ever attached. The slot
// is dropped once every attached side has left.
func (rv *rendezvous) leave(sl *slot, s side) (peerSeen bool) {
	return rv.leaveCounting(sl, s, nil)
}

// leaveCounting is leave that runs unmatched (when not nil) if the other side never
// attached, before rv.mu is released: size never shows the slot gone before what
// unmatched counts (a lease expiry's unmatched_rooms). unmatched must not call back into rv.
func (rv *rendezvous) leaveCounting(sl *slot, s side, unmatched func()) (peerSeen bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	peerSeen = sl.hasP
	if s == sideP {
		peerSeen = sl.hasD
	}
	if !peerSeen && unmatched != nil {
		unmatched()
	}
	if s == sideP && !sl.pGone {
		sl.pGone = true
		close(sl.pLeft)
	}
	if s == sideD && !sl.dGone {
		sl.dGone = true
		close(sl.dLeft)
	}
	if (!sl.hasP || sl.pGone) && (!sl.hasD || sl.dGone) && rv.m[sl.key] == sl {
		delete(rv.m, sl.key)
	}
	return peerSeen
}

// delivered reports whether the decode side received the KV (got closed).
func (sl *slot) delivered() bool {
	select {
	case <-sl.got:
		return true
	default:
		return false
	}
}

// size is the number of live slots (for tests and leak checks).
func (rv *rendezvous) size() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return len(rv.m)
}
