package kvroute_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/domain/kvevent"
)

func specOf(t *testing.T, r *kvroute.Router, url string) kvroute.SpecCounts {
	t.Helper()
	for _, s := range r.Stats() {
		if s.URL == url {
			return s.Speculative
		}
	}
	return kvroute.SpecCounts{}
}

// A speculative entry ends when the worker's own events store the prompt: an eviction the
// engine reports afterwards is then seen at once, not masked until the TTL runs out.
func TestSpeculativeEntryEndsWhenTheEventsStoreThePrompt(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := router(t, c)
	w := grpcWorker("grpc://127.0.0.1:5")
	require.NoError(t, store.Add(w))
	prompt := append(block(1), block(100)...)
	r.Speculate(w.URL, "m", prompt)
	c.add(300 * time.Millisecond)

	// Only the first block stored: not confirmed, the entry still answers for both.
	r.ApplyBatchForTest(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Stored, BlockSize: 16,
		Blocks: []kvevent.Block{{EngineHash: 1, Tokens: block(1)}}}}})
	assert.Equal(t, 32, r.Matched("m", prompt)[w.URL])
	assert.Zero(t, specOf(t, r, w.URL).Confirmed)

	r.ApplyBatchForTest(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Stored, BlockSize: 16, Parent: 1, HasParent: true,
		Blocks: []kvevent.Block{{EngineHash: 2, Tokens: block(100)}}}}})
	got := specOf(t, r, w.URL)
	assert.Equal(t, uint64(1), got.Confirmed)
	assert.InDelta(t, 0.3, got.ConfirmSeconds, 1e-9)
	assert.Equal(t, 32, r.Matched("m", prompt)[w.URL], "now held by the events")

	// The engine evicts the second block: one batch later the worker no longer counts for it.
	r.ApplyBatchForTest(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Removed, Removed: []uint64{2}}}})
	assert.Equal(t, 16, r.Matched("m", prompt)[w.URL])

	c.add(time.Minute)
	assert.Zero(t, specOf(t, r, w.URL).Expired, "a confirmed entry does not expire")
}

// An entry the worker never stores expires after the TTL and is counted so.
func TestSpeculativeEntryExpiresUnconfirmed(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := router(t, c)
	w := grpcWorker("grpc://127.0.0.1:6")
	require.NoError(t, store.Add(w))
	r.Speculate(w.URL, "m", block(1))
	r.ApplyBatchForTest(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Stored, BlockSize: 16,
		Blocks: []kvevent.Block{{EngineHash: 9, Tokens: block(500)}}}}})
	c.add(2 * time.Second)
	assert.Empty(t, r.Matched("m", block(1)))
	assert.Equal(t, kvroute.SpecCounts{Expired: 1}, specOf(t, r, w.URL))
}

// A prompt whose every full block the worker's events already hold gets no speculative
// entry: the engine stores nothing new, so no batch could confirm it (it used to expire
// and read as event lag), and no batch is awaited (the stream is not judged stalled).
func TestNoSpeculativeEntryForAPromptAlreadyHeld(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := router(t, c)
	w := grpcWorker("grpc://127.0.0.1:7")
	require.NoError(t, store.Add(w))
	r.ApplyBatchForTest(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Stored, BlockSize: 16,
		Blocks: []kvevent.Block{{EngineHash: 1, Tokens: block(1)}, {EngineHash: 2, Tokens: block(100)}}}}})
	prompt := append(append(block(1), block(100)...), 7, 8, 9) // two held blocks and a partial one
	r.Speculate(w.URL, "m", prompt)
	assert.False(t, r.Stalled(w.URL), "no batch is awaited")
	c.add(time.Minute)
	assert.Equal(t, kvroute.SpecCounts{}, specOf(t, r, w.URL), "no entry made, none expired")
	assert.False(t, r.Stalled(w.URL))
	assert.Equal(t, 32, r.Matched("m", prompt)[w.URL], "the events still answer")

	// One new block beyond what is held: an entry, confirmed when the engine stores it.
	longer := append(append(append(block(1), block(100)...), block(200)...), 7)
	r.Speculate(w.URL, "m", longer)
	r.ApplyBatchForTest(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Stored, BlockSize: 16, Parent: 2, HasParent: true,
		Blocks: []kvevent.Block{{EngineHash: 3, Tokens: block(200)}}}}})
	assert.Equal(t, uint64(1), specOf(t, r, w.URL).Confirmed)
}
