package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/worker"
)

// A held is reused once released: calls through the Held of an earlier use (a second
// Release, PrefillEnded, SetPromptTokens) leave the current use's accounting alone.
func TestHeldReusedIgnoresCallsOfAnEarlierUse(t *testing.T) {
	p := worker.NewLive(worker.Worker{URL: "http://p:1"}, worker.StatusReady)
	d := worker.NewLive(worker.Worker{URL: "http://d:1"}, worker.StatusReady)
	hold := func(w *worker.Live, tk tokens) { w.Hold(); w.HoldTokens(tk.prompt, tk.decode) }

	tP, tD := tokens{prompt: 10}, tokens{prompt: 10, decode: 5}
	hold(p, tP)
	hold(d, tD)
	first := (&held{}).start(p, d, nil, nil, tP, tD)
	first.release() // as Release, but the held stays out of heldPool: its next use follows
	assert.Equal(t, [2]int64{0, 0}, [2]int64{p.Load(), d.Load()})

	uP, uD := tokens{prompt: 3}, tokens{prompt: 3, decode: 2}
	hold(p, uP)
	hold(d, uD)
	second := first.h.start(p, d, nil, nil, uP, uD) // the same held, its next use
	first.Release()
	first.PrefillEnded()
	first.SetPromptTokens(100)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{p.Load(), d.Load()})
	assert.Equal(t, [2]int64{3, 5}, [2]int64{p.TokenLoad(), d.TokenLoad()})

	second.PrefillEnded()
	assert.Equal(t, int64(0), p.TokenLoad())
	second.Release()
	second.Release()
	assert.Equal(t, [4]int64{0, 0, 0, 0}, [4]int64{p.Load(), d.Load(), p.TokenLoad(), d.TokenLoad()})
}
