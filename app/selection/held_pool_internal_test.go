package selection

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/worker"
)

// Pooled helds under concurrent Release, PrefillEnded and SetPromptTokens, with the Helds of
// earlier uses (whose held may be another selection's now) called at random, leave every
// worker's load and tokens at zero.
func TestHeldPoolConcurrentUsesBalance(t *testing.T) {
	p := worker.NewLive(worker.Worker{URL: "http://p:1"}, worker.StatusReady)
	d := worker.NewLive(worker.Worker{URL: "http://d:1"}, worker.StatusReady)
	var staleMu sync.Mutex
	var stale []Held
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 1000 {
				pt := int64(r.IntN(50))
				tP, tD := tokens{prompt: pt}, tokens{prompt: pt, decode: int64(r.IntN(20))}
				p.Hold()
				p.HoldTokens(tP.prompt, tP.decode)
				lone := r.IntN(3) == 0
				var h Held
				if lone {
					h = newHeld(p, nil, nil, nil, tP, tokens{})
				} else {
					d.Hold()
					d.HoldTokens(tD.prompt, tD.decode)
					h = newHeld(p, d, nil, nil, tP, tD)
				}
				var inner sync.WaitGroup
				inner.Add(3)
				n := int64(r.IntN(80)) - 5
				go func() { defer inner.Done(); h.SetPromptTokens(n) }()
				go func() { defer inner.Done(); h.PrefillEnded() }()
				go func() { defer inner.Done(); h.Release() }()
				staleMu.Lock()
				if len(stale) > 0 {
					s := stale[r.IntN(len(stale))]
					staleMu.Unlock()
					s.Release()
					s.PrefillEnded()
					s.SetPromptTokens(1000)
				} else {
					staleMu.Unlock()
				}
				inner.Wait()
				h.Release()
				staleMu.Lock()
				if len(stale) < 64 {
					stale = append(stale, h)
				} else {
					stale[r.IntN(64)] = h
				}
				staleMu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, [4]int64{0, 0, 0, 0}, [4]int64{p.Load(), d.Load(), p.TokenLoad(), d.TokenLoad()})
}
