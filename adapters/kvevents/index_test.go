package kvevents_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/kvindex"
)

func storedPayload(t testing.TB, from int) []byte {
	return pack(t, []any{0.0, []any{map[string]any{"type": "BlockStored", "block_hashes": []any{uint64(from), uint64(from + 1)},
		"token_ids": seq(from, 32), "block_size": 16}}, 0})
}

// An engine restart seen on the stream drops the worker's entries from the index within
// that batch: the next lookup does not count on them.
func TestZMQIntoIndexRestartDropsEntries(t *testing.T) {
	e, pubEP, _ := startEngine(t, "127.0.0.1:0", false)
	idx := kvindex.New(kvindex.Options{})
	runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, Topic: topic, Sink: kvindex.WorkerSink{Index: idx, Worker: "d0", Model: "m"}})
	e.waitSubscribed()
	e.publishRaw(0, storedPayload(t, 0), true)
	e.publishRaw(1, storedPayload(t, 100), true)
	require.Eventually(t, func() bool { return idx.Match("m", u32s(100, 32))["d0"].Blocks == 2 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 2, idx.Match("m", u32s(0, 40))["d0"].Blocks)

	e.publishRaw(0, storedPayload(t, 500), true) // restarted engine, empty cache
	require.Eventually(t, func() bool { return idx.Match("m", u32s(500, 32))["d0"].Blocks == 2 }, 10*time.Second, 5*time.Millisecond)
	require.Empty(t, idx.Match("m", u32s(0, 32)))
	require.Empty(t, idx.Match("m", u32s(100, 32)))
}
