package sim_test

import (
	"context"
	"encoding/binary"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/kvcache"
)

// A SGLang instance with dp_size 2 and --kv-events-config runs one publisher per rank;
// rank 1's batches carry attn_dp_rank 1 and SGLang's signed hashes, and the runtime
// kv-events-gap fault skips a sequence number that the ROUTER replay returns.
func TestKVEventsPerRankWithRuntimeGap(t *testing.T) {
	t.Parallel()
	s := start(t, cfgOf(sim.EngineSGLang, sim.RoleDecode, func(c *sim.Config) {
		c.DPSize = 2
		c.KVEventsConfig = `{"publisher":"zmq","endpoint":"tcp://*:0","replay_endpoint":"tcp://*:0","topic":"kv"}`
	}))
	require.Equal(t, 2, s.KVEvents().Len())
	r1 := s.KVEvents().Rank(1)
	require.True(t, strings.HasPrefix(r1.Endpoint(), "tcp://127.0.0.1:"), "bound on the sim's host: %s", r1.Endpoint())
	require.NotEqual(t, s.KVEvents().Rank(0).Endpoint(), r1.Endpoint())

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, "kv"))
	require.NoError(t, sub.Dial(r1.Endpoint()))
	eventually(t, func() bool { return slices.Contains(r1.SubscribedTopics(), "kv") }, "SUB subscribed")

	ev := kvcache.Event{Stored: &kvcache.BlockStored{BlockHashes: []uint64{1 << 63}, TokenIDs: []uint32{1, 2}, BlockSize: 2}}
	sink := s.KVEventSink(1)
	sink.Publish([]kvcache.Event{ev})
	seq, batch := recvBatch(t, sub)
	require.Equal(t, uint64(0), seq)
	require.Len(t, batch, 3)
	assert.EqualValues(t, 1, batch[2], "attn_dp_rank")
	stored := batch[1].([]any)[0].(map[string]any)
	assert.Equal(t, "BlockStored", stored["type"])
	assert.Equal(t, []any{int64(-1 << 63)}, stored["block_hashes"], "SGLang hashes are signed int64")

	require.Equal(t, http.StatusNoContent, post(s.URL()+"/sim/fault?kind=kv-events-gap", nil).status)
	sink.Publish([]kvcache.Event{{Cleared: true}})
	sink.Publish([]kvcache.Event{{Cleared: true}})
	seq, _ = recvBatch(t, sub)
	require.Equal(t, uint64(2), seq, "the gap fault skips seq 1 on the PUB socket")

	d := zmq4.NewDealer(ctx)
	defer d.Close()
	require.NoError(t, d.Dial(r1.ReplayEndpoint()))
	require.NoError(t, d.Send(zmq4.NewMsgFrom(nil, []byte{0, 0, 0, 0, 0, 0, 0, 1})))
	var got []int64
	for {
		m, err := d.Recv()
		require.NoError(t, err)
		require.Len(t, m.Frames, 3)
		s := int64(binary.BigEndian.Uint64(m.Frames[1]))
		if s == -1 {
			break
		}
		got = append(got, s)
	}
	assert.Equal(t, []int64{1, 2}, got)

	req, _ := http.NewRequest(http.MethodDelete, s.URL()+"/sim/fault", nil)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
}

// Without --kv-events-config the sim publishes nothing and refuses the KV event faults.
func TestKVEventsDisabled(t *testing.T) {
	t.Parallel()
	s := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode))
	assert.Nil(t, s.KVEvents())
	assert.Nil(t, s.KVEventSink(0))
	assert.Equal(t, http.StatusBadRequest, post(s.URL()+"/sim/fault?kind=kv-events-stall", nil).status)
	_, err := sim.Start(cfgOf(sim.EngineVLLM, sim.RoleDecode, func(c *sim.Config) { c.KVEventsConfig = `{"enable_kv_cache_events":"yes"}` }))
	assert.ErrorContains(t, err, "kv-events-config")
}

func recvBatch(t *testing.T, sub zmq4.Socket) (uint64, []any) {
	t.Helper()
	m, err := sub.Recv()
	require.NoError(t, err)
	require.Len(t, m.Frames, 3)
	require.Len(t, m.Frames[1], 8)
	var v any
	require.NoError(t, msgpack.Unmarshal(m.Frames[2], &v))
	return binary.BigEndian.Uint64(m.Frames[1]), v.([]any)
}

// A completion's prompt reaches the PUB socket as the cache stores it (vLLM shape:
// unsigned hashes, blocks of 16), and Config.KVEventSink receives the same events.
func TestKVEventsFromACompletion(t *testing.T) {
	t.Parallel()
	rec := &sinkRec{}
	s := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, func(c *sim.Config) {
		c.KVEventSink = rec
		c.KVEventsConfig = `{"enable_kv_cache_events":true,"endpoint":"tcp://*:0","topic":"kv"}`
	}))
	p := s.KVEvents().Rank(0)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	require.NoError(t, sub.SetOption(zmq4.OptionSubscribe, "kv"))
	require.NoError(t, sub.Dial(p.Endpoint()))
	eventually(t, func() bool { return slices.Contains(p.SubscribedTopics(), "kv") }, "SUB subscribed")

	require.Equal(t, http.StatusOK, post(s.URL()+"/v1/completions", map[string]any{"prompt": words(0, 40), "max_tokens": 2}).status)
	seq, batch := recvBatch(t, sub)
	require.Equal(t, uint64(0), seq)
	assert.EqualValues(t, 0, batch[2], "data_parallel_rank")
	stored := batch[1].([]any)[0].(map[string]any)
	require.Equal(t, "BlockStored", stored["type"])
	assert.EqualValues(t, 16, stored["block_size"])
	assert.Len(t, stored["token_ids"], 32, "two full blocks of the 40-token prompt")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.evs, 1)
	var hashes []uint64
	for _, h := range stored["block_hashes"].([]any) {
		v := reflect.ValueOf(h)
		if v.CanUint() {
			hashes = append(hashes, v.Uint())
		} else {
			hashes = append(hashes, uint64(v.Int()))
		}
	}
	assert.Equal(t, rec.evs[0].Stored.BlockHashes, hashes)
}
