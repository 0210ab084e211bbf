package selection

import (
	"sync"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// held is one selection's in-flight accounting, undone once by its release (idempotent, safe
// from any goroutine). Released helds are reused (heldPool) so that a selection allocates
// only its release func: each use has a generation, Held carries the one it was handed, and
// a call with an older generation (a second Release, a PrefillEnded or SetPromptTokens
// after Release) finds the held moved on and does nothing, as it did on a freed held.
type held struct {
	mu     sync.Mutex // guards every field
	gen    uint64     // the current use; moved by its release
	p, d   *worker.Live
	bP, bD *metricsBox
	tP, tD tokens
	pEnded bool // the prefill's tokens were freed when its leg ended
}

var heldPool = sync.Pool{New: func() any { return new(held) }}

// newHeld takes a held from the pool for one selection's accounting: prefill p (d nil for
// a selection without a decode), the metrics each hold was mirrored in, and each leg's
// tokens.
func newHeld(p, d *worker.Live, bP, bD *metricsBox, tP, tD tokens) Held {
	return heldPool.Get().(*held).start(p, d, bP, bD, tP, tD)
}

// start begins h's next use (newHeld's arguments); h is new or released.
func (h *held) start(p, d *worker.Live, bP, bD *metricsBox, tP, tD tokens) Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.p, h.d, h.bP, h.bD, h.tP, h.tD, h.pEnded = p, d, bP, bD, tP, tD, false
	return Held{h: h, gen: h.gen}
}

// Held is one selection's in-flight accounting (SelectHeld, SelectPrefillAlone, SelectLocal).
// Copies are the same accounting; the zero Held must not be used.
type Held struct {
	h   *held
	gen uint64
}

// Release frees both legs' in-flight requests and tokens; idempotent, safe from any goroutine.
func (h Held) Release() {
	if h.release() {
		heldPool.Put(h.h)
	}
}

// release is Release without returning the held to heldPool: it reports whether this call
// ended h's use (the caller then owns the held: it puts it back in heldPool, once).
func (h Held) release() bool {
	hh := h.h
	hh.mu.Lock()
	if hh.gen != h.gen {
		hh.mu.Unlock()
		return false
	}
	p, d, bP, bD, tP, tD := hh.p, hh.d, hh.bP, hh.bD, hh.tP, hh.tD
	if hh.pEnded { // PrefillEnded freed them already
		tP = tokens{}
	}
	hh.gen++
	hh.p, hh.d, hh.bP, hh.bD = nil, nil, nil, nil
	hh.mu.Unlock()
	unhold(p, bP, tP)
	if d != nil {
		unhold(d, bD, tD)
	}
	return true
}

// PrefillEnded frees the prefill leg's tokens as soon as that leg ended, well or not (its
// in-flight request is freed by Release, with the decode's); idempotent, safe from any
// goroutine. Until it is called, Release frees them.
func (h Held) PrefillEnded() {
	hh := h.h
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if hh.gen != h.gen || hh.pEnded {
		return
	}
	hh.pEnded = true
	hh.p.UnholdTokens(hh.tP.prompt, hh.tP.decode)
}

// SetPromptTokens replaces the prompt size held on both legs by n (n < 0: 0), once the
// gateway counted what it had estimated (the gRPC pipeline tokenizes after selection). A
// prefill whose tokens were already freed, or a released selection, is left alone.
func (h Held) SetPromptTokens(n int64) {
	hh := h.h
	n = max(n, 0)
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if hh.gen != h.gen {
		return
	}
	if !hh.pEnded {
		adjustPrompt(hh.p, hh.tP.prompt, n)
	}
	hh.tP.prompt = n
	if hh.d != nil {
		adjustPrompt(hh.d, hh.tD.prompt, n)
		hh.tD.prompt = n
	}
}

// adjustPrompt moves w's held prompt tokens from old to n.
func adjustPrompt(w *worker.Live, old, n int64) {
	if n > old {
		w.HoldTokens(n-old, 0)
	} else {
		w.UnholdTokens(old-n, 0)
	}
}

// SelectHeld is Select with the accounting returned as a Held, so the prefill's tokens can
// be freed when the prefill leg ends (Held.PrefillEnded) rather than with the decode.
func (s *Selector) SelectHeld(req *policy.Request) (prefill, decode *worker.Live, h Held, err error) {
	p, d, hd, err := s.selectHeld(req)
	if err != nil {
		return nil, nil, Held{}, err
	}
	return p, d, hd, nil
}
